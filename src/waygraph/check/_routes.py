"""The route checks of ``waygraph check``: where edges lead, and whether runs can finish.

Edges that can never be taken, nodes no run reaches, traps no run leaves,
and loops of success edges. A ``human`` node routes like a decision with
``when`` edges: a person's answer may pick any of its labelled edges, and
never an unlabelled one. Run by the plan checker (:mod:`waygraph.check._plan`),
over the pass's state (:class:`~waygraph.check._scan.PlanScan`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from waygraph.engine.choice import first_edge, is_data_check, reads_context
from waygraph.model import Edge, Node
from waygraph.verify_types.people import answer_keys, choice_label

if TYPE_CHECKING:
    from waygraph.check._scan import PlanScan

SUCCESS = ("on_success", "always")
EXHAUST = ("on_exhaust", "on_fail", "always")
ENDS = frozenset({"exit", "escalate"})
_SHOWN = 6  # node names listed in one message before "and N more"


def names(ids: Iterable[str]) -> str:
    """Node ids for a message: the first few quoted, then "and N more"."""
    ids = list(ids)
    shown = ", ".join(repr(i) for i in ids[:_SHOWN])
    return shown + (f" and {len(ids) - _SHOWN} more" if len(ids) > _SHOWN else "")


class RouteChecks:
    """Checks of edges and reachability over one pass (``scan``)."""

    def __init__(self, scan: PlanScan) -> None:
        self.scan = scan

    def check_edge_use(self, node_id: str, node: Node) -> None:
        """Report edges the engine's selection never follows, and retry edges without retries."""
        kind = node.type
        if kind in ENDS:
            return  # already an error per edge
        if kind == "human":
            self.check_human_edges(node_id)
            return
        edges = self.scan.guided_out(node_id)
        if not edges:
            return
        if len(edges) == 1 and edges[0].condition in SUCCESS and kind != "decision":
            return  # the common single success edge: always the one followed
        has_when = kind == "decision" and any(e.when is not None for e in edges)
        # Decisions route on `when` edges first (every one may fire); the rest are
        # plain. An edge whose `when` the engine judges over the context may not
        # hold either, so the edges after it can be taken too.
        plain = [
            e for e in edges if e.when is None or (kind != "decision" and not is_data_check(e.when))
        ]
        attractor = self.scan.plan.routing == "attractor"
        retries = node.max_retries
        # The condition lists the engine tries for each outcome this node can have.
        selections: list[tuple[str, tuple[str, ...]]] = []
        if kind in ("start", "checkpoint"):
            selections.append(("on leaving it", SUCCESS))
        elif kind == "task" and attractor:
            # §3.7: a fail edge is taken at once; without one, retries, then a retry target.
            selections.append(("on success", SUCCESS))
            selections.append(("on a failure", ("on_fail", "on_exhaust")))
            if (retries is None or retries > 0) and _first(plain, selections[-1][1]) is None:
                selections.append(("on a failure with attempts left", ("on_retry",)))
        elif kind == "task":
            selections.append(("on success", SUCCESS))
            if retries is None or retries > 0:
                selections.append(("on a failure with attempts left", ("on_retry",)))
            if retries is not None:
                selections.append(("when exhausted", EXHAUST))
        elif kind == "decision":
            if node.verify is not None or not has_when:
                selections.append(("on success", SUCCESS))
            # With no check of its own and no `when`, it routes on the result that
            # led to it, which may be a failure (the engine's rule).
            selections.append(("on failure", EXHAUST))
        # Positions, not the edges: two equal edges are still two edges.
        winners: list[tuple[str, tuple[str, ...], Edge]] = []
        used: set[int] = set()
        for outcome, conditions in selections:
            at = _first(plain, conditions)
            if at is not None:
                winners.append((outcome, conditions, plain[at]))
                used.add(at)
        for position, edge in enumerate(plain):
            cond = edge.condition
            if kind == "task" and retries == 0 and cond == "on_exhaust":
                self.scan.add(
                    "on-exhaust-without-retries",
                    f"on_exhaust fires on the first failure of {node_id!r} because its "
                    "max_retries is 0; set max_retries to allow retries first, or use on_fail",
                    edge=edge,
                )
            if position in used:
                continue
            if kind == "task" and retries == 0 and cond == "on_retry":
                self.scan.add(
                    "on-retry-without-retries",
                    f"on_retry never fires: {node_id!r} has max_retries 0, so its first "
                    "failure exhausts it; set max_retries to 1 or more, or use on_fail",
                    edge=edge,
                )
                continue
            rivals = [(o, w) for o, conds, w in winners if cond in conds]
            same = [w for _, w in rivals if w.condition == cond]
            if same:
                winner = same[0]
                why = (
                    f"which has the same weight ({_num(edge.weight)}) and comes first"
                    if winner.weight == edge.weight
                    else f"which has a higher weight ({_num(winner.weight)})"
                )
                self.scan.add(
                    "shadowed-edge",
                    f"never followed: the engine takes {winner.describe()}, {why}; only "
                    f"one {cond} edge per node is ever followed, so remove one or branch "
                    "through a decision node with `when` edges",
                    edge=edge,
                )
            elif rivals:
                taken = "; ".join(f"{o}, {w.describe()} is taken" for o, w in rivals)
                self.scan.add(
                    "unused-edge",
                    f"never followed: {taken}; remove the edge or change its condition",
                    edge=edge,
                )
            else:
                self.scan.add(
                    "unused-edge",
                    f"never followed: {_why_never(node, cond, has_when)}",
                    edge=edge,
                    field="condition",
                )

    def check_human_edges(self, node_id: str) -> None:
        """Edges out of a human node that no answer picks (they have no label).

        Any choice may be picked, so none of them is unused; with no choice at
        all, ``human-without-choices`` already says it.
        """
        edges = self.scan.guided_out(node_id)
        if not any(_is_choice(e) for e in edges):
            return
        for edge in edges:
            if not _is_choice(edge):
                self.scan.add(
                    "unused-edge",
                    f"never followed: a person at human node {node_id!r} picks an edge by "
                    "its label, and no answer can give this one's; label it with the answer "
                    "that follows it, or remove it",
                    edge=edge,
                    field="label",
                )

    def _jumps(self, node: Node) -> list[str]:
        """Where a run may go from ``node`` without an edge (Attractor's retry targets: a
        failure's, and for a goal gate the graph's too)."""
        targets = [node.retry_target, node.fallback_retry_target]
        if node.goal_gate:
            attrs = self.scan.plan.attrs or {}
            targets += [attrs.get("retry_target"), attrs.get("fallback_retry_target")]
        return [t for t in targets if t and t in self.scan.nodes]

    def _leads(self, edge: Edge) -> bool:
        """Whether a run can go along ``edge``: out of a human node only a choice does."""
        source = self.scan.nodes.get(edge.from_)
        return source is None or source.type != "human" or _is_choice(edge)

    # -------------------------------------------------------------- shape

    def check_shape(self) -> None:
        """Unreachable nodes, traps (no way to an end) and plans that cannot complete."""
        entry = self.scan.entry
        if entry is None:
            return  # without a usable start, reachability says nothing useful
        nodes, index = self.scan.nodes, self.scan.graph.index
        # A failure or an unsatisfied goal gate may jump to a retry target: a route too.
        jumps = {nid: self._jumps(node) for nid, node in nodes.items()}
        jumped_from: dict[str, list[str]] = {}
        for nid, targets in jumps.items():
            for target in targets:
                jumped_from.setdefault(target, []).append(nid)
        reached = {entry}
        todo = [entry]
        while todo:
            current = todo.pop()
            if nodes[current].type in ENDS:
                continue  # the run stops here; its edges are errors already
            nexts = [e.to for e in index.out.get(current, ()) if self._leads(e)]
            for target in [*nexts, *jumps[current]]:
                if target in nodes and target not in reached:
                    reached.add(target)
                    todo.append(target)
        ends = [nid for nid in reached if nodes[nid].type in ENDS]
        finishing = set(ends)
        todo = list(ends)
        while todo:
            current = todo.pop()
            sources = [e.from_ for e in index.inc.get(current, ()) if self._leads(e)]
            for src in [*sources, *jumped_from.get(current, ())]:
                if src in reached and src not in finishing and nodes[src].type not in ENDS:
                    finishing.add(src)
                    todo.append(src)
        for nid, node in nodes.items():
            if nid not in reached and not (node.type == "start" and nid != entry):
                self.scan.add(
                    "unreachable",
                    f"no route from the start {entry!r} reaches {nid!r}; connect it with "
                    "an edge or remove it",
                    node=nid,
                )
        if finishing and not any(nodes[n].type == "exit" for n in ends):
            self.scan.add(
                "no-exit",
                "no exit node is reachable from the start, so the plan can never complete, "
                "only escalate; add an exit node and an edge to it",
                node=entry,
            )
        self.report_traps(reached, finishing)
        self.check_context_exit(reached)

    def check_context_exit(self, reached: set[str]) -> None:
        """Exits every route to which passes a condition over the run's context."""
        exits = [nid for nid in reached if self.scan.nodes[nid].type == "exit"]
        gated = [e for e in self.scan.graph.edges if e.when is not None and reads_context(e.when)]
        if not exits or not gated or self.scan.entry is None:
            return
        nodes, index, shut = self.scan.nodes, self.scan.graph.index, {id(e) for e in gated}
        free, todo = {self.scan.entry}, [self.scan.entry]
        while todo:
            current = todo.pop()
            for edge in index.out.get(current, ()):
                if id(edge) in shut or edge.to not in nodes or edge.to in free:
                    continue
                if nodes[current].type not in ENDS and self._leads(edge):
                    free.add(edge.to)
                    todo.append(edge.to)
        if any(nid in free for nid in exits):
            return
        self.scan.add(
            "context-only-exit",
            f"every route to an exit passes a condition on the run's context (first: "
            f"{gated[0].describe()}); in a guided run only a tool result whose last line is "
            '{"context_updates": {...}} sets the context, so the model must print one (the '
            "guidance tells it how), or route on the tool's output instead",
            edge=gated[0],
            field="when",
        )

    def report_traps(self, reached: set[str], finishing: set[str]) -> None:
        trapped = [nid for nid in self.scan.nodes if nid in reached and nid not in finishing]
        if not trapped:
            return
        index, members = self.scan.graph.index, set(trapped)
        # Group trapped nodes into connected regions; one warning per region,
        # on the node where runs enter it.
        region_of: dict[str, int] = {}
        regions: list[list[str]] = []
        for seed in trapped:
            if seed in region_of:
                continue
            region_of[seed] = len(regions)
            todo, region = [seed], [seed]
            while todo:
                current = todo.pop()
                neighbours = [e.to for e in index.out.get(current, ())]
                neighbours += [e.from_ for e in index.inc.get(current, ())]
                for other in neighbours:
                    if other in members and other not in region_of:
                        region_of[other] = len(regions)
                        region.append(other)
                        todo.append(other)
            regions.append(region)
        order = {nid: i for i, nid in enumerate(self.scan.nodes)}
        for region in regions:
            region.sort(key=order.__getitem__)
            entries = [
                nid
                for nid in region
                if nid == self.scan.entry
                or any(e.from_ in finishing for e in index.inc.get(nid, ()))
            ]
            at = (entries or region)[0]
            rest = [n for n in region if n != at]
            also = f" (trapped with it: {names(rest)})" if rest else ""
            self.scan.add(
                "trap",
                f"no exit or escalate node is reachable from {at!r}{also}: a run that gets "
                "here can only stall until it expires or hits max_transitions; add an edge "
                "to an exit or escalate node",
                node=at,
            )

    def check_success_loops(self) -> None:
        """Loops the run goes round while every check passes.

        Each node has at most one successor on success (the edge the engine
        picks), so the success graph is a set of chains and cycles: walking it
        with three colours finds every cycle in linear time.
        """
        nodes = self.scan.nodes
        succ: dict[str, str] = {}
        for nid, node in nodes.items():
            if node.type in ENDS:
                continue
            edges = self.scan.guided_out(nid)
            if node.type == "decision" and any(e.when is not None for e in edges):
                continue  # routes on predicates: a loop back is a deliberate branch
            if node.type == "human":
                continue  # a person picks the way on: a loop back is their choice
            at = _first(edges, SUCCESS)
            if at is not None and edges[at].to in nodes:
                succ[nid] = edges[at].to
        order = {nid: i for i, nid in enumerate(nodes)}
        state: dict[str, int] = {}  # 1: on the current walk, 2: finished
        for seed in nodes:
            walk: list[str] = []
            current: str | None = seed
            while current is not None and current not in state:
                state[current] = 1
                walk.append(current)
                current = succ.get(current)
            if current is not None and state[current] == 1:
                cycle = walk[walk.index(current) :]
                route = " -> ".join([*cycle, cycle[0]])
                self.scan.add(
                    "success-loop",
                    f"{route} loops on success: each node's success edge leads round "
                    f"again, so only max_transitions ({self.scan.plan.max_transitions}) ends "
                    "it; leave the loop through a decision node's `when` edge",
                    node=min(cycle, key=order.__getitem__),
                )
            for nid in walk:
                state[nid] = 2


