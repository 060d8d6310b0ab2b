"""``waygraph check`` for the plans that are not library graphs.

An event-driven planner's state machine (``waygraph.events``) and a generated
plan (``waygraph.planning``, the Planning pattern's JSON) are checked here
and reported as :class:`waygraph.check.Problem` with the same kebab-case
codes, every problem at once. The runtime validators raise the first of the
same problems (``validate_state_machine``) or return them in the Planning
pattern's own form (``PlanProblem``, snake_case codes, for its users).

Example:
    >>> found = check_state_machine({"a": {"state_name": "a", "default_next": "x"}}, name="m")
    >>> [p.code for p in found]
    ['unknown-state', 'no-terminal-state']
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from waygraph.check._problem import Problem

__all__ = [
    "check_generated_plan",
    "check_state_machine",
    "kind_of",
]


def kind_of(data: Any) -> str:
    """Which kind of plan file ``data`` (parsed JSON or YAML) is.

    ``"state_machine"``: ``{"state_machine": {...}}``, or a mapping whose
    every value is a state (has ``state_name``). ``"generated"``: a mapping
    with ``goal`` and ``steps`` and neither ``id``, ``graph`` nor ``plans``
    (a library plan has an id). Anything else is ``"library"``.

    Example:
        >>> kind_of({"goal": "g", "steps": []}), kind_of({"id": "p", "steps": []})
        ('generated', 'library')
    """
    if not isinstance(data, Mapping) or not data:
        return "library"
    if isinstance(data.get("state_machine"), Mapping):
        return "state_machine"
    if all(isinstance(v, Mapping) and "state_name" in v for v in data.values()):
        return "state_machine"
    if "goal" in data and "steps" in data and not {"id", "graph", "plans"} & set(data):
        return "generated"
    return "library"


def check_state_machine(
    states: Any, *, name: str | None = None, file: str | None = None
) -> list[Problem]:
    """Every problem of an event-driven state machine (all of them, not the first).

    ``node`` of each problem is the state; see the module example.
    """
    from waygraph.check._problem import Problem
    from waygraph.events.statemachine import state_machine_problems

    if isinstance(states, Mapping) and isinstance(states.get("state_machine"), Mapping):
        name = name or states.get("name") or states.get("plan_id")
        states = states["state_machine"]
    _, found = state_machine_problems(states, name=name)
    return [
        Problem(
            code,
            "error",
            exc.reason + (f" (got {exc.value!r})" if exc.has_value else ""),
            file=file,
            plan=name,
            node=getattr(exc, "state", None),
            field=exc.field,
        )
        for code, exc in found
    ]


def check_generated_plan(data: Any, *, file: str | None = None) -> list[Problem]:
    """Every structural problem of a generated plan: its fields, ids, dependencies and cycles.

    Tool names and parameter references are checked against the tools when the
    plan runs (``waygraph plan --dry-run``); a file alone does not name them.

    Example:
        >>> data = {"goal": "g", "steps": [
        ...     {"id": "a", "action": "t", "parameters": {}, "dependencies": ["b"]},
        ...     {"id": "b", "action": "t", "parameters": {}, "dependencies": ["a"]}]}
        >>> [p.code for p in check_generated_plan(data)]
        ['cycle']
    """
    from waygraph.check._problem import Problem
    from waygraph.planning import PlanProblem
    from waygraph.planning._validate import parse_plan, structural_problems

    plan, found = parse_plan(data, require_dependencies=False)
    if plan is not None:
        found = [*found, *structural_problems(plan)]
        if not plan.steps:
            found.append(PlanProblem("empty_plan", "the plan has no steps"))
    goal = data.get("goal") if isinstance(data, Mapping) else None
    label = str(goal)[:60] if goal else None
    return [
        Problem(
            p.code.replace("_", "-"),
            "error",
            p.message,
            file=file,
            plan=label,
            node=p.step_id,
        )
        for p in found
    ]
