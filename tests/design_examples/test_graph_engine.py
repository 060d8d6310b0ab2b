"""Document 003, the graph engine ("Attractor Integration"), as it writes it.

Its bug-fix workflow (section "Schema") sits, unchanged, in a plan library
file beside document 000's linear schema example, as the document says
("Graphs are stored in the same plan library file ... plans with `steps`
continue to work"): ``fixtures/graph_library.json``, loaded by
``waygraph.load_library`` and driven through ``waygraph.Navigator``. Each of
the document's nine testing criteria is one test under its own name. Where a
criterion is stated in Agent-Zero's terms (the log, ``agent._htn_state``,
``agent._org_pace_level``, the org dispatcher's filter), the same run is also
driven through waygraph's Agent-Zero adapter (:mod:`.agent_zero_standin`).

A tool result with no output is how a step of this graph fails: every task
but ``test`` checks ``any_output``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import waygraph
from tests.design_examples.agent_zero_standin import AgentZero
from tests.strategies import graph_plans
from waygraph import Navigator, engine, load_library
from waygraph.integrations.agent_zero import runtime
from waygraph.model import Plan

FIXTURES = Path(__file__).parent / "fixtures"
LIBRARY = FIXTURES / "graph_library.json"
DESIGNS = Path(__file__).resolve().parents[3] / "shared" / "designs"
BUG = "fix the bug in /tmp/test.py"  # the document's example message
#: The document's event types ("Event System").
DOCUMENT_EVENTS = {
    "plan_activated",
    "node_entered",
    "node_verified",
    "retry_triggered",
    "edge_followed",
    "plan_completed",
    "plan_escalated",
    "plan_expired",
}


@pytest.fixture(autouse=True)
def _fresh_adapter():
    runtime.reset()
    yield
    runtime.reset()


@pytest.fixture
def nav(tmp_path: Path) -> Navigator:
    return Navigator(
        load_library(LIBRARY), store=f"sqlite:///{tmp_path / 'wg.db'}", workspace=tmp_path
    )


def turn(nav: Navigator, **kwargs: Any) -> Any:
    g = nav.turn("s", **kwargs)
    assert g.error is None, g.error
    return g


def to_fix(nav: Navigator) -> None:
    """Activate the workflow and pass reproduce and isolate."""
    turn(nav, user_message=BUG, domain="bugfix")
    turn(nav, tool_output="NameError: name 'totl' is not defined", exit_code=1)
    turn(nav, tool_output="test.py line 3 uses totl; the variable is total")


def fail_fix(nav: Navigator, attempt: int) -> Any:
    # A different edit each time: the same failing call three times in a row
    # is waygraph's repeat rule, not the retry budget this test is about.
    return turn(nav, tool_output="", tool_args={"code": f"edit attempt {attempt}"})


def outcome(visit: dict[str, Any]) -> dict[str, Any]:
    """A ``visited`` entry in the document's keys (waygraph adds what was ``tried``)."""
    return {k: visit[k] for k in ("outcome", "attempts")}


def of(events: list[Any], kind: str) -> list[Any]:
    return [e for e in events if e["type"] == kind]


def test_the_fixture_holds_the_documents_plans_unchanged():
    if not (DESIGNS / "README.md").is_file():
        pytest.skip(f"the design documents are not at {DESIGNS}")
    plans = json.loads(LIBRARY.read_text())["plans"]
    doc003 = next(DESIGNS.glob("003_*.txt")).read_text()
    graph = re.search(r"### Schema\s*```json\n(.*?)```", doc003, re.S)
    assert graph is not None and json.loads(graph.group(1)) == plans["bugfix_workflow"]
    doc000 = next(DESIGNS.glob("000_*.txt")).read_text()
    schema = re.search(r"### Schema\s*```json\n(.*?)```", doc000, re.S)
    assert schema is not None
    assert json.loads(schema.group(1))["plans"]["<plan_id>"] == plans["git_feature_branch"]


