"""Attractor lint (specification §7): the diagnostics that say whether a pipeline may run.

:func:`validate` runs :data:`BUILT_IN_RULES` and any extra :class:`LintRule`
over a plan and returns every :class:`Diagnostic`, each named by the
specification's rule id (``start_node``, ``reachability``, ...);
:func:`validate_or_raise` raises
:class:`~waygraph.errors.PipelineValidationError` when one is an error, which
is how a runner refuses a pipeline (§7.1).

How the specification's terms map onto waygraph's plan: the start node is
``plan.graph.start`` (the DOT reader sets it from ``shape=Mdiamond`` or the id
``start``/``Start``); exit nodes are those of type ``exit`` (``shape=Msquare``
or the id ``exit``/``end``); a node's handler type is
:func:`waygraph.pipelines.routing.handler_type`.

Decisions, where the specification's texts differ or say nothing:

* ``reachability`` is an **error**, as §7.2's table defines the rule; the
  parity matrix's "orphan node -> warning" row is read as "the orphan is
  reported". (``waygraph check``'s own ``unreachable`` stays a warning for
  waygraph's plans; this module judges Attractor pipelines.)
* ``terminal_node`` follows §7.2's text: exactly one exit node; none, or more
  than one, is an error.
* ``start_node`` and ``reachability`` reuse :func:`waygraph.check.check_plan`'s
  findings (codes ``no-start``, ``unknown-start``, ``multiple-starts`` and
  ``unreachable``), so the two checkers cannot disagree about the graph.
* ``goal_gate_has_retry`` is satisfied by the graph's ``retry_target`` or
  ``fallback_retry_target`` too, because §3.4 sends an unsatisfied gate there
  (:func:`~waygraph.pipelines.routing.gate_target` decides).
* ``prompt_on_llm_nodes`` accepts a node with a prompt (``action``) or a
  label (``name``), as §7.2 says; §11.2's checkbox names the prompt only.
* ``fidelity_valid`` checks a node's and an edge's ``fidelity`` and the
  graph's ``default_fidelity``.

Example:
    >>> from waygraph.model import Plan
    >>> plan = Plan.model_validate({"id": "p", "graph": {"start": "start", "nodes": {
    ...     "start": {"type": "start"}, "work": {"action": "Do $goal"},
    ...     "lost": {"action": "Never run"}, "exit": {"type": "exit"}},
    ...     "edges": [{"from": "start", "to": "work"}, {"from": "work", "to": "exit"}]}})
    >>> [(d.rule, d.severity, d.node_id) for d in validate(plan)]
    [('reachability', 'error', 'lost')]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, Protocol, runtime_checkable

from waygraph.errors import PipelineValidationError, PlanFormatError
from waygraph.model import Plan
from waygraph.pipelines.conditions import condition_problem
from waygraph.pipelines.routing import gate_target, handler_type
from waygraph.pipelines.stylesheet import parse_stylesheet

__all__ = [
    "BUILT_IN_RULES",
    "FIDELITY_MODES",
    "KNOWN_HANDLER_TYPES",
    "Diagnostic",
    "FunctionRule",
    "LintRule",
    "Severity",
    "TypeKnownRule",
    "validate",
    "validate_or_raise",
    "with_lines",
]

Severity = Literal["error", "warning", "info"]

#: Handler types a runner knows without registration (§4, plus waygraph's own
#: checkpoint and escalate node types).
KNOWN_HANDLER_TYPES = frozenset(
    {
        "start",
        "exit",
        "codergen",
        "wait.human",
        "conditional",
        "parallel",
        "parallel.fan_in",
        "tool",
        "stack.manager_loop",
        "checkpoint",
        "escalate",
    }
)
#: The context fidelity modes of §5.4.
FIDELITY_MODES = ("full", "truncate", "compact", "summary:low", "summary:medium", "summary:high")


@dataclass(frozen=True)
class Diagnostic:
    """One lint finding (§7.1): the rule's id, its severity, what is wrong and where.

    ``edge`` is ``(from, to)``; ``fix`` suggests a change; ``line`` is the
    line in the source file when known (see :func:`with_lines`) and
    ``field`` the attribute the finding is about.

    Example:
        >>> print(Diagnostic("start_node", "error", "no start node",
        ...                  fix="add a node with shape=Mdiamond"))
        error [start_node]: no start node (fix: add a node with shape=Mdiamond)
    """

    rule: str
    severity: Severity
    message: str
    node_id: str | None = None
    edge: tuple[str, str] | None = None
    fix: str | None = None
    line: int | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = []
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.node_id is not None:
            where.append(f"node {self.node_id!r}")
        if self.edge is not None:
            where.append(f"edge {self.edge[0]} -> {self.edge[1]}")
        if self.field is not None:
            where.append(f"field {self.field!r}")
        at = f" {', '.join(where)}" if where else ""
        fix = f" (fix: {self.fix})" if self.fix else ""
        return f"{self.severity} [{self.rule}]{at}: {self.message}{fix}"


@runtime_checkable
class LintRule(Protocol):
    """A lint rule (§7.4): a ``name`` and ``apply(plan)`` returning its diagnostics.

    Example:
        >>> class NoEmptyGoal:
        ...     name = "goal_set"
        ...     def apply(self, plan):
        ...         return [] if plan.goal else [Diagnostic("goal_set", "warning", "no goal")]
        >>> isinstance(NoEmptyGoal(), LintRule)
        True
    """

    @property
    def name(self) -> str:
        """The rule's id, which its diagnostics carry as ``rule``."""
        ...

    def apply(self, plan: Plan) -> list[Diagnostic]:
        """Every diagnostic the rule finds in ``plan``; it must not change the plan."""
        ...


