"""Writing DOT: a :class:`~waygraph.model.Plan` as text that reads back to an equal plan.

Every field that differs from its default is written, and only those, so a
file says what is particular to its plan. Node types become shapes, so Graphviz
draws the file as the plan it is. Names and values are spelt with
:func:`~waygraph.formats._dot_syntax.quote_id`, the reader's own lexical rules.
"""

from __future__ import annotations

import json
import math
from typing import Any

from waygraph.errors import PlanFormatError
from waygraph.formats._dot_attributes import SHAPE_OF_HANDLER, SHAPE_OF_TYPE
from waygraph.formats._dot_conditions import edge_condition
from waygraph.formats._dot_syntax import quote_id
from waygraph.formats.json_library import verify_to_data
from waygraph.model import Edge, Node, Plan, Verify
from waygraph.predicates import format_condition


def plan_to_dot(plan: Plan) -> str:
    """Write ``plan`` as DOT that :func:`~waygraph.formats.dot.parse_dot` reads as an equal plan.

    Graph attributes come first, then one node per line, then the edges. Node
    types are written as shapes, so Graphviz draws the plan as it runs. A plan
    routed as waygraph routes says ``routing=waygraph``: the reader routes a
    DOT file as the Attractor specification does unless it says so.
    Raises :class:`PlanFormatError` (a ``ValueError``) for a plan DOT cannot
    hold: an empty id, an edge to a node that does not exist (DOT would
    create that node), or a ``prompt`` on a node that is not ``human`` (DOT
    reads ``prompt`` there as Attractor's name for ``action``).

    Example:
        >>> from waygraph.model import Graph
        >>> plan = (Graph.builder().task("build", action="make").exit("done")
        ...         .chain("start", "build", "done").plan("ci", name="CI"))
        >>> print(plan_to_dot(plan))
        digraph ci {
          label=CI
          routing=waygraph
        <BLANKLINE>
          start [shape=Mdiamond, label=Start]
          build [shape=box, action=make]
          done [shape=Msquare]
        <BLANKLINE>
          start -> build
          build -> done [condition=on_success]
        }
        <BLANKLINE>
    """
    if not plan.id:
        raise PlanFormatError("a plan needs a non-empty id to be written as DOT", field="id")
    graph = plan.graph
    for edge in graph.edges:
        for end in (edge.from_, edge.to):
            if end not in graph.nodes:
                raise PlanFormatError(
                    f"names node {end!r}, which does not exist; DOT would create it",
                    plan=plan.id,
                    edge=edge.describe(),
                    value=end,
                )
    for node in graph.nodes.values():
        if node.prompt is not None and node.type != "human":
            raise PlanFormatError(
                f"prompt is set on {node.type} node {node.id!r}; DOT reads prompt as the "
                "question only on human nodes (elsewhere it is Attractor's name for action), "
                "so it would read back as the action; remove prompt (it has no effect "
                "there) or make the node human",
                plan=plan.id,
                node=node.id,
                field="prompt",
            )
    lines = [f"digraph {quote_id(plan.id)} {{"]
    head = [f"  {key}={value}" for key, value in _graph_attributes(plan)]
    if head:
        lines += [*head, ""]
    lines += [
        f"  {quote_id(nid)}{_attr_list(_node_attributes(n))}" for nid, n in graph.nodes.items()
    ]
    if graph.edges:
        lines.append("")
        lines += [
            f"  {quote_id(e.from_)} -> {quote_id(e.to)}{_attr_list(_edge_attributes(e))}"
            for e in graph.edges
        ]
    lines.append("}")
    return "\n".join(lines) + "\n"


def _graph_attributes(plan: Plan) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if plan.name:
        out.append(("label", quote_id(plan.name)))
    for key in ("goal", "description"):
        value = getattr(plan, key)
        if value is not None:
            out.append((key, quote_id(value)))
    for key in ("domains", "triggers", "examples"):
        items: tuple[str, ...] = getattr(plan, key)
        if items:
            out.append((key, quote_id(_text_list(items))))
    defaults = {
        "trigger_threshold": 2,
        "stale_after_turns": 10,
        "max_transitions": 100,
        "repeat_limit": 3,
    }
    for key, default in defaults.items():
        if getattr(plan, key) != default:
            out.append((key, str(getattr(plan, key))))
    if plan.match_mode is not None:
        out.append(("match_mode", quote_id(plan.match_mode)))
    if plan.routing != "attractor":
        # The reader routes a DOT file as Attractor does unless it says so.
        out.append(("routing", quote_id(plan.routing)))
    if plan.linear:
        out.append(("linear", "true"))
    if plan.meta is not None:
        out.append(("meta", quote_id(_json(plan.meta))))
    starts = [nid for nid, n in plan.graph.nodes.items() if n.type == "start"]
    if starts != [plan.graph.start]:
        out.append(("start", quote_id(plan.graph.start)))
    out += [(quote_id(key), quote_id(value)) for key, value in (plan.attrs or {}).items()]
    return out


