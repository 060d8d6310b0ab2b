"""The check only a person passes: ``manual``.

A person's words (``source="human"``) are evidence only for ``manual``
checks, and ``manual`` passes on nothing else: the person's answer
containing the ``value`` (any answer but a refusal when there is none).
Tool output and the model's words never pass it; shown them, the verdict is
unknown and asks the model to put the question to the person.

Example:
    >>> from waygraph.model import Verify
    >>> MANUAL.describe(Verify(type="manual", value="CONFIRMED"))
    "a person confirms with 'CONFIRMED'"
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from waygraph.verify_types import people
from waygraph.verify_types._spec import VerifySpec
from waygraph.verify_types._verdicts import SUCCESS, Observation, Verdict, VerifyContext

if TYPE_CHECKING:
    from waygraph.model import Verify

__all__ = ["MANUAL"]


def _manual(v: Verify, o: Observation, c: VerifyContext) -> Verdict:
    if o.source != "human":
        return Verdict("unknown", people.manual_request(v.value))
    answer = o.text.strip()
    if people.is_refusal(answer):
        return Verdict("fail", f"the person refused: {answer[:80]!r}")
    if v.value:
        if str(v.value).lower() in answer.lower():
            return SUCCESS
        return Verdict("unknown", f"the person's answer does not contain {str(v.value)!r}")
    return SUCCESS if answer else Verdict("unknown", "the person's answer is empty")


MANUAL = VerifySpec(
    "manual",
    judge=_manual,
    sources=frozenset({"human"}),
    ask=lambda v: people.manual_request(v.value),
    summary="a person confirms: their answer contains `value` (any answer but a refusal "
    "when there is none); tool output and the model's words never pass it",
    passes_when="a person confirms: their answer (the user's message, or an answer channel) "
    "contains `value`, or, without one, is any answer but a refusal; tool output and the "
    "model's words never pass it ([who may pass a step](guided.md#who-may-pass-a-step))",
    describe=lambda v: f"a person confirms with {v.value!r}" if v.value else "a person confirms",
    label=lambda v: f"manual {v.value!r}" if v.value else "manual",
    example={"type": "manual", "value": "CONFIRMED"},
)