# ------------------------------------------------------------------ the nine criteria


def test_1_linear_backward_compatibility(nav: Navigator):
    """A plan still in `steps` form: step advancement, verification, staleness."""
    message = "create a new branch: a feature branch for the login fix"
    g = turn(nav, user_message=message, domain="git_ops")
    assert g.run["plan_id"] == "git_feature_branch" and g.run["mode"] == "linear"
    lines = g.text.splitlines()
    assert lines[:6] == [
        "[ACTIVE PLAN: Human-readable plan name]",
        "  Step 1/1: Check current branch status << CURRENT",
        "    Action: Run git status and git branch to confirm clean state",
        "    Tool: code_execution_tool",
        "    Hint (example, adapt it): git status && git branch",
        "    Verify: output must contain 'On branch'",
    ]
    assert "Execute Step 1 now. Do not skip ahead. Verify before proceeding." in lines
    # Verification: on_fail "warn" keeps the step and lets the model retry.
    g = turn(nav, tool_output="fatal: not a git repository")
    assert g.run["status"] == "running" and g.run["current_step"] == 0
    assert "  Step 1/1: Check current branch status << CURRENT (attempt 2)" in g.text
    # Advancement: the verified step completes the one-step plan.
    g = turn(nav, tool_output="On branch main\nnothing to commit, working tree clean")
    assert g.run["status"] == "completed" and g.run["steps_completed"] == [0]
    # Staleness: stale_after_turns 10, so the 11th turn without progress expires it.
    nav.turn("t", user_message=message, domain="git_ops")
    for _ in range(10):
        assert nav.turn("t").run["status"] == "running"
    g = nav.turn("t")
    assert g.run["status"] == "expired" and of(g.events, "plan_expired")


def test_2_graph_activation(nav: Navigator, tmp_path: Path):
    g = turn(nav, user_message=BUG, domain="bugfix")
    activated = of(g.events, "plan_activated")[0]
    assert activated["plan"] == "bugfix_workflow" and g.run["mode"] == "graph"
    # The graph's structure, not a step list: the path and where each outcome leads.
    lines = g.text.splitlines()
    assert lines[:8] == [
        "[WORKFLOW: Bug Fix Workflow]",
        "  reproduce << CURRENT (attempt 1/1)",
        "    Action: Run the failing code/command to confirm the bug exists and capture "
        "error output",
        "    Tool: code_execution_tool",
        "    Hint (example, adapt it): Run the command or script that triggers the bug",
        "    Verify: any non-empty output",
        "    On success → isolate",
        "    On fail (exhausted) → gather_context",
    ]
    assert not any(line.lstrip().startswith("Step ") for line in lines)
    # The log line, through the Agent-Zero adapter.
    a0 = AgentZero(tmp_path / "a0", LIBRARY)
    a0.user(BUG, domain="bugfix")
    assert (a0.iteration() or "").startswith("[WORKFLOW: Bug Fix Workflow]")
    assert "[HTN] Plan activated: Bug Fix Workflow (7 nodes, graph)" in a0.log
    assert (a0.htn_state() or {})["mode"] == "graph"


def test_3_branching_on_failure(nav: Navigator):
    turn(nav, user_message=BUG, domain="bugfix")
    # `test -f /tmp/test.py && python3 /tmp/test.py` prints nothing: no such file.
    g = turn(nav, tool_output="", exit_code=1)
    followed = of(g.events, "edge_followed")
    assert [(e["from"], e["to"], e["condition"]) for e in followed] == [
        ("reproduce", "gather_context", "on_fail")
    ]
    assert g.run["status"] == "running" and g.run["current_node"] == "gather_context"
    assert not of(g.events, "stall")
    g = turn(nav, tool_output="ls /tmp: test_old.py; the script was renamed")
    followed = of(g.events, "edge_followed")
    assert [(e["from"], e["to"], e["condition"]) for e in followed] == [
        ("gather_context", "reproduce", "on_success")
    ]
    assert g.run["current_node"] == "reproduce"
    assert g.text.splitlines()[1] == (
        "  reproduce [FAILED] → gather_context [DONE] → reproduce << CURRENT (attempt 1/1)"
    )


