"""The shipped starter library's development plans (bugfix_workflow, refactor_safe) run
through the real engine with the real verifiers on realistic tool output.
"""

from __future__ import annotations

from tests.starter_library_helpers import (
    CLEAN,
    DIRTY,
    LIBRARY,
    PYTEST_FAIL,
    PYTEST_PASS,
    passes,
    run_plan,
    targets,
)

# ------------------------------------------------------------------ bugfix_workflow


def test_bugfix_shape():
    plan = LIBRARY["bugfix_workflow"]
    nodes = plan.graph.nodes
    assert {
        "start",
        "reproduce",
        "gather_context",
        "isolate",
        "fix",
        "test",
        "verify_no_regression",
        "escalate_stuck",
        "done",
    } <= set(nodes)
    # Any output shows the bug, unless the program never ran (issue 36).
    assert passes(nodes["reproduce"].verify, "AssertionError: 2000.0 != 180", 1)
    assert not passes(nodes["reproduce"].verify, " \n")
    assert nodes["reproduce"].max_retries == 0
    assert nodes["gather_context"].max_retries == 0
    assert targets(plan, "reproduce", "on_fail") == {"gather_context"}
    assert targets(plan, "gather_context", "on_success") == {"reproduce"}
    (give_up,) = targets(plan, "gather_context", "on_fail")
    assert nodes[give_up].type == "escalate"
    assert nodes["fix"].max_retries == 2
    assert targets(plan, "fix", "on_success") == {"test"}
    assert targets(plan, "test", "on_fail") == {"fix"}
    assert targets(plan, "fix", "on_exhaust") == {"escalate_stuck"}
    stuck = nodes["escalate_stuck"]
    assert stuck.type == "escalate" and stuck.reason and stuck.pace_level == "contingent"
    assert targets(plan, "verify_no_regression", "on_success") == {"done"}


def test_bugfix_happy_path_completes():
    run = run_plan(
        "bugfix_workflow",
        [
            ("AssertionError: 2000.0 != 180", 1),
            ("pricing.py:6: percent is never divided by 100", 0),
            ("edited pricing.py", 0),
            (PYTEST_PASS, 0),
            ("12 passed in 0.30s", 0),
        ],
    )
    assert run.status == "completed"
    assert "cause_found" in run.path


def test_bugfix_unreproducible_bug_loops_back_once_then_escalates():
    run = run_plan("bugfix_workflow", [("", None), ("app.py\nlogin.py", 0), ("", None)])
    assert list(run.path) == [
        "start",
        "reproduce",
        "gather_context",
        "reproduce",
        "gather_context",
        "escalate_no_repro",
    ]
    assert run.status == "escalated" and run.pace_level == "alternate"


def test_bugfix_runs_fix_at_most_three_times_then_escalates():
    wrong_fix = [("edited pricing.py", 0), (PYTEST_FAIL, 1)]
    run = run_plan(
        "bugfix_workflow",
        [("Traceback (most recent call last): ...", 1), ("cause: line 6", 0), *wrong_fix * 3],
    )
    assert run.path.count("fix") == 4  # three attempts, then entered exhausted
    assert run.visited["fix"]["attempts"] == 3
    assert run.status == "escalated" and run.path[-1] == "escalate_stuck"
    assert run.pace_level == "contingent"


def test_bugfix_regression_goes_back_to_fix():
    run = run_plan(
        "bugfix_workflow",
        [
            ("Traceback", 1),
            ("cause", 0),
            ("edited", 0),
            (PYTEST_PASS, 0),
            ("1 failed, 11 passed in 0.4s", 1),
        ],
    )
    assert run.current_node == "fix" and run.attempts("fix") == 2


# ------------------------------------------------------------------ refactor_safe


def test_refactor_shape():
    plan = LIBRARY["refactor_safe"]
    nodes = plan.graph.nodes
    (no_baseline,) = targets(plan, "baseline_tests", "on_fail")
    assert nodes[no_baseline].type == "escalate"
    assert "fix the failing tests first" in nodes[no_baseline].reason.lower()
    assert targets(plan, "baseline_tests", "on_success") == {"baseline_green"}
    assert nodes["baseline_green"].type == "checkpoint"
    assert targets(plan, "retest", "on_fail") == {"revert"}
    assert targets(plan, "revert", "on_success") == {"plan_refactor"}
    assert nodes["revert"].max_retries >= 1
    assert targets(plan, "revert", "on_exhaust") == {"revert_and_stop"}
    assert nodes[next(iter(targets(plan, "revert_and_stop", "on_success")))].type == "escalate"
    assert targets(plan, "retest", "on_success") == {"commit_refactor"}


def test_refactor_refuses_without_a_passing_baseline():
    run = run_plan("refactor_safe", [(CLEAN, 0), (PYTEST_FAIL, 1)])
    assert run.status == "escalated" and run.path[-1] == "escalate_no_baseline"
    assert "apply_refactor" not in run.path
    assert "fix the failing tests first" in run.reason.lower()


def test_refactor_reverts_each_broken_attempt_and_stops_after_three():
    attempt = [
        ("src/a.py:10: def total(", 0),
        (" 2 files changed, 14 insertions(+), 9 deletions(-)", 0),
        (PYTEST_FAIL, 1),
        ("Saved working directory and index state\nnothing to commit, working tree clean", 0),
    ]
    run = run_plan("refactor_safe", [(CLEAN, 0), (PYTEST_PASS, 0), *attempt * 3])
    assert run.path.count("apply_refactor") == 3
    assert run.path.count("revert") == 3  # the third entry finds it exhausted
    assert list(run.path)[-2:] == ["revert_and_stop", "escalate_reverted"]
    assert run.status == "escalated"


def test_refactor_that_keeps_tests_green_is_committed():
    run = run_plan(
        "refactor_safe",
        [
            (CLEAN, 0),
            (PYTEST_PASS, 0),
            ("src/a.py:10: def total(", 0),
            (" 1 file changed, 4 insertions(+), 4 deletions(-)", 0),
            (PYTEST_PASS, 0),
            ("[main 5e6f7a8] refactor: extract total\n 1 file changed", 0),
        ],
    )
    assert run.status == "completed"


def test_refactor_commits_uncommitted_work_before_starting():
    run = run_plan(
        "refactor_safe",
        [
            (DIRTY, 0),
            ("[main 1a2b3c4] wip: snapshot before refactor\n 1 file changed", 0),
            (CLEAN, 0),
        ],
    )
    assert list(run.path)[-4:] == ["save_work", "check_status", "tree_state", "baseline_tests"]
