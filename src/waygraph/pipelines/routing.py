"""Where an executed pipeline goes next: the specification's routing rules, as pure functions.

Nothing here runs a stage, reads a clock or touches a file: the runner
(:mod:`waygraph.pipelines.runner`) executes handlers and asks these functions
what follows, so every rule has one definition that tests can call directly.

- :func:`select_edge`: the five steps of §3.3 (condition match, preferred
  label, suggested next ids, highest weight, then the lexically first target);
  when no condition holds and no edge is unconditional, the best edge of all,
  as the public ports do (the specification's pseudocode would end the run).
- :func:`after_failure`: §3.7 for a FAIL: a matching condition edge, else the
  node's ``retry_target``, else its ``fallback_retry_target``, else stop.
- :func:`attempt_verdict`: §3.5's retry policy for one attempt's outcome (a
  FAIL no condition edge takes is retried while attempts remain, §11.5).
- :func:`unsatisfied_gate` and :func:`gate_target`: §3.4's goal gates.

An edge read from DOT keeps its condition text in ``attrs["condition"]`` and
is judged by :mod:`waygraph.pipelines.conditions`; an edge of a JSON or YAML
plan is judged by its ``condition`` (``on_success`` holds for SUCCESS and
PARTIAL_SUCCESS, ``on_fail`` and ``on_exhaust`` for FAIL, ``on_retry`` for
RETRY) and its ``when`` over the context.

Example:
    >>> from waygraph.formats.dot import parse_dot
    >>> plan = parse_dot('''digraph p { start [shape=Mdiamond]; done [shape=Msquare]
    ...   start -> b; start -> a; a -> done; b -> done }''')
    >>> select_edge(plan.graph, "start", Outcome(status="success"), {}).to
    'a'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

# One definition of where an unsatisfied goal gate sends a run, guided or executed.
from waygraph.engine.choice import gate_target
from waygraph.model import Edge, Graph, Node, Plan, Verify
from waygraph.pipelines.conditions import evaluate_condition, resolve_key, value_text
from waygraph.pipelines.outcome import Outcome
from waygraph.verify_types.people import answer_keys

__all__ = [
    "DEFAULT_HANDLERS",
    "after_failure",
    "attempt_verdict",
    "edge_holds",
    "fail_routed",
    "gate_target",
    "handler_type",
    "is_conditional",
    "normalize_label",
    "select_edge",
    "unsatisfied_gate",
]

#: The handler type of each node type, when the node names none (§2.8).
DEFAULT_HANDLERS: dict[str, str] = {
    "start": "start",
    "exit": "exit",
    "task": "codergen",
    "decision": "conditional",
    "human": "wait.human",
    "checkpoint": "checkpoint",
    "escalate": "escalate",
}
_OUTCOME_OF_CONDITION: dict[str, tuple[str, ...]] = {
    "on_success": ("success", "partial_success"),
    "on_fail": ("fail",),
    "on_exhaust": ("fail",),
    "on_retry": ("retry",),
}


def handler_type(node: Node) -> str:
    """The handler that runs ``node``: its ``handler``, else its node type's (§4.2).

    Example:
        >>> handler_type(Node(id="n", type="human"))
        'wait.human'
    """
    return node.handler or DEFAULT_HANDLERS.get(node.type, "codergen")


def normalize_label(label: str) -> str:
    """A label as preferred-label matching compares it: lowercase, trimmed, without its
    accelerator (``[Y] Yes``, ``Y) Yes``, ``Y - Yes`` all read ``yes``).

    Example:
        >>> normalize_label("  [A] Approve "), normalize_label("Fix")
        ('approve', 'fix')
    """
    keys = answer_keys(label)
    if not keys:
        return label.strip().lower()
    return keys[1] if len(keys) > 1 else keys[0]


def _condition_text(edge: Edge) -> str | None:
    return edge.attrs.get("condition") if edge.attrs else None


def is_conditional(edge: Edge) -> bool:
    """Whether ``edge`` has a condition (step 1 of §3.3) rather than being unconditional."""
    text = _condition_text(edge)
    if text is not None:
        return bool(text.strip())
    return edge.condition != "always" or edge.when is not None


def _verify_holds(check: Verify, context: Mapping[str, Any], outcome: Outcome) -> bool:
    """A ``when`` tree over the context (the data checks; any other check does not hold)."""

    def value(field: str | None) -> str:
        return resolve_key(
            field or "",
            outcome=outcome.status,
            preferred_label=outcome.preferred_label,
            context=context,
        )

    kind = check.type
    if kind == "all":
        return all(_verify_holds(c, context, outcome) for c in check.checks or ())
    if kind == "any":
        return any(_verify_holds(c, context, outcome) for c in check.checks or ())
    if kind == "not":
        return not any(_verify_holds(c, context, outcome) for c in check.checks or ())
    if kind == "truthy":
        return bool(value(check.field))
    if kind == "compare":
        want = value_text(check.value)
        if check.op in ("in", "not in", "contains"):
            have = value(check.field)
            inside = want in have if check.op == "contains" else have in want
            return inside if check.op != "not in" else not inside
        quoted = want.replace("\\", "\\\\").replace('"', '\\"')
        operator = "=" if check.op == "==" else check.op
        return evaluate_condition(
            f'{check.field}{operator}"{quoted}"',
            outcome=outcome.status,
            preferred_label=outcome.preferred_label,
            context=context,
        )
    return False


def edge_holds(edge: Edge, outcome: Outcome, context: Mapping[str, Any]) -> bool:
    """Whether a conditional ``edge``'s condition holds for ``outcome`` and ``context``."""
    text = _condition_text(edge)
    if text is not None:
        return evaluate_condition(
            text,
            outcome=outcome.status,
            preferred_label=outcome.preferred_label,
            context=context,
        )
    wanted = _OUTCOME_OF_CONDITION.get(edge.condition)
    if wanted is not None and outcome.status not in wanted:
        return False
    return edge.when is None or _verify_holds(edge.when, context, outcome)


