"""The state of one ``waygraph check`` pass over a plan, which every part of the checker shares.

The checker (:mod:`waygraph.check._plan`) and its parts (routes, human nodes,
verify and ``when`` trees) read the plan through it and report to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from waygraph.check._problem import Problem, problem
from waygraph.engine.choice import ordered_edges

if TYPE_CHECKING:
    from waygraph.model import Edge, Plan

__all__ = ["PlanScan"]


class PlanScan:
    """One pass over one plan: what it reads, and the problems found so far (``problems``).

    Example:
        >>> from waygraph.model import Graph
        >>> scan = PlanScan(Graph.builder().exit("done").edge("start", "done").plan("p"), None)
        >>> scan.add("no-triggers", "no triggers")
        >>> [(p.code, p.level, p.plan) for p in scan.problems]
        [('no-triggers', 'warning', 'p')]
    """

    def __init__(self, plan: Plan, file: str | None) -> None:
        self.plan = plan
        self.file = file
        self.graph = plan.graph
        self.nodes = plan.graph.nodes
        self.out = plan.graph.index.out
        # Event-driven runs pick on_event edges by event type, not by outcome.
        self.has_events = any(e.on_event is not None for e in plan.graph.edges)
        self.problems: list[Problem] = []
        # The node the run begins at, or None when graph.start is unusable.
        self.entry: str | None = None

    def add(
        self,
        code: str,
        message: str,
        *,
        node: str | None = None,
        edge: Edge | None = None,
        field: str | None = None,
    ) -> None:
        """Record a problem of ``code`` (its level from ``CODES``) in this plan's file."""
        self.problems.append(
            problem(
                code,
                message,
                file=self.file,
                plan=self.plan.id,
                node=node,
                edge=edge.describe() if edge is not None else None,
                field=field,
            )
        )

    def guided_out(self, node_id: str) -> Sequence[Edge]:
        """Edges out of ``node_id`` that guided edge selection chooses among, in its order."""
        edges = ordered_edges(self.plan, node_id) if self.plan.routing == "attractor" else None
        edges = self.out.get(node_id, ()) if edges is None else edges
        return [e for e in edges if e.on_event is None] if self.has_events else edges