def test_4_retry_loop(nav: Navigator):
    to_fix(nav)
    g = fail_fix(nav, 1)
    assert g.run["current_node"] == "fix"
    retry = of(g.events, "retry_triggered")
    assert [(e["node"], e["attempt"], e["max_attempts"]) for e in retry] == [("fix", 2, 3)]
    assert "    On fail (retries left) → retry fix" in g.text.splitlines()
    g = fail_fix(nav, 2)
    assert [e["attempt"] for e in of(g.events, "retry_triggered")] == [3]
    lines = g.text.splitlines()
    assert "  reproduce [DONE] → isolate [DONE] → fix << CURRENT (attempt 3/3)" in lines
    assert "    On fail (retries left) → retry fix" not in lines
    assert "    On fail (exhausted) → escalate: unable to fix" in lines
    g = fail_fix(nav, 3)  # max_retries 2: the third failure exhausts the node
    followed = of(g.events, "edge_followed")
    assert [(e["from"], e["to"], e["condition"]) for e in followed] == [
        ("fix", "escalate_stuck", "on_exhaust")
    ]
    assert not of(g.events, "retry_triggered") and not of(g.events, "repeat_detected")
    verified = [e for e in nav.events("s") if e["type"] == "node_verified" and e["node"] == "fix"]
    assert [e["outcome"] for e in verified] == ["fail", "fail", "fail"]
    assert outcome(g.run["visited"]["fix"]) == {"outcome": "fail", "attempts": 3}


def test_5_escalation_node(nav: Navigator, tmp_path: Path):
    to_fix(nav)
    for attempt in (1, 2, 3):
        g = fail_fix(nav, attempt)
    assert g.run["status"] == "escalated" and g.run["pace_level"] == "contingent"
    escalated = of(g.events, "plan_escalated")[0]
    assert escalated["pace_level"] == "contingent"
    assert escalated["reason"] == "Fix attempts exhausted without passing tests"
    # The model is told the plan was escalated, and why.
    assert g.text.splitlines()[:2] == [
        "Plan escalated: Fix attempts exhausted without passing tests",
        "Pace level: contingent",
    ]
    # Agent-Zero: the PACE level on the agent, the log, and the plan's final
    # state, readable (status escalated, why, at which PACE level) until the
    # next plan starts: the supervisor and SALUTE read it.
    a0 = escalate(tmp_path / "a0")
    assert a0.pace_level() == "contingent"
    assert (
        "[HTN] Plan 'Bug Fix Workflow' escalated to PACE contingent: "
        "Fix attempts exhausted without passing tests"
    ) in a0.log
    state = a0.htn_state()
    assert state is not None
    assert (state["status"], state["reason"], state["pace_level"]) == (
        "escalated",
        "Fix attempts exhausted without passing tests",
        "contingent",
    )
    assert state["path"][-4:] == ["fix", "fix", "fix", "escalate_stuck"]
    a0.iteration()  # an iteration without a new plan keeps it
    assert (a0.htn_state() or {}).get("status") == "escalated"
    a0.user("create a new branch: a feature branch", domain="git_ops")
    a0.iteration()
    assert (a0.htn_state() or {}).get("plan_id") == "git_feature_branch"
    assert (a0.htn_state() or {}).get("status") == "running"


def escalate(root: Path) -> AgentZero:
    """The bug-fix workflow driven to its escalation node through the adapter."""
    a0 = AgentZero(root, LIBRARY)
    a0.user(BUG, domain="bugfix")
    a0.iteration()
    for output in ("NameError: totl", "test.py line 3", "", " ", "\n"):
        a0.tool(output)
        a0.iteration()
    return a0


