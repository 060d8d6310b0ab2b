"""Plans drawn as SVG with no external program: a small layered layout of our own.

Graphviz is optional and often missing (and a dashboard must work offline),
so this module lays a plan out itself, in the Sugiyama style:

1. **Back edges.** A depth-first walk from ``start`` (edges in definition
   order) marks edges that close a cycle (``test -> fix`` retry loops).
   They are laid out reversed and drawn as curves back up.
2. **Layers.** Longest path from the roots over the remaining acyclic edges,
   so every edge points down; an edge spanning several layers gets a
   placeholder per layer it crosses, so it is routed around nodes.
3. **Order.** Barycentre sweeps, down and up, keeping the order with the
   fewest crossings.
4. **Positions.** Each layer is placed as close as possible to the mean of
   its neighbours (least squares under the no-overlap constraint, solved
   exactly by pool-adjacent-violators), alternating down and up sweeps.

The drawing uses node shapes and colours per type, as the node type table
(:data:`waygraph.model.NODE_TYPE_SPECS`) gives them (start a stadium, task a
rounded box, decision a diamond, escalate an octagon, exit a double ellipse,
checkpoint a cylinder, human a hexagon showing its question), CSS classes for styling
(``node t-<type>``, a status class ``done``/``failed``/``current``/``pending``
when a run record is given, ``edge`` with ``failure``, ``back`` and
``followed``), the attempt count on visited nodes, and a ``<style>`` of its
own so the file looks right anywhere.
Every piece of plan text is XML-escaped (plans may be written by a model),
and characters XML cannot hold are dropped.

Example:
    >>> from waygraph.model import Graph
    >>> plan = (Graph.builder().task("build", name="Run make").exit("done")
    ...         .chain("start", "build", "done").plan("ship"))
    >>> svg = to_svg(plan, state={"current_node": "build", "status": "running"})
    >>> svg.startswith("<svg") and 'class="node t-task current"' in svg
    True
"""

from __future__ import annotations

import html
import itertools
import math
import re
from collections.abc import Mapping
from typing import Any

from waygraph.draw import (
    FAILURE_CONDITIONS,
    STATUS_COLOURS,
    _attempts_text,
    _edge_text,
    _followed_edges,
    node_status,
    predicate_label,
)
from waygraph.draw._svg_layout import (
    LINE_HEIGHT,
    SMALL_LINE_HEIGHT,
    SMALL_SIZE,
    Box,
    Route,
    assign_layers,
    back_edges,
    initial_rank,
    node_box,
    order_layers,
    place_layers,
    preorder,
    sized,
    text_width,
)
from waygraph.model import NODE_TYPE_SPECS, Node, Plan

__all__ = ["HEAT_SCALE", "SVG_CSS", "heat_colour", "to_svg"]

FONT = "13px"
LAYER_GAP = 50.0  # vertical space between layers, before edge labels
MARGIN = 24.0
PORT_SPACING = 14.0
BACK_BOW = 26.0  # how far a back edge between neighbouring layers bows out

#: A node's fill by its failure rate (``to_svg(heat=...)``): the first bound the rate is within.
HEAT_SCALE: tuple[tuple[float, str], ...] = (
    (0.0, "#ebfbee"),
    (0.1, "#fff3bf"),
    (0.25, "#ffd8a8"),
    (0.5, "#ffa8a8"),
    (1.0, "#ff6b6b"),
)


def heat_colour(rate: float) -> str:
    """The fill for a failure rate in 0..1 (:data:`HEAT_SCALE`).

    Example:
        >>> heat_colour(0.0), heat_colour(0.3), heat_colour(1.0)
        ('#ebfbee', '#ffa8a8', '#ff6b6b')
    """
    return next((colour for bound, colour in HEAT_SCALE if rate <= bound), HEAT_SCALE[-1][1])


