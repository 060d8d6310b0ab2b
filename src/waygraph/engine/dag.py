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

Where each node of a run is lives in a :class:`DagRun`, an immutable value:
:func:`start`, :func:`finish`, :func:`settle`, :func:`stop`, :func:`block`
and :func:`revise` return a new one and leave the one they were given as it
was. The executor keeps only the latest and does the I/O.

Example:
    >>> index = DagIndex.of_dependencies({"a": (), "b": ("a",), "c": ("b",)})
    >>> ready(index, {"a": "completed", "b": "pending", "c": "pending"})
    ['b']
    >>> propagate_skips(index, {"a": "failed", "b": "pending", "c": "pending"})
    ({'b': 'a', 'c': 'b'}, [])
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, cast

from waygraph.model import NodeStatus

if TYPE_CHECKING:
    from waygraph.model import Plan

__all__ = [
    "DagIndex",
    "DagRun",
    "accept",
    "block",
    "can_start",
    "finish",
    "propagate_skips",
    "ready",
    "revise",
    "settle",
    "start",
    "stop",
    "waive",
]

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


@dataclass(frozen=True, slots=True)
class DagRun:
    """Where each node of an executed plan's run is; every change returns a new value.

    ``statuses``: node -> :class:`NodeStatus`, in plan order (read-only).
    ``waived``: skipped nodes a revision chose to skip on purpose: done for
    their dependents. ``stop_reason``: why the run stopped starting nodes
    (the first reason given stays), or None.

    Example:
        >>> run = DagRun.of(["a", "b"])
        >>> later = finish(start(run, ["a"]), "a", ok=True)
        >>> run.with_(NodeStatus.PENDING), later.with_(NodeStatus.PENDING)
        (['a', 'b'], ['b'])
    """

    statuses: Mapping[str, NodeStatus]
    waived: frozenset[str] = frozenset()
    stop_reason: str | None = None

    def __post_init__(self) -> None:
        # A read-only view of a copy: the caller's mapping may change later.
        # Changes made here pass a view of a fresh dict nobody else holds.
        if type(self.statuses) is not MappingProxyType:
            object.__setattr__(self, "statuses", MappingProxyType(dict(self.statuses)))

    @classmethod
    def of(cls, nodes: Iterable[str]) -> DagRun:
        """Every node pending."""
        return cls(dict.fromkeys(nodes, NodeStatus.PENDING))

    def changed(self, changes: Mapping[str, NodeStatus]) -> DagRun:
        """This run with ``changes`` applied to the statuses."""
        if not changes:
            return self
        # The view's copy() is the dict's own C copy; {**view} or dict(view)
        # go key by key through the mapping protocol, 20x slower, twice a step.
        statuses = cast("MappingProxyType[str, NodeStatus]", self.statuses).copy()
        statuses.update(changes)
        return DagRun(MappingProxyType(statuses), self.waived, self.stop_reason)

    def with_(self, status: NodeStatus) -> list[str]:
        """The nodes with ``status``, in plan order."""
        return [node for node, s in self.statuses.items() if s == status]

    def failure_counts(self) -> tuple[int, int]:
        """``(failed, finished)``: nodes that failed, and nodes that completed or failed."""
        failed = finished = 0
        for s in self.statuses.values():
            if s == NodeStatus.FAILED:
                failed += 1
                finished += 1
            elif s == NodeStatus.COMPLETED:
                finished += 1
        return failed, finished

    def succeeded(self) -> bool:
        """Whether the run ended well: not stopped, and every node completed or waived."""
        return self.stop_reason is None and all(
            s == NodeStatus.COMPLETED or n in self.waived for n, s in self.statuses.items()
        )


def _require(run: DagRun, node: str, *allowed: NodeStatus) -> None:
    status = run.statuses.get(node)
    if status not in allowed:
        wanted = " or ".join(allowed)
        raise ValueError(f"node {node!r} is {status or 'not in the run'}, not {wanted}")


def start(run: DagRun, nodes: Iterable[str]) -> DagRun:
    """``nodes`` (pending) are running.

    Example:
        >>> start(DagRun.of(["a"]), ["a"]).statuses["a"].value
        'running'
    """
    changes = {}
    for node in nodes:
        _require(run, node, NodeStatus.PENDING)
        changes[node] = NodeStatus.RUNNING
    return run.changed(changes)


