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

import logging
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from waygraph.errors import InvalidPlanError, PlanRejectedError
from waygraph.planning._models import Plan, PlanProblem, PlanStep
from waygraph.planning._runtime import Hook, call_hook

if TYPE_CHECKING:
    from waygraph.planning._planner import PlanGenerator
    from waygraph.planning._runtime import Meter

__all__ = ["editable", "offer_to_hook", "settle_edit", "settled"]

log = logging.getLogger("waygraph.planning")


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


def settle_edit(planner: PlanGenerator, plan: Plan, changed: Plan, meter: Meter) -> Plan:
    """The plan ``on_plan_generated`` left (``changed``), validated again (InvalidPlanError)."""
    blame = PlanProblem("changed_by_callback", "on_plan_generated made the plan invalid")
    try:
        changed = settled(changed)
    except ValueError as exc:
        raise InvalidPlanError([blame, PlanProblem("malformed", str(exc))], plan=plan) from exc
    if changed == plan:
        return plan
    changed = planner.normalize(changed)
    problems = planner.validate(changed, meter)
    if problems:
        raise InvalidPlanError([blame, *problems], plan=changed)
    return changed


async def offer_to_hook(
    hook: Hook, planner: PlanGenerator, plan: Plan, goal: str, meter: Meter
) -> Plan:
    """Offer ``plan`` to ``on_plan_generated`` (``hook``): the plan it left, validated again.

    Raises :class:`PlanRejectedError` when the callback raised, and
    :class:`InvalidPlanError` when it made the plan invalid.
    """
    # A copy the callback may change in place (plan.steps.append(...)).
    offered = editable(plan)
    try:
        changed = await call_hook(hook, "on_plan_generated", plan=offered, goal=goal)
    except Exception as exc:
        log.exception("on_plan_generated failed")
        raise PlanRejectedError(f"plan not run: on_plan_generated raised {exc!r}") from exc
    edited = changed if isinstance(changed, Plan) else offered
    return settle_edit(planner, plan, edited, meter)