@dataclass(frozen=True)
class FunctionRule:
    """A lint rule made of a name and a function from plan to diagnostics.

    Example:
        >>> rule = FunctionRule("always_fine", lambda plan: [])
        >>> rule.name, isinstance(rule, LintRule)
        ('always_fine', True)
    """

    name: str
    check: Callable[[Plan], Iterable[Diagnostic]]

    def apply(self, plan: Plan) -> list[Diagnostic]:
        """Run the function over ``plan``."""
        return list(self.check(plan))


@dataclass(frozen=True)
class TypeKnownRule:
    """``type_known``: each node's handler type is one a runner knows (a warning).

    ``known_types`` adds the names of custom handlers a runner registers (§4.12).

    Example:
        >>> from waygraph.model import Node, Plan
        >>> plan = Plan(id="p", graph={"nodes": {"n": Node(id="n", handler="deploy")}})
        >>> [d.message for d in TypeKnownRule().apply(plan)]
        ["handler type 'deploy' is not one a runner knows"]
        >>> TypeKnownRule(frozenset({"deploy"})).apply(plan)
        []
    """

    known_types: frozenset[str] = frozenset()
    name: str = "type_known"

    def apply(self, plan: Plan) -> list[Diagnostic]:
        """The nodes whose handler type is neither built in nor in ``known_types``."""
        known = KNOWN_HANDLER_TYPES | self.known_types
        return [
            Diagnostic(
                self.name,
                "warning",
                f"handler type {kind!r} is not one a runner knows",
                node_id=node_id,
                field="type",
                fix=f"use a built-in handler type, or have the runner register {kind!r}",
            )
            for node_id, node in plan.graph.nodes.items()
            if (kind := handler_type(node)) not in known
        ]


# ---------------------------------------------------------------- shared findings

#: The plan checker's last findings: validate() asks for them from two rules, and
#: one plan is checked once (identity, not equality: plans are compared by value).
_last_checked: tuple[Plan, tuple[tuple[str, str, str | None], ...]] | None = None


