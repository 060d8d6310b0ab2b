"""The checks made of checks: ``all``, ``any`` and ``not``.

Unknown children make the group unknown unless the group is decided
without them (a failing child of ``all``, a passing child of ``any``); a
``not`` of an unknown check stays unknown, and a ``not`` without exactly
one check fails.

Example:
    >>> from waygraph.model import Verify
    >>> NOT.describe(Verify(type="not", checks=(Verify(type="regex", value="FAIL"),)))
    'output must not match /FAIL/'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from waygraph.verify_types._judge import describe, is_group, judge, label, negated
from waygraph.verify_types._spec import Report, Verifier, VerifySpec
from waygraph.verify_types._verdicts import FAIL, Observation, Verdict, VerifyContext

if TYPE_CHECKING:
    from waygraph.model import Verify

__all__ = ["ALL", "ANY", "NOT"]

#: Groups judge whatever their children accept, a person's words included.
_EVERY_SOURCE = frozenset({"tool", "host", "human"})


def _all(v: Verify, o: Observation, c: VerifyContext) -> Verdict:
    unknown: Verdict | None = None
    evidence = None
    for child in v.checks or ():
        verdict = judge(child, o, c)
        evidence = verdict.evidence or evidence
        if verdict.outcome == "fail":
            return Verdict("fail", verdict.reason, evidence)
        if verdict.outcome == "unknown" and unknown is None:
            unknown = verdict
    if unknown is not None:
        return Verdict("unknown", unknown.reason, evidence)
    return Verdict("success", None, evidence)


def _any(v: Verify, o: Observation, c: VerifyContext) -> Verdict:
    unknown: Verdict | None = None
    last_fail: Verdict | None = None
    for child in v.checks or ():
        verdict = judge(child, o, c)
        if verdict.outcome == "success":
            return verdict
        if verdict.outcome == "unknown":
            unknown = unknown or verdict
        else:
            last_fail = verdict
    if unknown is not None:
        return unknown
    return last_fail or FAIL


def _not(v: Verify, o: Observation, c: VerifyContext) -> Verdict:
    children = v.checks or ()
    if len(children) != 1:
        return Verdict("fail", "not needs exactly one check")
    verdict = judge(children[0], o, c)
    if verdict.outcome == "unknown":
        return verdict
    return Verdict("fail" if verdict.outcome == "success" else "success", None, verdict.evidence)


def _group_label(v: Verify, joiner: str, empty: str) -> str:
    # Parenthesise nested groups so "a and (b or c)" keeps its meaning.
    parts = [f"({label(c)})" if is_group(c) else label(c) for c in v.checks or ()]
    return joiner.join(parts) or empty


def _check_group(v: Verify, report: Report) -> None:
    if not v.checks:
        result = "passes" if v.type == "all" else "fails"
        report(
            "verify-needs-checks",
            f"{v.type} needs at least one check in `checks`; empty, it always {result}",
            "checks",
        )


def _check_not(v: Verify, report: Report) -> None:
    children = v.checks or ()
    if len(children) != 1:
        report(
            "verify-needs-checks",
            f"not needs exactly one check in `checks`; it has {len(children)} "
            "(wrap several in all or any)",
            "checks",
        )


def _group(
    name: str, joins: str, judge: Verifier, summary: str, example: dict[str, object]
) -> VerifySpec:
    """``all`` or ``any``: ``joins`` is the word between its checks in words and labels."""
    joiner = f" {joins} "
    return VerifySpec(
        name,
        judge=judge,
        summary=summary,
        describe=lambda v: joiner.join(describe(c) for c in v.checks or ()) or "nothing",
        # Empty, all passes and any fails.
        label=lambda v: _group_label(v, joiner, "true" if name == "all" else "false"),
        validate=_check_group,
        sources=_EVERY_SOURCE,
        nested=("checks",),
        joins=joins,
        over_data=True,
        example=example,
    )


ALL = _group(
    "all",
    "and",
    _all,
    "every check in `checks` passes",
    {
        "type": "all",
        "checks": [{"type": "exit_code_zero"}, {"type": "output_not_contains", "value": "warning"}],
    },
)

ANY = _group(
    "any",
    "or",
    _any,
    "at least one check in `checks` passes",
    {
        "type": "any",
        "checks": [
            {"type": "output_contains", "value": "up to date"},
            {"type": "output_contains", "value": "installed"},
        ],
    },
)


def _describe_not(v: Verify) -> str:
    inner = (v.checks or (None,))[0]
    return negated(inner) or f"not ({describe(inner)})"


def _label_not(v: Verify) -> str:
    children = v.checks or ()
    return f"not ({label(children[0]) if children else ''})"


NOT = VerifySpec(
    "not",
    judge=_not,
    summary="the single check in `checks` fails",
    describe=_describe_not,
    label=_label_not,
    validate=_check_not,
    sources=_EVERY_SOURCE,
    nested=("checks",),
    over_data=True,
    example={"type": "not", "checks": [{"type": "output_contains", "value": "CONFLICT"}]},
)
