"""Document 003's Test 3 ("Branching on Failure") on the bug-fix workflow waygraph ships.

    Set up a scenario where the reproduce step fails (file doesn't exist).
    Verify: traversal follows the `on_fail` edge to `gather_context` instead of
    stalling. After gather_context, traversal should loop back to reproduce.

The document's scenario is its Test 2 message, "fix the bug in /tmp/test.py",
with no such file: ``python3 /tmp/test.py`` prints ``can't open file ...
[Errno 2] No such file or directory`` and exits 2. No test ran, so the output
is no evidence that the bug happened, however the host reports it: alone, as
a terminal shows it (the prompt and the command echoed first), piped through
``tail`` (exit status 0), or as a test runner that collected nothing (issue
36: the last three passed ``reproduce``). Output from a program that did run
stays evidence, even when it is a missing file or module: that may be the bug.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from waygraph import Navigator, load_library

BUG = "fix the bug in /tmp/test.py"  # document 003, Test 2
CANT_OPEN = "python3: can't open file '/tmp/test.py': [Errno 2] No such file or directory"


@pytest.fixture
def nav(tmp_path: Path) -> Navigator:
    return Navigator(load_library(), store="memory://", workspace=tmp_path)


def reproduce_with(nav: Navigator, output: str, exit_code: int | None, command: str) -> str:
    """Start the shipped workflow, report one result for reproduce; the node it leads to."""
    g = nav.turn("s", user_message=BUG, domain="bugfix")
    assert g.run["plan_id"] == "bugfix_workflow" and g.run["current_node"] == "reproduce"
    g = nav.turn("s", tool_output=output, exit_code=exit_code, tool_args={"code": command})
    assert g.error is None, g.error
    return str(g.run["current_node"])


NO_TEST_RAN = {
    "as the document runs it": (CANT_OPEN, 2, "python3 /tmp/test.py"),
    "as a terminal shows it": (
        f"root@a0:/# python3 /tmp/test.py\n{CANT_OPEN}\nroot@a0:/# ",
        2,
        "python3 /tmp/test.py",
    ),
    "piped, exit status 0": (CANT_OPEN, 0, "python3 /tmp/test.py 2>&1 | tail -n 20"),
    "with the exit marker": (f"$ python3 /tmp/test.py\n{CANT_OPEN}\nexit=2", None, "sh"),
    "pytest, no such file": (
        "ERROR: file or directory not found: /tmp/test.py\n\nno tests ran in 0.01s",
        4,
        "python -m pytest -q /tmp/test.py",
    ),
    "pytest, nothing collected": (
        "===== test session starts =====\nplatform linux -- Python 3.11.7\n"
        "collected 0 items\n\n===== no tests ran in 0.01s =====",
        5,
        "cd /tmp && python -m pytest test.py; echo done",
    ),
    "nothing printed": ("", 1, "python3 /tmp/test.py"),
}


@pytest.mark.parametrize("case", sorted(NO_TEST_RAN))
def test_3_a_run_where_no_test_ran_branches_to_gather_context(nav: Navigator, case: str):
    output, code, command = NO_TEST_RAN[case]
    assert reproduce_with(nav, output, code, command) == "gather_context"


BUG_SHOWN = {
    "an assertion": ("AssertionError: 2000.0 != 180", 1),
    "the code's own missing file": (
        'Traceback (most recent call last):\n  File "/tmp/test.py", line 3, in <module>\n'
        "    open('config.yaml')\n"
        "FileNotFoundError: [Errno 2] No such file or directory: 'config.yaml'",
        1,
    ),
    "a missing module": (
        'Traceback (most recent call last):\n  File "/tmp/test.py", line 1, in <module>\n'
        "    import pricing\nModuleNotFoundError: No module named 'pricing'",
        1,
    ),
    "a collection error": (
        "ERROR collecting test.py\nImportError: cannot import name 'total'\n"
        "Interrupted: 1 error during collection",
        2,
    ),
    "a wrong value": ("total: 2000.0", 0),
}


@pytest.mark.parametrize("case", sorted(BUG_SHOWN))
def test_3_output_of_a_program_that_ran_is_evidence(nav: Navigator, case: str):
    output, code = BUG_SHOWN[case]
    assert reproduce_with(nav, output, code, "python3 /tmp/test.py") == "isolate"


def test_3_branching_on_failure_loops_back_to_reproduce(nav: Navigator):
    assert reproduce_with(nav, CANT_OPEN, 2, "python3 /tmp/test.py") == "gather_context"
    g = nav.turn("s", tool_output="test_old.py\nREADME.md", exit_code=0, tool_args="ls /tmp")
    followed = [e for e in g.events if e["type"] == "edge_followed"]
    assert [(e["from"], e["to"], e["condition"]) for e in followed] == [
        ("gather_context", "reproduce", "on_success")
    ]
    assert not [e for e in nav.events("s") if e["type"] == "stall"]
    g = nav.turn(
        "s",
        tool_output="AssertionError: 2000.0 != 180",
        exit_code=1,
        tool_args="python3 /tmp/test_old.py",
    )
    assert g.run["current_node"] == "isolate"
    verified = [e for e in nav.events("s") if e["type"] == "node_verified"]
    assert [(e["node"], e["outcome"]) for e in verified] == [
        ("reproduce", "fail"),
        ("gather_context", "success"),
        ("reproduce", "success"),
    ]
