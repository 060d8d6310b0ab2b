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
    # Document 003's lines, in its order; waygraph's own lines come below them.
    assert lines[2:9] == [
        "    Action: Make the minimal code change",
        "    Tool: code_execution_tool",
        "    Hint (example, adapt it): Edit the file(s) with the fix",
        "    Verify: any non-empty output",
        "    On success → test",
        "    On fail (retries left) → retry fix",
        "    On fail (exhausted) → escalate: unable to fix",
    ]
    assert lines[9:11] == ["    Node: fix — Fix", "    Attempt 2 of 3 (1 attempt left)."]
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
        "  Step 2/3: Create feature branch << CURRENT",
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


# ------------------------------------------------------------------ issue 15, checked again


def probe_then_decide(*, stuck_when: str | None = None) -> Plan:
    """probe -> (checkpoint) -> decision ``status`` -> deploy / restart / stuck."""
    builder = (
        Graph.builder()
        .checkpoint("saved")
        .task("probe", verify={"type": "any_output"})
        .decision("status", description="Is the service up?")
        .task("deploy", verify={"type": "any_output"})
        .escalate("stuck", reason="the service is gone")
        .exit("done")
        .edge("start", "saved")
        .edge("saved", "probe")
        .edge("probe", "status", "on_success")
        .edge("status", "deploy", when={"type": "output_contains", "value": "running"})
        .edge("deploy", "done", "on_success")
    )
    if stuck_when is not None:
        builder = builder.edge(
            "status", "stuck", when={"type": "output_contains", "value": stuck_when}
        )
    return builder.plan("svc", triggers=["check service"], trigger_threshold=1)


def test_a_decision_that_routes_to_an_escalation_is_described_in_the_final_message():
    nav = Navigator(Library([probe_then_decide(stuck_when="gone")]), store="memory://")
    nav.turn("s", user_message="check service")
    g = nav.turn("s", tool_output="service gone")
    assert g.run["status"] == "escalated"
    assert "  Decided at status (Is the service up?): → stuck" in (g.text or "").splitlines()
    assert (g.text or "").startswith("Plan escalated: the service is gone")


def test_a_decision_that_found_no_route_is_not_described_as_routing():
    nav = Navigator(Library([probe_then_decide()]), store="memory://", strict=True)
    nav.turn("s", user_message="check service")
    g = nav.turn("s", tool_output="service is down")  # no route out of status: it waits
    assert g.run["current_node"] == "status"
    assert any(e.type == "stall" for e in g.events)
    assert "Decided at" not in (g.text or "")


def test_a_rewind_forgets_the_decisions_of_the_turn_it_undid():
    nav = Navigator(Library([probe_then_decide()]), store="memory://", strict=True)
    nav.turn("s", user_message="check service")
    assert "Decided at status" in (nav.turn("s", tool_output="running").text or "")
    g = nav.rewind("s")
    assert g.run["current_node"] == "probe"
    assert "Decided at" not in (g.text or "")
    assert "Decided at" not in (nav.context("s") or "")


def long_linear_plan(steps: int = 12) -> Plan:
    return Plan.model_validate(
        {
            "id": "long",
            "name": "Long",
            "triggers": ["go long"],
            "trigger_threshold": 1,
            "steps": [
                {"name": f"Step number {i} of the long plan", "verify": {"type": "any_output"}}
                for i in range(1, steps + 1)
            ],
        }
    )


def test_max_tokens_applies_to_linear_plans_too():
    def text_at(max_tokens: int | None) -> str:
        nav = Navigator(
            Library([long_linear_plan()]), store="memory://", strict=True, max_tokens=max_tokens
        )
        nav.turn("s", user_message="go long")
        for i in range(6):
            g = nav.turn("s", tool_output=f"done {i}")
        return g.text or ""

    full, short = text_at(None), text_at(150)
    assert "  Step 1/12: Step number 1 of the long plan [DONE]" in full.splitlines()
    assert len(short) < len(full)
    lines = short.splitlines()
    assert lines[0] == "[ACTIVE PLAN: Long]"
    # The current step and its details are never dropped; far steps are.
    assert "  Step 7/12: Step number 7 of the long plan << CURRENT" in lines
    assert "    Verify: any non-empty output" in lines
    assert "Execute Step 7 now. Do not skip ahead. Verify before proceeding." in lines
    assert "  Step 1/12: Step number 1 of the long plan [DONE]" not in lines
    assert "  Step 12/12: Step number 12 of the long plan [PENDING]" not in lines
    assert "  …" in lines


def test_max_tokens_shortens_waygraphs_own_closing_line_before_the_documents_lines():
    nav = Navigator(Library([fix_loop()]), store="memory://", strict=True, max_tokens=60)
    nav.turn("s", user_message="fix bug please")
    text = turn(nav, tool_output="AssertionError")
    full = render.context(fix_loop(), engine.from_record(nav.state("s") or {}))
    assert len(text) < len(full)
    assert INSTRUCTION_TAIL not in text and INSTRUCTION_TAIL in full
    # The closing line still names plan and node (the scripted eval models read it).
    closing = text.splitlines()[-1]
    assert closing.startswith("[waygraph] Plan: Bug Fix Workflow (bugfix) · node fix · ")
    assert "    Action: Make the minimal code change" in text.splitlines()


INSTRUCTION_TAIL = "Claims are not evidence"


def test_the_model_is_told_the_edge_the_engine_takes_when_weights_decide():
    plan = (
        Graph.builder()
        .task("a", verify={"type": "any_output"})
        .task("b", verify={"type": "any_output"})
        .task("c", verify={"type": "any_output"})
        .exit("done")
        .edge("start", "a")
        .edge("a", "b", "on_success", when={"type": "output_contains", "value": "x"})
        .edge("a", "c", "on_success", weight=2)
        .edge("b", "done", "on_success")
        .edge("c", "done", "on_success")
        .plan("w", triggers=["go"], trigger_threshold=1)
    )
    nav = Navigator(Library([plan]), store="memory://", strict=True)
    text = nav.turn("s", user_message="go").text or ""
    assert "    On success → c" in text.splitlines()
    assert nav.turn("s", tool_output="x").run["current_node"] == "c"


def test_the_progress_summary_ends_one_sentence_with_one_full_stop():
    from waygraph.library import load_library
    from waygraph.render import progress_summary

    plan = load_library()["bugfix_workflow"]
    run, _ = engine.start(plan, run_id="r", turn=1)
    node = plan.graph.nodes[run.current_node or ""]
    assert (node.action or "").endswith(".")  # the action ends its own sentence
    summary = progress_summary(plan, run)
    assert summary.endswith(node.action or "") and not summary.endswith("..")


def test_a_negated_check_reads_as_plain_words():
    from waygraph.model import Verify
    from waygraph.verify import describe

    def negated(**inner: Any) -> str:
        return describe(Verify(type="not", checks=(Verify(**inner),)))

    assert negated(type="regex", value="FAIL", flags="i") == "output must not match /FAIL/i"
    assert negated(type="output_not_contains", value="ok") == "output must contain 'ok'"
    assert negated(type="exit_code_zero") == "the command must fail (a non-zero exit code)"
    assert negated(type="exit_code", value=2) == "not (exit code must be 2)"
