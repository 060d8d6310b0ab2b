"""The checks over event data: ``compare`` and ``truthy``.

State machines and DOT edges write them as condition strings
(``data.count > 0``), which :mod:`waygraph.predicates` parses and evaluates;
on a plain tool result the data is ``{"output", "exit_code", "tool_name"}``.

Example:
    >>> from waygraph.model import Verify
    >>> COMPARE.label(Verify(type="compare", field="data.count", op=">", value=0))
    'data.count > 0'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from waygraph.verify_types._spec import Report, VerifySpec
from waygraph.verify_types._verdicts import Observation, VerifyContext

if TYPE_CHECKING:
    from waygraph.model import Verify

__all__ = ["COMPARE", "TRUTHY"]


def _data_of(o: Observation) -> Mapping[str, Any]:
    if o.data is not None:
        return o.data
    return {"output": o.output, "exit_code": o.exit_code, "tool_name": o.tool_name}


def _over_data(v: Verify, o: Observation, c: VerifyContext) -> bool:
    # The condition language builds model trees, so it loads after this module.
    from waygraph.predicates import evaluate_data

    return evaluate_data(v, _data_of(o))


def _check_compare(v: Verify, report: Report) -> None:
    missing = [name for name in ("field", "op") if not getattr(v, name)]
    if missing:
        report(
            "verify-needs-field",
            "compare needs `field` (a path in the event data, e.g. data.count) "
            "and `op` (==, !=, >, >=, <, <=, in, not in, contains); "
            f"{' and '.join(missing)} missing",
            missing[0],
        )


def _check_truthy(v: Verify, report: Report) -> None:
    if not v.field:
        report(
            "verify-needs-field",
            "truthy needs `field`, the path in the event data that must be set "
            "(e.g. data.approved)",
            "field",
        )


COMPARE = VerifySpec(
    "compare",
    judge=_over_data,
    summary="the event data at `field` compares to `value` with `op`",
    passes_when="the event data at `field` (a dotted path; list indexes as numbers) compares "
    "to `value` with `op`: `==`, `!=`, `>`, `>=`, `<`, `<=`, `in`, `not in`, `contains`",
    describe=lambda v: f"{v.field} {v.op} {v.value!r}",
    label=lambda v: f"{v.field} {v.op} {v.value!r}",
    validate=_check_compare,
    over_data=True,
    example={"type": "compare", "field": "data.count", "op": ">", "value": 0},
)

TRUTHY = VerifySpec(
    "truthy",
    judge=_over_data,
    summary="the event data at `field` is present and truthy",
    describe=lambda v: f"{v.field} is set",
    label=lambda v: f"{v.field}",
    validate=_check_truthy,
    over_data=True,
    example={"type": "truthy", "field": "data.approved"},
)
