"""The checks that read a tool's output: ``output_contains``, ``output_not_contains``,
``regex`` and ``any_output``.

Each compares lowercase where it says so, and fails on the output of a
command that never ran its program (:func:`waygraph.verify_types.evidence.never_ran`).

Example:
    >>> from waygraph.model import Verify
    >>> OUTPUT_CONTAINS.label(Verify(type="output_contains", value="ok"))
    "contains 'ok'"
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from regex import error as regex_error

from waygraph.sandbox import patterns
from waygraph.verify_types._lint import check_regex, needs_text, text_value
from waygraph.verify_types._spec import Report, VerifySpec
from waygraph.verify_types._verdicts import FAIL, SUCCESS, Observation, Verdict, VerifyContext

if TYPE_CHECKING:
    from waygraph.model import Verify

__all__ = ["ANY_OUTPUT", "OUTPUT_CONTAINS", "OUTPUT_NOT_CONTAINS", "REGEX"]


def _contains(v: Verify, o: Observation, c: VerifyContext) -> bool:
    return str(v.value or "").lower() in o.text.lower()


OUTPUT_CONTAINS = VerifySpec(
    "output_contains",
    judge=_contains,
    summary="the output contains `value` (case-insensitive)",
    describe=lambda v: f"output must contain {v.value!r}",
    negated=lambda v: f"output must not contain {v.value!r}",
    label=lambda v: f"contains {v.value!r}",
    validate=text_value("the text the output must contain"),
    reads_output=True,
    example={"type": "output_contains", "value": "Successfully built"},
)

OUTPUT_NOT_CONTAINS = VerifySpec(
    "output_not_contains",
    judge=lambda v, o, c: not _contains(v, o, c),
    summary="the output does not contain `value` (case-insensitive)",
    describe=lambda v: f"output must not contain {v.value!r}",
    negated=lambda v: f"output must contain {v.value!r}",
    label=lambda v: f"not contains {v.value!r}",
    validate=text_value("the text the output must not contain"),
    reads_output=True,
    example={"type": "output_not_contains", "value": "error"},
)


def _regex(v: Verify, o: Observation, c: VerifyContext) -> Verdict:
    try:
        found = patterns.search(str(v.value or ""), v.flags, o.text)
    except patterns.PatternTimeout as exc:
        # Neither a match nor a miss: "not regex" must not pass on a timeout.
        return Verdict("unknown", f"{exc}; the plan's pattern needs simplifying")
    except regex_error as exc:
        return Verdict("fail", f"the pattern /{v.value}/ does not compile: {exc}")
    return SUCCESS if found else FAIL


def _check_regex(v: Verify, report: Report) -> None:
    if needs_text(v, report, "the pattern to search the output for"):
        check_regex(str(v.value), v.flags, report, field="value", what="the regex")


REGEX = VerifySpec(
    "regex",
    judge=_regex,
    summary="the regular expression `value` matches somewhere in the output",
    passes_when="the regular expression `value` matches somewhere in the output; `flags` "
    "letters: `i` ignore case, `m` multiline, `s` dot matches newline, `x` verbose",
    describe=lambda v: f"output must match /{v.value}/{v.flags or ''}",
    negated=lambda v: f"output must not match /{v.value}/{v.flags or ''}",
    label=lambda v: f"/{v.value}/{v.flags or ''}",
    validate=_check_regex,
    reads_output=True,
    example={"type": "regex", "value": "\\d+ passed", "flags": "i"},
)

ANY_OUTPUT = VerifySpec(
    "any_output",
    judge=lambda v, o, c: bool(o.text.strip()),
    summary="the tool produced non-empty output",
    passes_when="the tool produced non-empty output (output checks fail on a command that "
    "never ran its program: exit status 126/127, the shell's own errors, a runner that "
    "found nothing to run)",
    # Document 003's words ("Verify: any non-empty output").
    describe=lambda v: "any non-empty output",
    negated=lambda v: "no output",
    label=lambda v: "any output",
    reads_output=True,
)