# Characters XML 1.0 cannot contain at all (a plan name could hold them).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _css() -> str:
    # Each node type's colours are its row of the node type table.
    types = [
        f".wg-graph .t-{name} .shape{{fill:{spec.fill};stroke:{spec.stroke}}}"
        for name, spec in NODE_TYPE_SPECS.items()
        if spec.fill is not None and spec.stroke is not None
    ]
    status = []
    for name, (fill, stroke, colour) in STATUS_COLOURS.items():
        status.append(
            f".wg-graph .{name} .shape{{fill:{fill};stroke:{stroke}}}"
            f".wg-graph .{name} text{{fill:{colour}}}"
        )
    return (
        ".wg-graph{font-family:-apple-system,BlinkMacSystemFont,'Segoe UI',Roboto,"
        "'Helvetica Neue',Arial,sans-serif}"
        ".wg-graph .shape{fill:#fff;stroke:#868e96;stroke-width:1.3}"
        + "".join(types)
        + ".wg-graph .t-missing .shape{fill:#fff;stroke:#e03131;stroke-dasharray:4 3}"
        + "".join(status)
        + ".wg-graph .current .shape{stroke-width:3}"
        ".wg-graph text{fill:#212529;font-size:13px}"
        ".wg-graph text .head{font-weight:600}"
        ".wg-graph text .small{font-size:11px;font-style:italic}"
        ".wg-graph .edge path{fill:none;stroke:#868e96;stroke-width:1.3}"
        ".wg-graph .edge.failure path{stroke:#d9480f;stroke-dasharray:5 4}"
        ".wg-graph .edge.followed path{stroke:#2b8a3e;stroke-width:2.6}"
        ".wg-graph .edge text{font-size:11px;fill:#495057;paint-order:stroke;"
        "stroke:#fff;stroke-width:4px;stroke-linejoin:round}"
        ".wg-graph .edge.failure text{fill:#d9480f}"
        ".wg-graph .edge.followed text{fill:#2b8a3e;font-weight:600}"
        ".wg-graph .arrow{fill:#868e96}.wg-graph .arrow-failure{fill:#d9480f}"
        ".wg-graph .arrow-followed{fill:#2b8a3e}"
    )


#: The stylesheet every drawing embeds (scoped to ``.wg-graph``).
SVG_CSS = _css()


# ---------------------------------------------------------------- text


def _clean(text: object) -> str:
    return _NOT_XML.sub("", str(text))


def _esc(text: object) -> str:
    """Text made safe for XML element content and double- or single-quoted attributes."""
    return html.escape(_clean(text), quote=True)


# ---------------------------------------------------------------- drawing


def _port_y(box: Box, dx: float, bottom: bool) -> float:
    half = box.height / 2
    if box.shape == "diamond":
        half *= max(0.0, 1 - 2 * abs(dx) / box.width)
    elif box.shape == "double-ellipse":
        half *= math.sqrt(max(0.0, 1 - (2 * dx / box.width) ** 2))
    return box.y + half if bottom else box.y - half


def _polygon_points(box: Box) -> str:
    """The corners of a hexagon (human nodes) or an octagon (escalate nodes), as in DOT."""
    x, y, w, h = box.x, box.y, box.width, box.height
    left, top = x - w / 2, y - h / 2
    cut = 16.0
    if box.shape == "hexagon":
        corners = [
            (left + cut, top),
            (left + w - cut, top),
            (left + w, y),
            (left + w - cut, top + h),
            (left + cut, top + h),
            (left, y),
        ]
    else:
        # The same cut on every corner, but never past a third of the height.
        v = min(cut * 0.6, h / 3)
        corners = [
            (left + cut, top),
            (left + w - cut, top),
            (left + w, top + v),
            (left + w, top + h - v),
            (left + w - cut, top + h),
            (left + cut, top + h),
            (left, top + h - v),
            (left, top + v),
        ]
    return " ".join(f"{px:.1f},{py:.1f}" for px, py in corners)