def _is_choice(edge: Edge) -> bool:
    """Whether an answer can pick ``edge`` out of a human node (its choice label is pickable)."""
    return bool(answer_keys(choice_label(edge)))


def _first(edges: Sequence[Edge], conditions: tuple[str, ...]) -> int | None:
    """Where the engine's pick is in ``edges`` (``Graph.out_edges`` order), by
    position: two equal edges are still two edges."""
    chosen = first_edge(edges, conditions)
    return None if chosen is None else next(i for i, e in enumerate(edges) if e is chosen)


def _num(weight: float) -> str:
    return str(int(weight)) if float(weight).is_integer() else str(weight)


def _why_never(node: Node, condition: str, has_when: bool) -> str:
    """Why no outcome of ``node`` ever looks for a ``condition`` edge."""
    kind = node.type
    if kind in ("start", "checkpoint"):
        return (
            f"a {kind} node runs no check, so it is left only by on_success or always "
            "edges; use always"
        )
    if kind == "task":
        # Only the unbounded case is left: max_retries 0 and on_retry is its own code.
        return (
            f"max_retries is null (unbounded), so {node.id!r} is never exhausted and "
            f"{condition} never fires; set a max_retries, or use on_retry to leave on failure"
        )
    if condition == "on_retry":
        return "decision nodes do not retry; use on_fail for the route taken when no check holds"
    if has_when:
        return (
            f"a decision with `when` edges and no verify takes its plain edges only when no "
            f"`when` holds, which counts as failure, so {condition} is never chosen; use "
            "on_fail or always for that route"
        )
    return f"a decision never takes {condition} edges; use on_fail for its failure route"