def _check_findings(plan: Plan) -> tuple[tuple[str, str, str | None], ...]:
    """``(code, message, node)`` of each problem :func:`waygraph.check.check_plan` finds."""
    global _last_checked
    cached = _last_checked
    if cached is not None and cached[0] is plan:
        return cached[1]
    # Imported here: waygraph.check imports the model and its checkers, not this package.
    from waygraph.check import check_plan

    found = tuple((p.code, p.message, p.node) for p in check_plan(plan))
    _last_checked = (plan, found)
    return found


def _start_node(plan: Plan) -> Iterator[Diagnostic]:
    fix = "keep exactly one node with shape=Mdiamond (or the id start) and no other"
    for code, message, node in _check_findings(plan):
        if code in ("no-start", "unknown-start", "multiple-starts"):
            yield Diagnostic("start_node", "error", message, node_id=node, fix=fix)


def _reachability(plan: Plan) -> Iterator[Diagnostic]:
    for code, message, node in _check_findings(plan):
        if code == "unreachable":
            yield Diagnostic(
                "reachability",
                "error",
                message,
                node_id=node,
                fix="add an edge to it from a node the start reaches, or remove it",
            )


# ---------------------------------------------------------------- the rules


def _terminal_node(plan: Plan) -> Iterator[Diagnostic]:
    exits = [nid for nid, n in plan.graph.nodes.items() if n.type == "exit"]
    if not exits:
        yield Diagnostic(
            "terminal_node",
            "error",
            "the pipeline has no exit node, so no run can finish",
            fix="add a node with shape=Msquare (or the id exit) and an edge to it",
        )
    for extra in exits[1:]:
        yield Diagnostic(
            "terminal_node",
            "error",
            f"the pipeline has {len(exits)} exit nodes ({', '.join(exits)}); "
            "the specification wants exactly one",
            node_id=extra,
            fix=f"route every finished path to {exits[0]!r} and remove the others",
        )


def _edge_target_exists(plan: Plan) -> Iterator[Diagnostic]:
    nodes = plan.graph.nodes
    for edge in plan.graph.edges:
        for end, node_id in (("from", edge.from_), ("to", edge.to)):
            if node_id not in nodes:
                yield Diagnostic(
                    "edge_target_exists",
                    "error",
                    f"the edge's {'source' if end == 'from' else 'target'} {node_id!r} "
                    "is not a node",
                    edge=(edge.from_, edge.to),
                    field=end,
                    fix="fix the name or add the node",
                )


def _start_no_incoming(plan: Plan) -> Iterator[Diagnostic]:
    start = plan.graph.start
    for edge in plan.graph.index.inc.get(start, ()) if start else ():
        yield Diagnostic(
            "start_no_incoming",
            "error",
            f"an edge leads into the start node {start!r}",
            node_id=start,
            edge=(edge.from_, edge.to),
            fix="point the edge at the first stage instead",
        )


def _exit_no_outgoing(plan: Plan) -> Iterator[Diagnostic]:
    nodes = plan.graph.nodes
    for edge in plan.graph.edges:
        source = nodes.get(edge.from_)
        if source is not None and source.type == "exit":
            yield Diagnostic(
                "exit_no_outgoing",
                "error",
                f"an edge leaves the exit node {edge.from_!r}; a run ends there",
                node_id=edge.from_,
                edge=(edge.from_, edge.to),
                fix="remove the edge, or make the node a stage that leads to the exit",
            )


def _condition_syntax(plan: Plan) -> Iterator[Diagnostic]:
    for edge in plan.graph.edges:
        text = (edge.attrs or {}).get("condition")
        problem = condition_problem(text) if text is not None else None
        if problem is not None:
            yield Diagnostic(
                "condition_syntax",
                "error",
                f"condition {text!r}: {problem}",
                edge=(edge.from_, edge.to),
                field="condition",
                fix="write clauses key=value, key!=value or key, joined by &&",
            )