def _shape(box: Box) -> str:
    x, y, w, h = box.x, box.y, box.width, box.height
    left, top = x - w / 2, y - h / 2
    shape = box.shape
    if shape == "stadium":
        return (
            f'<rect class="shape" x="{left:.1f}" y="{top:.1f}" width="{w:.1f}" '
            f'height="{h:.1f}" rx="{h / 2:.1f}"/>'
        )
    if shape == "diamond":
        corners = ((x, top), (x + w / 2, y), (x, top + h), (left, y))
        points = " ".join(f"{px:.1f},{py:.1f}" for px, py in corners)
        return f'<polygon class="shape" points="{points}"/>'
    if shape in ("octagon", "hexagon"):
        return f'<polygon class="shape" points="{_polygon_points(box)}"/>'
    if shape == "double-ellipse":
        return (
            f'<ellipse class="shape" cx="{x:.1f}" cy="{y:.1f}" rx="{w / 2:.1f}" ry="{h / 2:.1f}"/>'
            f'<ellipse class="shape inner" cx="{x:.1f}" cy="{y:.1f}" rx="{w / 2 - 4:.1f}" '
            f'ry="{h / 2 - 4:.1f}"/>'
        )
    if shape == "cylinder":
        ry = 6.0
        body = (
            f"M{left:.1f},{top + ry:.1f} A{w / 2:.1f},{ry} 0 0 1 {left + w:.1f},{top + ry:.1f} "
            f"V{top + h - ry:.1f} A{w / 2:.1f},{ry} 0 0 1 {left:.1f},{top + h - ry:.1f} Z"
        )
        rim = f"M{left:.1f},{top + ry:.1f} A{w / 2:.1f},{ry} 0 0 0 {left + w:.1f},{top + ry:.1f}"
        return f'<path class="shape" d="{body}"/><path class="shape rim" d="{rim}" fill="none"/>'
    return (
        f'<rect class="shape" x="{left:.1f}" y="{top:.1f}" width="{w:.1f}" '
        f'height="{h:.1f}" rx="6"/>'
    )


def _text(box: Box) -> str:
    heights = [SMALL_LINE_HEIGHT if cls == "small" else LINE_HEIGHT for cls, _ in box.lines]
    y = box.y - sum(heights) / 2
    spans = []
    for (cls, text), height in zip(box.lines, heights, strict=True):
        baseline = y + height * 0.76
        attr = f' class="{cls}"' if cls else ""
        spans.append(f'<tspan x="{box.x:.1f}" y="{baseline:.1f}"{attr}>{_esc(text)}</tspan>')
        y += height
    return f'<text text-anchor="middle">{"".join(spans)}</text>'


def _tooltip(node: Node, status: str | None, attempts: str | None) -> str:
    parts = [node.title]
    if node.type == "human":
        parts.append(f"asks: {node.question}")
    for text in (node.action, node.description, node.reason):
        # A human node's question may be its action or description: said once.
        if text and not (node.type == "human" and text == node.question):
            parts.append(text)
    if node.verify is not None:
        parts.append(f"verify: {predicate_label(node.verify)}")
    if status:
        parts.append(f"status: {status}" + (f" ({attempts})" if attempts else ""))
    return "\n".join(parts)


def _curve(points: list[tuple[float, float]], bow: float = 0.0) -> str:
    """A smooth path through ``points`` with vertical tangents at each one."""
    (x0, y0), rest = points[0], points[1:]
    parts = [f"M{x0:.1f},{y0:.1f}"]
    for x1, y1 in rest:
        dy = (y1 - y0) / 2
        parts.append(
            f"C{x0 + bow:.1f},{y0 + dy:.1f} {x1 + bow:.1f},{y1 - dy:.1f} {x1:.1f},{y1:.1f}"
        )
        x0, y0 = x1, y1
    return " ".join(parts)


