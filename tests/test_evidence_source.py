"""Evidence by where it came from (issue 32): the command behind a result, its exit status,
and whether it ran at all (waygraph.verify_types.evidence), through the verdicts and the
Navigator."""

from __future__ import annotations

import pytest

from waygraph import Navigator
from waygraph.library import Library
from waygraph.model import Graph, Plan, Verify
from waygraph.verify import Observation, evaluate
from waygraph.verify_types.evidence import command_of, never_ran, printed_exit_status


@pytest.mark.parametrize(
    ("tool_args", "command"),
    [
        ("pytest -q", "pytest -q"),
        ({"command": "pytest -q"}, "pytest -q"),
        ({"cmd": "make test"}, "make test"),
        ({"runtime": "terminal", "code": "go test ./..."}, "go test ./..."),
        ({"script": "npm test"}, "npm test"),
        ({"command": ["python", "-m", "pytest"]}, "python -m pytest"),
        (["cargo", "test", "--quiet"], "cargo test --quiet"),
        (("tox",), "tox"),
        ({"path": "README.md"}, None),
        ({"query": "pytest"}, None),
        ("   ", None),
        (None, None),
        (42, None),
        (["python", 3], None),
    ],
)
def test_the_command_comes_from_each_shape_of_tool_args(tool_args: object, command: str | None):
    assert command_of(tool_args) == command


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("ok\nexit=0", 0),
        ("ok\nexit=3\n\n  ", 3),
        ("exit=-1", -1),
        ("  exit=0  ", 0),
        ("exit=0\nFAILED", None),
        ("echo exit=0", None),
        ("exit=0 and more", None),
        ("exit code 0", None),
        ("Exit status: 0", None),
        ("", None),
    ],
)
def test_only_the_marker_alone_on_the_last_line_is_a_printed_status(text: str, status: int | None):
    assert printed_exit_status(text) == status


@pytest.mark.parametrize(
    ("output", "code"),
    [
        ("", 127),
        ("whatever", 126),
        ("bash: pytset: command not found", None),
        ("/bin/sh: 1: pytset: not found", 127),
        ("/bin/sh: 1: Syntax error: Unterminated quoted string", 2),
        ('sh: 1: Syntax error: "(" unexpected\nexit=2', None),
        ("python3: can't open file '/w/check.py': [Errno 2] No such file or directory", 2),
        ("/usr/bin/python3: No module named pytest", 1),
        ("ERROR: file or directory not found: tests/test_login.py\n\nno tests ran in 0.01s", 4),
    ],
)
def test_a_command_that_never_ran_is_recognised(output: str, code: int | None):
    assert never_ran(output, code) is not None


@pytest.mark.parametrize(
    ("output", "code"),
    [
        ("3 passed in 0.1s", 0),
        ("bash: foo: command not found", 0),
        (
            "Traceback (most recent call last):\n  File 'x.py'\n"
            "ModuleNotFoundError: No module named 'foo'",
            1,
        ),
        ("building...\nbash: line 3: tput: command not found\nbuilt", 1),
        ("", None),
        ("AssertionError: expected 180, got 20", 1),
    ],
)
def test_a_command_that_ran_is_not_mistaken_for_one_that_did_not(output: str, code: int | None):
    assert never_ran(output, code) is None


@pytest.mark.parametrize(
    "check",
    [
        {"type": "any_output"},
        {"type": "output_contains", "value": "error"},
        {"type": "output_not_contains", "value": "passed"},
        {"type": "regex", "value": "."},
        {"type": "not", "checks": [{"type": "regex", "value": "failed"}]},
    ],
)
def test_output_checks_fail_on_a_command_that_never_ran(check: dict[str, object]):
    verify = Verify.model_validate(check)
    verdict = evaluate(verify, Observation(output="/bin/sh: 1: Syntax error: EOF", exit_code=2))
    assert verdict.outcome == "fail" and "could not run" in (verdict.reason or "")


def test_a_person_never_trips_the_never_ran_rule():
    verdict = evaluate(
        Verify(type="manual"), Observation(output="bash: x: command not found", source="human")
    )
    assert verdict.outcome == "success"


def bound() -> Plan:
    return (
        Graph.builder()
        .task("test", verify={"type": "exit_code_zero", "command_matches": r"\bpytest\b"})
        .exit("done")
        .chain("start", "test", "done")
        .plan("bound")
    )


@pytest.mark.parametrize(
    "tool_args",
    [
        "pytest -q",
        {"command": "pytest -q"},
        {"cmd": "pytest -q"},
        {"code": "pytest -q"},
        {"script": "pytest -q"},
        ["pytest", "-q"],
    ],
)
def test_command_matches_reads_every_shape_through_the_navigator(tool_args: object):
    nav = Navigator(Library([bound()]), store="memory://", strict=True)
    nav.start("s", "bound")
    assert (
        nav.turn("s", tool_output="1 passed", exit_code=0, tool_args=tool_args).run["status"]
        == "completed"
    )


@pytest.mark.parametrize("tool_args", [None, "echo '5 passed'", {"path": "pytest.ini"}])
def test_evidence_from_another_or_no_command_is_unknown_and_says_so(tool_args: object):
    nav = Navigator(Library([bound()]), store="memory://", strict=True)
    nav.start("s", "bound")
    g = nav.turn("s", tool_output="5 passed", exit_code=0, tool_args=tool_args)
    assert g.run["status"] == "running" and g.run["visited"]["test"]["outcome"] == "pending"
    assert "matching /\\bpytest\\b/" in (g.text or "")


def test_a_task_without_verify_passes_unless_the_exit_status_says_otherwise():
    assert evaluate(None, Observation(output="anything")).outcome == "success"
    assert evaluate(None, Observation(output="done\nexit=0")).outcome == "success"
    assert evaluate(None, Observation(output="boom\nexit=2")).outcome == "fail"
    assert evaluate(None, Observation(output="", exit_code=1)).outcome == "fail"
