"""The plan checker: one pass over one plan, and over a library.

The checks of one concept live beside it and take the pass's state
(:class:`~waygraph.check._scan.PlanScan`): routes (``_routes``), human nodes
(``_human``), verify and ``when`` trees (``_predicates``). What each problem
means is in :data:`~waygraph.check.CODES`; the package docstring has the rules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from waygraph.check._human import check_human
from waygraph.check._predicates import check_predicate
from waygraph.check._problem import Problem, problem
from waygraph.check._routes import ENDS, RouteChecks, names
from waygraph.check._scan import PlanScan
from waygraph.engine.choice import is_data_check
from waygraph.model import NODE_TYPE_SPECS, NODE_TYPES, Edge, Node
from waygraph.suggest import did_you_mean

if TYPE_CHECKING:
    from waygraph.library import Library
    from waygraph.model import Plan

__all__ = ["check_library", "check_plan"]


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
            problem(
                "bad-match-mode",
                f"_meta.match_mode is {mode!r}; use 'phrase' (the default) or 'substring'",
                file=str(library.path) if library.path else None,
                field="_meta.match_mode",
            )
        )
    for plan in library:
        out.extend(check_plan(plan, file=library.sources.get(plan.id)))
    out.extend(_chain_problems(library))
    out.extend(_example_problems(library))
    return out


def _example_problems(library: Library) -> list[Problem]:
    """Examples that start another plan by its triggers.

    Triggers are matched before meaning (``matching="both"``), so a user who
    types such an example gets the other plan whatever the example was written for.
    """
    if not any(plan.examples for plan in library):
        return []
    from waygraph.match import Matcher

    matcher = Matcher(library)
    out: list[Problem] = []
    for plan in library:
        for i, example in enumerate(plan.examples):
            found = matcher.best(example)
            if found is None or found.plan_id == plan.id:
                continue
            out.append(
                problem(
                    "example-starts-other-plan",
                    f"the example {example!r} starts plan {found.plan_id!r} by its triggers "
                    f"({', '.join(repr(h) for h in found.hits)}): a user who types it gets "
                    f"that plan, not this one; reword the example, or narrow "
                    f"{found.plan_id!r}'s triggers",
                    file=library.sources.get(plan.id),
                    plan=plan.id,
                    field=f"examples.{i}",
                )
            )
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
                    problem(
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
                    problem(
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


class _PlanChecker(PlanScan):
    """One pass over one plan; collects problems in ``self.problems``."""

    def __init__(self, plan: Plan, file: str | None) -> None:
        super().__init__(plan, file)
        self.routes = RouteChecks(self)

    def run(self) -> list[Problem]:
        self.check_triggers()
        self.check_start()
        for node in self.nodes.values():
            self.check_node(node)
        for edge in self.graph.edges:
            self.check_edge(edge)
        if not any(n.join == "all" for n in self.nodes.values()):
            for node_id, node in self.nodes.items():
                self.routes.check_edge_use(node_id, node)
        self.routes.check_shape()
        self.routes.check_success_loops()
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
            check_predicate(self, node.verify, "verify", node=nid)
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
            check_human(self, node)
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
            check_predicate(self, edge.when, "when", edge=edge)
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
