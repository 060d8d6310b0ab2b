"""A generated plan indexed for its scheduler, once per plan (an immutable value).

Indexes per plan keep each step's scheduling work independent of the plan's
size (bench/dag.py measures it); the engine's :class:`DagIndex` decides
readiness and skips.

Example:
    >>> from waygraph.planning._models import ExecutionMode, Plan
    >>> plan = Plan(goal="g", steps=[{"id": "a", "action": "t"},
    ...     {"id": "b", "action": "t"}, {"id": "c", "action": "t", "dependencies": ["b"]}])
    >>> PlanIndex.of(plan, frozenset(), ExecutionMode.PARALLEL).priority
    {'a': (0, 0), 'b': (-1, 1), 'c': (0, 2)}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from waygraph.engine.dag import DagIndex
from waygraph.planning._models import ExecutionMode, Plan, PlanStep

__all__ = ["PlanIndex"]


@dataclass(frozen=True, slots=True)
class PlanIndex:
    """``plan``'s steps by id, their plan order, the engine's DAG index and start priorities."""

    plan: Plan
    by_id: Mapping[str, PlanStep]
    order: Mapping[str, int]
    dag: DagIndex
    #: Step ids a parameter may refer to: the plan's and an outer plan's.
    known: frozenset[str]
    priority: Mapping[str, tuple[int, int]]

    @classmethod
    def of(cls, plan: Plan, outer_ids: frozenset[str], mode: ExecutionMode) -> PlanIndex:
        """Index ``plan`` (``outer_ids``: an outer plan's steps a sub-plan may use)."""
        by_id = {s.id: s for s in plan.steps}
        order = {s.id: i for i, s in enumerate(plan.steps)}
        index = DagIndex.of_dependencies({s.id: s.dependencies for s in plan.steps})
        return cls(
            plan=plan,
            by_id=by_id,
            order=order,
            dag=index,
            known=frozenset(by_id) | outer_ids,
            priority=_priorities(by_id, order, index, mode),
        )


def _priorities(
    by_id: Mapping[str, PlanStep],
    order: Mapping[str, int],
    index: DagIndex,
    mode: ExecutionMode,
) -> dict[str, tuple[int, int]]:
    """Sort keys for ready steps: plan order, or in parallel modes the longest chain first.

    A step with more steps waiting behind it in a chain starts first (plan
    order breaks ties), so the critical path is never queued behind side
    branches; sequential mode keeps plan order.
    """
    if mode == ExecutionMode.SEQUENTIAL:
        return {sid: (0, i) for sid, i in order.items()}
    # Longest chain of dependents below each step, leaves first (Kahn's order).
    below = {sid: 0 for sid in by_id}
    waiting = {sid: len(index.dependents.get(sid, ())) for sid in by_id}
    ready = [sid for sid, n in waiting.items() if n == 0]
    while ready:
        sid = ready.pop()
        for dep in by_id[sid].dependencies:
            if dep in below:  # not an outer step's id
                below[dep] = max(below[dep], below[sid] + 1)
                waiting[dep] -= 1
                if waiting[dep] == 0:
                    ready.append(dep)
    return {sid: (-below[sid], i) for sid, i in order.items()}
