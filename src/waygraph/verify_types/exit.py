"""The checks on a command's exit status: ``exit_code`` and ``exit_code_zero``.

The real exit code when the result has one, else the marker the guidance
asks for (``exit=N``) when it is the output's last non-empty line, else the
verdict is unknown: "exit code 1" printed anywhere else never counts, and
words such as "error" never decide an exit code.

Example:
    >>> from waygraph.model import Verify
    >>> from waygraph.verify_types._verdicts import Observation, VerifyContext
    >>> EXIT_CODE_ZERO.judge(Verify(type="exit_code_zero"), Observation(output="ok\\nexit=0"),
    ...                      VerifyContext()).outcome
    'success'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from waygraph.verify_types._spec import Report, VerifySpec
from waygraph.verify_types._verdicts import (
    EXIT_CODE_HINT,
    SUCCESS,
    Observation,
    Verdict,
    VerifyContext,
    exit_status,
)

if TYPE_CHECKING:
    from waygraph.model import Verify

__all__ = ["EXIT_CODE", "EXIT_CODE_ZERO"]


def _exit_code(v: Verify, o: Observation, c: VerifyContext) -> Verdict:
    code = exit_status(o)
    if code is None:
        return Verdict("unknown", EXIT_CODE_HINT)
    try:
        expected = int(v.value)
    except (TypeError, ValueError):
        return Verdict("fail", f"exit_code needs an integer value, not {v.value!r}")
    return SUCCESS if code == expected else Verdict("fail", f"exit code {code}, not {expected}")


def _check_exit_code(v: Verify, report: Report) -> None:
    value = v.value
    if isinstance(value, bool) or not isinstance(value, int):
        got = "is missing" if value is None else f"is {value!r}"
        report(
            "verify-needs-value",
            "exit_code needs an integer `value` (the expected exit code, written "
            f"without quotes); it {got}",
            "value",
        )


EXIT_CODE = VerifySpec(
    "exit_code",
    judge=_exit_code,
    summary="the tool's exit code equals `value`",
    passes_when="the tool's exit code equals `value` (an integer); without a real exit code "
    "or the `exit=N` marker as the output's last line: unknown",
    describe=lambda v: f"exit code must be {v.value}",
    label=lambda v: f"exit == {v.value}",
    validate=_check_exit_code,
    example={"type": "exit_code", "value": 2},
)


def _exit_code_zero(v: Verify, o: Observation, c: VerifyContext) -> Verdict:
    code = exit_status(o)
    if code is None:
        return Verdict("unknown", EXIT_CODE_HINT)
    return SUCCESS if code == 0 else Verdict("fail", f"exit code {code}")


EXIT_CODE_ZERO = VerifySpec(
    "exit_code_zero",
    judge=_exit_code_zero,
    summary="the tool exited with code 0",
    passes_when="the tool exited with code 0 (without an exit code: the marker `exit=0` as "
    'the output\'s last non-empty line, else unknown; "exit code 0" printed anywhere else '
    "never counts)",
    describe=lambda v: "the command must succeed (exit code 0)",
    negated=lambda v: "the command must fail (a non-zero exit code)",
    label=lambda v: "exit == 0",
)
