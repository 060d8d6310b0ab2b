"""The DAG rules of an executed plan, pure: which nodes are ready, which are skipped.

A generated plan compiles into task nodes joined by ``on_success`` edges
(:func:`waygraph.planning.to_graph_plan`); the executor (the driver) runs the
ready nodes and reports how they ended; these functions decide what that
means for the others. Statuses are the planning statuses as text
(``pending``, ``running``, ``completed``, ``failed``, ``skipped``,
``blocked``, ``revised``). ``waived`` names nodes a revision chose to skip
on purpose: they count as done for their dependents and never propagate.

- A node with ``join: all`` is **ready** when it is pending and every
  dependency completed (or is waived); with ``join: any`` when at least one
  did (or it has none).
- A pending node is **skipped** when its join can no longer be met: for
  ``all``, one dependency failed or was skipped; for ``any``, every
  dependency did. The cause is the first such dependency in plan order.
  Skips propagate to the dependents of skipped nodes.
- A skipped node whose join can be met again (a revision replaced the
  failed dependency) is pending again.

Example:
    >>> index = DagIndex.of_dependencies({"a": (), "b": ("a",), "c": ("b",)})
    >>> ready(index, {"a": "completed", "b": "pending", "c": "pending"})
    ['b']
    >>> propagate_skips(index, {"a": "failed", "b": "pending", "c": "pending"})
    ({'b': 'a', 'c': 'b'}, [])
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from waygraph.model import Plan

__all__ = ["DagIndex", "can_start", "propagate_skips", "ready"]

#: Statuses after which a dependency will never complete.
_DEAD = frozenset({"failed", "skipped"})


@dataclass(frozen=True, slots=True)
class DagIndex:
    """A plan's dependencies, indexed once per plan (every lookup O(1)).

    Example:
        >>> DagIndex.of_dependencies({"a": (), "b": ("a",)}).dependents["a"]
        ('b',)
    """

    #: Nodes in plan order.
    order: tuple[str, ...]
    dependencies: Mapping[str, tuple[str, ...]]
    dependents: Mapping[str, tuple[str, ...]]
    join: Mapping[str, Literal["any", "all"]]

    @classmethod
    def of_dependencies(
        cls,
        dependencies: Mapping[str, Iterable[str]],
        join: Mapping[str, Literal["any", "all"]] | None = None,
    ) -> DagIndex:
        """An index from ``{node: its dependencies}`` (``join`` default: ``all``).

        Dependencies on ids outside the mapping (an outer plan's steps) are
        kept; they are satisfied or not by the statuses the caller gives.
        """
        deps = {node: tuple(d) for node, d in dependencies.items()}
        dependents: dict[str, list[str]] = {}
        for node, ds in deps.items():
            for d in ds:
                dependents.setdefault(d, []).append(node)
        return cls(
            order=tuple(deps),
            dependencies=deps,
            dependents={k: tuple(v) for k, v in dependents.items()},
            join={node: (join or {}).get(node, "all") for node in deps},
        )

    @classmethod
    def of_plan(cls, plan: Plan) -> DagIndex:
        """An index of a compiled plan's task nodes and their ``on_success`` edges.

        Example:
            >>> from waygraph.planning import Plan as Generated, to_graph_plan
            >>> plan = to_graph_plan(Generated(goal="g", steps=[
            ...     {"id": "a", "action": "t"}, {"id": "b", "action": "t", "dependencies": ["a"]}]))
            >>> DagIndex.of_plan(plan).dependencies
            {'a': (), 'b': ('a',)}
        """
        graph = plan.graph
        tasks = [nid for nid, node in graph.nodes.items() if node.type == "task"]
        names = set(tasks)
        deps = {
            nid: tuple(
                e.from_
                for e in graph.in_edges(nid)
                if e.condition == "on_success" and e.from_ in names
            )
            for nid in tasks
        }
        return cls.of_dependencies(deps, {nid: graph.nodes[nid].join for nid in tasks})


def can_start(
    index: DagIndex,
    node: str,
    statuses: Mapping[str, str],
    waived: Collection[str] = (),
) -> bool:
    """True when ``node`` is pending and its join is met (see the module docstring)."""
    if statuses.get(node) != "pending":
        return False
    deps = index.dependencies[node]
    if not deps:
        return True
    done = (statuses.get(d) == "completed" or d in waived for d in deps)
    return any(done) if index.join[node] == "any" else all(done)


def ready(
    index: DagIndex,
    statuses: Mapping[str, str],
    waived: Collection[str] = (),
    candidates: Iterable[str] | None = None,
) -> list[str]:
    """The nodes that may start now, in plan order (``candidates``: only look at these)."""
    nodes = index.order if candidates is None else candidates
    return [n for n in nodes if n in index.dependencies and can_start(index, n, statuses, waived)]


def _cause(
    index: DagIndex, node: str, statuses: Mapping[str, str], waived: Collection[str]
) -> str | None:
    """The dependency that makes ``node``'s join impossible, or None."""
    deps = index.dependencies[node]
    dead = [d for d in deps if statuses.get(d) in _DEAD and d not in waived]
    if not dead:
        return None
    if index.join[node] == "any" and len(dead) < len(deps):
        return None
    return dead[0]


def propagate_skips(
    index: DagIndex,
    statuses: Mapping[str, str],
    waived: Collection[str] = (),
) -> tuple[dict[str, str], list[str]]:
    """Which pending nodes become skipped (with their cause) and which skipped ones pending.

    Returns ``(skipped, unskipped)``; ``statuses`` is not changed. Applying
    both to ``statuses`` reaches a fixed point: calling again returns nothing.
    """
    current = dict(statuses)
    skipped: dict[str, str] = {}
    unskipped: list[str] = []
    changed = True
    while changed:
        changed = False
        for node in index.order:
            state = current.get(node)
            if state not in ("pending", "skipped") or node in waived:
                continue
            cause = _cause(index, node, current, waived)
            if cause is not None and state == "pending":
                current[node] = "skipped"
                skipped[node] = cause
                changed = True
            elif cause is None and state == "skipped":
                current[node] = "pending"
                if skipped.pop(node, None) is None:
                    unskipped.append(node)
                changed = True
    return skipped, unskipped