def _stylesheet_syntax(plan: Plan) -> Iterator[Diagnostic]:
    text = (plan.attrs or {}).get("model_stylesheet")
    if text is None:
        return
    try:
        parse_stylesheet(text)
    except PlanFormatError as exc:
        shown = f" (at {exc.value!r})" if exc.value is not None else ""
        yield Diagnostic(
            "stylesheet_syntax",
            "error",
            f"model_stylesheet: {exc.reason}{shown}",
            field="model_stylesheet",
            fix="write rules as selector { property: value; }",
        )


def _fidelity_valid(plan: Plan) -> Iterator[Diagnostic]:
    def bad(value: str | None) -> bool:
        return value is not None and value not in FIDELITY_MODES

    fix = "use one of " + ", ".join(FIDELITY_MODES)
    default = (plan.attrs or {}).get("default_fidelity")
    if bad(default):
        yield Diagnostic(
            "fidelity_valid",
            "warning",
            f"default_fidelity {default!r} is not a fidelity mode",
            field="default_fidelity",
            fix=fix,
        )
    for node_id, node in plan.graph.nodes.items():
        value = (node.attrs or {}).get("fidelity")
        if bad(value):
            yield Diagnostic(
                "fidelity_valid",
                "warning",
                f"fidelity {value!r} is not a fidelity mode",
                node_id=node_id,
                field="fidelity",
                fix=fix,
            )
    for edge in plan.graph.edges:
        value = (edge.attrs or {}).get("fidelity")
        if bad(value):
            yield Diagnostic(
                "fidelity_valid",
                "warning",
                f"fidelity {value!r} is not a fidelity mode",
                edge=(edge.from_, edge.to),
                field="fidelity",
                fix=fix,
            )


def _retry_target_exists(plan: Plan) -> Iterator[Diagnostic]:
    nodes = plan.graph.nodes
    graph_attrs = plan.attrs or {}
    named: list[tuple[str | None, str, str | None]] = [
        (None, key, graph_attrs.get(key)) for key in ("retry_target", "fallback_retry_target")
    ]
    for nid, node in nodes.items():
        named.append((nid, "retry_target", node.retry_target))
        named.append((nid, "fallback_retry_target", node.fallback_retry_target))
    for node_id, key, target in named:
        if target and target not in nodes:
            yield Diagnostic(
                "retry_target_exists",
                "warning",
                f"{key} {target!r} is not a node",
                node_id=node_id,
                field=key,
                fix="name an existing node, or remove the attribute",
            )


def _goal_gate_has_retry(plan: Plan) -> Iterator[Diagnostic]:
    for node_id, node in plan.graph.nodes.items():
        if node.goal_gate and gate_target(plan, node) is None:
            yield Diagnostic(
                "goal_gate_has_retry",
                "warning",
                "a goal gate with no retry_target or fallback_retry_target naming a node "
                "(on it or on the graph): when it is unsatisfied the run fails",
                node_id=node_id,
                field="goal_gate",
                fix="set retry_target to the stage that should try again",
            )


def _prompt_on_llm_nodes(plan: Plan) -> Iterator[Diagnostic]:
    for node_id, node in plan.graph.nodes.items():
        if handler_type(node) == "codergen" and not (node.action or node.name):
            yield Diagnostic(
                "prompt_on_llm_nodes",
                "warning",
                "an LLM stage with neither a prompt nor a label: the model is told nothing",
                node_id=node_id,
                field="prompt",
                fix='add prompt="..." saying what the stage should do',
            )


#: The specification's rules (§7.2), in its order.
BUILT_IN_RULES: tuple[LintRule, ...] = (
    FunctionRule("start_node", _start_node),
    FunctionRule("terminal_node", _terminal_node),
    FunctionRule("reachability", _reachability),
    FunctionRule("edge_target_exists", _edge_target_exists),
    FunctionRule("start_no_incoming", _start_no_incoming),
    FunctionRule("exit_no_outgoing", _exit_no_outgoing),
    FunctionRule("condition_syntax", _condition_syntax),
    FunctionRule("stylesheet_syntax", _stylesheet_syntax),
    TypeKnownRule(),
    FunctionRule("fidelity_valid", _fidelity_valid),
    FunctionRule("retry_target_exists", _retry_target_exists),
    FunctionRule("goal_gate_has_retry", _goal_gate_has_retry),
    FunctionRule("prompt_on_llm_nodes", _prompt_on_llm_nodes),
)