#: The org kernel's emitter as the Exocortex dispatcher defines it (a module
#: function in its extension file); this one records what it was given.
ORG_KERNEL = """
def _emit_salute(agent, role, org, loop_data):
    agent.salutes.append((role["role_id"], dict(agent._htn_state), agent._org_pace_level))
"""


def test_escalation_emits_an_immediate_salute_through_the_org_kernel(tmp_path: Path):
    root = tmp_path / "a0"
    folder = root / "extensions" / "python" / "before_main_llm_call"
    folder.mkdir(parents=True)
    (folder / "_12_org_dispatcher.py").write_text(ORG_KERNEL, encoding="utf-8")
    a0 = AgentZero(root, LIBRARY)
    a0.agent.salutes = []  # type: ignore[attr-defined]
    a0.agent._org_active = {"name": "org"}  # type: ignore[attr-defined]
    a0.agent._org_active_role = {"role_id": "developer"}  # type: ignore[attr-defined]
    a0.user(BUG, domain="bugfix")
    a0.iteration()
    for output in ("NameError: totl", "test.py line 3", "", " ", "\n"):
        a0.tool(output)
        a0.iteration()
    [(role, state, pace)] = a0.agent.salutes  # type: ignore[attr-defined]
    assert (role, pace) == ("developer", "contingent")
    assert state["status"] == "escalated" and state["plan_id"] == "bugfix_workflow"


def test_a_missing_or_failing_salute_emitter_never_fails_the_hook(tmp_path: Path):
    root = tmp_path / "a0"
    folder = root / "extensions" / "python" / "before_main_llm_call"
    folder.mkdir(parents=True)
    (folder / "_12_org_dispatcher.py").write_text(
        "def _emit_salute(agent, role, org, loop_data):\n    raise OSError('disk full')\n",
        encoding="utf-8",
    )
    a0 = AgentZero(root, LIBRARY)
    a0.agent._org_active = {"name": "org"}  # type: ignore[attr-defined]
    a0.agent._org_active_role = {"role_id": "developer"}  # type: ignore[attr-defined]
    a0.user(BUG, domain="bugfix")
    a0.iteration()
    for output in ("NameError: totl", "test.py line 3", "", " "):
        a0.tool(output)
        a0.iteration()
    a0.tool("\n")
    assert (a0.iteration() or "").startswith("Plan escalated: Fix attempts exhausted")
    assert "[HTN] SALUTE report not sent: OSError: disk full" in a0.log
    assert (a0.htn_state() or {}).get("status") == "escalated"
    # No org kernel in the tree: nothing to call, nothing said.
    plain = escalate(tmp_path / "plain")
    assert "SALUTE" not in plain.log and plain.pace_level() == "contingent"


def test_the_mirror_is_the_documents_traversal_state(tmp_path: Path):
    """Section "Traversal State": the fix node on its second attempt, as the example."""
    a0 = AgentZero(tmp_path / "a0", LIBRARY)
    a0.user(BUG, domain="bugfix")
    a0.iteration()
    for output in ("NameError: totl", "test.py line 3", ""):
        a0.tool(output)
        a0.iteration()
    state = a0.htn_state()
    assert state is not None
    assert state["current_node"] == "fix"
    assert state["path"] == ["reproduce", "isolate", "fix", "fix"]
    assert outcome(state["visited"]["fix"]) == {"outcome": "pending", "attempts": 2}
    assert outcome(state["visited"]["reproduce"]) == {"outcome": "success", "attempts": 1}
    assert (state["completed_nodes"], state["total_nodes"]) == (2, 9)
    assert state["turns_since_transition"] == 1 and state["stale_after_turns"] == 15


