"""Where a guided run goes next: edge choice, retry targets and goal gates.

The one definition of edge choice: the engine's rules, rendering (what the
model is told comes next) and ``waygraph check`` all come here, so they agree.

- Edges are tried condition by condition; within a condition the highest
  ``weight`` wins. Ties go to file order in a ``waygraph``-routed plan and to
  the lexically first target in an ``attractor``-routed one (§3.3 step 5),
  except out of a ``human`` node, whose choices keep the order they were
  written in (that is the order a person is shown them).
- An edge whose ``when`` is a *data check* (``compare``/``truthy``, or
  ``all``/``any``/``not`` of those, over ``context.*``, ``outcome`` or
  ``preferred_label``) is judged here, against the run's context
  (:func:`data_scope`), and is eligible only while it holds. Any other
  ``when`` reads the tool result and is the driver's judge's to decide.
- A failure no edge takes goes to the node's ``retry_target`` or
  ``fallback_retry_target`` (:func:`retry_target_of`); a goal gate not
  passed sends a finishing run to :func:`gate_target` (§3.4).

Example:
    >>> from waygraph.model import Graph
    >>> plan = (Graph.builder().task("t").exit("b").exit("a")
    ...         .edge("start", "t").edge("t", "b").edge("t", "a").plan("p"))
    >>> pick_edge(plan, "t", ("on_success", "always")).to
    'b'
    >>> pick_edge(plan.model_copy(update={"routing": "attractor"}), "t", ("always",)).to
    'a'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from waygraph.engine.state import SUCCESS_EDGES
from waygraph.model import Edge, Node, Plan, Verify
from waygraph.predicates import evaluate_data

if TYPE_CHECKING:
    from waygraph.engine.state import Draft, Run

__all__ = [
    "DATA_ROOTS",
    "ROUTES_ON",
    "data_scope",
    "first_edge",
    "gate_target",
    "holds",
    "is_data_check",
    "max_redirects",
    "ordered_edges",
    "pick_edge",
    "reads_context",
    "retry_target_of",
    "unsatisfied_gate",
    "unverified",
]

#: The names a data check over the run's context may read (§10's keys).
DATA_ROOTS = frozenset({"context", "outcome", "preferred_label"})
#: What a data check reads (:func:`data_scope`), or a function that builds it
#: when a data check first needs it (most routing never does).
Scope = Mapping[str, Any] | Callable[[], Mapping[str, Any]]
#: Deeper ``when`` trees are no data check (the loader bounds real ones far below).
_MAX_DEPTH = 32


def ordered_edges(plan: Plan, node_id: str) -> tuple[Edge, ...]:
    """The edges out of ``node_id`` in the order the engine tries them (see the module docstring).

    Example:
        >>> import waygraph
        >>> plan = waygraph.load_library()["bugfix_workflow"]
        >>> [e.to for e in ordered_edges(plan, "fix")]
        ['test', 'escalate_stuck']
    """
    edges = plan.graph.out_edges(node_id)
    if plan.routing != "attractor" or len(edges) < 2:
        return edges
    node = plan.graph.nodes.get(node_id)
    if node is not None and node.type == "human":
        return edges
    # out_edges is sorted by weight already; sorting again by target breaks the ties.
    return tuple(sorted(edges, key=lambda e: (-e.weight, e.to)))


def is_data_check(verify: Verify, depth: int = 0) -> bool:
    """Whether ``verify`` reads only the run's context, outcome and preferred label.

    Example:
        >>> from waygraph.predicates import parse_condition
        >>> is_data_check(parse_condition("context.tests_passed == true"))
        True
        >>> is_data_check(parse_condition("exit_code == 0"))
        False
    """
    kind = verify.type
    if depth > _MAX_DEPTH:
        return False
    if kind in ("all", "any", "not"):
        checks = verify.checks or ()
        return bool(checks) and all(is_data_check(c, depth + 1) for c in checks)
    if kind in ("compare", "truthy"):
        return (verify.field or "").split(".", 1)[0] in DATA_ROOTS
    return False


def reads_context(verify: Verify) -> bool:
    """Whether the data check ``verify`` reads a ``context.*`` key.

    Example:
        >>> from waygraph.predicates import parse_condition
        >>> reads_context(parse_condition("context.n > 2")), reads_context(parse_condition("ok"))
        (True, False)
    """
    return is_data_check(verify) and any(
        (c.field or "").startswith("context.") for c in verify.walk()
    )


def data_scope(
    context: Mapping[str, Any], outcome: str, preferred_label: str = ""
) -> dict[str, Any]:
    """What a data check reads: the context (dotted keys also as nested mappings),
    the outcome routed on (``success`` or ``fail``) and a person's choice label.

    Example:
        >>> data_scope({"graph.goal": "ship"}, "success")["context"]
        {'graph.goal': 'ship', 'graph': {'goal': 'ship'}}
    """
    return {"context": _nested(context), "outcome": outcome, "preferred_label": preferred_label}


def _nested(context: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = dict(context)
    for key, value in context.items():
        if "." not in key:
            continue
        *parents, last = key.split(".")
        where = out
        for part in parents:
            inner = where.get(part)
            if inner is None:
                inner = where[part] = {}
            elif not isinstance(inner, dict):
                if not isinstance(inner, Mapping):
                    break  # a plain value holds the name already: it stays as set
                # A copy: the run's own values are never changed.
                inner = where[part] = dict(inner)
            where = inner
        else:
            where.setdefault(last, value)
    return out


def holds(verify: Verify, scope: Mapping[str, Any]) -> bool:
    """Whether the data check ``verify`` holds in ``scope`` (a malformed one never does)."""
    try:
        return evaluate_data(verify, scope)
    except ValueError:
        return False


def pick_edge(
    plan: Plan,
    node_id: str,
    conditions: tuple[str, ...],
    *,
    plain: bool = False,
    scope: Scope | None = None,
) -> Edge | None:
    """The edge the engine follows out of ``node_id`` for the first matching condition.

    ``plain``: only edges without ``when`` count (a decision's fallback
    routes). ``scope`` (:func:`data_scope`): edges whose ``when`` is a data
    check count only when it holds; without it they count as any edge does.

    Example:
        >>> import waygraph
        >>> plan = waygraph.load_library()["bugfix_workflow"]
        >>> pick_edge(plan, "fix", ("on_success", "always")).to
        'test'
    """
    return first_edge(ordered_edges(plan, node_id), conditions, plain=plain, scope=scope)


def first_edge(
    edges: Sequence[Edge],
    conditions: tuple[str, ...],
    *,
    plain: bool = False,
    scope: Scope | None = None,
) -> Edge | None:
    """Among ``edges`` (in :func:`ordered_edges` order), the one the engine follows.

    The first condition that has an eligible edge wins; within it, the first
    edge. ``plain`` and ``scope`` as for :func:`pick_edge`.

    Example:
        >>> import waygraph
        >>> plan = waygraph.load_library()["bugfix_workflow"]
        >>> first_edge(plan.graph.out_edges("test"), ("on_retry", "on_fail")).to
        'fix'
    """
    for condition in conditions:
        for edge in edges:
            if edge.condition != condition:
                continue
            when = edge.when
            if when is not None:
                if plain:
                    continue
                if scope is not None and is_data_check(when):
                    if callable(scope):
                        scope = scope()
                    if not holds(when, scope):
                        continue
            return edge
    return None


def unverified(plan: Plan, run: Run | Draft) -> list[str]:
    """The task and decision nodes between the current node and an exit, on the success route."""
    pending: list[str] = []
    node_id = run.current_node
    seen: set[str] = set()
    while node_id is not None and node_id not in seen:
        seen.add(node_id)
        node = plan.graph.nodes.get(node_id)
        if node is None or node.type in ("exit", "escalate"):
            if node is not None and node.type == "exit" and node.verify is not None:
                pending.append(node_id)
            break
        if node.type in ("task", "decision", "human"):
            pending.append(node_id)
        edge = pick_edge(plan, node_id, SUCCESS_EDGES)
        node_id = edge.to if edge is not None else None
    return pending


#: The outcomes a decision's data-check edge of each condition is taken on.
ROUTES_ON: dict[str, tuple[str, ...]] = {
    "always": ("success", "fail"),
    "on_success": ("success",),
    "on_fail": ("fail",),
    "on_exhaust": ("fail",),
}


# ---------------------------------------------------------------- jumps


def retry_target_of(plan: Plan, node: Node) -> str | None:
    """Where a node whose failure no edge takes goes (§3.7): its ``retry_target``,
    else its ``fallback_retry_target``; None when neither names a node of the plan.

    Example:
        >>> from waygraph.model import Graph
        >>> plan = (Graph.builder().task("a").task("b", fallback_retry_target="a")
        ...         .exit("done").chain("start", "a", "b", "done").plan("p"))
        >>> retry_target_of(plan, plan.graph.nodes["b"])
        'a'
    """
    for target in (node.retry_target, node.fallback_retry_target):
        if target and target in plan.graph.nodes:
            return target
    return None


def unsatisfied_gate(plan: Plan, visited: Mapping[str, Mapping[str, Any]]) -> Node | None:
    """The first visited ``goal_gate`` node (in plan order) whose last outcome is not a
    success (§3.4), or None: the run may finish."""
    for node_id, node in plan.graph.nodes.items():
        state = visited.get(node_id)
        if node.goal_gate and state is not None and state.get("outcome") != "success":
            return node
    return None


def gate_target(plan: Plan, gate: Node) -> str | None:
    """Where an unsatisfied goal gate sends the run: the gate's ``retry_target``, its
    ``fallback_retry_target``, then the graph's; None when none names a node."""
    attrs = plan.attrs or {}
    for target in (
        gate.retry_target,
        gate.fallback_retry_target,
        attrs.get("retry_target"),
        attrs.get("fallback_retry_target"),
    ):
        if target and target in plan.graph.nodes:
            return target
    return None


#: Redirects by unsatisfied goal gates one run may take, unless the graph says.
DEFAULT_GATE_REDIRECTS = 10


def max_redirects(plan: Plan) -> int:
    """The graph's ``max_goal_gate_redirects``, else :data:`DEFAULT_GATE_REDIRECTS`."""
    text = (plan.attrs or {}).get("max_goal_gate_redirects", "")
    return int(text) if text.strip().isdigit() else DEFAULT_GATE_REDIRECTS
