"""Attractor transforms (specification §9.1–9.3): plan to plan, between reading and lint.

A :class:`Transform` returns a new plan and leaves its input as it was (plans
are immutable models; a transform builds changed copies). Two are built in:

* :class:`VariableExpansionTransform` replaces ``$goal`` in each node's prompt
  (``action``, and a human node's ``prompt``) with the plan's goal, using
  :func:`expand_goal`, the very function the DOT reader uses;
* :class:`StylesheetTransform` applies the plan's ``model_stylesheet`` (§8)
  to each node's ``attrs``, setting only the properties the node does not set
  itself. A node's classes are its ``attrs["class"]`` (comma-separated,
  §2.12); its shape is its ``attrs["shape"]``, else the shape its handler or
  node type is drawn with (:func:`node_shape`).

:func:`prepare_pipeline` runs the built-ins, then the caller's transforms in
the order given, then :func:`waygraph.pipelines.lint.validate`. There is no
global registry: what §9.3 calls registering a transform is passing it in
``transforms``, so two runners in one process cannot change each other's
pipelines.

The DOT reader already expands ``$goal`` and applies the stylesheet while
reading; both built-ins leave such a plan as it is (no ``$goal`` is left, and
every styled property is already set), so preparing a read plan again is
safe. A stylesheet that does not parse is left for lint's
``stylesheet_syntax`` to report: the transform then changes nothing.

Example:
    >>> from waygraph.model import Plan
    >>> plan = Plan.model_validate({"id": "p", "goal": "ship v2",
    ...     "attrs": {"model_stylesheet": "box { llm_model: opus; }"},
    ...     "graph": {"start": "start", "nodes": {"start": {"type": "start"},
    ...         "work": {"action": "Plan how to $goal"}, "exit": {"type": "exit"}},
    ...     "edges": [{"from": "start", "to": "work"}, {"from": "work", "to": "exit"}]}})
    >>> prepared, diagnostics = prepare_pipeline(plan)
    >>> work = prepared.graph.nodes["work"]
    >>> work.action, work.attrs, diagnostics
    ('Plan how to ship v2', {'llm_model': 'opus'}, [])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from waygraph.errors import InputError, PlanFormatError
from waygraph.formats._dot_attributes import SHAPE_OF_HANDLER, SHAPE_OF_TYPE
from waygraph.formats.dot import expand_goal
from waygraph.model import Graph, Node, Plan
from waygraph.pipelines.lint import Diagnostic, LintRule, validate
from waygraph.pipelines.stylesheet import Stylesheet, parse_stylesheet

__all__ = [
    "BUILT_IN_TRANSFORMS",
    "StylesheetTransform",
    "Transform",
    "VariableExpansionTransform",
    "expand_goal",
    "node_classes",
    "node_shape",
    "prepare_pipeline",
    "with_nodes",
]


@runtime_checkable
class Transform(Protocol):
    """A transform (§9.1): ``apply(plan)`` returns a new plan, never changing ``plan``.

    Build a changed graph new (``Graph(start=..., nodes=..., edges=...)`` or
    :func:`with_nodes`) rather than with ``graph.model_copy(update=...)``: a
    copy keeps the adjacency the original graph cached for its old edges.

    Example:
        >>> class Renamed:
        ...     def apply(self, plan):
        ...         return plan.model_copy(update={"name": plan.name.upper()})
        >>> isinstance(Renamed(), Transform)
        True
    """

    def apply(self, plan: Plan) -> Plan:
        """The transformed plan, built new; ``plan`` itself stays as it was."""
        ...


def with_nodes(plan: Plan, nodes: Mapping[str, Node]) -> Plan:
    """``plan`` with its graph's nodes replaced by ``nodes`` (same edges and start).

    A new :class:`~waygraph.model.Graph` is built rather than copied, so no
    adjacency cached on the old graph carries over.

    Example:
        >>> plan = Plan.model_validate({"id": "p", "graph": {"nodes": {"a": {}}}})
        >>> with_nodes(plan, {"a": Node(id="a", name="A")}).graph.nodes["a"].name
        'A'
    """
    graph = Graph(start=plan.graph.start, nodes=dict(nodes), edges=plan.graph.edges)
    return plan.model_copy(update={"graph": graph})


def node_classes(node: Node) -> list[str]:
    """The classes of ``node``: its ``attrs["class"]``, split at commas (§2.12).

    Example:
        >>> node_classes(Node(id="n", attrs={"class": "code, critical"}))
        ['code', 'critical']
    """
    text = (node.attrs or {}).get("class", "")
    return [name.strip() for name in text.split(",") if name.strip()]


def node_shape(node: Node) -> str:
    """The shape a stylesheet's shape selectors see: ``attrs["shape"]`` as written, else
    the shape the node's handler or type is drawn with (the DOT reader keeps a
    shape in ``attrs`` only when it differs from that one).

    Example:
        >>> node_shape(Node(id="n")), node_shape(Node(id="t", handler="tool"))
        ('box', 'parallelogram')
    """
    written = (node.attrs or {}).get("shape")
    if written:
        return written
    return SHAPE_OF_HANDLER.get(node.handler or "") or SHAPE_OF_TYPE.get(node.type, "box")


@dataclass(frozen=True)
class VariableExpansionTransform:
    """Replace ``$goal`` in node prompts with the plan's goal (§9.2).

    A plan without a goal is returned unchanged (``$goal`` stays as written;
    the DOT reader warns about it).

    Example:
        >>> plan = Plan.model_validate({"id": "p", "goal": "ship",
        ...     "graph": {"nodes": {"a": {"action": "Do: $goal"}}}})
        >>> VariableExpansionTransform().apply(plan).graph.nodes["a"].action
        'Do: ship'
    """

    def apply(self, plan: Plan) -> Plan:
        """The plan with every node's ``action`` and ``prompt`` expanded."""
        goal = plan.goal
        if goal is None:
            return plan
        changed: dict[str, Node] = {}
        for node_id, node in plan.graph.nodes.items():
            update = {
                name: expand_goal(text, goal)
                for name in ("action", "prompt")
                if (text := getattr(node, name)) and "$goal" in text
            }
            if update:
                changed[node_id] = node.model_copy(update=update)
        if not changed:
            return plan
        return with_nodes(plan, {**plan.graph.nodes, **changed})