def validate(
    plan: Plan,
    extra_rules: Sequence[LintRule] | None = None,
    *,
    known_types: Iterable[str] = (),
) -> list[Diagnostic]:
    """Every diagnostic of the built-in rules, then of ``extra_rules`` (§7.3).

    ``known_types`` names custom handler types, so ``type_known`` accepts them.

    Example:
        >>> from waygraph.model import Plan
        >>> plan = Plan.model_validate({"id": "p", "graph": {"start": "s", "nodes": {
        ...     "s": {"type": "start"}, "x": {"action": "x", "handler": "deploy"}},
        ...     "edges": [{"from": "s", "to": "x"}]}})
        >>> [d.rule for d in validate(plan, known_types=["deploy"])]
        ['terminal_node']
    """
    rules: list[LintRule] = list(BUILT_IN_RULES)
    extra_types = frozenset(known_types)
    if extra_types:
        rules = [TypeKnownRule(extra_types) if r.name == "type_known" else r for r in rules]
    rules.extend(extra_rules or ())
    diagnostics: list[Diagnostic] = []
    for rule in rules:
        diagnostics.extend(rule.apply(plan))
    return diagnostics


def validate_or_raise(
    plan: Plan,
    extra_rules: Sequence[LintRule] | None = None,
    *,
    known_types: Iterable[str] = (),
) -> list[Diagnostic]:
    """:func:`validate`, raising :class:`~waygraph.errors.PipelineValidationError`
    when a diagnostic is an error; otherwise the (warning and info) diagnostics.

    Example:
        >>> from waygraph.model import Plan
        >>> try:
        ...     validate_or_raise(Plan.model_validate({"id": "p", "graph": {}}))
        ... except PipelineValidationError as err:
        ...     print([d.rule for d in err.diagnostics])
        ['start_node', 'terminal_node']
    """
    diagnostics = validate(plan, extra_rules, known_types=known_types)
    errors = [d for d in diagnostics if d.severity == "error"]
    if errors:
        count = f"{len(errors)} lint error{'s' if len(errors) != 1 else ''}"
        raise PipelineValidationError(
            f"the pipeline cannot run, {count}:\n" + "\n".join(f"- {d}" for d in errors),
            plan=plan.id,
            diagnostics=diagnostics,
        )
    return diagnostics


def with_lines(
    diagnostics: Iterable[Diagnostic],
    plan: Plan,
    node_lines: Mapping[str, int],
    edge_lines: Sequence[int] = (),
) -> list[Diagnostic]:
    """``diagnostics`` with ``line`` filled in from a reader's node and edge lines.

    ``edge_lines[i]`` is the line of ``plan.graph.edges[i]``; a diagnostic
    about an edge gets the line of the first edge with its ends.

    Example:
        >>> from waygraph.model import Plan
        >>> plan = Plan.model_validate({"id": "p", "graph": {"nodes": {"a": {}}}})
        >>> [d.line for d in with_lines([Diagnostic("r", "info", "m", node_id="a")],
        ...                             plan, {"a": 3})]
        [3]
    """
    edge_line: dict[tuple[str, str], int] = {}
    for edge, at in zip(plan.graph.edges, edge_lines, strict=False):
        edge_line.setdefault((edge.from_, edge.to), at)
    out = []
    for d in diagnostics:
        line = d.line
        if line is None and d.edge is not None:
            line = edge_line.get(d.edge)
        if line is None and d.node_id is not None:
            line = node_lines.get(d.node_id)
        out.append(d if line == d.line else replace(d, line=line))
    return out