def _bezier_mid(points: list[tuple[float, float]], bow: float) -> tuple[float, float]:
    if len(points) > 2:
        return points[len(points) // 2]
    (x0, y0), (x1, y1) = points
    # Midpoint of the cubic with controls (x0+bow, mid) and (x1+bow, mid).
    return (x0 + x1) / 2 + 0.75 * bow, (y0 + y1) / 2


def _marker(name: str, css: str) -> str:
    return (
        f'<marker id="wg-{name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="10" '
        f'markerHeight="10" markerUnits="userSpaceOnUse" orient="auto-start-reverse">'
        f'<path class="{css}" d="M0,1 L10,5 L0,9 z"/></marker>'
    )


def to_svg(
    plan: Plan,
    *,
    state: Mapping[str, Any] | None = None,
    heat: Mapping[str, float] | None = None,
) -> str:
    """The plan drawn as a standalone SVG document (text), laid out without Graphviz.

    ``state`` is a run record (:func:`waygraph.engine.to_record`): with it each
    node gets its status class and attempt count, and the edges the run
    followed are highlighted. ``heat`` maps node ids to a failure rate (0..1):
    those nodes are filled by :func:`heat_colour` (class ``heat``) and their
    tooltip gives the rate. Edges to nodes that do not exist are drawn to a
    dashed node marked missing.

    Example:
        >>> from waygraph.model import Graph
        >>> plan = Graph.builder().exit("done").edge("start", "done").plan("p")
        >>> 'data-node="done"' in to_svg(plan)
        True
    """
    graph = plan.graph
    order_index = graph.task_order
    boxes: dict[str, Box] = {}
    for node in graph.nodes.values():
        boxes[node.id] = node_box(plan, node, order_index, state)
    for edge in graph.edges:
        for end in (edge.from_, edge.to):
            if end not in boxes:
                missing = Box(key=end, kind="missing", lines=[("head", end), ("small", "missing")])
                boxes[end] = sized(missing)
    node_keys = list(boxes)

    out: dict[str, list[tuple[int, str]]] = {}
    for i, edge in enumerate(graph.edges):
        if edge.from_ != edge.to:
            out.setdefault(edge.from_, []).append((i, edge.to))
    starts = ([graph.start] if graph.start in boxes else []) + node_keys
    back = back_edges(starts, out)

    # Layer over the acyclic edges (back edges reversed).
    down: dict[str, list[str]] = {}
    for i, edge in enumerate(graph.edges):
        if edge.from_ == edge.to:
            continue
        upper, lower = (edge.to, edge.from_) if i in back else (edge.from_, edge.to)
        down.setdefault(upper, []).append(lower)
    layer_of = assign_layers(node_keys, down)
    for key, layer in layer_of.items():
        boxes[key].layer = layer

    routes: list[Route] = []
    for i, edge in enumerate(graph.edges):
        if edge.from_ == edge.to:
            routes.append(Route(i, [edge.from_], back=False, self_loop=True))
            continue
        is_back = i in back
        upper, lower = (edge.to, edge.from_) if is_back else (edge.from_, edge.to)
        chain = [upper]
        for layer in range(boxes[upper].layer + 1, boxes[lower].layer):
            key = f"\x00{i}:{layer}"  # cannot clash: node ids never reach the layout with NUL
            boxes[key] = Box(key=key, layer=layer, dummy=True, height=0.0, kind="dummy")
            chain.append(key)
        chain.append(lower)
        routes.append(Route(i, chain, back=is_back))

    ups: dict[str, list[str]] = {}
    downs: dict[str, list[str]] = {}
    for route in routes:
        for a, b in itertools.pairwise(route.chain):
            downs.setdefault(a, []).append(b)
            ups.setdefault(b, []).append(a)

    # Initial order: depth-first discovery, so the first sweep starts from a sensible picture.
    discovery = {key: n for n, key in enumerate(preorder(starts, out))}
    depth = max((b.layer for b in boxes.values()), default=0) + 1
    layers: list[list[str]] = [[] for _ in range(depth)]
    for key, box in boxes.items():
        layers[box.layer].append(key)
    for row in layers:
        row.sort(key=lambda k: initial_rank(k, boxes, discovery, ups))
    order = order_layers(layers, ups, downs)
    place_layers(order, boxes, ups, downs)

    # Vertical placement: layer heights, with room for edge labels between layers.
    labels = {i: _edge_text(edge, linear=plan.linear) for i, edge in enumerate(graph.edges)}
    gap_lines = [0] * depth
    for route in routes:
        if route.self_loop:
            continue
        text = labels[route.index]
        if text:
            upper_layer = boxes[route.chain[0]].layer
            mid = upper_layer + (len(route.chain) - 1) // 2
            gap_lines[min(mid, depth - 1)] = max(
                gap_lines[min(mid, depth - 1)], text.count("\n") + 1
            )
    y = MARGIN
    for i, row in enumerate(order):
        height = max((boxes[k].height for k in row), default=0.0)
        for key in row:
            boxes[key].y = y + height / 2
        y += height + LAYER_GAP + 14.0 * gap_lines[i]

    followed = _followed_edges(plan, state) if state is not None else set()
    obstacles = [
        (b.x - b.width / 2, b.y - b.height / 2, b.x + b.width / 2, b.y + b.height / 2)
        for b in boxes.values()
        if not b.dummy
    ]
    edges_svg, reach = _edges(plan, routes, boxes, labels, followed, obstacles)
    nodes_svg = [_node_svg(boxes[key], state, heat or {}) for key in node_keys]
    # The drawing's extent: nodes, placed labels and the curves' control points.
    xs = [x for rect in obstacles for x in (rect[0], rect[2])] + reach
    left = min(xs, default=0.0) - MARGIN
    width = max(xs, default=0.0) + MARGIN - left
    height = y - LAYER_GAP + MARGIN

    title = plan.title if plan.title == plan.id else f"{plan.title} ({plan.id})"
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="wg-graph" width="{width:.0f}" '
        f'height="{height:.0f}" viewBox="{left:.0f} 0 {width:.0f} {height:.0f}" role="img" '
        f'aria-label="{_esc("Plan " + title)}">'
        f"<title>{_esc(title)}</title>"
        f"<style>{SVG_CSS}</style>"
        "<defs>"
        + _marker("arrow", "arrow")
        + _marker("arrow-failure", "arrow-failure")
        + _marker("arrow-followed", "arrow-followed")
        + "</defs>"
        f'<g class="edges">{"".join(edges_svg)}</g>'
        f'<g class="nodes">{"".join(nodes_svg)}</g>'
        "</svg>\n"
    )