def finish(run: DagRun, node: str, *, ok: bool) -> DagRun:
    """``node`` (running) completed, or failed.

    Example:
        >>> finish(start(DagRun.of(["a"]), ["a"]), "a", ok=False).statuses["a"]
        <NodeStatus.FAILED: 'failed'>
    """
    _require(run, node, NodeStatus.RUNNING)
    return run.changed({node: NodeStatus.COMPLETED if ok else NodeStatus.FAILED})


def settle(index: DagIndex, run: DagRun) -> tuple[DagRun, dict[str, str], list[str]]:
    """Apply :func:`propagate_skips`: ``(new run, {skipped: its cause}, pending again)``.

    Example:
        >>> index = DagIndex.of_dependencies({"a": (), "b": ("a",)})
        >>> failed = finish(start(DagRun.of(["a", "b"]), ["a"]), "a", ok=False)
        >>> settled, skipped, _ = settle(index, failed)
        >>> skipped, settled.statuses["b"]
        ({'b': 'a'}, <NodeStatus.SKIPPED: 'skipped'>)
    """
    skipped, unskipped = propagate_skips(index, run.statuses, run.waived)
    changes = dict.fromkeys(skipped, NodeStatus.SKIPPED)
    changes.update(dict.fromkeys(unskipped, NodeStatus.PENDING))
    return run.changed(changes), skipped, unskipped


def waive(run: DagRun, node: str) -> DagRun:
    """``node`` (failed) is skipped on purpose: its dependents may run without it.

    Example:
        >>> failed = finish(start(DagRun.of(["a"]), ["a"]), "a", ok=False)
        >>> waive(failed, "a").waived
        frozenset({'a'})
    """
    _require(run, node, NodeStatus.FAILED)
    return replace(run.changed({node: NodeStatus.SKIPPED}), waived=run.waived | {node})


def accept(run: DagRun, node: str) -> DagRun:
    """``node`` (failed on its output's check) completed after all: its output is accepted.

    Example:
        >>> failed = finish(start(DagRun.of(["a"]), ["a"]), "a", ok=False)
        >>> accept(failed, "a").statuses["a"]
        <NodeStatus.COMPLETED: 'completed'>
    """
    _require(run, node, NodeStatus.FAILED)
    return run.changed({node: NodeStatus.COMPLETED})


def stop(run: DagRun, reason: str) -> DagRun:
    """No node starts any more, for ``reason`` (a run stopped already keeps its first reason).

    Example:
        >>> stop(stop(DagRun.of(["a"]), "budget"), "later").stop_reason
        'budget'
    """
    return run if run.stop_reason is not None else replace(run, stop_reason=reason)


def block(run: DagRun) -> tuple[DagRun, list[str]]:
    """A stopped run's pending and running nodes will never run: ``(new run, those nodes)``.

    Example:
        >>> blocked, nodes = block(stop(DagRun.of(["a"]), "budget"))
        >>> nodes, blocked.statuses["a"]
        (['a'], <NodeStatus.BLOCKED: 'blocked'>)
    """
    if run.stop_reason is None:
        return run, []
    nodes = [n for n, s in run.statuses.items() if s in (NodeStatus.PENDING, NodeStatus.RUNNING)]
    return run.changed(dict.fromkeys(nodes, NodeStatus.BLOCKED)), nodes


def revise(run: DagRun, nodes: Iterable[str], carried: Collection[str]) -> DagRun:
    """The run of a revised plan whose nodes are ``nodes``, in order.

    Nodes in ``carried`` keep their status; every other node of the new plan
    is pending, and nodes of the old plan not carried are gone.

    Example:
        >>> done = finish(start(DagRun.of(["a", "b"]), ["a"]), "a", ok=True)
        >>> [(n, s.value) for n, s in revise(done, ["a", "c"], {"a"}).statuses.items()]
        [('a', 'completed'), ('c', 'pending')]
    """
    statuses = {
        n: run.statuses[n] if n in carried and n in run.statuses else NodeStatus.PENDING
        for n in nodes
    }
    return replace(run, statuses=statuses, waived=run.waived & statuses.keys())
