"""The layered layout behind :func:`waygraph.draw.svg.to_svg`: text metrics, boxes, steps.

Back edges found by a depth-first walk, layers by longest path, order by
barycentre sweeps, positions by least squares under no-overlap (see
:mod:`waygraph.draw.svg` for the whole method). No drawing happens here.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from waygraph.draw import _attempts_text, _node_label
from waygraph.model import NODE_TYPE_SPECS, Node, Plan

__all__ = [
    "FONT_SIZE",
    "LINE_HEIGHT",
    "SMALL_LINE_HEIGHT",
    "SMALL_SIZE",
    "Box",
    "Route",
    "assign_layers",
    "back_edges",
    "initial_rank",
    "node_box",
    "order_layers",
    "place_layers",
    "preorder",
    "sized",
    "text_width",
    "wrap",
]

FONT_SIZE = 13.0
SMALL_SIZE = 11.0
LINE_HEIGHT = 16.0
SMALL_LINE_HEIGHT = 14.0
NODE_GAP = 28.0  # horizontal space between neighbouring boxes
DUMMY_WIDTH = 14.0  # the lane a long edge takes in a layer it crosses
NAME_WRAP = 28  # characters per line of a node's name
NAME_LINES = 3
ORDER_SWEEPS = 12
POSITION_SWEEPS = 8


def _char_width(ch: str) -> float:
    if ch in "iljtfr.,:;'|!() []":
        return 0.34
    if ch in "mwMW@":
        return 0.86
    if ch.isupper():
        return 0.68
    if ch.isdigit():
        return 0.56
    if ord(ch) > 0x2E80:  # East Asian scripts take a full em
        return 1.0
    return 0.56


def text_width(text: str, size: float = FONT_SIZE, *, bold: bool = False) -> float:
    """An estimate of ``text``'s width in pixels at ``size`` (no font metrics needed).

    Example:
        >>> 30 < text_width("reproduce") < 70
        True
    """
    width = sum(_char_width(ch) for ch in text) * size
    return width * 1.06 if bold else width


def wrap(text: str, width: int = NAME_WRAP, lines: int = NAME_LINES) -> list[str]:
    words = text.split()
    out: list[str] = []
    line = ""
    for word in words:
        while len(word) > width:  # a single very long word is cut
            if line:
                out.append(line)
                line = ""
            out.append(word[:width])
            word = word[width:]
        if not line:
            line = word
        elif len(line) + 1 + len(word) <= width:
            line += " " + word
        else:
            out.append(line)
            line = word
    if line:
        out.append(line)
    if len(out) > lines:
        out = out[:lines]
        out[-1] = out[-1][: width - 1].rstrip() + "…"
    return out


# ---------------------------------------------------------------- layout model


@dataclass(slots=True)
class Box:
    """A node or a long edge's placeholder in the layout."""

    key: str
    layer: int = 0
    width: float = DUMMY_WIDTH
    height: float = 0.0
    x: float = 0.0
    y: float = 0.0
    dummy: bool = False
    node: Node | None = None
    kind: str = "task"
    lines: list[tuple[str, str]] = field(default_factory=list)  # (css class, text)

    @property
    def shape(self) -> str:
        """The outline drawn: its node type's (:data:`waygraph.model.NODE_TYPE_SPECS`),
        else a box (a missing node, a placeholder)."""
        spec = NODE_TYPE_SPECS.get(self.kind)
        return spec.shape if spec is not None else "box"


@dataclass(slots=True)
class Route:
    """One edge as laid out: the boxes it passes from the upper end to the lower end."""

    index: int
    chain: list[str]
    back: bool
    self_loop: bool = False


def _shape_size(shape: str, text_w: float, text_h: float) -> tuple[float, float]:
    if shape == "diamond":
        return text_w + text_h * 1.2 + 34, text_h + 30
    if shape in ("octagon", "hexagon"):
        return text_w + 44, text_h + 20
    if shape == "double-ellipse":
        return text_w * 1.2 + 34, text_h + 26
    if shape == "stadium":
        return text_w + 40, text_h + 16
    if shape == "cylinder":
        return text_w + 30, text_h + 30
    return text_w + 30, text_h + 20


def node_box(plan: Plan, node: Node, order: dict[str, int], state: Mapping[str, Any] | None) -> Box:
    label = _node_label(plan, node, order).split("\n")
    lines: list[tuple[str, str]] = [("head", label[0])]
    for extra in label[1:]:
        lines.extend(("", part) for part in wrap(extra))
    if state is not None:
        attempts = _attempts_text(node, state)
        if attempts:
            lines.append(("small", attempts))
    return sized(Box(key=node.id, node=node, kind=node.type, lines=lines))


def sized(box: Box) -> Box:
    widths = [
        text_width(text, SMALL_SIZE if cls == "small" else FONT_SIZE, bold=cls == "head")
        for cls, text in box.lines
    ]
    text_h = sum(SMALL_LINE_HEIGHT if cls == "small" else LINE_HEIGHT for cls, _ in box.lines)
    box.width, box.height = _shape_size(box.shape, max(widths, default=0.0), text_h)
    box.width = max(box.width, 64.0)
    return box


# ---------------------------------------------------------------- layout steps


def back_edges(starts: list[str], out: dict[str, list[tuple[int, str]]]) -> set[int]:
    """Indexes of edges that close a cycle in a depth-first walk (iterative: no recursion limit)."""
    back: set[int] = set()
    state: dict[str, int] = {}  # 1 on the stack, 2 finished
    for root in starts:
        if root in state:
            continue
        state[root] = 1
        stack = [(root, iter(out.get(root, ())))]
        while stack:
            current, children = stack[-1]
            step = next(children, None)
            if step is None:
                state[current] = 2
                stack.pop()
                continue
            index, target = step
            seen = state.get(target)
            if seen == 1:
                back.add(index)
            elif seen is None:
                state[target] = 1
                stack.append((target, iter(out.get(target, ()))))
    return back


