"""Generated plans <-> the shared graph model (DESIGN.md, "Generated plans").

Each step becomes a task node with ``join="all"`` (it runs once every
predecessor succeeded); each dependency an ``on_success`` edge; a start node
feeds the steps without dependencies (``always`` edges, as out of every start
node) and the steps nothing depends on feed an exit. The step's own data is
kept in the node's ``meta["planning_step"]`` so the plan can be rebuilt.

Example:
    >>> from waygraph.planning import Plan
    >>> plan = Plan(goal="Report", steps=[
    ...     {"id": "a", "action": "fetch"}, {"id": "b", "action": "fetch"},
    ...     {"id": "c", "action": "merge", "dependencies": ["a", "b"]}])
    >>> graph = to_graph_plan(plan, "report").graph
    >>> [(e.from_, e.to, e.condition) for e in graph.edges]  # doctest: +NORMALIZE_WHITESPACE
    [('start', 'a', 'always'), ('start', 'b', 'always'), ('a', 'c', 'on_success'),
     ('b', 'c', 'on_success'), ('c', 'done', 'on_success')]
    >>> graph.nodes["c"].join
    'all'
"""

from __future__ import annotations

import re
from typing import Any

from waygraph import model
from waygraph.errors import InvalidPlanError
from waygraph.planning._models import Plan, PlanStep

__all__ = ["from_graph_plan", "to_graph_plan"]

#: Marks a compiled graph plan as coming from the planning agent.
SOURCE = "waygraph.planning"


def to_graph_plan(plan: Plan, plan_id: str | None = None, *, name: str | None = None) -> model.Plan:
    """Compile a generated plan into :class:`waygraph.model.Plan`.

    ``plan_id`` defaults to a slug of the goal. Raises
    :class:`InvalidPlanError` when dependencies are unknown or cyclic, since
    such a plan has no graph to draw.
    """
    from waygraph.planning._validate import structural_problems

    problems = structural_problems(plan)
    if problems:
        raise InvalidPlanError(problems, plan=plan)
    ids = set(plan.step_ids)
    start, done = _free("start", ids), _free("done", ids)
    builder = model.Graph.builder(start)
    for step in plan.steps:
        builder.task(
            step.id,
            name=step.id,
            description=step.description or None,
            action=step.description or step.action,
            tool=step.action,
            join="all",
            meta={"planning_step": step.model_dump(mode="json", exclude={"id"})},
        )
    builder.exit(done, name="Done")
    for step in plan.steps:
        if not step.dependencies:
            builder.edge(start, step.id, "always")
        for dep in step.dependencies:
            builder.edge(dep, step.id, "on_success")
    for leaf in plan.leaves():
        builder.edge(leaf.id, done, "on_success")
    return builder.plan(
        plan_id or _slug(plan.goal),
        name=name or plan.goal[:80],
        goal=plan.goal,
        meta={
            "source": SOURCE,
            "success_criteria": list(plan.success_criteria),
            "created_at": plan.created_at.isoformat(),
            "estimated_total_tokens": plan.estimated_total_tokens,
        },
    )


def from_graph_plan(plan: model.Plan) -> Plan:
    """Rebuild the generated plan a graph was compiled from.

    Raises ``ValueError`` (an :class:`InvalidPlanError`) for a graph that
    ``to_graph_plan`` did not produce.
    """
    from waygraph.planning._models import PlanProblem

    meta = plan.meta or {}
    if meta.get("source") != SOURCE:
        raise InvalidPlanError(
            [
                PlanProblem(
                    "not_generated",
                    f"graph plan {plan.id!r} was not compiled from a generated plan "
                    f"(its meta.source is {meta.get('source')!r}, not {SOURCE!r})",
                )
            ]
        )
    steps: list[PlanStep] = []
    for node in plan.graph.nodes.values():
        data: dict[str, Any] | None = (node.meta or {}).get("planning_step")
        if node.type == "task" and data is not None:
            steps.append(PlanStep.model_validate({**data, "id": node.id}))
    return Plan.model_validate(
        {
            "goal": plan.goal or plan.name,
            "steps": steps,
            "success_criteria": meta.get("success_criteria") or [],
            "created_at": meta.get("created_at"),
            "estimated_total_tokens": meta.get("estimated_total_tokens"),
        }
    )


def _free(base: str, taken: set[str]) -> str:
    name = base
    while name in taken:
        name += "_"
    return name


def _slug(text: str) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower())
    slug = "-".join(words)[:48].strip("-")
    return slug or "generated-plan"