@dataclass(frozen=True)
class StylesheetTransform:
    """Apply the plan's ``model_stylesheet`` to node ``attrs`` it does not set (§8.5).

    ``stylesheet`` overrides the plan's own (for a runner's defaults); without
    one, the plan's ``attrs["model_stylesheet"]`` is read, and a plan with
    none, or one that does not parse, is returned unchanged.

    Example:
        >>> plan = Plan.model_validate({"id": "p",
        ...     "attrs": {"model_stylesheet": ".fast { llm_model: flash; }"},
        ...     "graph": {"nodes": {"a": {"attrs": {"class": "fast"}},
        ...                         "b": {"attrs": {"class": "fast", "llm_model": "pro"}}}}})
        >>> nodes = StylesheetTransform().apply(plan).graph.nodes
        >>> nodes["a"].attrs["llm_model"], nodes["b"].attrs["llm_model"]
        ('flash', 'pro')
    """

    stylesheet: Stylesheet | None = None

    def apply(self, plan: Plan) -> Plan:
        """The plan with each node's styled properties filled in."""
        sheet = self.stylesheet or _plan_stylesheet(plan)
        if sheet is None or not sheet.rules:
            return plan
        changed: dict[str, Node] = {}
        for node_id, node in plan.graph.nodes.items():
            attrs = node.attrs or {}
            styled = sheet.properties_for(node_id, node_shape(node), node_classes(node))
            # Explicit node attributes always win (§8.3): only fill what is missing.
            missing = {k: v for k, v in styled.items() if k not in attrs}
            if missing:
                changed[node_id] = node.model_copy(update={"attrs": {**attrs, **missing}})
        if not changed:
            return plan
        return with_nodes(plan, {**plan.graph.nodes, **changed})


def _plan_stylesheet(plan: Plan) -> Stylesheet | None:
    text = (plan.attrs or {}).get("model_stylesheet")
    if not text:
        return None
    try:
        return parse_stylesheet(text)
    except PlanFormatError:
        return None  # lint's stylesheet_syntax reports it, with where and why


#: The built-in transforms, in the order they run (§9.2).
BUILT_IN_TRANSFORMS: tuple[Transform, ...] = (
    VariableExpansionTransform(),
    StylesheetTransform(),
)


def prepare_pipeline(
    plan: Plan,
    transforms: Iterable[Transform] = (),
    extra_rules: Sequence[LintRule] | None = None,
    *,
    known_types: Iterable[str] = (),
) -> tuple[Plan, list[Diagnostic]]:
    """Run the built-in transforms, then ``transforms`` in order, then lint (§9.1).

    Returns the transformed plan and its diagnostics; ``extra_rules`` and
    ``known_types`` go to :func:`~waygraph.pipelines.lint.validate`. A
    transform that returns something other than a plan raises
    :class:`~waygraph.errors.InputError` naming it.

    Example:
        >>> plan = Plan.model_validate({"id": "p", "graph": {"start": "s", "nodes": {
        ...     "s": {"type": "start"}, "e": {"type": "exit"}},
        ...     "edges": [{"from": "s", "to": "e"}]}})
        >>> class Named:
        ...     def apply(self, plan):
        ...         return plan.model_copy(update={"name": "Named"})
        >>> prepared, diagnostics = prepare_pipeline(plan, [Named()])
        >>> prepared.name, diagnostics
        ('Named', [])
    """
    for transform in (*BUILT_IN_TRANSFORMS, *transforms):
        result = transform.apply(plan)
        if not isinstance(result, Plan):
            raise InputError(
                f"transform {type(transform).__name__} returned {type(result).__name__}, not a Plan"
            )
        plan = result
    return plan, validate(plan, extra_rules, known_types=known_types)
