"""The Navigator: the seeds' acceptance scenarios through the one call agents make."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import signal
import threading
import time
from pathlib import Path

import pytest

import waygraph
from waygraph import Navigator, load_library
from waygraph.library import Library
from waygraph.model import Plan

COMPAT = Path(__file__).parent / "fixtures" / "compat"
BUG_MESSAGE = "I need to fix a bug in the login module"


@pytest.fixture
def nav(tmp_path: Path) -> Navigator:
    return Navigator(store=f"sqlite:///{tmp_path / 'wg.db'}", workspace=tmp_path, strict=True)


def test_bugfix_message_activates_the_bugfix_plan(nav: Navigator):
    g = nav.turn("s1", user_message=BUG_MESSAGE, domain="bugfix")
    assert g.run["plan_id"] == "bugfix_workflow"
    assert g.run["status"] == "running" and g.run["mode"] == "graph"
    assert g.events[0].type == "plan_activated"
    assert g.events[0].plan_id == "bugfix_workflow"
    assert "reproduce << CURRENT" in g.text
    assert g.text.startswith("[WORKFLOW: Bug Fix Workflow]")
    assert "[waygraph] Plan: Bug Fix Workflow (bugfix_workflow) · node reproduce" in g.text


def test_compat_libraries_activate_on_the_seed_message(tmp_path: Path):
    for name in ("agent-zero-graph-library-v2.json", "agent-zero-linear-library-v1.json"):
        nav = Navigator(COMPAT / name, store="memory://", strict=True)
        g = nav.turn("s", user_message=BUG_MESSAGE, domain="bugfix")
        assert g.run["plan_id"] == "bugfix_workflow", name


def test_weather_activates_nothing(nav: Navigator):
    g = nav.turn("s1", user_message="What's the weather like?")
    assert g.text is None and g.run is None and g.events == []
    assert nav.state("s1") is None


def test_allow_list_blocks_plans_it_does_not_list(nav: Navigator):
    g = nav.turn("s1", user_message=BUG_MESSAGE, domain="bugfix", allowed_plans=["git_merge_pr"])
    assert g.run is None
    g = nav.turn("s1", user_message=BUG_MESSAGE, domain="bugfix", allowed_plans=["bugfix_workflow"])
    assert g.run["plan_id"] == "bugfix_workflow"


def test_tool_results_advance_and_state_survives_a_new_navigator(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'wg.db'}"
    nav = Navigator(store=url, strict=True)
    nav.turn("s1", user_message=BUG_MESSAGE, domain="bugfix")
    g = nav.turn("s1", tool_output="Traceback: AssertionError", exit_code=1, tool_name="shell")
    assert g.run["current_node"] != "reproduce"
    nav.close()
    again = Navigator(store=url, strict=True)
    state = again.state("s1")
    assert state["current_node"] == g.run["current_node"]
    assert state["visited"]["reproduce"]["outcome"] == "success"
    assert "s1" in again.sessions()
    events = again.events("s1")
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[0]["type"] == "plan_activated"


def test_result_is_applied_before_the_user_message(nav: Navigator):
    nav.turn("s1", user_message=BUG_MESSAGE, domain="bugfix")
    g = nav.turn("s1", user_message="please go on", tool_output="error output")
    assert [e.type for e in g.events][:1] == ["node_verified"]


def test_finished_runs_stay_inspectable_and_reset_clears(nav: Navigator):
    plan = Plan.model_validate(
        {"id": "one", "triggers": ["do one"], "trigger_threshold": 1, "steps": [{"name": "x"}]}
    )
    nav = Navigator(Library([plan]), store="memory://", strict=True)
    nav.turn("s", user_message="do one")
    g = nav.turn("s", tool_output="done")
    assert g.run["status"] == "completed"
    assert g.text.startswith("Plan completed:")
    assert nav.state("s")["status"] == "completed"
    quiet = nav.turn("s", user_message="thanks")
    assert quiet.text is None
    nav.reset("s")
    assert nav.state("s") is None
    assert nav.store.list(kind="run", plan="one")[0].data["status"] == "completed"


def test_reset_aborts_a_running_run(nav: Navigator):
    g = nav.turn("s", user_message=BUG_MESSAGE, domain="bugfix")
    run_id = g.run["run_id"]
    nav.reset("s")
    assert nav.state("s") is None
    assert nav.store.get(run_id).data["status"] == "aborted"
    g = nav.turn("s", user_message=BUG_MESSAGE, domain="bugfix")
    assert g.run["run_id"] != run_id


def test_start_by_id_and_rewind(tmp_path: Path):
    plan = (
        waygraph.Graph.builder()
        .task("backup", verify={"type": "any_output"})
        .checkpoint("saved")
        .task("change", verify={"type": "output_contains", "value": "ok"})
        .escalate("stuck", reason="change failed")
        .exit("done")
        .edge("start", "backup")
        .edge("backup", "saved", "on_success")
        .edge("saved", "change")
        .edge("change", "done", "on_success")
        .edge("change", "stuck", "on_fail")
        .plan("cp")
    )
    nav = Navigator(Library([plan]), store="memory://", strict=True)
    nav.start("s", "cp")
    nav.turn("s", tool_output="backed up")
    g = nav.turn("s", tool_output="it failed")
    assert g.run["status"] == "escalated"
    g = nav.rewind("s")
    assert g.run["status"] == "running" and g.run["current_node"] == "change"
    with pytest.raises(waygraph.PlanNotFoundError):
        nav.start("s", "missing")


def test_file_exists_is_checked_in_the_workspace(tmp_path: Path):
    plan = Plan.model_validate(
        {
            "id": "f",
            "triggers": ["make report"],
            "trigger_threshold": 1,
            "steps": [
                {"name": "write", "verify": {"type": "file_exists", "value": "out/report.txt"}},
                {"name": "escape", "verify": {"type": "file_exists", "value": "../outside.txt"}},
            ],
        }
    )
    (tmp_path / "ws").mkdir()
    (tmp_path / "outside.txt").write_text("x")
    nav = Navigator(
        Library([plan]), store="memory://", workspace=tmp_path / "ws", confine=True, strict=True
    )
    nav.turn("s", user_message="make report")
    assert nav.turn("s", tool_output="wrote it").run["current_node"] == "step_1"
    (tmp_path / "ws" / "out").mkdir()
    (tmp_path / "ws" / "out" / "report.txt").write_text("r")
    assert nav.turn("s", tool_output="wrote it").run["current_node"] == "step_2"
    # ../outside.txt exists but escapes the workspace, and checks are confined: refused.
    assert nav.turn("s", tool_output="checked").run["current_node"] == "step_2"


def test_library_changes_are_reloaded_and_running_runs_keep_their_version(tmp_path: Path):
    lib_file = tmp_path / "plans.json"

    def write(action: str) -> None:
        data = {
            "plans": {
                "p": {
                    "triggers": ["deploy site"],
                    "trigger_threshold": 1,
                    "steps": [{"name": "ship", "action": action}, {"name": "check"}],
                }
            }
        }
        lib_file.write_text(json.dumps(data))

    write("OLD ACTION")
    nav = Navigator(lib_file, store="memory://", strict=True)
    assert "OLD ACTION" in nav.turn("a", user_message="deploy site").text
    time.sleep(0.01)
    write("NEW ACTION")
    os.utime(lib_file, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    nav.reload()
    assert "NEW ACTION" in nav.turn("b", user_message="deploy site").text
    # Session a still runs the version it started with, and says which plan that is.
    assert "OLD ACTION" in nav.context("a")
    old_plan, new_plan = nav.plan_for(nav.state("a")), nav.plan_for(nav.state("b"))
    assert old_plan is not None and new_plan is not None
    assert next(n.action for n in old_plan.graph.nodes.values() if n.action) == "OLD ACTION"
    assert next(n.action for n in new_plan.graph.nodes.values() if n.action) == "NEW ACTION"
    assert nav.plan_for({"plan_id": "p"}) is new_plan  # no run: the library's
    assert nav.plan_for({"plan_id": "nowhere"}) is None and nav.plan_for({}) is None
    # A library that stops loading keeps the last good one.
    lib_file.write_text("{not json")
    nav.reload()
    assert "NEW ACTION" in nav.turn("c", user_message="deploy site").text


def test_store_trouble_never_raises_unless_strict(tmp_path: Path, caplog):
    nav = Navigator(store="memory://")

    def broken(*args, **kwargs):
        raise waygraph.StoreError("disk on fire")

    nav.store.current = broken  # type: ignore[method-assign]
    with caplog.at_level("WARNING", logger="waygraph.navigator"):
        g = nav.turn("s", user_message=BUG_MESSAGE, domain="bugfix")
    assert g.text is None and g.run is None
    assert "disk on fire" in caplog.text
    strict = Navigator(store="memory://", strict=True)
    strict.store.current = broken  # type: ignore[method-assign]
    with pytest.raises(waygraph.StoreError):
        strict.turn("s", user_message=BUG_MESSAGE)


def test_max_tokens_shortens_the_path_but_keeps_the_node(tmp_path: Path):
    nav = Navigator(
        COMPAT / "agent-zero-graph-library-v2.json", store="memory://", strict=True, max_tokens=120
    )
    nav.turn("s", user_message=BUG_MESSAGE, domain="bugfix")
    for _ in range(3):
        g = nav.turn("s", tool_output="ok")
    assert "test << CURRENT" in g.text
    assert "Verify:" in g.text


def test_async_navigator(tmp_path: Path):
    async def main() -> dict:
        nav = waygraph.AsyncNavigator(store="memory://", strict=True)
        await nav.turn("s", user_message=BUG_MESSAGE, domain="bugfix")
        g = await nav.turn("s", tool_output="Traceback")
        return g.run

    run = asyncio.run(main())
    assert run["visited"]["reproduce"]["outcome"] == "success"


# ------------------------------------------------------------------ concurrency

HOLD = {
    "plans": {
        "hold": {
            "triggers": ["hold on"],
            "trigger_threshold": 1,
            "stale_after_turns": 100000,
            # Every call here repeats the same output on purpose.
            "repeat_limit": 0,
            "steps": [
                {
                    "name": "never passes",
                    "verify": {"type": "output_contains", "value": "zzz"},
                    "on_fail": "warn",
                },
            ],
        }
    }
}


def _hammer(url: str, lib: str, worker: int, count: int) -> None:
    nav = Navigator(lib, store=url, strict=True)
    for i in range(count):
        nav.turn("shared", tool_output="nope", observation_id=f"w{worker}-{i}")
    nav.close()


@pytest.fixture
def hold_library(tmp_path: Path) -> str:
    path = tmp_path / "hold.json"
    path.write_text(json.dumps(HOLD))
    return str(path)


def test_two_threads_never_lose_an_observation(tmp_path: Path, hold_library: str):
    url = f"sqlite:///{tmp_path / 'c.db'}"
    Navigator(hold_library, store=url, strict=True).turn("shared", user_message="hold on")
    threads = [threading.Thread(target=_hammer, args=(url, hold_library, w, 40)) for w in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    state = Navigator(hold_library, store=url).state("shared")
    assert state["attempts"] == 1 + 80


def test_two_processes_never_lose_an_observation(tmp_path: Path, hold_library: str):
    url = f"sqlite:///{tmp_path / 'p.db'}"
    Navigator(hold_library, store=url, strict=True).turn("shared", user_message="hold on")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_hammer, args=(url, hold_library, w, 30)) for w in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    state = Navigator(hold_library, store=url).state("shared")
    assert state["attempts"] == 1 + 60


def _writer_forever(url: str, lib: str) -> None:
    nav = Navigator(lib, store=url, strict=True)
    i = 0
    while True:
        i += 1
        nav.turn(f"s{i % 3}", user_message="hold on")
        nav.turn(f"s{i % 3}", tool_output="nope", observation_id=f"{os.getpid()}-{i}")


@pytest.mark.slow
def test_sigkill_never_leaves_an_unloadable_store(tmp_path: Path, hold_library: str):
    url = f"sqlite:///{tmp_path / 'k.db'}"
    ctx = multiprocessing.get_context("spawn")
    for round_ in range(6):
        proc = ctx.Process(target=_writer_forever, args=(url, hold_library))
        proc.start()
        time.sleep(0.6 + 0.1 * round_)
        os.kill(proc.pid, signal.SIGKILL)
        proc.join()
        nav = Navigator(hold_library, store=url, strict=True)
        for session in nav.sessions():
            state = nav.state(session)
            assert state is not None and state["plan_id"] == "hold"
            events = nav.events(session)
            assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        nav.close()


def test_public_exports_do_not_drift():
    assert set(waygraph.__all__) >= {
        "Navigator",
        "AsyncNavigator",
        "Guidance",
        "load_library",
        "Library",
        "Plan",
        "Graph",
        "Node",
        "Edge",
        "Verify",
        "WaygraphError",
        "PlanFormatError",
        "Conflict",
    }
    for name in waygraph.__all__:
        assert hasattr(waygraph, name), name


def test_load_library_default_is_the_shipped_library():
    assert "bugfix_workflow" in load_library()
