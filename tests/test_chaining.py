"""Plan chaining: an exit's ``next_plan`` starts in the same session, in the same commit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from waygraph import Navigator
from waygraph.check import check_library
from waygraph.library import Library
from waygraph.model import Plan


def _plan(pid: str, trigger: str, exit_node: dict[str, Any], *, escalate: bool = False) -> Plan:
    nodes: dict[str, Any] = {
        "start": {"type": "start"},
        "work": {"type": "task", "action": f"do {pid}", "verify": {"type": "exit_code_zero"}},
        "done": {"type": "exit", **exit_node},
        "stop": {"type": "exit", "status": "aborted", **exit_node},
        "help": {"type": "escalate", "reason": "stuck"},
    }
    edges = [
        {"from": "start", "to": "work"},
        {"from": "work", "to": "done", "condition": "on_success"},
        {"from": "work", "to": "help" if escalate else "stop", "condition": "on_fail"},
    ]
    return Plan.model_validate(
        {
            "id": pid,
            "triggers": [trigger],
            "trigger_threshold": 1,
            "graph": {"start": "start", "nodes": nodes, "edges": edges},
        }
    )


def library(first_exit: dict[str, Any], *, escalate: bool = False) -> Library:
    return Library(
        [
            _plan("build_app", "build the app", first_exit, escalate=escalate),
            _plan("deploy_app", "deploy the app", {}),
        ]
    )


def test_a_completed_run_starts_the_next_plan_in_the_same_session():
    nav = Navigator(library({"next_plan": "deploy_app"}), store="memory://", strict=True)
    first = nav.turn("s", user_message="build the app").run
    assert first is not None
    g = nav.turn("s", tool_output="built", exit_code=0)
    assert g.run is not None and g.run["plan_id"] == "deploy_app"
    assert g.run["status"] == "running" and g.run["current_node"] == "work"
    assert g.text is not None
    assert g.text.startswith("Plan 'build_app' completed: verified work.")
    assert "next plan, 'deploy_app'" in g.text and "do deploy_app" in g.text
    assert [e.type for e in g.events][:4] == [
        "node_verified",
        "edge_followed",
        "node_entered",
        "plan_completed",
    ]
    activated = [e for e in g.events if e.type == "plan_activated"]
    assert len(activated) == 1 and activated[0]["after"] == first["run_id"]
    old = nav.store.get(first["run_id"])
    assert old is not None and old.status == "completed"
    assert nav.store.current("s") == g.run["run_id"]
    # The chained plan's exit names nothing: it ends the session's work.
    done = nav.turn("s", tool_output="deployed", exit_code=0)
    assert done.run is not None and (done.run["plan_id"], done.run["status"]) == (
        "deploy_app",
        "completed",
    )


@pytest.mark.parametrize(
    ("when", "chains"), [(None, False), ("completed", False), ("always", True)]
)
def test_an_aborting_exit_chains_only_when_told_always(when: str | None, chains: bool):
    exit_node: dict[str, Any] = {"next_plan": "deploy_app"}
    if when is not None:
        exit_node["next_plan_when"] = when
    nav = Navigator(library(exit_node), store="memory://", strict=True)
    nav.turn("s", user_message="build the app")
    g = nav.turn("s", tool_output="error", exit_code=1)  # on_fail -> the aborting exit
    state = nav.state("s")
    assert state is not None
    if chains:
        assert (state["plan_id"], state["status"]) == ("deploy_app", "running")
        assert g.text is not None and g.text.startswith("Plan 'build_app' aborted.")
    else:
        assert (state["plan_id"], state["status"]) == ("build_app", "aborted")


def test_an_escalated_run_chains_nowhere():
    lib = library({"next_plan": "deploy_app", "next_plan_when": "always"}, escalate=True)
    nav = Navigator(lib, store="memory://", strict=True)
    nav.turn("s", user_message="build the app")
    nav.turn("s", tool_output="error", exit_code=1)
    state = nav.state("s")
    assert state is not None and (state["plan_id"], state["status"]) == ("build_app", "escalated")


def test_check_names_an_unknown_next_plan_and_warns_on_a_loop():
    unknown = Library([_plan("build_app", "build", {"next_plan": "ship_it"})])
    found = [p for p in check_library(unknown) if p.code == "unknown-next-plan"]
    # Both of its exits name it.
    assert [(p.level, p.plan, p.node, p.field) for p in found] == [
        ("error", "build_app", "done", "next_plan"),
        ("error", "build_app", "stop", "next_plan"),
    ]
    loop = Library(
        [
            _plan("a_plan", "a", {"next_plan": "b_plan"}),
            _plan("b_plan", "b", {"next_plan": "a_plan"}),
        ]
    )
    loops = [p for p in check_library(loop) if p.code == "next-plan-loop"]
    assert [(p.level, p.plan) for p in loops] == [("warning", "a_plan"), ("warning", "b_plan")]
    assert not [
        p for p in check_library(library({"next_plan": "deploy_app"})) if p.level == "error"
    ]


def test_next_plan_on_a_task_is_an_ignored_field():
    plan = Plan.model_validate(
        {
            "id": "p",
            "triggers": ["x"],
            "graph": {
                "start": "start",
                "nodes": {
                    "start": {"type": "start"},
                    "work": {"type": "task", "next_plan": "q"},
                    "done": {"type": "exit"},
                },
                "edges": [{"from": "start", "to": "work"}, {"from": "work", "to": "done"}],
            },
        }
    )
    found = [p for p in check_library(Library([plan])) if p.code == "ignored-field"]
    assert [(p.node, p.field) for p in found] == [("work", "next_plan")]


def test_a_kill_right_after_the_first_plan_ends_leaves_the_next_one_current(tmp_path: Path):
    plans = tmp_path / "plans.json"
    data = {
        "plans": {
            p.id: {k: v for k, v in json.loads(p.model_dump_json()).items() if k != "id"}
            for p in library({"next_plan": "deploy_app"})
        }
    }
    plans.write_text(json.dumps(data), encoding="utf-8")
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    child = textwrap.dedent(
        f"""
        import os, signal
        from waygraph import Navigator
        nav = Navigator({str(plans)!r}, store={store!r}, strict=True)
        nav.turn("s", user_message="build the app")
        nav.turn("s", tool_output="built", exit_code=0)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent / "src")}
    proc = subprocess.run([sys.executable, "-c", child], env=env, timeout=60, check=False)
    assert proc.returncode == -9
    with Navigator(str(plans), store=store, strict=True) as nav:
        state = nav.state("s")
        assert state is not None and (state["plan_id"], state["status"]) == (
            "deploy_app",
            "running",
        )
        runs = {r.data["plan_id"]: r.status for r in nav.store.list(kind="guided")}
        assert runs == {"build_app": "completed", "deploy_app": "running"}
        g = nav.turn("s", tool_output="deployed", exit_code=0)
        assert g.run is not None and g.run["status"] == "completed"