def succeed(nav: Navigator) -> Any:
    to_fix(nav)
    turn(nav, tool_output="patched test.py: totl -> total")
    turn(nav, tool_output="sum is 6")  # test: the output must not contain "error"
    return turn(nav, tool_output="12 passed in 0.3s")


def test_6_successful_completion(nav: Navigator, tmp_path: Path):
    g = succeed(nav)
    assert g.run["status"] == "completed" and of(g.events, "plan_completed")
    assert g.run["path"] == ["reproduce", "isolate", "fix", "test", "verify_no_regression", "done"]
    for node in ("reproduce", "isolate", "fix", "test", "verify_no_regression"):
        assert outcome(g.run["visited"][node]) == {"outcome": "success", "attempts": 1}, node
    assert g.text.startswith("Plan completed: 'Bug Fix Workflow'")
    # Cleared: the next message guides nothing.
    assert turn(nav, user_message="thanks!").text is None
    a0 = AgentZero(tmp_path / "a0", LIBRARY)
    a0.user(BUG, domain="bugfix")
    a0.iteration()
    for output in ("NameError", "line 3", "patched", "sum is 6", "12 passed"):
        assert a0.htn_state() is not None
        a0.tool(output)
        a0.iteration()
    assert "[HTN] Plan 'Bug Fix Workflow' completed! (5/7 nodes)" in a0.log
    assert a0.htn_state() is None


def test_7_event_log(nav: Navigator):
    # A whole traversal: reproduce, isolate, three failed fixes, the escalation.
    to_fix(nav)
    for attempt in (1, 2, 3):
        fail_fix(nav, attempt)
    record, stored = nav.state("s"), nav.events("s")
    assert record["status"] == "escalated" and record["events"]
    assert {e["type"] for e in stored} <= DOCUMENT_EVENTS
    assert [e["seq"] for e in stored] == list(range(1, len(stored) + 1))
    assert [e["turn"] for e in stored] == sorted(e["turn"] for e in stored)
    assert [e["type"] for e in stored[-3:]] == ["edge_followed", "node_entered", "plan_escalated"]
    # The store's events also carry the judged output (an excerpt the record leaves out).
    assert record["events"] == [
        {k: v for k, v in e.items() if k not in ("seq", "output")} for e in stored
    ]
    # The document's example, key for key (its turns 42/43 are this run's 1/2).
    events = record["events"]
    assert events[0]["type"] == "plan_activated" and events[0]["plan"] == "bugfix_workflow"
    assert events[0]["node"] == "reproduce"  # this graph's start
    assert [{k: e[k] for k in ("type", "turn", "node")} for e in events[1:3]] == [
        {"type": "node_entered", "turn": 1, "node": "reproduce"},
        {"type": "node_verified", "turn": 2, "node": "reproduce"},
    ]
    assert events[2]["outcome"] == "success"
    assert {k: events[3][k] for k in ("type", "turn", "from", "to", "condition")} == {
        "type": "edge_followed",
        "turn": 2,
        "from": "reproduce",
        "to": "isolate",
        "condition": "on_success",
    }


def test_the_event_log_keeps_the_last_50_events():
    # A loop with unbounded retries, so the run goes on long enough.
    plan = (
        waygraph.Graph.builder()
        .task("edit", verify={"type": "any_output"}, max_retries=None)
        .task("check", verify={"type": "output_not_contains", "value": "error"})
        .exit("done")
        .edge("start", "edit")
        .edge("edit", "check", "on_success")
        .edge("check", "edit", "on_fail")
        .edge("check", "done", "on_success")
        .plan("loop", triggers=["loop"], trigger_threshold=1, max_transitions=1000)
    )
    nav = Navigator(waygraph.Library([plan]), store="memory://", strict=True)
    nav.turn("s", user_message="loop")
    for i in range(30):
        nav.turn("s", tool_output=f"edit {i}" if i % 2 == 0 else f"error {i}")
    record, stored = nav.state("s"), nav.events("s")
    assert record["status"] == "running" and len(stored) > 50
    assert record["events"] == [
        {k: v for k, v in e.items() if k not in ("seq", "output")} for e in stored[-50:]
    ]


