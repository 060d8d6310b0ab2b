"""Document 000, the HTN plan templates, where waygraph covers it: linear plans.

The document's library (its schema example and its ``bugfix_workflow``
example plan), unchanged in ``fixtures/htn_plan_library.json``, loaded by
``waygraph.load_library`` and driven through ``waygraph.Navigator``: its
testing protocol (five tests, under the document's names), then the rules
the protocol leans on: trigger matching, the verification types, the
on-fail actions, staleness, the injection format and the abort message. The
protocol's "Verify: Log shows ..." lines are checked in Agent-Zero's log,
through waygraph's Agent-Zero adapter (:mod:`.agent_zero_standin`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.design_examples.agent_zero_standin import AgentZero
from waygraph import Navigator, load_library
from waygraph.integrations.agent_zero import runtime
from waygraph.library import Library
from waygraph.model import Plan

FIXTURES = Path(__file__).parent / "fixtures"
LIBRARY = FIXTURES / "htn_plan_library.json"
DESIGNS = Path(__file__).resolve().parents[3] / "shared" / "designs"
LOGIN_BUG = "I need to fix a bug in the login module"  # the protocol's message


@pytest.fixture(autouse=True)
def _fresh_adapter():
    runtime.reset()
    yield
    runtime.reset()


@pytest.fixture
def nav(tmp_path: Path) -> Navigator:
    return Navigator(load_library(LIBRARY), store=f"sqlite:///{tmp_path / 'wg.db'}", strict=True)


@pytest.fixture
def a0(tmp_path: Path) -> AgentZero:
    return AgentZero(tmp_path / "a0", LIBRARY)


def turn(nav: Navigator, session: str = "s", **kwargs: Any) -> Any:
    return nav.turn(session, **kwargs)


def test_the_fixture_holds_the_documents_plans_unchanged():
    if not (DESIGNS / "README.md").is_file():
        pytest.skip(f"the design documents are not at {DESIGNS}")
    plans = json.loads(LIBRARY.read_text())["plans"]
    text = next(DESIGNS.glob("000_*.txt")).read_text()
    example = re.search(r"### Example Plan: `bugfix_workflow`\s*```json\n(.*?)```", text, re.S)
    schema = re.search(r"### Schema\s*```json\n(.*?)```", text, re.S)
    assert example is not None and json.loads(example.group(1)) == plans["bugfix_workflow"]
    assert schema is not None
    assert json.loads(schema.group(1))["plans"]["<plan_id>"] == plans["git_feature_branch"]


# ------------------------------------------------------------------ the testing protocol


def test_1_plan_activation(nav: Navigator, a0: AgentZero):
    g = turn(nav, user_message=LOGIN_BUG, domain="bugfix")
    assert g.run["plan_id"] == "bugfix_workflow" and g.run["mode"] == "linear"
    assert g.text.startswith("[ACTIVE PLAN: Bug Fix Workflow]\n")
    a0.user(LOGIN_BUG, domain="bugfix")
    assert (a0.iteration() or "").startswith("[ACTIVE PLAN: Bug Fix Workflow]\n")
    assert "[HTN] Plan activated: Bug Fix Workflow (5 steps)" in a0.log


def test_2_step_advancement(nav: Navigator, a0: AgentZero):
    turn(nav, user_message=LOGIN_BUG, domain="bugfix")
    g = turn(nav, tool_output="AssertionError: login failed for user 'bob'")
    assert g.run["current_step"] == 1 and g.run["steps_completed"] == [0]
    a0.user(LOGIN_BUG, domain="bugfix")
    a0.iteration()
    a0.tool("AssertionError: login failed for user 'bob'")
    assert "[HTN] Step 1 verified: Reproduce the issue" in a0.log


def test_3_staleness_expiry(nav: Navigator, a0: AgentZero):
    turn(nav, user_message=LOGIN_BUG, domain="bugfix")
    # stale_after_turns 15: the user changes topic; the 16th turn expires the plan.
    for n in range(15):
        assert turn(nav, user_message=f"unrelated question {n}").run["status"] == "running"
    g = turn(nav, user_message="and another one")
    assert g.run["status"] == "expired"
    assert turn(nav, user_message="hello again").text is None  # state cleared
    a0.user(LOGIN_BUG, domain="bugfix")
    a0.iteration()
    for n in range(20):
        a0.user(f"unrelated question {n}")
        a0.iteration()
    # The document's code writes "[HTN] Plan '<name>' expired (no progress for N turns)".
    assert "[HTN] Plan 'Bug Fix Workflow' expired (no progress for 15 turns)" in a0.log
    assert a0.htn_state() is None


def test_4_no_false_triggers(nav: Navigator, a0: AgentZero):
    g = turn(nav, user_message="What's the weather like?", domain="conversational")
    assert g.run is None and g.text is None and g.events == []
    a0.user("What's the weather like?", domain="conversational")
    assert a0.iteration() is None
    assert "[HTN]" not in a0.log


def test_5_fallback_integration(a0: AgentZero):
    a0.user(LOGIN_BUG, domain="bugfix")
    a0.iteration()
    for output in ("Traceback: login failed", "auth.py line 40", "patched auth.py"):
        a0.tool(output)
        a0.iteration()
    # Step 4 "Test the fix" is on_fail "block": three failures keep it active.
    for n in (1, 2, 3):
        a0.tool(f"Error: login still fails ({n})")
        text = a0.iteration() or ""
        assert (a0.htn_state() or {})["current_step"] == 3
        assert "  Step 4/5: Test the fix << CURRENT" in text
        assert "    Step 4 failed verification; it is blocked until it passes." in text
    assert a0.log.count("[HTN] Step failed verification: step_4") == 3
    # The tool fallback chain is left alone: waygraph keeps to its own keys.
    assert all(key.startswith("_waygraph") for key in a0.agent.data)


# ------------------------------------------------------------------ trigger matching


def test_triggers_must_reach_the_plans_threshold(nav: Navigator):
    # git_feature_branch: trigger_threshold 2.
    assert turn(nav, user_message="create a branch", domain="git_ops").run is None
    g = turn(nav, user_message="create a new branch off main", domain="git_ops")
    assert g.run["plan_id"] == "git_feature_branch"
    assert sorted(g.events[0]["triggers"]) == ["create branch", "new branch"]


def test_a_plans_domains_must_admit_the_messages_domain(nav: Navigator):
    assert turn(nav, user_message=LOGIN_BUG, domain="git_ops").run is None
    g = turn(nav, user_message=LOGIN_BUG, domain="bugfix")
    assert g.run["plan_id"] == "bugfix_workflow"
    assert g.events[0]["score"] == 2  # one trigger hit plus the domain bonus


# ------------------------------------------------------------------ verification gates


def one_step(verify: dict[str, Any], on_fail: str = "warn") -> Navigator:
    plan = Plan.model_validate(
        {
            "id": "gate",
            "name": "Gate",
            "triggers": ["check it"],
            "trigger_threshold": 1,
            "steps": [{"name": "Check", "verify": verify, "on_fail": on_fail}],
        }
    )
    nav = Navigator(Library([plan]), store="memory://", strict=True)
    nav.turn("s", user_message="check it")
    return nav


@pytest.mark.parametrize(
    ("verify", "failing", "passing"),
    [
        ({"type": "output_contains", "value": "On branch"}, "fatal: no repo", "On branch main"),
        ({"type": "output_not_contains", "value": "error"}, "ERROR: boom", "all good"),
        ({"type": "exit_code_zero"}, ("make: *** failed", 2), ("built", 0)),
        ({"type": "any_output"}, "", "something"),
    ],
)
def test_a_step_advances_only_when_its_verification_passes(verify, failing, passing):
    nav = one_step(verify)
    output, code = failing if isinstance(failing, tuple) else (failing, None)
    g = nav.turn("s", tool_output=output, exit_code=code)
    assert g.run["status"] == "running" and g.run["steps_failed"] == [0]
    output, code = passing if isinstance(passing, tuple) else (passing, None)
    assert nav.turn("s", tool_output=output, exit_code=code).run["status"] == "completed"


def test_file_exists_and_manual_checks(tmp_path: Path):
    target = tmp_path / "backup.tar"
    nav = one_step({"type": "file_exists", "value": str(target)})
    assert nav.turn("s", tool_output="tar: done").run["status"] == "running"
    target.write_text("x")
    assert nav.turn("s", tool_output="tar: done again").run["status"] == "completed"
    # manual: a person confirms (issue 32 overrides the document's "the model
    # reports"): the tool's report waits, the user's own message passes.
    nav = one_step({"type": "manual"})
    assert nav.turn("s", tool_output="checked the page by hand").run["status"] == "running"
    assert nav.turn("s", user_message="looks right to me").run["status"] == "completed"


# ------------------------------------------------------------------ on-fail actions


def test_on_fail_warn_lets_the_model_retry_the_step():
    nav = one_step({"type": "output_contains", "value": "ok"}, "warn")
    g = nav.turn("s", tool_output="nope")
    assert g.run["current_node"] == "step_1" and g.run["status"] == "running"
    assert "  Step 1/1: Check << CURRENT (attempt 2)" in g.text.splitlines()
    assert "try a different approach" in g.text


def test_on_fail_block_says_the_step_failed_verification():
    nav = one_step({"type": "output_contains", "value": "ok"}, "block")
    g = nav.turn("s", tool_output="nope")
    assert g.run["current_node"] == "step_1"
    assert "Step 1 failed verification" in g.text


def test_on_fail_skip_marks_the_step_failed_and_advances():
    plan = Plan.model_validate(
        {
            "id": "skip",
            "triggers": ["skip it"],
            "trigger_threshold": 1,
            "steps": [
                {"name": "Optional", "verify": {"type": "any_output"}, "on_fail": "skip"},
                {"name": "Next", "verify": {"type": "any_output"}},
            ],
        }
    )
    nav = Navigator(Library([plan]), store="memory://", strict=True)
    nav.turn("s", user_message="skip it")
    g = nav.turn("s", tool_output="")
    assert g.run["current_step"] == 0 and g.run["steps_failed"] == [0]
    assert g.run["current_node"] == "step_2"
    assert g.text.splitlines()[1:3] == [
        "  Step 1/2: Optional [FAILED]",
        "  Step 2/2: Next << CURRENT",
    ]


def test_on_fail_abort_clears_the_plan_and_names_the_step(a0: AgentZero, tmp_path: Path):
    nav = one_step({"type": "output_contains", "value": "ok"}, "abort")
    g = nav.turn("s", tool_output="nope")
    assert g.run["status"] == "aborted"
    assert g.text.startswith("Plan aborted due to step Check failure")
    assert nav.turn("s", user_message="thanks").text is None
    # In Agent-Zero: the document's log line, and the state cleared.
    library = tmp_path / "abort.json"
    library.write_text(
        json.dumps({"plans": {"gate": nav.library["gate"].model_dump(by_alias=True)}})
    )
    agent = AgentZero(tmp_path / "a0-abort", library)
    agent.user("check it")
    agent.iteration()
    agent.tool("nope")
    assert "[HTN] Plan aborted: step 'Check' failed verification" in agent.log
    assert agent.htn_state() is None
    assert (agent.iteration() or "").startswith("Plan aborted due to step Check failure")


# ------------------------------------------------------------------ the injection format


def test_plan_context_injection_format(nav: Navigator):
    turn(nav, user_message=LOGIN_BUG, domain="bugfix")
    lines = turn(nav, tool_output="AssertionError: login failed").text.splitlines()
    # The document's lines (its _inject_plan_context), in its order.
    assert lines[:6] == [
        "[ACTIVE PLAN: Bug Fix Workflow]",
        "  Step 1/5: Reproduce the issue [DONE]",
        "  Step 2/5: Isolate the cause << CURRENT",
        "    Action: Examine error output, check relevant source files, identify the root cause",
        "    Tool: code_execution_tool",
        # The document's "Hint:" line says that the hint is an example (issue 35).
        "    Hint (example, adapt it): Read source files, check stack traces, add debug output "
        "if needed",
    ]
    # The check in words, as document 003 writes it ("Verify: any non-empty
    # output"), where the document's code prints the raw "any_output: ".
    assert lines[6] == "    Verify: any non-empty output"
    pending = lines.index("  Step 3/5: Implement the fix [PENDING]")
    assert all(line.startswith("    ") for line in lines[7:pending])  # waygraph's own lines
    assert lines[pending:][:5] == [
        "  Step 3/5: Implement the fix [PENDING]",
        "  Step 4/5: Test the fix [PENDING]",
        "  Step 5/5: Verify no regressions [PENDING]",
        "",
        "Execute Step 2 now. Do not skip ahead. Verify before proceeding.",
    ]
    assert lines[pending + 5].startswith("[waygraph] Plan: Bug Fix Workflow (bugfix_workflow)")
