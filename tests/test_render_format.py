"""The guidance text follows the design documents' format (issue 15).

Document 003 for graphs (``[WORKFLOW: name]``, ``<< CURRENT (attempt 2/3)``,
``On success → test``, ``On fail (retries left) → retry fix``, ``On fail
(exhausted) → escalate: ...``), document 000 for linear plans
(``[ACTIVE PLAN: name]``, ``Step i/n: name [DONE]``), the documents' event
keys, decisions described when they route, and the abort message naming the
step.
"""

from __future__ import annotations

from typing import Any

from waygraph import engine, render
from waygraph.library import Library
from waygraph.model import Graph, Plan
from waygraph.navigator import Navigator


def fix_loop() -> Plan:
    return (
        Graph.builder()
        .task(
            "reproduce",
            name="Reproduce",
            action="Run the failing test",
            verify={"type": "any_output"},
        )
        .task(
            "fix",
            name="Fix",
            action="Make the minimal code change",
            tool="code_execution_tool",
            tool_hint="Edit the file(s) with the fix",
            verify={"type": "any_output"},
            max_retries=2,
        )
        .task("test", name="Test", verify={"type": "exit_code_zero"})
        .escalate("stuck", reason="unable to fix")
        .exit("done")
        .edge("start", "reproduce")
        .edge("reproduce", "fix", "on_success")
        .edge("fix", "test", "on_success")
        .edge("fix", "stuck", "on_exhaust")
        .edge("test", "done", "on_success")
        .edge("test", "fix", "on_fail")
        .plan("bugfix", name="Bug Fix Workflow", triggers=["fix bug"], trigger_threshold=1)
    )


def turn(nav: Navigator, **kwargs: Any) -> str:
    g = nav.turn("s", **kwargs)
    assert g.text is not None
    return g.text


def test_a_graph_plan_is_shown_as_document_003_shows_it():
    nav = Navigator(Library([fix_loop()]), store="memory://", strict=True)
    nav.turn("s", user_message="fix bug please")
    turn(nav, tool_output="AssertionError")
    turn(nav, tool_output="patched")
    text = turn(nav, tool_output="1 failed", exit_code=1)  # test fails: back to fix
    lines = text.splitlines()
    assert lines[0] == "[WORKFLOW: Bug Fix Workflow]"
    assert (
        lines[1] == "  reproduce [DONE] → fix [DONE] → test [FAILED] → fix << CURRENT (attempt 2/3)"
    )
    assert "    Action: Make the minimal code change" in lines
    assert "    Tool: code_execution_tool" in lines
    assert "    Hint: Edit the file(s) with the fix" in lines
    assert "    Verify: the tool must produce some output" in lines
    assert "    On success → test — Test" in lines
    assert "    On fail (retries left) → retry fix (1 attempt left)" in lines
    assert "    On fail (exhausted) → escalate: unable to fix" in lines
    assert "Execute the current step. Do not skip ahead." in lines
    assert lines[-1].startswith("[waygraph] Plan: Bug Fix Workflow (bugfix) · node fix · ")


def test_a_linear_plan_is_shown_as_document_000_shows_it():
    plan = Plan.model_validate(
        {
            "id": "git_feature_branch",
            "name": "Feature branch",
            "triggers": ["feature branch"],
            "trigger_threshold": 1,
            "steps": [
                {"name": "Check current branch status", "verify": {"type": "any_output"}},
                {
                    "name": "Create feature branch",
                    "action": "Create and checkout a new branch",
                    "verify": {"type": "output_contains", "value": "Switched"},
                },
                {"name": "Push", "verify": {"type": "any_output"}},
            ],
        }
    )
    nav = Navigator(Library([plan]), store="memory://", strict=True)
    nav.turn("s", user_message="make a feature branch")
    lines = turn(nav, tool_output="On branch main").splitlines()
    assert lines[:3] == [
        "[ACTIVE PLAN: Feature branch]",
        "  Step 1/3: Check current branch status [DONE]",
        "  Step 2/3: Create feature branch << CURRENT (attempt 1)",
    ]
    assert "    Action: Create and checkout a new branch" in lines
    assert "  Step 3/3: Push [PENDING]" in lines
    assert "Execute Step 2 now. Do not skip ahead. Verify before proceeding." in lines


def test_a_decision_that_routed_this_turn_is_described():
    plan = (
        Graph.builder()
        .task("probe", verify={"type": "any_output"})
        .decision("status", description="Is the service up?")
        .task("deploy", verify={"type": "any_output"})
        .task("restart", verify={"type": "any_output"})
        .exit("done")
        .edge("start", "probe")
        .edge("probe", "status", "on_success")
        .edge("status", "deploy", when={"type": "output_contains", "value": "running"})
        .edge("status", "restart", "always")
        .edge("deploy", "done", "on_success")
        .edge("restart", "done", "on_success")
        .plan("svc", triggers=["check service"], trigger_threshold=1)
    )
    nav = Navigator(Library([plan]), store="memory://", strict=True)
    nav.turn("s", user_message="check service")
    text = turn(nav, tool_output="service is running")
    assert "  Decided at status (Is the service up?): → deploy" in text.splitlines()
    assert "Decided at" not in turn(nav, tool_output="deployed v2", source="model")


def test_events_carry_the_documents_keys():
    nav = Navigator(Library([fix_loop()]), store="memory://", strict=True)
    g = nav.turn("s", user_message="fix bug please")
    activated = next(e for e in g.events if e.type == "plan_activated")
    assert activated["plan"] == "bugfix"
    g = nav.turn("s", tool_output="AssertionError")
    verified = next(e for e in g.events if e.type == "node_verified")
    followed = next(e for e in g.events if e.type == "edge_followed")
    assert verified["outcome"] == "success"
    assert (followed["from"], followed["to"], followed["condition"]) == (
        "reproduce",
        "fix",
        "on_success",
    )


def test_the_abort_message_names_the_step():
    plan = Plan.model_validate(
        {
            "id": "lin",
            "steps": [
                {"name": "Build", "verify": {"type": "output_contains", "value": "ok"}},
                {
                    "name": "Deploy",
                    "verify": {"type": "output_contains", "value": "ok"},
                    "on_fail": "abort",
                },
            ],
        }
    )
    run, _ = engine.start(plan, run_id="r", turn=1)
    run, _ = engine.observe(plan, run, lambda v: True, turn=2)
    run, _ = engine.observe(plan, run, lambda v: False, turn=3)
    assert run.status == "aborted"
    assert render.context(plan, run).startswith("Plan aborted due to step Deploy failure")


def test_the_model_is_told_where_an_edge_really_leads():
    # Two on_success edges out of a task, the first with a `when`: the engine
    # ignores `when` out of a task and takes the first; the text says the same.
    plan = (
        Graph.builder()
        .task("a", verify={"type": "any_output"})
        .task("b", verify={"type": "any_output"})
        .task("c", verify={"type": "any_output"})
        .exit("done")
        .edge("start", "a")
        .edge("a", "b", "on_success", when={"type": "output_contains", "value": "x"})
        .edge("a", "c", "on_success")
        .edge("b", "done", "on_success")
        .edge("c", "done", "on_success")
        .plan("w", triggers=["go"], trigger_threshold=1)
    )
    nav = Navigator(Library([plan]), store="memory://", strict=True)
    text = nav.turn("s", user_message="go").text or ""
    assert "    On success → b" in text.splitlines()
    assert nav.turn("s", tool_output="y").run["current_node"] == "b"