def supervisor(state: dict[str, Any] | None, stall_after: int = 3) -> tuple[str, bool] | None:
    """A supervisor as document 003 describes it: it reads these fields and no others."""
    if state is None:
        return None
    progress = f"{state['plan_name']} ({state['plan_id']}): {state['current_step']}"
    progress += f"/{state['total_steps']}"
    return progress, state["turns_since_progress"] >= stall_after


def test_8_supervisor_compatibility(tmp_path: Path):
    for message, domain, outputs, total in (
        (BUG, "bugfix", ("NameError", "line 3"), 7),
        ("create a new branch: a feature branch", "git_ops", ("fatal: no repo",), 1),
    ):
        a0 = AgentZero(tmp_path / domain, LIBRARY)
        a0.user(message, domain=domain)
        a0.iteration()
        state = a0.htn_state()
        assert supervisor(state) == (f"{state['plan_name']} ({state['plan_id']}): 0/{total}", False)
        for field in ("plan_id", "plan_name", "mode", "current_node", "visited", "path"):
            assert field in state
        for field in ("total_nodes", "completed_nodes", "started_turn", "stale_after_turns"):
            assert field in state
        assert state["turns_since_transition"] == 0
        for output in outputs:
            a0.tool(output)
            a0.iteration()
        reported, stalled = supervisor(a0.htn_state()) or ("", True)
        # Progress: the graph's two verified nodes; the linear step failed (warn).
        assert reported.endswith(f": {2 if total == 7 else 0}/{total}") and not stalled
        for _ in range(3):  # the agent goes quiet: no tool results
            a0.iteration()
        assert supervisor(a0.htn_state()) == (reported, True)  # a stall, seen as before


def test_9_org_kernel_integration(nav: Navigator, tmp_path: Path):
    # The active role's capabilities do not list the matched plan: no activation.
    g = turn(nav, user_message=BUG, domain="bugfix", allowed_plans=["git_feature_branch"])
    assert g.run is None and g.text is None
    g = turn(nav, user_message=BUG, domain="bugfix", allowed_plans=["bugfix_workflow"])
    assert g.run["plan_id"] == "bugfix_workflow"
    a0 = AgentZero(tmp_path / "a0", LIBRARY)
    a0.agent.data["_org_htn_allowed_plans"] = ["git_feature_branch"]
    a0.user(BUG, domain="bugfix")
    assert a0.iteration() is None and a0.htn_state() is None
    assert "[HTN]" not in a0.log
    a0.agent.data["_org_htn_allowed_plans"] = ["git_feature_branch", "bugfix_workflow"]
    a0.user(BUG, domain="bugfix")
    assert (a0.iteration() or "").startswith("[WORKFLOW: Bug Fix Workflow]")


# ------------------------------------------------------------------ the document's other rules


def test_context_injection_format_is_the_documents_example(nav: Navigator):
    """Section "Context Injection Format": the fix node on its second attempt."""
    to_fix(nav)
    lines = fail_fix(nav, 1).text.splitlines()
    assert lines[:9] == [
        "[WORKFLOW: Bug Fix Workflow]",
        "  reproduce [DONE] → isolate [DONE] → fix << CURRENT (attempt 2/3)",
        "    Action: Make the minimal code change to fix the identified root cause",
        "    Tool: code_execution_tool",
        "    Hint (example, adapt it): Edit the file(s) with the fix",
        "    Verify: any non-empty output",
        "    On success → test",
        "    On fail (retries left) → retry fix",
        "    On fail (exhausted) → escalate: unable to fix",
    ]
    # waygraph's own lines sit below the document's, then its closing lines.
    execute = lines.index("Execute the current step. Do not skip ahead.")
    assert lines[execute - 1] == "" and all(
        line.startswith("    ") for line in lines[9 : execute - 1]
    )
    assert lines[execute + 1].startswith("[waygraph] Plan: Bug Fix Workflow (bugfix_workflow)")