def _best(edges: Sequence[Edge]) -> Edge:
    """Highest weight, then the lexically first target (§3.3 steps 4 and 5)."""
    return min(edges, key=lambda e: (-e.weight, e.to))


# The out-edges of the graph routed last, keyed by its edges tuple (kept alive here, so
# its identity is not reused): a run routes every node of one graph, and scanning every
# edge for each node made a 1,000-node run's cost per node grow with the pipeline.
_OUT: tuple[tuple[Edge, ...], dict[str, tuple[Edge, ...]]] = ((), {})


def outgoing(graph: Graph, node_id: str) -> tuple[Edge, ...]:
    """The edges leaving ``node_id`` in file order (``Graph.out_edges`` sorts by weight).

    Example:
        >>> g = Graph(nodes={"a": {}, "b": {}, "c": {}},
        ...           edges=[{"from": "a", "to": "b"}, {"from": "a", "to": "c", "weight": 2}])
        >>> [e.to for e in outgoing(g, "a")], outgoing(g, "c")
        (['b', 'c'], ())
    """
    edges, out = _OUT  # one read: another thread may replace it meanwhile
    if edges is not graph.edges:
        built: dict[str, list[Edge]] = {}
        for edge in graph.edges:
            built.setdefault(edge.from_, []).append(edge)
        out = {key: tuple(value) for key, value in built.items()}
        _set_out(graph.edges, out)
    return out.get(node_id, ())


def _set_out(edges: tuple[Edge, ...], out: dict[str, tuple[Edge, ...]]) -> None:
    global _OUT
    _OUT = (edges, out)


def select_edge(
    graph: Graph, node_id: str, outcome: Outcome, context: Mapping[str, Any]
) -> Edge | None:
    """The edge to follow out of ``node_id`` after ``outcome`` (§3.3), or None."""
    edges = outgoing(graph, node_id)
    if not edges:
        return None
    matched = [e for e in edges if is_conditional(e) and edge_holds(e, outcome, context)]
    if matched:
        return _best(matched)
    plain = [e for e in edges if not is_conditional(e)]
    if outcome.preferred_label:
        wanted = normalize_label(outcome.preferred_label)
        for edge in plain:
            if edge.label is not None and normalize_label(edge.label) == wanted:
                return edge
    for suggested in outcome.suggested_next_ids:
        for edge in plain:
            if edge.to == suggested:
                return edge
    # No condition holds and no edge is unconditional: §3.3's pseudocode ends
    # the run here, but every public port takes the best edge of all instead,
    # and pipelines are written for them (a stage routed on a context flag no
    # stage sets); a FAIL never gets here (after_failure routes it, §3.7).
    return _best(plain or edges)


def after_failure(
    graph: Graph, node: Node, outcome: Outcome, context: Mapping[str, Any]
) -> str | None:
    """Where a FAIL goes (§3.7): a matching condition edge's target, else the node's
    ``retry_target``, else its ``fallback_retry_target``; None ends the run failed."""
    edges = [e for e in outgoing(graph, node.id) if is_conditional(e)]
    matched = [e for e in edges if edge_holds(e, outcome, context)]
    if matched:
        return _best(matched).to
    for target in (node.retry_target, node.fallback_retry_target):
        if target and target in graph.nodes:
            return target
    return None


def fail_routed(graph: Graph, node: Node, outcome: Outcome, context: Mapping[str, Any]) -> bool:
    """Whether a condition edge out of ``node`` takes this FAIL (§3.7's first route)."""
    return any(
        is_conditional(e) and edge_holds(e, outcome, context)
        for e in graph.edges
        if e.from_ == node.id
    )


def attempt_verdict(
    node: Node, outcome: Outcome, attempt: int, *, routed: bool = True
) -> tuple[Literal["retry", "done"], Outcome]:
    """After attempt ``attempt`` (1-based) of ``node``: run it again, or the outcome to route on.

    RETRY runs again while attempts remain (``max_retries`` more than the
    first; ``None`` is unbounded), then becomes PARTIAL_SUCCESS with
    ``allow_partial`` or FAIL. A FAIL that a condition edge takes
    (``routed``, see :func:`fail_routed`) is routed at once (§3.5, §3.7); one
    that none takes runs again while attempts remain (§11.5: "retried on
    RETRY or FAIL"), and only then goes to the retry targets. Every other
    status is final.
    """
    limit = node.max_retries
    left = limit is None or attempt <= limit
    if outcome.status == "fail" and not routed and left:
        return "retry", outcome
    if outcome.status != "retry":
        return "done", outcome
    if left:
        return "retry", outcome
    if node.allow_partial:
        return "done", Outcome(
            status="partial_success",
            notes="retries exhausted, partial accepted",
            context_updates=outcome.context_updates,
        )
    reason = outcome.failure_reason or "max retries exceeded"
    return "done", Outcome(status="fail", failure_reason=reason)


def unsatisfied_gate(plan: Plan, outcomes: Mapping[str, Outcome]) -> Node | None:
    """The first visited goal-gate node whose last outcome is not a success (§3.4), or None."""
    for node_id, outcome in outcomes.items():
        node = plan.graph.nodes.get(node_id)
        if node is not None and node.goal_gate and not outcome.succeeded:
            return node
    return None
