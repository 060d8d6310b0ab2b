"""Hints ``waygraph check`` gives about a check's fields, shared by several specs.

Every regular expression of a plan (a ``regex`` check's ``value``, any
check's ``command_matches``) is compiled the way verification compiles it
(:func:`waygraph.sandbox.patterns.compile_pattern`) and must not backtrack for long.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import regex

from waygraph.sandbox.patterns import FLAGS, MATCH_TIMEOUT, compile_pattern, nested_quantifier

if TYPE_CHECKING:
    from waygraph.model import Verify
    from waygraph.verify_types._spec import Report


def needs_text(verify: Verify, report: Report, what: str, *, strip: bool = False) -> bool:
    """Report a ``value`` that is not a non-empty string (``what`` says what it is for).

    ``strip``: blank text counts as empty (a path). True when the value is good.
    """
    value = verify.value
    text = value.strip() if strip and isinstance(value, str) else value
    if isinstance(value, str) and text:
        return True
    got = "is missing" if value is None else f"is {value!r}"
    report(
        "verify-needs-value",
        f"{verify.type} needs a non-empty string `value` ({what}); it {got}",
        "value",
    )
    return False


def text_value(what: str, *, strip: bool = False) -> Callable[[Verify, Report], None]:
    """A spec's ``validate`` for a check whose ``value`` is text (``what`` says what it is for)."""

    def validate(verify: Verify, report: Report) -> None:
        needs_text(verify, report, what, strip=strip)

    return validate


def check_regex(pattern: str, flags: str | None, report: Report, *, field: str, what: str) -> None:
    """Report ``pattern`` (at ``field``) when it does not compile or can backtrack
    for long, and ``flags`` (at ``flags``) when it has a letter not in imsx.

    ``what`` names the pattern in messages (``the regex``, ``command_matches``).
    """
    bad = sorted({letter for letter in flags or "" if letter not in FLAGS})
    if bad:
        report(
            "bad-regex-flags",
            f"unknown regex flag(s) {''.join(bad)!r} in {flags!r}; use only i (ignore "
            "case), m (multiline), s (dot matches newline), x (verbose)",
            "flags",
        )
        return
    try:
        compile_pattern(pattern, flags)
    except regex.error as exc:
        # types-regex leaves out the pos and msg that regex.error sets (like re.error).
        pos: int | None = exc.pos  # type: ignore[attr-defined]
        msg: str = exc.msg  # type: ignore[attr-defined]
        where = f" at position {pos}" if pos is not None else ""
        report("bad-regex", f"{what} does not compile: {msg}{where}", field)
        return
    if nested_quantifier(pattern):
        report(
            "regex-backtracking",
            f"{what} repeats a group that itself repeats (like (a+)+), which can take "
            "exponential time on text that almost matches; waygraph stops such a match "
            f"after {MATCH_TIMEOUT:g}s and the check is then unknown. Make the inner part "
            "match one way only (for example (a+)+ -> a+)",
            field,
        )
