"""Node types: one table for what each type is and how every drawing shows it.

A node type's description, the fields the engine reads on it, its shape in
waygraph's own SVG, in Mermaid and in DOT, and its colours are one row of
:data:`NODE_TYPE_SPECS`. The model's ``NODE_TYPES`` is its keys;
:mod:`waygraph.draw` (Mermaid), :mod:`waygraph.draw.svg` (and so the dashboard,
which shows its drawings), the DOT writer and ``waygraph check`` read it,
and a test holds the node paragraphs of docs/plans.md to the descriptions.
What a type *does* is the engine's (:mod:`waygraph.engine`).

Example:
    >>> NODE_TYPE_SPECS["human"].shape, NODE_TYPE_SPECS["human"].mermaid
    ('hexagon', ('{{', '}}'))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["NODE_TYPE_SPECS", "NodeShape", "NodeTypeSpec"]

#: The outlines waygraph's SVG drawings know (:mod:`waygraph.draw.svg` draws each).
NodeShape = Literal["stadium", "box", "diamond", "octagon", "double-ellipse", "cylinder", "hexagon"]


@dataclass(frozen=True, slots=True)
class NodeTypeSpec:
    """One node type: what it is, the fields it uses, and its look in every drawing.

    ``description`` opens the type's paragraph in docs/plans.md. ``fields``:
    the node fields only some types use that this one reads (``waygraph
    check`` warns ``ignored-field`` on the others). ``shape``: its outline
    in waygraph's SVG; ``mermaid``: the brackets of its Mermaid shape;
    ``dot_shape``: its DOT ``shape``; ``fill`` and ``stroke``: its SVG colours
    (None: the plain node colours).

    Example:
        >>> NodeTypeSpec("task", "one thing to do", "box", ("[", "]"), "box").fill is None
        True
    """

    name: str
    description: str
    shape: NodeShape
    mermaid: tuple[str, str]
    dot_shape: str
    fill: str | None = None
    stroke: str | None = None
    fields: tuple[str, ...] = ()


_SPECS = (
    NodeTypeSpec(
        "start",
        "where runs begin; it runs nothing and is left at once by its `always` (or "
        "`on_success`) edge.",
        shape="stadium",
        mermaid=("([", "])"),
        dot_shape="Mdiamond",
        fill="#e7f5ff",
        stroke="#1c7ed6",
    ),
    NodeTypeSpec(
        "task",
        "one thing for the model to do; the next tool result is checked against `verify`, "
        "and the outcome picks the edge.",
        shape="box",
        mermaid=("[", "]"),
        dot_shape="box",
        fields=("verify", "max_retries"),
    ),
    NodeTypeSpec(
        "decision",
        "runs no tool. Its `when` edges (or its own `verify`) are evaluated on the latest "
        "result as soon as the run reaches it;",
        shape="diamond",
        mermaid=("{", "}"),
        dot_shape="diamond",
        fill="#f8f0fc",
        stroke="#9c36b5",
        fields=("verify",),
    ),
    NodeTypeSpec(
        "escalate",
        "ends the run as `escalated`, records `reason`, `pace_level` and a report of the "
        "last five events,",
        shape="octagon",
        # A flag: the run is handed to a person. The hexagon is the human node's,
        # as in DOT (hexagon: human; escalate is DOT's octagon, which Mermaid lacks).
        mermaid=(">", "]"),
        dot_shape="octagon",
        fill="#fff5f5",
        stroke="#e03131",
        fields=("reason", "pace_level"),
    ),
    NodeTypeSpec(
        "exit",
        "ends the run as `completed`, or `aborted` with `status: aborted`.",
        shape="double-ellipse",
        mermaid=("(((", ")))"),
        dot_shape="Msquare",
        fill="#ebfbee",
        stroke="#2f9e44",
        fields=("verify", "status", "reason", "next_plan", "next_plan_when"),
    ),
    NodeTypeSpec(
        "checkpoint",
        "records a snapshot (outcomes and attempts) and moves on at once like a start node;",
        shape="cylinder",
        mermaid=("[(", ")]"),
        dot_shape="cylinder",
        fill="#f3f0ff",
        stroke="#6741d9",
    ),
    NodeTypeSpec(
        "human",
        "a person decides: `prompt` is the question, and the `label`s of its outgoing edges "
        "are the choices.",
        shape="hexagon",
        mermaid=("{{", "}}"),
        dot_shape="hexagon",
        fill="#e6fcf5",
        stroke="#0ca678",
        fields=("prompt",),
    ),
)

#: Every node type, in the order files, the schema and the docs list them.
NODE_TYPE_SPECS: dict[str, NodeTypeSpec] = {spec.name: spec for spec in _SPECS}
