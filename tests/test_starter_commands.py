"""The shipped plans bind their test, lint and build steps to the commands that do them.

Issue 32: "a model that runs ``echo '5 passed'`` instead of the test suite
passes bugfix_workflow's ``test`` step". Each bound step's ``command_matches``
accepts the usual runners, with the wrappers people put in front of them,
and refuses a command that only prints what a runner would.
"""

from __future__ import annotations

import pytest

from waygraph import load_library
from waygraph.model import Verify
from waygraph.verify import Observation, evaluate

LIBRARY = load_library()

TEST_STEPS = [
    ("bugfix_workflow", "test"),
    ("bugfix_workflow", "verify_no_regression"),
    ("git_merge_pr", "test_merge"),
    ("codegen_module", "test"),
    ("refactor_safe", "baseline_tests"),
    ("refactor_safe", "retest"),
    ("dependency_update", "run_tests"),
]

TEST_RUNNERS = [
    "pytest -q",
    "python -m pytest -q tests/test_login.py",
    "python3 -m unittest -v",
    "/work/app/.venv/bin/python -m pytest",
    ".venv/bin/pytest -x",
    "cd app && python -m pytest -q",
    "PYTHONPATH=src pytest",
    "uv run pytest",
    "poetry run pytest -q",
    "tox -e py311",
    "nox -s tests",
    "npm test",
    "npm run test -- --watch=false",
    "pnpm test",
    "yarn test",
    "npx jest",
    "npx vitest run",
    "go test ./...",
    "cargo test",
    "mvn -q test",
    "./gradlew test",
    "make test",
    "make check",
    "python test_pricing.py",
    "python3 check_settings.py",
    "python3 check.py",
    "sh run_tests.sh",
    "./run_tests.sh",
    "ctest --output-on-failure",
    "bundle exec rspec",
    "dotnet test",
    'python -m unittest test_pricing; echo "exit=$?"',
]

NOT_RUNNERS = [
    "echo '5 passed'",
    "echo pytest passed",
    "printf '3 passed in 0.1s\\n'",
    "cat test_output.log",
    "true",
    "ls tests/",
    "git log --oneline -3",
    "python -c 'print(\"5 passed\")'",
]


def _bound(plan_id: str, node_id: str) -> Verify:
    verify = LIBRARY[plan_id].graph.nodes[node_id].verify
    assert verify is not None and verify.command_matches, (plan_id, node_id)
    return verify


def _outcome(verify: Verify, command: str) -> str:
    # The output and status a passing run prints: only the command differs.
    evidence = Observation(output="5 passed in 0.21s", exit_code=0, command=command)
    return evaluate(verify, evidence).outcome


@pytest.mark.parametrize(("plan_id", "node_id"), TEST_STEPS)
@pytest.mark.parametrize("command", TEST_RUNNERS)
def test_a_test_step_passes_on_a_test_runner(plan_id: str, node_id: str, command: str):
    assert _outcome(_bound(plan_id, node_id), command) == "success"


@pytest.mark.parametrize(("plan_id", "node_id"), TEST_STEPS)
@pytest.mark.parametrize("command", NOT_RUNNERS)
def test_a_test_step_is_unknown_on_anything_else(plan_id: str, node_id: str, command: str):
    assert _outcome(_bound(plan_id, node_id), command) == "unknown"


def test_no_command_reported_is_unknown_and_says_which_command():
    verdict = evaluate(
        _bound("bugfix_workflow", "test"), Observation(output="5 passed", exit_code=0)
    )
    assert verdict.outcome == "unknown"
    assert "no command was reported" in (verdict.reason or "")


@pytest.mark.parametrize(
    "command",
    ["ruff check src tests", "python -m py_compile pkg/mod.py", "npx eslint .", "mypy src"],
)
def test_the_lint_step_passes_on_a_linter(command: str):
    verify = _bound("codegen_module", "document")
    evidence = Observation(output="All checks passed!", exit_code=0, command=command)
    assert evaluate(verify, evidence).outcome == "success"
    assert evaluate(verify, Observation(output="ok", exit_code=0, command="echo ok")).outcome == (
        "unknown"
    )


def test_the_build_step_passes_on_an_image_build():
    verify = _bound("docker_build_deploy", "build")
    built = "Successfully built 0123abcd"
    for command in ("docker build -t app:1 .", "docker buildx build .", "podman build ."):
        assert evaluate(verify, Observation(output=built, exit_code=0, command=command)).passed
    faked = Observation(output=built, exit_code=0, command="echo 'Successfully built 0123abcd'")
    assert evaluate(verify, faked).outcome == "unknown"