def _node_svg(box: Box, state: Mapping[str, Any] | None, heat: Mapping[str, float]) -> str:
    node = box.node
    status = None
    attempts = None
    if node is not None and state is not None:
        status = node_status(node, state)
        attempts = _attempts_text(node, state)
    classes = f"node t-{box.kind}" + (f" {status}" if status else "")
    tooltip = _tooltip(node, status, attempts) if node is not None else f"{box.key} (missing)"
    shape = _shape(box)
    rate = heat.get(box.key) if node is not None else None
    if rate is not None:
        # An inline style outranks the type and status rules of the embedded sheet;
        # only the outline is filled (an exit's inner ring and a cylinder's rim stay).
        fill = f'class="shape" style="fill:{heat_colour(rate)}"'
        shape = shape.replace('class="shape"', fill)
        classes += " heat"
        tooltip += f"\nfailure rate: {rate:.0%}"
    return (
        f'<g class="{classes}" data-node="{_esc(box.key)}">'
        f"<title>{_esc(tooltip)}</title>{shape}{_text(box)}</g>"
    )


def _label(
    lines: list[str],
    candidates: list[tuple[float, float, str]],
    obstacles: list[tuple[float, float, float, float]],
) -> str:
    """An edge label at the first candidate spot that overlaps no node or earlier label.

    Each candidate is also tried a line or more above and below (two edges
    between the same nodes share their midpoint, and their labels were drawn
    over each other: ``on_exhon_exhaust``). Placed labels join ``obstacles``;
    when every spot is taken, the one that overlaps least is used.
    """
    width = max(text_width(line, SMALL_SIZE) for line in lines) + 4
    height = 14.0 * len(lines)
    spots = [(x, y + dy, anchor) for dy in _LABEL_SHIFTS for x, y, anchor in candidates]
    best: tuple[float, tuple[float, float, str, tuple[float, float, float, float]]] | None = None
    for x, y, anchor in spots:
        left = x if anchor == "start" else x - width
        rect = (left, y - height / 2, left + width, y + height / 2)
        covered = sum(_overlap_area(rect, other) for other in obstacles)
        if best is None or covered < best[0]:
            best = (covered, (x, y, anchor, rect))
        if covered == 0:
            break
    assert best is not None  # there is always at least one candidate
    x, y, anchor, rect = best[1]
    obstacles.append(rect)
    first = y - (len(lines) - 1) * 7 + 4
    spans = "".join(
        f'<tspan x="{x:.1f}" y="{first + 14 * k:.1f}">{_esc(line)}</tspan>'
        for k, line in enumerate(lines)
    )
    return f'<text text-anchor="{anchor}">{spans}</text>'


def _shorten(line: str, limit: int = 40) -> str:
    # The whole condition stays in the edge's tooltip.
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _overlap_area(
    a: tuple[float, float, float, float], b: tuple[float, float, float, float]
) -> float:
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    return width * height if width > 0 and height > 0 else 0.0


