"""Plans a callback may change in place, as the Planning pattern document's dataclasses allow.

The document's ``Plan`` and ``PlanStep`` are mutable dataclasses, so its
``on_plan_generated`` may write ``plan.steps.append(PlanStep(...))``.
waygraph's plans are immutable; :func:`editable` gives the callback a copy
whose ``steps``, ``success_criteria`` and each step's ``dependencies`` are
lists, and :func:`settled` turns what the callback left into an ordinary
plan again (validated as a new plan is), so nothing it changed skips
validation.

Example:
    >>> plan = Plan(goal="g", steps=[{"id": "a", "action": "t"}])
    >>> offered = editable(plan)
    >>> offered.steps.append(PlanStep(id="b", action="t", dependencies=["a"]))
    >>> [s.id for s in settled(offered).steps], type(settled(offered).steps).__name__
    (['a', 'b'], 'tuple')
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from waygraph.planning._models import Plan, PlanStep

__all__ = ["editable", "settled"]


def _fields(model: BaseModel) -> dict[str, Any]:
    return {name: getattr(model, name) for name in type(model).model_fields}


def editable(plan: Plan) -> Plan:
    """A copy of ``plan`` whose step list, criteria and dependency lists may be changed in place."""
    steps = [s.model_copy(update={"dependencies": list(s.dependencies)}) for s in plan.steps]
    return plan.model_copy(update={"steps": steps, "success_criteria": list(plan.success_criteria)})


def settled(plan: Plan) -> Plan:
    """``plan`` as a callback left it, validated again into an immutable plan.

    Raises pydantic's ``ValidationError`` when the change does not make a
    plan (a step that is not a step, a missing action).
    """
    data = _fields(plan)
    data["steps"] = [_fields(s) if isinstance(s, PlanStep) else s for s in plan.steps]
    return Plan.model_validate(data)
