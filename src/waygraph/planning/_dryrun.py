"""Dry runs: what a plan would do, worked out without running a step.

The Planning pattern document asks (open question 3) for "a dry-run mode
that validates a plan without executing". :func:`simulate_plan` validates a
plan exactly as a run would, then lays it out as the scheduler would take
it: dependency layers, the batches each layer splits into under the mode's
concurrency limit, the critical path, and the estimated tokens against the
token budget. Nothing here calls a tool or a model.

The critical path is the longest dependency chain counted in steps: however
many steps run at once, a run takes at least that many steps one after the
other (step count, not tokens, because estimates are optional and often
missing, and because tokens do not say how long a step takes). Among chains
of equal length the one with the most estimated tokens wins, then plan order.

Example:
    >>> from waygraph.planning import Plan, PlanningPattern, ToolRegistry
    >>> def fetch(url: str) -> str:
    ...     return url
    >>> plan = Plan(goal="g", steps=[
    ...     {"id": "a", "action": "fetch", "parameters": {"url": "x"}},
    ...     {"id": "b", "action": "fetch", "parameters": {"url": "y"}},
    ...     {"id": "c", "action": "fetch", "parameters": {"url": "$a"}, "dependencies": ["a"]}])
    >>> report = simulate_plan(plan, ToolRegistry([fetch]),
    ...                        PlanningPattern(execution_mode="parallel", max_parallel=2))
    >>> report.valid, [layer.steps for layer in report.layers], report.critical_path
    (True, [('a', 'b'), ('c',)], ('a', 'c'))
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from waygraph.planning._models import (
    DryRunLayer,
    DryRunReport,
    ExecutionMode,
    Plan,
    PlanExecutionResult,
    PlanProblem,
    PlanStep,
    count,
)

if TYPE_CHECKING:
    from waygraph.planning._pattern import PlanningPattern
    from waygraph.planning._tools import Tool

__all__ = [
    "DryRunLayer",
    "DryRunReport",
    "count",
    "dry_run_result",
    "report_without_plan",
    "simulate_plan",
]


# ------------------------------------------------------------------ working it out


def _concurrency(pattern: PlanningPattern) -> int:
    # The scheduler's own limit (PlanRun._start_ready): 1, or max_parallel.
    return 1 if pattern.execution_mode == ExecutionMode.SEQUENTIAL else pattern.max_parallel


def _settings(pattern: PlanningPattern, tokens_spent: int) -> dict[str, Any]:
    """The report's fields that come from the pattern, whatever the plan."""
    budget = pattern.token_budget
    return {
        "execution_mode": pattern.execution_mode,
        "max_parallel": pattern.max_parallel,
        "concurrency": _concurrency(pattern),
        "token_budget": budget,
        "tokens_spent": tokens_spent,
        "budget_left": None if budget is None else max(0, budget - tokens_spent),
    }


def report_without_plan(
    goal: str, pattern: PlanningPattern, problems: Iterable[PlanProblem], *, tokens_spent: int = 0
) -> DryRunReport:
    """The report when no plan could be read: only the problems (and the settings).

    Example:
        >>> from waygraph.planning import PlanningPattern
        >>> report = report_without_plan("g", PlanningPattern(), [("no_plan", "unreachable")])
        >>> report.valid, report.summary()
        (False, 'invalid: 1 problem (no_plan); nothing would run')
    """
    return DryRunReport(
        goal=goal, valid=False, problems=tuple(problems), **_settings(pattern, tokens_spent)
    )


def _layers(steps: Mapping[str, PlanStep]) -> tuple[dict[str, int], list[str]]:
    """Each schedulable step's layer (Kahn's algorithm), and the steps that can never start."""
    waiting: dict[str, int] = {}
    dependents: dict[str, list[str]] = {sid: [] for sid in steps}
    for sid, step in steps.items():
        deps = set(step.dependencies)
        # An unknown dependency never completes: the step stays waiting for good.
        waiting[sid] = len(deps)
        for dep in deps & steps.keys():
            dependents[dep].append(sid)
    layer: dict[str, int] = {}
    ready = [sid for sid, n in waiting.items() if n == 0]
    while ready:
        sid = ready.pop()
        layer[sid] = 1 + max((layer[d] for d in steps[sid].dependencies), default=-1)
        for nxt in dependents[sid]:
            waiting[nxt] -= 1
            if waiting[nxt] == 0:
                ready.append(nxt)
    return layer, [sid for sid in steps if sid not in layer]


