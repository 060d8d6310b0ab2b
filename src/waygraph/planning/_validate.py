"""Reading a model's plan JSON and validating a plan before anything runs.

Every problem has a stable code (for programs) and a message that says what
is wrong and how to fix it (for people, and for the model the plan is sent
back to). Codes:

``not_object``, ``missing_goal``, ``missing_steps``, ``missing_field``,
``missing_dependencies``, ``bad_field`` (the JSON's shape); ``empty_plan``,
``duplicate_step``, ``unknown_dependency``, ``cycle`` (the DAG);
``too_many_steps``, ``over_budget`` (limits); ``unknown_tool``,
``bad_parameters``, ``unknown_fallback``, ``bad_fallback_parameters``,
``missing_fallback``, ``unknown_reference``, ``undeclared_dependency``
(steps); ``hierarchical_off``, ``too_deep`` (sub-plans); ``infeasible``
(the model's feasibility review).

Example:
    >>> from waygraph.planning import Plan
    >>> plan = Plan(goal="g", steps=[{"id": "s1", "action": "t", "dependencies": ["s4"]},
    ...                              {"id": "s4", "action": "t", "dependencies": ["s1"]}])
    >>> [p.message for p in structural_problems(plan)]  # doctest: +ELLIPSIS
    ['dependencies form a cycle: s1 -> s4 -> s1 ...']
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from pydantic import ValidationError

from waygraph.ids import id_problem
from waygraph.planning._models import Plan, PlanProblem, PlanStep
from waygraph.planning._pattern import PlanningPattern
from waygraph.planning._references import find_references
from waygraph.planning._tools import Tool
from waygraph.suggest import did_you_mean

__all__ = [
    "add_implied_dependencies",
    "ancestors",
    "find_cycles",
    "parse_plan",
    "structural_problems",
    "validate_plan",
]


# ------------------------------------------------------------------ parsing


def parse_plan(
    data: Any, *, require_dependencies: bool = True
) -> tuple[Plan | None, list[PlanProblem]]:
    """Turn a model's plan JSON into a :class:`Plan`, or list what is wrong with it.

    Only ``goal`` and each step's ``id``, ``action``, ``parameters`` and
    (with ``require_dependencies``) ``dependencies`` are required. Without
    ``require_dependencies`` a missing list means none, and ``$step``
    references add the dependencies they imply.

    Example:
        >>> plan, problems = parse_plan({"goal": "g", "steps": [{"id": "a", "action": "t"}]})
        >>> plan, [str(p) for p in problems]
        (None, ["step 'a': has no 'parameters' (an object of the tool's arguments)", \
"step 'a': has no 'dependencies' list; give [] when the step depends on nothing"])
    """
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else type(data).__name__
        return None, [
            PlanProblem(
                "not_object",
                f"the reply is {kind}; expected one JSON object with 'goal' and 'steps'",
            )
        ]
    problems: list[PlanProblem] = []
    if not isinstance(data.get("goal"), str) or not data["goal"].strip():
        problems.append(PlanProblem("missing_goal", "the plan has no 'goal' (a string)"))
    steps = data.get("steps")
    if not isinstance(steps, list):
        problems.append(PlanProblem("missing_steps", "the plan has no 'steps' list"))
    else:
        _raw_steps(steps, "steps", require_dependencies, problems)
    if problems:
        return None, problems
    try:
        plan = Plan.model_validate(data)
    except ValidationError as exc:
        return None, [_field_problem(err) for err in exc.errors()]
    if not require_dependencies:
        plan = add_implied_dependencies(plan)
    return plan, []


_FIELD_HINTS = {
    "id": "a unique string",
    "action": "the name of a tool",
    "parameters": "an object of the tool's arguments",
}


def _raw_steps(
    steps: list[Any], where: str, require_deps: bool, problems: list[PlanProblem]
) -> None:
    for i, raw in enumerate(steps):
        place = f"{where}[{i}]"
        if not isinstance(raw, dict):
            problems.append(PlanProblem("missing_field", f"{place} is not an object"))
            continue
        step_id = raw.get("id")
        sid = str(step_id) if step_id not in (None, "") else None
        prefix = "" if sid else f"{place} "
        for key, hint in _FIELD_HINTS.items():
            if raw.get(key) in (None, ""):
                problems.append(
                    PlanProblem("missing_field", f"{prefix}has no {key!r} ({hint})", sid)
                )
        if (
            "parameters" in raw
            and raw["parameters"] is not None
            and not isinstance(raw["parameters"], dict)
        ):
            problems.append(
                PlanProblem("bad_field", f"{prefix}'parameters' must be an object", sid)
            )
        if require_deps and raw.get("dependencies") is None:
            problems.append(
                PlanProblem(
                    "missing_dependencies",
                    f"{prefix}has no 'dependencies' list; give [] when the step depends on nothing",
                    sid,
                )
            )
        sub = raw.get("subplan")
        if isinstance(sub, dict) and isinstance(sub.get("steps"), list):
            _raw_steps(sub["steps"], f"{place}.subplan.steps", require_deps, problems)


def _field_problem(err: Mapping[str, Any]) -> PlanProblem:
    loc = ".".join(str(part) for part in err.get("loc", ()))
    shown = repr(err.get("input"))
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return PlanProblem("bad_field", f"{loc}: {err.get('msg')} (got {shown})")


def add_implied_dependencies(plan: Plan) -> Plan:
    """Add the dependencies that ``$step`` references imply (also in sub-plans).

    Example:
        >>> plan = Plan(goal="g", steps=[{"id": "a", "action": "t"},
        ...                              {"id": "b", "action": "t", "parameters": {"x": "$a"}}])
        >>> add_implied_dependencies(plan).step("b").dependencies
        ('a',)
    """
    ids = set(plan.step_ids)
    steps = []
    for step in plan.steps:
        refs = _step_references(step, ids) & ids
        missing = sorted(refs - set(step.dependencies) - {step.id})
        update: dict[str, Any] = {}
        if missing:
            update["dependencies"] = (*step.dependencies, *missing)
        if step.subplan is not None:
            update["subplan"] = add_implied_dependencies(step.subplan)
        steps.append(step.model_copy(update=update) if update else step)
    return plan.model_copy(update={"steps": tuple(steps)})


def _step_references(step: PlanStep, known: Collection[str]) -> set[str]:
    return find_references([step.parameters, step.fallback_parameters or {}], known)


# ------------------------------------------------------------------ structure


def find_cycles(plan: Plan) -> list[list[str]]:
    """Each dependency cycle once, as a path in execution order ending where it began.

    A step depending on itself is the cycle ``[s, s]``; each cycle starts at
    its step that comes first in the plan.
    """
    order = {sid: i for i, sid in enumerate(plan.step_ids)}
    waits_for_me: dict[str, list[str]] = {sid: [] for sid in order}
    for step in plan.steps:
        for dep in step.dependencies:
            if dep in waits_for_me:
                waits_for_me[dep].append(step.id)
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    cycles: list[list[str]] = []
    seen: set[frozenset[str]] = set()
    for root in order:
        if root in state:
            continue
        state[root] = 1
        path = [root]
        stack = [iter(waits_for_me[root])]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
                continue
            if nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(waits_for_me[nxt]))
            elif state[nxt] == 1:
                loop = path[path.index(nxt) :]
                if frozenset(loop) not in seen:
                    seen.add(frozenset(loop))
                    first = min(range(len(loop)), key=lambda k: order[loop[k]])
                    loop = loop[first:] + loop[:first]
                    cycles.append([*loop, loop[0]])
    return cycles


def structural_problems(plan: Plan) -> list[PlanProblem]:
    """Problems that leave a plan without a DAG: duplicate ids, unknown dependencies, cycles."""
    problems: list[PlanProblem] = []
    seen: set[str] = set()
    for step in plan.steps:
        if (problem := id_problem(step.id)) is not None:
            # The one rule of ids (waygraph.ids): no control or format characters,
            # which would hide or reverse the id wherever it is shown.
            shown = step.id.encode("unicode_escape").decode("ascii")[:60]
            problems.append(PlanProblem("bad_step_id", f"the step id {problem}", shown))
        if step.id in seen:
            problems.append(
                PlanProblem(
                    "duplicate_step", "two steps have this id; give each step its own id", step.id
                )
            )
        seen.add(step.id)
    for step in plan.steps:
        for dep in step.dependencies:
            if dep not in seen:
                problems.append(
                    PlanProblem(
                        "unknown_dependency",
                        f"depends on unknown step {dep!r}; steps are: {', '.join(plan.step_ids)}",
                        step.id,
                    )
                )
    for loop in find_cycles(plan):
        problems.append(
            PlanProblem(
                "cycle",
                f"dependencies form a cycle: {' -> '.join(loop)} (each step waits for the one "
                "before it, so none can start); remove one of these dependencies",
            )
        )
    return problems


def ancestors(plan: Plan, step_id: str) -> set[str]:
    """Every step ``step_id`` waits for, directly or through other steps."""
    deps = {s.id: s.dependencies for s in plan.steps}
    found: set[str] = set()
    todo = list(deps.get(step_id, ()))
    while todo:
        current = todo.pop()
        if current not in found:
            found.add(current)
            todo.extend(deps.get(current, ()))
    return found


# ------------------------------------------------------------------ validation


def validate_plan(
    plan: Plan,
    tools: Mapping[str, Tool],
    pattern: PlanningPattern,
    *,
    depth: int = 0,
    external: Collection[str] = (),
    budget_left: int | None = None,
) -> list[PlanProblem]:
    """Every reason ``plan`` cannot run (empty when it can).

    ``external`` are ids of steps outside this plan whose results its
    parameters may reference (a sub-plan sees its parent step's ancestors);
    ``budget_left`` is the token budget not yet spent, when there is one.

    Example:
        >>> from waygraph.planning import PlanningPattern
        >>> plan = Plan(goal="g", steps=[{"id": "a", "action": "serch"}])
        >>> [p.code for p in validate_plan(plan, {}, PlanningPattern())]
        ['unknown_tool']
    """
    problems = structural_problems(plan)
    if not plan.steps:
        problems.append(PlanProblem("empty_plan", "the plan has no steps"))
    if len(plan.steps) > pattern.max_steps:
        problems.append(
            PlanProblem(
                "too_many_steps",
                f"the plan has {len(plan.steps)} steps; at most {pattern.max_steps} are allowed "
                "(max_steps): merge or drop steps",
            )
        )
    ids = set(plan.step_ids)
    known = ids | set(external)
    for step in plan.steps:
        problems += _step_problems(plan, step, tools, pattern, depth, known, set(external))
    if budget_left is not None and plan.estimated_total_tokens > budget_left:
        problems.append(
            PlanProblem(
                "over_budget",
                f"the plan's steps are estimated at {plan.estimated_total_tokens} tokens, over the "
                f"{budget_left} tokens left of the token budget; plan fewer or cheaper steps",
            )
        )
    return problems


def _step_problems(
    plan: Plan,
    step: PlanStep,
    tools: Mapping[str, Tool],
    pattern: PlanningPattern,
    depth: int,
    known: set[str],
    external: set[str],
) -> list[PlanProblem]:
    problems: list[PlanProblem] = []

    def add(code: str, message: str) -> None:
        problems.append(PlanProblem(code, message, step.id))

    if step.is_composite:
        if not pattern.hierarchical:
            add(
                "hierarchical_off",
                f"uses {'a sub-plan' if step.subplan else repr(step.action)}, but hierarchical "
                "planning is off (PlanningPattern(hierarchical=True)); call a tool instead",
            )
        elif depth >= pattern.max_decomposition_depth:
            add(
                "too_deep",
                f"asks for a sub-plan at depth {depth + 1}, deeper than max_decomposition_depth "
                f"{pattern.max_decomposition_depth}; call a tool instead",
            )
        elif step.subplan is not None:
            inner_external = external | ancestors(plan, step.id)
            for inner in validate_plan(
                step.subplan, tools, pattern, depth=depth + 1, external=inner_external
            ):
                add(inner.code, f"in its sub-plan: {inner}")
    else:
        tool = tools.get(step.action)
        if tool is None:
            add("unknown_tool", _unknown_tool(step.action, tools))
        else:
            for message in tool.check_parameters(step.parameters, known):
                add("bad_parameters", message)
    if step.fallback_action is not None:
        fallback = tools.get(step.fallback_action)
        if fallback is None:
            add(
                "unknown_fallback", "fallback_action: " + _unknown_tool(step.fallback_action, tools)
            )
        else:
            params = (
                step.parameters if step.fallback_parameters is None else step.fallback_parameters
            )
            for message in fallback.check_parameters(params, known):
                add("bad_fallback_parameters", f"fallback {step.fallback_action}: {message}")
    elif pattern.require_fallbacks and not step.is_composite:
        add("missing_fallback", "has no fallback_action; every step needs one (require_fallbacks)")
    refs = _step_references(step, known)
    for ref in sorted(refs - known):
        add("unknown_reference", f"references ${{{ref}}}, which is not a step")
    if step.id in refs:
        add("unknown_reference", "references its own result; use an earlier step's")
    if pattern.require_dependencies and (refs & known) - {step.id}:
        # Ancestors cost a walk of the plan: only steps with references need them.
        before = ancestors(plan, step.id) | external
        for ref in sorted((refs & known) - before - {step.id}):
            add(
                "undeclared_dependency",
                f"uses ${ref} but does not depend on it; add {ref!r} to its dependencies",
            )
    return problems


def _unknown_tool(name: str, tools: Mapping[str, Tool]) -> str:
    message = f"unknown tool {name!r}"
    # The one "did you mean" helper, as everywhere a name is looked up.
    hint = did_you_mean(name, tools, limit=1)
    if hint:
        message += f" ({hint})"
    return message + f"; available tools: {', '.join(tools) or 'none'}"
