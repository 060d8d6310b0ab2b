"""The compact guidance style: the current step, its check and what failed last, in 120 tokens."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import waygraph
from waygraph import engine, render
from waygraph.errors import ConfigError
from waygraph.hooks import Hooks
from waygraph.integrations.mcp_server import build_server
from waygraph.model import Plan
from waygraph.render.style import COMPACT_TOKENS, GuidanceStyle
from waygraph.verify import describe

LIBRARY = waygraph.load_library()
COMPACT = GuidanceStyle.of("compact", tools=["run_command", "write_file"])
BUDGET = COMPACT_TOKENS * 4  # characters: waygraph counts about four per token
BUG = "I need to fix a bug in the login module"
FAILURE = "F\nE   AssertionError: expected 3, got 4\n1 failed, 3 passed in 0.05s"


def task_nodes() -> list[tuple[Plan, str]]:
    found = [
        (plan, node.id)
        for plan in LIBRARY
        for node in plan.graph.nodes.values()
        if node.type == "task"
    ]
    assert len(found) > 60
    return found


def at_node(plan: Plan, node_id: str) -> engine.Run:
    run, _ = engine.start(plan, run_id="r", turn=1)
    return dataclasses.replace(run, current_node=node_id)


def failed_at(plan: Plan, run: engine.Run) -> engine.Run:
    """``run`` after one failing tool result at its node."""
    evidence = engine.Evidence(tool="run_command", call="python -m pytest -q", output=FAILURE)
    run, _ = engine.observe(plan, run, lambda verify: False, turn=run.turn + 1, evidence=evidence)
    return run


def test_every_task_node_of_every_shipped_plan_fits_and_says_the_action_and_the_check():
    for plan, node_id in task_nodes():
        node = plan.graph.nodes[node_id]
        text = render.context(plan, at_node(plan, node_id), style=COMPACT)
        assert len(text) <= BUDGET, (plan.id, node_id, len(text))
        lines = text.splitlines()
        assert lines[0].startswith(f"[waygraph] {plan.title} · step {node_id}"), lines[0]
        action = " ".join((node.action or node.description or node.title).split())
        assert lines[1].startswith("Do: " + action[:40]), (plan.id, node_id)
        check = f"Check: {describe(node.verify)}"
        assert lines[2] == check or lines[2][:-1] in check, (plan.id, node_id)
        assert "Last failed" not in text


def test_after_a_failed_attempt_every_task_node_fits_and_says_what_failed():
    told = 0
    for plan, node_id in task_nodes():
        run = failed_at(plan, at_node(plan, node_id))
        node = plan.graph.nodes.get(run.current_node or "")
        if run.status != "running" or node is None or node.type != "task":
            continue  # the failure escalated, ended the run or routed to a decision
        text = render.context(plan, run, style=COMPACT)
        assert len(text) <= BUDGET, (plan.id, node_id, len(text))
        last = text.splitlines()[-1]
        if last.startswith("Last failed"):
            where = "" if run.current_node == node_id else f" ({node_id})"
            told_line = "`python -m pytest -q` → 1 failed, 3 passed in 0.05s"
            assert last == f"Last failed{where}: {told_line}"
            told += 1
    assert told > 40


def test_a_navigator_in_compact_style_says_the_action_the_check_and_the_last_failure():
    nav = waygraph.Navigator(
        store="memory://", guidance="compact", tools={"code_execution_tool": "run_command"}
    )
    nav.turn("s", user_message=BUG, domain="bugfix")
    steps = [
        ("AssertionError: login failed", 1, "python -m pytest -q tests/test_login.py"),
        ("login.py:12 compares with is", 0, "sed -n 1,20p login.py"),
        (" 1 file changed, 1 insertion(+)", 0, "git diff --stat"),
        (FAILURE, 1, "python -m pytest -q tests/test_login.py"),
    ]
    for output, code, command in steps:
        g = nav.turn("s", tool_output=output, exit_code=code, tool_args={"command": command})
    assert g.run is not None and g.run["current_node"] == "fix"
    assert (g.text or "").splitlines() == [
        "[waygraph] Bug Fix Workflow · step fix (attempt 2/3)",
        "Do: Change only what the cause needs, usually a few lines in one file. Do not "
        "reformat, rename, or edit the tests to make them pass. End the call by showing the "
        "change with git diff --stat.",
        # The plan's own words for its check (``says``), not the regular expression.
        "Check: git reports changed files ('N files changed'), or the edit command exits 0",
        "Last failed (test): `python -m pytest -q tests/test_login.py` → 1 failed, 3 passed "
        "in 0.05s",
    ]
    assert nav.context("s") == g.text
    # Progress since clears it: the next step is told nothing failed.
    g = nav.turn("s", tool_output=" 1 file changed", exit_code=0, tool_args="git diff --stat")
    assert g.run is not None and g.run["current_node"] == "test"
    assert "Last failed" not in (g.text or "")


def test_what_the_last_turn_could_not_count_takes_the_failure_line():
    hooks = Hooks("s", store="memory://", guidance="compact")
    hooks.on_user_message(BUG)
    hooks.on_model_reply("Fixed it, all works now.")
    text = hooks.context_for_model() or ""
    assert len(text) <= BUDGET
    assert text.splitlines()[-1].startswith("You told the user the work is done, but the plan")


def test_a_smaller_max_tokens_bounds_compact_guidance_too():
    nav = waygraph.Navigator(store="memory://", guidance="compact", max_tokens=40)
    text = nav.start("s", "bugfix_workflow").text or ""
    assert 0 < len(text) <= 160 and text.startswith("[waygraph] Bug Fix Workflow")


def test_decisions_people_and_finished_runs_fit_in_compact_style_too():
    for plan in LIBRARY:
        for node in plan.graph.nodes.values():
            if node.type in ("decision", "human"):
                text = render.context(plan, at_node(plan, node.id), style=COMPACT)
                assert len(text) <= BUDGET and node.id in text.splitlines()[0]
    plan = LIBRARY["bugfix_workflow"]
    run = dataclasses.replace(at_node(plan, "fix"), status="escalated", reason="x " * 400)
    text = render.context(plan, run, style=COMPACT)
    assert len(text) <= BUDGET and text.startswith("Plan escalated: x x")


def test_full_is_the_default_and_unchanged():
    plain = waygraph.Navigator(store="memory://").start("s", "bugfix_workflow").text
    full = waygraph.Navigator(store="memory://", guidance="full").start("s", "bugfix_workflow")
    assert full.text == plain and (plain or "").startswith("[WORKFLOW: Bug Fix Workflow]")


@pytest.mark.parametrize("bad", ["tiny", "Compact", ""])
def test_a_bad_guidance_value_names_the_argument_and_the_allowed_values(bad: str, tmp_path: Path):
    message = f"guidance must be one of 'full', 'compact', not {bad!r}"
    db = tmp_path / "w.db"
    with pytest.raises(ConfigError) as caught:
        waygraph.Navigator(store=f"sqlite:///{db}", guidance=bad)
    assert str(caught.value) == message and isinstance(caught.value, ValueError)
    assert not db.exists()  # checked before the store opens
    with pytest.raises(ConfigError, match="guidance must be one of"):
        Hooks("s", store="memory://", guidance=bad)  # not swallowed, even when not strict
    with pytest.raises(ConfigError, match="guidance must be one of"):
        build_server(store="memory://", guidance=bad)


def test_a_smaller_budget_than_the_default_is_kept_too():
    from waygraph.render._compact import compact_context

    plan = waygraph.load_library()["bugfix_workflow"]
    run, _ = engine.start(plan, run_id="r", turn=1)
    node = plan.graph.nodes[run.current_node or ""]
    for tokens in (20, 40, 60):
        text = compact_context(plan, run, node, GuidanceStyle(style="compact"), max_tokens=tokens)
        assert len(text) <= tokens * 4, (tokens, text)