def _chains_below(steps: Mapping[str, PlanStep], layer: Mapping[str, int]) -> dict[str, int]:
    """The longest chain of dependents below each step (the parallel modes' priority)."""
    below = dict.fromkeys(layer, 0)
    for sid in sorted(layer, key=layer.__getitem__, reverse=True):
        for dep in steps[sid].dependencies:
            if dep in below:
                below[dep] = max(below[dep], below[sid] + 1)
    return below


def _batches(
    ordered: list[str],
    limit: int,
    exclusive: set[str],
) -> tuple[tuple[str, ...], ...]:
    batches: list[tuple[str, ...]] = []
    current: list[str] = []
    for sid in ordered:
        if sid in exclusive:
            # Adaptive mode runs a side-effect step alone (PlanRun._start_ready).
            if current:
                batches.append(tuple(current))
                current = []
            batches.append((sid,))
            continue
        current.append(sid)
        if len(current) == limit:
            batches.append(tuple(current))
            current = []
    if current:
        batches.append(tuple(current))
    return tuple(batches)


def _critical_path(
    steps: Mapping[str, PlanStep], layer: Mapping[str, int], order: Mapping[str, int]
) -> tuple[str, ...]:
    """The longest chain in steps; ties go to more estimated tokens, then to plan order."""
    best: dict[str, tuple[int, int]] = {}
    via: dict[str, str | None] = {}
    for sid in sorted(layer, key=lambda s: (layer[s], order[s])):
        step = steps[sid]
        prev: str | None = None
        for dep in sorted(set(step.dependencies), key=order.__getitem__):
            if prev is None or best[dep] > best[prev]:
                prev = dep
        length, tokens = best[prev] if prev is not None else (0, 0)
        best[sid] = (length + 1, tokens + step.estimated_tokens)
        via[sid] = prev
    if not best:
        return ()
    end: str | None = max(best, key=lambda s: (*best[s], -order[s]))
    path: list[str] = []
    while end is not None:
        path.append(end)
        end = via[end]
    return tuple(reversed(path))


def _notes(steps: Iterable[PlanStep]) -> list[str]:
    notes = []
    for step in steps:
        if step.subplan is not None:
            notes.append(
                f"step {step.id!r} runs a sub-plan of {count(len(step.subplan.steps), 'step')} "
                "as one step "
                "here; its own layers are laid out when it runs"
            )
        elif step.is_composite:
            notes.append(
                f"step {step.id!r} is planned into a sub-plan by the model when it is reached; "
                "its steps and tokens are not known yet"
            )
    return notes