def assign_layers(keys: list[str], down: dict[str, list[str]]) -> dict[str, int]:
    """Longest-path layering of an acyclic graph: each node one below its lowest parent."""
    indegree = dict.fromkeys(keys, 0)
    for source in keys:
        for target in down.get(source, ()):
            indegree[target] += 1
    layer = dict.fromkeys(keys, 0)
    ready = [k for k in keys if indegree[k] == 0]
    while ready:
        source = ready.pop(0)
        for target in down.get(source, ()):
            layer[target] = max(layer[target], layer[source] + 1)
            indegree[target] -= 1
            if indegree[target] == 0:
                ready.append(target)
    return layer


def _crossings(upper: list[str], lower: list[str], segments: list[tuple[str, str]]) -> int:
    up = {k: i for i, k in enumerate(upper)}
    low = {k: i for i, k in enumerate(lower)}
    pairs = sorted((up[a], low[b]) for a, b in segments if a in up and b in low)
    count = 0
    for i, (a1, b1) in enumerate(pairs):
        for a2, b2 in pairs[i + 1 :]:
            if a2 > a1 and b2 < b1:
                count += 1
    return count


def order_layers(
    layers: list[list[str]], ups: dict[str, list[str]], downs: dict[str, list[str]]
) -> list[list[str]]:
    """Barycentre sweeps; returns the order with the fewest crossings seen."""
    segments = [[(a, b) for a in layer for b in downs.get(a, ())] for layer in layers[:-1]]

    def total(order: list[list[str]]) -> int:
        return sum(_crossings(order[i], order[i + 1], segments[i]) for i in range(len(order) - 1))

    best = [list(layer) for layer in layers]
    best_count = total(best)
    current = [list(layer) for layer in layers]
    for sweep in range(ORDER_SWEEPS):
        if best_count == 0:
            break
        downward = sweep % 2 == 0
        indexes = range(1, len(current)) if downward else range(len(current) - 2, -1, -1)
        for i in indexes:
            ref = current[i - 1] if downward else current[i + 1]
            where = {k: p for p, k in enumerate(ref)}
            neighbours = ups if downward else downs
            keyed = []
            for pos, key in enumerate(current[i]):
                near = [where[n] for n in neighbours.get(key, ()) if n in where]
                keyed.append((sum(near) / len(near) if near else float(pos), pos, key))
            current[i] = [key for *_, key in sorted(keyed)]
        count = total(current)
        if count < best_count:
            best, best_count = [list(layer) for layer in current], count
    return best


def _place_layer(keys: list[str], desired: list[float], boxes: dict[str, Box]) -> None:
    """Put a layer's boxes, in order, as close to ``desired`` x as no overlap allows.

    Least squares under ``x[i+1] - x[i] >= gap_i``: shifting by the running
    offsets turns it into isotonic regression, solved by pool-adjacent-violators.
    """
    offsets = [0.0]
    for a, b in itertools.pairwise(keys):
        offsets.append(offsets[-1] + (boxes[a].width + boxes[b].width) / 2 + NODE_GAP)
    blocks: list[list[float]] = []  # [sum of targets, count]
    for target, offset in zip(desired, offsets, strict=True):
        blocks.append([target - offset, 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            total, count = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += count
    i = 0
    for total, count in blocks:
        mean = total / count
        for _ in range(int(count)):
            boxes[keys[i]].x = mean + offsets[i]
            i += 1


def place_layers(
    order: list[list[str]],
    boxes: dict[str, Box],
    ups: dict[str, list[str]],
    downs: dict[str, list[str]],
) -> None:
    for layer in order:
        _place_layer(layer, [0.0] * len(layer), boxes)

    def weight(a: str, b: str) -> float:
        # Keep long edges straight: placeholders pull hardest on each other.
        return 1.0 + 3.0 * boxes[a].dummy + 3.0 * boxes[b].dummy

    def desired(key: str, neighbours: list[str]) -> float:
        if not neighbours:
            return boxes[key].x
        weights = [weight(key, n) for n in neighbours]
        return sum(boxes[n].x * w for n, w in zip(neighbours, weights, strict=True)) / sum(weights)

    for sweep in range(POSITION_SWEEPS):
        downward = sweep % 2 == 0
        layers = order[1:] if downward else order[-2::-1]
        for layer in layers:
            table = ups if downward else downs
            _place_layer(layer, [desired(k, table.get(k, [])) for k in layer], boxes)
    for layer in order:  # a last pass balancing both sides
        _place_layer(layer, [desired(k, ups.get(k, []) + downs.get(k, [])) for k in layer], boxes)


def preorder(starts: list[str], out: dict[str, list[tuple[int, str]]]) -> list[str]:
    seen: set[str] = set()
    result: list[str] = []
    for root in starts:
        stack = [root]
        while stack:
            key = stack.pop()
            if key in seen:
                continue
            seen.add(key)
            result.append(key)
            stack.extend(target for _, target in reversed(out.get(key, [])))
    return result


def initial_rank(
    key: str, boxes: dict[str, Box], discovery: dict[str, int], ups: dict[str, list[str]]
) -> float:
    if not boxes[key].dummy:
        return float(discovery.get(key, len(discovery)))
    # A placeholder ranks with the node its edge comes from.
    while boxes[key].dummy and ups.get(key):
        key = ups[key][0]
    return discovery.get(key, len(discovery)) + 0.5