def test_traversal_state_has_the_documents_fields(nav: Navigator):
    to_fix(nav)
    state = fail_fix(nav, 1).run
    assert {k: state[k] for k in ("plan_id", "plan_name", "mode", "current_node")} == {
        "plan_id": "bugfix_workflow",
        "plan_name": "Bug Fix Workflow",
        "mode": "graph",
        "current_node": "fix",
    }
    assert outcome(state["visited"]["reproduce"]) == {"outcome": "success", "attempts": 1}
    assert outcome(state["visited"]["isolate"]) == {"outcome": "success", "attempts": 1}
    assert outcome(state["visited"]["fix"]) == {
        "outcome": "fail",  # the document writes "pending" for the attempt under way
        "attempts": 2,
    }
    assert state["path"] == ["reproduce", "isolate", "fix"]  # a retry is not a new entry
    assert (state["completed_nodes"], state["total_nodes"]) == (2, 7)
    # A retry is no transition: 1, as in the document's example.
    assert state["stale_after_turns"] == 15 and state["turns_since_transition"] == 1


def test_a_decision_node_description_says_why_the_run_was_routed(tmp_path: Path):
    # The document's graph leaves decide_approach unconnected; wired in here as
    # its description suggests (isolate -> decide_approach -> fix or escalate).
    data = json.loads(LIBRARY.read_text())
    graph = data["plans"]["bugfix_workflow"]["graph"]
    graph["edges"] = [e for e in graph["edges"] if e["from"] != "isolate"] + [
        {"from": "isolate", "to": "decide_approach", "condition": "on_success"},
        {
            "from": "decide_approach",
            "to": "escalate_stuck",
            "when": {"type": "output_contains", "value": "redesign"},
        },
        {"from": "decide_approach", "to": "fix", "condition": "always"},
    ]
    library = tmp_path / "wired.json"
    library.write_text(json.dumps(data))
    nav = Navigator(load_library(library), store="memory://", strict=True)
    turn(nav, user_message=BUG, domain="bugfix")
    turn(nav, tool_output="NameError")
    # isolate passes, the decision is reached and routes on the same result.
    g = turn(nav, tool_output="a one-line typo in test.py")
    why = (
        "  Decided at decide_approach (Based on isolation results, determine if this is "
        "a simple fix or needs deeper work): → fix"
    )
    assert g.run["current_node"] == "fix" and why in g.text.splitlines()
    assert "Decided at" not in (turn(nav, tool_output="patched").text or "")
    nav.turn("t", user_message=BUG, domain="bugfix")
    nav.turn("t", tool_output="NameError")
    g = nav.turn("t", tool_output="the module needs a redesign")
    assert g.run["status"] == "escalated"
    assert why.replace("→ fix", "→ escalate_stuck") in g.text.splitlines()


def _judge(passes: bool):
    return lambda verify: passes


@settings(max_examples=150, deadline=None)
@given(plan=graph_plans(), results=st.lists(st.booleans(), max_size=25))
def test_every_event_carries_the_documents_keys(plan: Plan, results: list[bool]):
    run, events = engine.start(plan, run_id="r", turn=1)
    every = list(events)
    for n, passes in enumerate(results, start=2):
        run, events = engine.advance(plan, run, turn=n, judge=_judge(passes))
        every += events
    for event in every:
        if event["type"] == "plan_activated":
            assert event["plan"] == plan.id
        if event["type"] == "node_verified":
            assert event["outcome"] in ("success", "fail", "unknown")
        if event["type"] == "edge_followed":
            edge = (event["from"], event["to"], event["condition"])
            assert edge in {(e.from_, e.to, e.condition) for e in plan.graph.edges}