def simulate_plan(
    plan: Plan | Mapping[str, Any],
    tools: Mapping[str, Tool],
    pattern: PlanningPattern,
    *,
    tokens_spent: int = 0,
    problems: Iterable[PlanProblem] | None = None,
) -> DryRunReport:
    """Validate ``plan`` as a run would, and lay out what would run; nothing is called.

    ``plan`` may also be a plan's JSON object as a model writes it (its
    problems are reported, not raised). ``tokens_spent`` counts against
    ``pattern.token_budget`` (a dry-run ``execute`` has spent tokens
    planning). ``problems``, when given, are taken as the validation's
    outcome instead of validating again (the planner already did).

    Example:
        >>> from waygraph.planning import PlanningPattern
        >>> report = simulate_plan({"goal": "g", "steps": [{"id": "a", "action": "x",
        ...                         "parameters": {}, "dependencies": []}]}, {}, PlanningPattern())
        >>> report.valid, [p.code for p in report.problems], [l.steps for l in report.layers]
        (False, ['unknown_tool'], [('a',)])
    """
    # Imported here: this module is imported by _models, before validation exists.
    from waygraph.planning._validate import (
        add_implied_dependencies,
        parse_plan,
        validate_plan,
    )

    base = _settings(pattern, tokens_spent)
    budget_left = base["budget_left"]
    if isinstance(plan, Mapping):
        parsed, found = parse_plan(dict(plan), require_dependencies=pattern.require_dependencies)
        if parsed is None:
            goal = plan.get("goal")
            goal = goal if isinstance(goal, str) else ""
            return report_without_plan(goal, pattern, found, tokens_spent=tokens_spent)
        plan = parsed
    elif not pattern.require_dependencies:
        # As a run does (PlanGenerator.normalize): references imply dependencies.
        plan = add_implied_dependencies(plan)
    if problems is None:
        found = validate_plan(plan, tools, pattern, budget_left=budget_left)
    else:
        found = list(problems)

    steps: dict[str, PlanStep] = {}
    for step in plan.steps:
        steps.setdefault(step.id, step)  # a duplicate id is a problem already; the first counts
    order = {sid: i for i, sid in enumerate(steps)}
    layer, unschedulable = _layers(steps)
    if pattern.execution_mode == ExecutionMode.SEQUENTIAL:
        priority = {sid: (0, order[sid]) for sid in layer}
    else:
        below = _chains_below(steps, layer)
        priority = {sid: (-below[sid], order[sid]) for sid in layer}
    exclusive: set[str] = set()
    if pattern.execution_mode == ExecutionMode.ADAPTIVE:
        for sid in layer:
            tool = tools.get(steps[sid].action)
            if tool is not None and tool.side_effects:
                exclusive.add(sid)
    limit = _concurrency(pattern)
    layers = []
    for index in range(1 + max(layer.values(), default=-1)):
        ordered = sorted((s for s in layer if layer[s] == index), key=priority.__getitem__)
        layers.append(
            DryRunLayer(
                index=index,
                steps=tuple(ordered),
                batches=_batches(ordered, limit, exclusive),
                estimated_tokens=sum(steps[s].estimated_tokens for s in ordered),
            )
        )
    path = _critical_path(steps, layer, order)
    unestimated = tuple(s.id for s in plan.steps if s.estimated_tokens == 0)
    notes = _notes(plan.steps)
    if unestimated and plan.steps:
        notes.append(
            f"{len(unestimated)} of {count(len(plan.steps), 'step')} without a token estimate "
            "count 0, so the estimate is a lower bound"
        )
    return DryRunReport(
        goal=plan.goal,
        plan=plan,
        valid=not found,
        problems=tuple(found),
        peak_parallel=max((len(b) for lay in layers for b in lay.batches), default=0),
        layers=tuple(layers),
        unschedulable=tuple(unschedulable),
        critical_path=path,
        critical_path_tokens=sum(steps[s].estimated_tokens for s in path),
        estimated_tokens=plan.estimated_total_tokens,
        unestimated_steps=unestimated,
        over_budget=budget_left is not None and plan.estimated_total_tokens > budget_left,
        notes=tuple(notes),
        **base,
    )


def dry_run_result(
    report: DryRunReport,
    *,
    plan: Plan | None,
    token_usage: Any,
    execution_time: float,
    why: str | None = None,
) -> PlanExecutionResult:
    """The result of a ``dry_run=True`` call: ``success`` is the plan's validity, no step ran.

    ``why`` replaces the report's summary in ``final_output`` when the run
    ended before a plan could be checked (the model could not be reached).

    Example:
        >>> result = dry_run_result(DryRunReport(goal="g", valid=True), plan=None,
        ...                         token_usage={}, execution_time=0.0)
        >>> result.success, result.step_results, result.final_output
        (True, {}, 'dry run, nothing executed: valid: 0 steps in 0 layers, 1 at a time \
(sequential); estimated 0 tokens')
    """
    lines = [f"dry run, nothing executed: {why or report.summary()}"]
    lines += [f"- {problem}" for problem in report.problems if why is None]
    return PlanExecutionResult(
        success=report.valid,
        plan=plan,
        final_plan=plan,
        final_output="\n".join(lines),
        token_usage=token_usage,
        execution_time=execution_time,
        problems=report.problems,
        dry_run_report=report,
    )
