"""The shipped starter library's test-runner check, shared by every test step: real
pytest output passes, fails or is unknown as a host would expect.
"""

from __future__ import annotations

import pytest

from tests.starter_library_helpers import (
    LIBRARY,
    PLAN_IDS,
    PYTEST_FAIL,
    PYTEST_PASS,
    passes,
)

PYTEST_COLLECT_ERROR = (
    "ERROR collecting tests/test_x.py\nImportError: cannot import name 'b'\n1 error in 0.05s"
)


# ------------------------------------------------------------------ the test-runner check

TEST_NODES = [
    (pid, nid)
    for pid in PLAN_IDS
    for nid, node in LIBRARY[pid].graph.nodes.items()
    if node.verify == LIBRARY["bugfix_workflow"].graph.nodes["test"].verify
]


def test_test_runner_check_is_shared_by_every_test_step():
    assert {
        ("bugfix_workflow", "test"),
        ("bugfix_workflow", "verify_no_regression"),
        ("git_merge_pr", "test_merge"),
        ("codegen_module", "test"),
        ("refactor_safe", "baseline_tests"),
        ("refactor_safe", "retest"),
        ("dependency_update", "run_tests"),
    } <= set(TEST_NODES)


def test_test_runner_check_is_exit_code_zero_and_no_failure_words():
    verify = LIBRARY["bugfix_workflow"].graph.nodes["test"].verify
    assert verify.type == "all"
    kinds = [c.type for c in verify.checks]
    assert kinds == ["exit_code_zero", "not"]
    assert verify.checks[1].checks[0].type == "regex"


PASSING_OUTPUTS = [
    "1 passed in 0.01s",
    PYTEST_PASS,
    "===== 3 passed, 1 warning in 0.12s =====",
    "test_error_handling PASSED\n1 passed in 0.01s",
    "Ran 3 tests in 0.000s\n\nOK",
    "1 passed, 1 xfailed in 0.03s",
]


@pytest.mark.parametrize(("plan_id", "node_id"), TEST_NODES)
def test_a_passing_run_passes(plan_id: str, node_id: str):
    verify = LIBRARY[plan_id].graph.nodes[node_id].verify
    for output in PASSING_OUTPUTS:
        assert passes(verify, output, 0) is True, output
        assert passes(verify, output + "\nexit=0") is True, output


@pytest.mark.parametrize(("plan_id", "node_id"), TEST_NODES)
def test_a_clean_looking_run_without_an_exit_status_is_unknown(plan_id: str, node_id: str):
    # Issue 12: words never decide an exit code; the guidance asks for the status.
    verify = LIBRARY[plan_id].graph.nodes[node_id].verify
    for output in PASSING_OUTPUTS:
        assert passes(verify, output) is None, output


@pytest.mark.parametrize(("plan_id", "node_id"), TEST_NODES)
@pytest.mark.parametrize("exit_code", [None, 1])
def test_a_failing_run_fails(plan_id: str, node_id: str, exit_code: int | None):
    verify = LIBRARY[plan_id].graph.nodes[node_id].verify
    # Failure words fail the check even without an exit code: fail beats unknown.
    assert passes(verify, PYTEST_FAIL, exit_code) is False
    assert not passes(verify, "1 failed, 1 passed", exit_code)
    assert not passes(verify, PYTEST_COLLECT_ERROR, exit_code)
    assert not passes(verify, "ERROR collecting tests/test_x.py", exit_code)
    assert not passes(verify, "FAILED (failures=1)", exit_code)
    assert not passes(verify, "--- FAIL: TestParse (0.00s)\nFAIL", exit_code)
    assert not passes(verify, "no tests ran in 0.01s", exit_code)


def test_the_real_exit_code_wins_over_a_clean_looking_output():
    verify = LIBRARY["bugfix_workflow"].graph.nodes["test"].verify
    assert not passes(verify, "1 passed in 0.01s", exit_code=1)


def test_zero_failures_summaries_do_not_count_as_failures():
    # cargo prints "0 failed" on success; "10 failed" is still a failure.
    regex = LIBRARY["bugfix_workflow"].graph.nodes["test"].verify.checks[1].checks[0]
    assert not passes(regex, "test result: ok. 3 passed; 0 failed; 0 ignored")
    assert passes(regex, "test result: FAILED. 0 passed; 10 failed")
    assert passes(
        LIBRARY["bugfix_workflow"].graph.nodes["test"].verify,
        "test result: ok. 3 passed; 0 failed; 0 ignored",
        exit_code=0,
    )
