"""What a tool result says about the command behind it.

Three questions a verdict needs answered before it reads the output:

- **Which command produced it?** :func:`command_of` reads it from the
  ``tool_args`` the host reports: a string, a mapping's ``command`` /
  ``cmd`` / ``code`` / ``script`` value, or an argv list joined with spaces.
  A step bound to a command (``command_matches``) is judged only on evidence
  from a command that matches.
- **What was its exit status?** The one the host reports, else the marker the
  guidance asks for, ``exit=N``, as the output's last non-empty line
  (:func:`printed_exit_status`). Nothing else printed counts: a failing test
  saying "expected exit code 0" is not an exit status.
- **Did it run at all?** :func:`never_ran` recognises a command that never ran
  its program: exit status 126 or 127, the shell's own errors (a syntax
  error, a command not found, a missing script), or a test runner that found
  no file to run (pytest's exit status 4). Its output is no evidence that the
  step's work was done.

And one thing a result may tell the run: **what to set in its context**.
:func:`context_updates_of` reads a JSON object with a ``context_updates`` (or
``context``) object as the output's last non-empty line (before an ``exit=N``
marker, if one follows it), the way an Attractor tool stage reports them.

Example:
    >>> command_of({"runtime": "terminal", "code": "pytest -q"})
    'pytest -q'
    >>> printed_exit_status("1 failed\\nexit=1")
    1
    >>> printed_exit_status("expected exit code 0, got 2\\n1 failed") is None
    True
    >>> never_ran("/bin/sh: 1: Syntax error: Unterminated quoted string", 2)
    'the shell could not run the command (/bin/sh: 1: Syntax error: Unterminated quoted string)'
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "COMMAND_KEYS",
    "MAX_CONTEXT_LINE",
    "command_of",
    "context_updates_of",
    "never_ran",
    "printed_exit_status",
]

#: The keys of a tool's arguments that hold the command it ran.
COMMAND_KEYS = ("command", "cmd", "code", "script")

#: The exit-status marker, alone on the output's last non-empty line.
_MARKER = re.compile(r"\s*exit=(-?\d{1,9})\s*")
#: Exit statuses of a shell that could not run the program (POSIX).
_NOT_RUN_STATUSES = {126: "not executable", 127: "command not found"}
#: Lines a shell, interpreter or test runner prints instead of running anything.
_NOT_RUN_LINE = re.compile(
    r"^(?:"
    # sh / dash / bash: syntax errors, unknown commands, missing files.
    r"(?:/\S*/)?(?:ba|da|z|k)?sh: (?:line )?\d+: .*"
    r"(?:syntax error|unexpected|not found|no such file or directory|permission denied"
    r"|unterminated|bad substitution).*"
    r"|(?:/\S*/)?(?:ba|da|z|k)?sh: .*(?:command not found|no such file or directory|not found)"
    r"|.*: command not found"
    # python / node / ruby: a script or module that is not there.
    r"|.*can't open file .*no such file or directory.*"
    r"|(?:/\S*/)?python[\d.]*: no module named \S+"
    r"|error: cannot find module .*"
    # pytest's own "nothing to run" (exit status 4 or 5).
    r"|error: (?:file or directory not found|file not found|not found): .*"
    r"|error: module or package not found: .*"
    r"|no tests ran in .*"
    r"|=+ no tests ran.*=+"
    r")$",
    re.IGNORECASE,
)
#: Words one of those lines holds; an output without any is ruled out at once.
_HINT = re.compile(
    r"sh: |not found|no such file|syntax error|unexpected|permission denied|unterminated"
    r"|bad substitution|no module named|can't open|cannot find module|no tests ran",
    re.IGNORECASE,
)
#: Characters of the output the hint is looked for in (the first lines' worth).
_HINT_CHARS = 8000
#: pytest's exit status for "usage error" (a missing file or option).
_PYTEST_USAGE = 4
#: Only the first lines of the output are looked at: a shell error is its start.
_LINES_LOOKED_AT = 20


def command_of(tool_args: Any) -> str | None:
    """The command a tool call ran, from the arguments the host reports (None when none).

    Example:
        >>> command_of(["python", "-m", "pytest", "-q"])
        'python -m pytest -q'
        >>> command_of({"path": "a.txt"}) is None
        True
    """
    if tool_args is None:
        return None
    if isinstance(tool_args, str):
        return tool_args.strip() or None
    if isinstance(tool_args, Mapping):
        for key in COMMAND_KEYS:
            value = tool_args.get(key)
            found = command_of(value) if isinstance(value, str | list | tuple) else None
            if found:
                return found
        return None
    if isinstance(tool_args, list | tuple) and all(isinstance(a, str) for a in tool_args):
        return " ".join(tool_args).strip() or None
    return None


def printed_exit_status(text: str) -> int | None:
    """The status of the marker line ``exit=N`` when it is the last non-empty line.

    Example:
        >>> printed_exit_status("ok\\n  exit=0  \\n\\n")
        0
        >>> printed_exit_status("1 failed\\nexit=0\\nmore text") is None
        True
    """
    end = len(text.rstrip())
    if end == 0:
        return None
    start = text.rfind("\n", 0, end) + 1
    found = _MARKER.fullmatch(text, start, end)
    return int(found.group(1)) if found else None


#: Characters of a last line read as JSON; a longer one is ignored unread.
MAX_CONTEXT_LINE = 64 * 1024


def _last_line(text: str, end: int) -> tuple[int, int]:
    """Where the last non-empty line of ``text[:end]`` starts and ends (equal: none)."""
    while end > 0 and text[end - 1].isspace():
        end -= 1
    return text.rfind("\n", 0, end) + 1, end


def context_updates_of(output: str) -> dict[str, Any] | None:
    """The keys a tool result sets in the run's context, or None when it sets none.

    The output's last non-empty line (or the one before a last ``exit=N``
    line) must be a JSON object whose ``context_updates`` (else ``context``)
    value is an object. Anything else, a line over :data:`MAX_CONTEXT_LINE`
    characters included, sets nothing.

    Example:
        >>> context_updates_of('3 passed\\n{"context_updates": {"tests_passed": true}}\\n')
        {'tests_passed': True}
        >>> context_updates_of('{"context": {"n": 1}}\\nexit=0')
        {'n': 1}
        >>> context_updates_of("tests_passed=true") is None
        True
    """
    start, end = _last_line(output, len(output))
    if start < end and _MARKER.fullmatch(output, start, end):
        start, end = _last_line(output, start)
    if start >= end or end - start > MAX_CONTEXT_LINE:
        return None
    line = output[start:end].strip()
    if not line.startswith("{"):
        return None
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    for key in ("context_updates", "context"):
        updates = data.get(key)
        if isinstance(updates, dict):
            return updates
    return None


def never_ran(output: str, exit_code: int | None) -> str | None:
    """Why the command behind ``output`` never ran its program, or None when it (may have) run.

    Example:
        >>> never_ran("", 127)
        'the command did not run (exit status 127: command not found)'
        >>> never_ran("ERROR: file or directory not found: tests/test_login.py", 4)[:38]
        'the test runner found nothing to run ('
        >>> never_ran("3 passed in 0.1s", 0) is None
        True
    """
    if exit_code == 0:
        return None
    if exit_code in _NOT_RUN_STATUSES:
        return f"the command did not run (exit status {exit_code}: {_NOT_RUN_STATUSES[exit_code]})"
    if _HINT.search(output, 0, _HINT_CHARS) is None:
        return None  # every verdict asks: most outputs are ruled out by one search
    # The first lines only, from a bounded head: a dump of megabytes is not split whole.
    lines = [line.strip() for line in output[:_HINT_CHARS].strip().splitlines()[:_LINES_LOOKED_AT]]
    lines = [line for line in lines if line and _MARKER.fullmatch(line) is None]
    if not lines:
        return None
    shell_errors = [line for line in lines if _NOT_RUN_LINE.match(line)]
    if not shell_errors:
        return None
    first = shell_errors[0][:200]
    runner = exit_code == _PYTEST_USAGE or first.lower().startswith(("error:", "no tests", "="))
    if len(shell_errors) == len(lines) or (runner and exit_code is not None):
        if runner:
            return f"the test runner found nothing to run ({first})"
        return f"the shell could not run the command ({first})"
    return None