def _node_attributes(node: Node) -> list[tuple[str, str]]:
    extra = dict(node.attrs or {})
    implied = SHAPE_OF_HANDLER.get(node.handler or "") or SHAPE_OF_TYPE[node.type]
    shape = extra.pop("shape", None)
    out = [("shape", quote_id(shape or implied))]
    if shape is not None or (node.handler is not None and node.handler not in SHAPE_OF_HANDLER):
        # The shape alone would not read back as this node's type and handler.
        out.append(("type", quote_id(node.handler or node.type)))
    if node.name:
        out.append(("label", quote_id(node.name)))
    for key in ("prompt", "action", "tool", "tool_hint", "description"):
        value = getattr(node, key)
        if value is not None:
            out.append((key, quote_id(value)))
    if node.verify is not None:
        out.append(("verify", quote_id(_json(verify_to_data(node.verify)))))
    if node.max_retries != 0:
        out.append(("max_retries", "none" if node.max_retries is None else str(node.max_retries)))
    if node.join != "any":
        out.append(("join", quote_id(node.join)))
    for key in ("on_fail", "reason", "pace_level", "status", "next_plan", "next_plan_when"):
        value = getattr(node, key)
        if value is not None:
            out.append((key, quote_id(value)))
    if node.required is not None:
        out.append(("required", "true" if node.required else "false"))
    if node.meta is not None:
        out.append(("meta", quote_id(_json(node.meta))))
    if node.command is not None:
        out.append(("tool_command", quote_id(node.command)))
    for key in ("goal_gate", "allow_partial"):
        if getattr(node, key):
            out.append((key, "true"))
    for key in ("retry_target", "fallback_retry_target"):
        value = getattr(node, key)
        if value is not None:
            out.append((key, quote_id(value)))
    if node.timeout is not None:
        out.append(("timeout", quote_id(_number_text(node.timeout))))
    out += [(quote_id(key), quote_id(value)) for key, value in extra.items()]
    return out


def _edge_attributes(edge: Edge) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    extra = dict(edge.attrs or {})
    written = extra.pop("condition", None)
    if written is not None:
        # The specification's text as the file wrote it: it reads back to this
        # edge's condition and when (unless when was given on its own).
        out.append(("condition", quote_id(written)))
        if edge.when is not None and edge_condition(written)[1] is None:
            out.append(("when", quote_id(_when_text(edge.when))))
    else:
        if edge.condition != "always":
            out.append(("condition", edge.condition))
        if edge.when is not None:
            out.append(("when", quote_id(_when_text(edge.when))))
    if edge.on_event is not None:
        out.append(("on_event", quote_id(edge.on_event)))
    if edge.weight:
        out.append(("weight", quote_id(_number_text(edge.weight))))
    if edge.label is not None:
        out.append(("label", quote_id(edge.label)))
    out += [(quote_id(key), quote_id(value)) for key, value in extra.items()]
    return out


def _when_text(verify: Verify) -> str:
    """The condition string when it reads back exactly, else the JSON tree."""
    try:
        text = format_condition(verify)
    except ValueError:
        return _json(verify_to_data(verify))
    return text


def _number_text(value: float) -> str:
    if math.isfinite(value) and float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


def _text_list(items: tuple[str, ...]) -> str:
    # Comma-separated reads best; JSON keeps items with commas or edge spaces intact.
    plain = all(item and item == item.strip() and "," not in item for item in items)
    if plain and not items[0].startswith("["):
        return ", ".join(items)
    return _json(list(items))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _attr_list(attrs: list[tuple[str, str]]) -> str:
    if not attrs:
        return ""
    return " [" + ", ".join(f"{key}={value}" for key, value in attrs) + "]"