#: Vertical shifts (in label lines of 14 px) a label may take to clear another.
_LABEL_SHIFTS = (0.0, 14.0, -14.0, 28.0, -28.0, 42.0, -42.0)


def _edges(
    plan: Plan,
    routes: list[Route],
    boxes: dict[str, Box],
    labels: dict[int, str],
    followed: set[int],
    obstacles: list[tuple[float, float, float, float]],
) -> tuple[list[str], list[float]]:
    """The edges' SVG, and the x of every curve's control points (for the drawing's extent)."""
    # Spread the edges leaving a node's bottom (and entering its top) side by side,
    # ordered by where their other end is, so they do not cross at the node.
    bottom: dict[str, list[tuple[float, int, int]]] = {}
    top: dict[str, list[tuple[float, int, int]]] = {}
    for n, route in enumerate(routes):
        if route.self_loop:
            continue
        a, b = route.chain[0], route.chain[1]
        y, z = route.chain[-2], route.chain[-1]
        # Back edges bow to the left, so they take the leftmost of equal ports.
        bottom.setdefault(a, []).append((boxes[b].x, not route.back, n))
        top.setdefault(z, []).append((boxes[y].x, not route.back, n))
    ports: dict[tuple[int, str], float] = {}
    for side, table in (("bottom", bottom), ("top", top)):
        for key, items in table.items():
            items.sort()
            box = boxes[key]
            step = PORT_SPACING
            if len(items) > 1:
                step = min(PORT_SPACING, box.width * 0.6 / (len(items) - 1))
            for j, (_, _, n) in enumerate(items):
                ports[(n, side)] = (j - (len(items) - 1) / 2) * step

    reach: list[float] = []
    result = []
    for n, route in enumerate(routes):
        edge = plan.graph.edges[route.index]
        failure = edge.condition in FAILURE_CONDITIONS
        is_followed = route.index in followed
        classes = ["edge", f"c-{edge.condition}"]
        if failure:
            classes.append("failure")
        if route.back:
            classes.append("back")
        if is_followed:
            classes.append("followed")
        marker = "arrow-followed" if is_followed else "arrow-failure" if failure else "arrow"
        text = labels[route.index]
        if route.self_loop:
            box = boxes[route.chain[0]]
            right = box.x + box.width / 2
            d = (
                f"M{right:.1f},{box.y - 6:.1f} C{right + 34:.1f},{box.y - 26:.1f} "
                f"{right + 34:.1f},{box.y + 26:.1f} {right:.1f},{box.y + 6:.1f}"
            )
            candidates = [(right + 32, box.y, "start")]
            reach.append(right + 34)
        else:
            upper, lower = boxes[route.chain[0]], boxes[route.chain[-1]]
            dx_up, dx_low = ports[(n, "bottom")], ports[(n, "top")]
            points = [(upper.x + dx_up, _port_y(upper, dx_up, bottom=True))]
            points += [(boxes[k].x, boxes[k].y) for k in route.chain[1:-1]]
            points.append((lower.x + dx_low, _port_y(lower, dx_low, bottom=False)))
            bow = 0.0
            if route.back:
                points.reverse()  # drawn from its real source, the lower node, upwards
                bow = -BACK_BOW if len(points) == 2 else 0.0
            d = _curve(points, bow)
            reach.extend(x + bow for x, _ in points)
            mid_x, mid_y = _bezier_mid(points, bow)
            right_side = (mid_x + 6, mid_y, "start")
            left_side = (mid_x - 6, mid_y, "end")
            # Prefer the side the edge leans away from; back edges bow left.
            leans_left = route.back or points[-1][0] < points[0][0] - 1
            candidates = [left_side, right_side] if leans_left else [right_side, left_side]
        label_svg = ""
        if text:
            lines = [_shorten(line) for line in text.split("\n")]
            label_svg = _label(lines, candidates, obstacles)
        result.append(
            f'<g class="{" ".join(classes)}" data-from="{_esc(edge.from_)}" '
            f'data-to="{_esc(edge.to)}"><title>{_esc(edge.describe())}</title>'
            f'<path d="{d}" marker-end="url(#wg-{marker})"/>{label_svg}</g>'
        )
    return result, reach
