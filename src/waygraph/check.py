"""Graph validation: problems with a code, a level and a location.

:func:`check_plan` reads a plan the way the engine will run it and reports
every :class:`Problem` it finds. Errors are plans the engine cannot run as
written (a missing start, an edge to nowhere, a verify with nothing to check);
:func:`waygraph.load_library` refuses them. Warnings are plans that run but
probably not as meant (a trap, an edge that is never followed); they never
stop loading. :data:`CODES` lists every code with its level and meaning, so
docs and the CLI can show the table.

The edge analysis follows the engine's rules (DESIGN.md, "Engine
semantics"): which edge wins for each outcome, and which therefore can never
be followed. Edges with ``on_event`` are left out of it (event-driven runs
pick them by event type), and so are plans with ``join: all`` nodes (DAG
runs fan out over every successor).

Every check is linear in the size of the graph.

Example:
    >>> from waygraph.model import Plan
    >>> plan = Plan.model_validate({"id": "deploy", "triggers": ["deploy app"],
    ...     "trigger_threshold": 1, "graph": {"start": "start", "nodes": {
    ...         "start": {"type": "start"},
    ...         "ship": {"type": "task", "verify": {"type": "exit_code"}},
    ...         "done": {"type": "exit"}},
    ...     "edges": [{"from": "start", "to": "ship"}, {"from": "ship", "to": "dnoe"}]}})
    >>> for p in check_plan(plan):
    ...     print(p.level, p.code, p.node or p.edge)
    error verify-needs-value ship
    error unknown-node ship -> dnoe (always)
    warning unreachable done
    warning trap start
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from waygraph._check_codes import CODES, Level
from waygraph._check_human import HumanChecks
from waygraph._check_kinds import check_generated_plan, check_state_machine
from waygraph._check_predicates import PredicateChecks
from waygraph._check_routes import ENDS, RouteChecks, names
from waygraph.engine.choice import is_data_check, ordered_edges
from waygraph.errors import PlanFormatError
from waygraph.model import NODE_TYPE_SPECS, NODE_TYPES, Edge, Node
from waygraph.suggest import did_you_mean

if TYPE_CHECKING:
    from waygraph.library import Library
    from waygraph.model import Plan

__all__ = [
    "CODES",
    "Level",
    "Problem",
    "check_generated_plan",
    "check_library",
    "check_plan",
    "check_state_machine",
]


@dataclass(frozen=True, slots=True)
class Problem:
    """One finding about a plan: a stable ``code``, its ``level``, a message
    that says what to change, and where (file, plan, node, edge, field).

    ``edge`` reads ``"from -> to (condition)"``; ``field`` is a dotted path
    inside the node, edge or plan (``verify.checks.1.value``, ``triggers``).
    ``line`` and ``column`` (from 1) are where the field stands in a JSON or
    YAML file, when ``waygraph check`` read it.

    Example:
        >>> p = Problem("unknown-node", "error", "'dnoe' is not a node",
        ...             plan="p", edge="a -> dnoe (always)", field="to")
        >>> print(p)
        error: plan 'p', edge a -> dnoe (always), field 'to': 'dnoe' is not a node [unknown-node]
    """

    code: str
    level: Literal["error", "warning"]
    message: str
    file: str | None = None
    plan: str | None = None
    node: str | None = None
    edge: str | None = None
    field: str | None = None
    line: int | None = None
    column: int | None = None

    def as_error(self) -> PlanFormatError:
        """This problem as the :class:`PlanFormatError` ``load_library`` raises."""
        return PlanFormatError(
            f"{self.message} [{self.code}]",
            file=self.file,
            line=self.line,
            plan=self.plan,
            node=self.node,
            edge=self.edge,
            field=self.field,
        )

    def __str__(self) -> str:
        return f"{self.level}: {self.as_error()}"


def check_plan(plan: Plan, *, file: str | None = None) -> list[Problem]:
    """Every problem in ``plan``, errors and warnings, in a stable order.

    ``file`` is recorded on each problem so messages can name it.

    Example:
        >>> from waygraph.model import Graph
        >>> plan = (Graph.builder().task("build", verify={"type": "exit_code_zero"})
        ...         .exit("done").chain("start", "build", "done").plan("build"))
        >>> [p.code for p in check_plan(plan)]
        ['no-triggers']
    """
    return _PlanChecker(plan, file).run()


def check_library(library: Library) -> list[Problem]:
    """Every problem in every plan of ``library`` (in library order), and in its ``_meta``.

    Example:
        >>> import waygraph
        >>> [p for p in check_library(waygraph.load_library()) if p.level == "error"]
        []
    """
    out: list[Problem] = []
    mode = library.meta.get("match_mode")
    if mode is not None and mode not in ("phrase", "substring"):
        out.append(
            _problem(
                "bad-match-mode",
                f"_meta.match_mode is {mode!r}; use 'phrase' (the default) or 'substring'",
                file=str(library.path) if library.path else None,
                field="_meta.match_mode",
            )
        )
    for plan in library:
        out.extend(check_plan(plan, file=library.sources.get(plan.id)))
    out.extend(_chain_problems(library))
    return out


def _chain_problems(library: Library) -> list[Problem]:
    """Exits whose ``next_plan`` the library lacks, and chains that come back round."""
    out: list[Problem] = []
    links: dict[str, set[str]] = {}
    for plan in library:
        for node in plan.graph.nodes.values():
            if node.type != "exit" or not node.next_plan:
                continue
            if node.next_plan not in library:
                hint = did_you_mean(node.next_plan, library.ids())
                out.append(
                    _problem(
                        "unknown-next-plan",
                        f"next_plan {node.next_plan!r} is not a plan of this library"
                        + (f"; {hint}" if hint else ""),
                        file=library.sources.get(plan.id),
                        plan=plan.id,
                        node=node.id,
                        field="next_plan",
                    )
                )
            else:
                links.setdefault(plan.id, set()).add(node.next_plan)
    for first in sorted(links):
        seen, todo = set(), sorted(links[first])
        while todo:
            current = todo.pop()
            if current == first:
                out.append(
                    _problem(
                        "next-plan-loop",
                        f"following next_plan from {first!r} leads back to it: a run of it "
                        "starts it again after the chain (fine for a loop you mean)",
                        file=library.sources.get(first),
                        plan=first,
                        field="next_plan",
                    )
                )
                break
            if current not in seen:
                seen.add(current)
                todo.extend(sorted(links.get(current, ())))
    return out


# ---------------------------------------------------------------- internals


#: Fields the engine reads only on some node types (defaults: None, or 0 for
#: max_retries), and the types that read each: the node type table's ``fields``.
def _field_users() -> dict[str, tuple[str, ...]]:
    users: dict[str, tuple[str, ...]] = {}
    for kind, spec in NODE_TYPE_SPECS.items():
        for name in spec.fields:
            users[name] = (*users.get(name, ()), kind)
    return users


_FIELD_USERS = _field_users()
#: Per node type, the fields of _FIELD_USERS it ignores (checked on every node).
_IGNORED_FIELDS: dict[str, tuple[str, ...]] = {
    kind: tuple(name for name, users in _FIELD_USERS.items() if kind not in users)
    for kind in NODE_TYPES
}


def _problem(code: str, message: str, **where: Any) -> Problem:
    return Problem(code, CODES[code][0], message, **where)


class _PlanChecker(PredicateChecks, HumanChecks, RouteChecks):
    """One pass over one plan; collects problems in ``self.problems``."""

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
        self.problems.append(
            _problem(
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

    def run(self) -> list[Problem]:
        self.check_triggers()
        self.check_start()
        for node in self.nodes.values():
            self.check_node(node)
        for edge in self.graph.edges:
            self.check_edge(edge)
        if not any(n.join == "all" for n in self.nodes.values()):
            for node_id, node in self.nodes.items():
                self.check_edge_use(node_id, node)
        self.check_shape()
        self.check_success_loops()
        return self.problems

    # -------------------------------------------------------------- plan

    def check_threshold_reach(self, threshold: int) -> None:
        """Triggers that match as one phrase ("fix bug", "Fix bugs") count once toward the
        threshold, so fewer distinct phrases than it means no message activates the plan."""
        from waygraph.match import distinct_phrases

        distinct = distinct_phrases(self.plan.triggers)
        if threshold > len(distinct):
            self.add(
                "unreachable-threshold",
                f"trigger_threshold is {threshold} but the triggers are {len(distinct)} "
                f"different phrase(s) ({', '.join(repr(t) for t in distinct)}; case, spacing "
                "and word endings aside), so no message reaches it; lower it to "
                f"{len(distinct)} or add triggers",
                field="trigger_threshold",
            )

    def check_triggers(self) -> None:
        triggers = self.plan.triggers
        threshold = self.plan.trigger_threshold
        if not triggers:
            self.add(
                "no-triggers",
                "the plan has no triggers, so it can only be started by id; add phrases "
                "users say when they want this plan",
                field="triggers",
            )
            return
        if threshold < 1:
            self.add(
                "bad-trigger-threshold",
                f"trigger_threshold is {threshold}, which would activate the plan on every "
                "message; use at least 1",
                field="trigger_threshold",
            )
        elif threshold > len(triggers):
            self.add(
                "bad-trigger-threshold",
                f"trigger_threshold is {threshold} but the plan has only {len(triggers)} "
                f"trigger(s), so it can never activate; lower it to at most {len(triggers)} "
                "or add triggers",
                field="trigger_threshold",
            )
        else:
            self.check_threshold_reach(threshold)
        seen: dict[str, str] = {}
        for i, trigger in enumerate(triggers):
            key = " ".join(trigger.split()).casefold()
            if not key:
                self.add(
                    "blank-trigger",
                    "a blank trigger says nothing about the request (in substring mode it "
                    "hits every message); remove it",
                    field=f"triggers.{i}",
                )
            elif key in seen:
                self.add(
                    "duplicate-trigger",
                    f"trigger {trigger!r} repeats {seen[key]!r} (case and spacing ignored); "
                    "list each trigger once so trigger_threshold counts different phrases",
                    field=f"triggers.{i}",
                )
            else:
                seen[key] = trigger

    # -------------------------------------------------------------- start

    def check_start(self) -> None:
        start = self.graph.start
        start_nodes = [nid for nid, n in self.nodes.items() if n.type == "start"]
        for extra in start_nodes[1:]:
            self.add(
                "multiple-starts",
                f"more than one start node ({names(start_nodes)}); keep one and connect it "
                "to the first task",
                node=extra,
                field="type",
            )
        if not start:
            if start_nodes:
                hint = f"set it to {start_nodes[0]!r}, the start node"
            else:
                hint = "add a node of type start and name it in graph.start"
            self.add("no-start", f"graph.start is empty; {hint}", field="start")
            return
        node = self.nodes.get(start)
        if node is None:
            hint = f"; the start node is {start_nodes[0]!r}" if start_nodes else ""
            close = did_you_mean(start, self.nodes)
            hint = f"; {close}" if close and not hint else hint
            self.add(
                "unknown-start",
                f"graph.start names {start!r}, which is not a node{hint}",
                field="start",
            )
            return
        self.entry = start
        if node.type != "start":
            if node.type == "task":
                effect = "the run begins at that task (the established format's implicit start)"
            elif node.type in ENDS:
                effect = f"the run ends as soon as it starts (it is an {node.type} node)"
            else:
                effect = f"the run begins at that {node.type} node"
            self.add(
                "implicit-start",
                f"graph.start names {node.type} node {start!r}, not a start node: {effect}; "
                f"add a start node with an always edge to {start!r} to make it explicit",
                node=start,
                field="start",
            )
        # With several start nodes, multiple-starts already says it all.
        if len(start_nodes) == 1 and start_nodes[0] != start:
            other = start_nodes[0]
            self.add(
                "unused-start-node",
                f"start node {other!r} is never used because graph.start is {start!r}; "
                f"set graph.start to {other!r} or remove the node",
                node=other,
            )

    # -------------------------------------------------------------- nodes

    def check_node(self, node: Node) -> None:
        nid, kind = node.id, node.type
        if node.verify is not None:
            self.check_predicate(node.verify, "verify", node=nid)
        # An Attractor pipeline's stages and conditional nodes have no checks of
        # their own by design: exit statuses and the results before them decide.
        spec = self.plan.routing == "attractor"
        if kind == "task" and node.verify is None and not spec:
            self.add(
                "task-without-verify",
                "the task has no verify, so any result passes it but one whose exit status "
                "says it failed; add a check (for example exit_code_zero or output_contains)",
                node=nid,
                field="verify",
            )
        elif kind == "decision" and node.verify is None and not spec:
            if not any(e.when is not None for e in self.out.get(nid, ())):
                self.add(
                    "decision-without-check",
                    "the decision has no `when` edges and no verify, so it routes on the result "
                    "of the step before it (on_success when that passed, on_fail when it "
                    "failed); add `when` predicates to its edges or a verify to decide here",
                    node=nid,
                )
        elif kind == "escalate" and not node.reason:
            self.add(
                "escalate-without-reason",
                f"the escalate node has no reason, so the model is only told it escalated at "
                f"{nid!r}; add a reason saying what went wrong and what a person should do",
                node=nid,
                field="reason",
            )
        elif kind == "human":
            self.check_human(node)
        for name in _IGNORED_FIELDS[kind]:
            value = getattr(node, name)
            if value is None or (name == "max_retries" and value == 0):
                continue
            used_by = " and ".join(_FIELD_USERS[name])
            # A person's answer is the whole outcome of a human node: nothing to verify or retry.
            why = ": a person's answer routes it, by its edges' labels" if kind == "human" else ""
            self.add(
                "ignored-field",
                f"{name} has no effect on {_a(kind)} node{why} (only {used_by} nodes use "
                "it); remove it or change the node's type",
                node=nid,
                field=name,
            )
        if (
            self.plan.linear
            and kind == "task"
            and node.required is False
            and node.on_fail in ("abort", "block")
        ):
            self.add(
                "on-fail-ignored",
                f"on_fail {node.on_fail!r} has no effect because required is false: the step "
                f"is skipped when it fails; remove `required: false` to {node.on_fail} instead",
                node=nid,
                field="on_fail",
            )

    # -------------------------------------------------------------- edges

    def check_edge(self, edge: Edge) -> None:
        source = self.nodes.get(edge.from_)
        target = self.nodes.get(edge.to)
        for end, node_id, found in (("from", edge.from_, source), ("to", edge.to, target)):
            if found is None:
                role = "source" if end == "from" else "target"
                hint = did_you_mean(node_id, self.nodes)
                self.add(
                    "unknown-node",
                    f"edge {role} ({end!r}) {node_id!r} is not a node; "
                    + (
                        f"{hint} Fix the name or add the node"
                        if hint
                        else "fix the name or add the node"
                    ),
                    edge=edge,
                    field=end,
                )
        if source is not None and source.type in ENDS:
            self.add(
                "end-node-has-edges",
                f"{source.type} node {edge.from_!r} ends the run, so this edge is never "
                "followed; remove it, or make the node a task or checkpoint",
                edge=edge,
            )
        if target is not None and target.type == "start":
            self.add(
                "start-has-incoming",
                f"edge into start node {edge.to!r}; a start node only begins a run. Point "
                "the edge at the first task, or use a checkpoint to mark a point to return to",
                edge=edge,
                field="to",
            )
        if edge.when is not None:
            self.check_predicate(edge.when, "when", edge=edge)
            # A data check over the context is judged out of any node a person
            # does not choose from (waygraph.engine.choice); other checks only out
            # of a decision.
            judged = is_data_check(edge.when) and source is not None and source.type != "human"
            if source is not None and source.type != "decision" and not judged:
                self.add(
                    "when-ignored",
                    f"`when` only routes out of decision nodes; out of {source.type} node "
                    f"{edge.from_!r} it is never evaluated and this is a plain "
                    f"{edge.condition} edge; route through a decision node, or remove `when`",
                    edge=edge,
                    field="when",
                )


def _a(word: str) -> str:
    return f"an {word}" if word[0] in "aeiou" else f"a {word}"
