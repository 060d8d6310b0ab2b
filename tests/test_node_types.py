"""One table for node types: the model, the checker and every drawing read it,
and the docs describe each type as the table does."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pytest

from waygraph.check import check_plan
from waygraph.draw import MERMAID_SHAPES, to_mermaid
from waygraph.draw.svg import SVG_CSS, to_svg
from waygraph.formats._dot_attributes import TYPE_OF_SHAPE
from waygraph.formats.dot import parse_dot, plan_to_dot
from waygraph.model import NODE_TYPE_SPECS, NODE_TYPES, Graph, NodeType, Plan

DOCS = Path(__file__).resolve().parents[1] / "docs" / "plans.md"

#: What waygraph's SVG draws for each outline: the element and, for polygons, its corners.
OUTLINE_ELEMENTS = {
    "stadium": ("rect", None),
    "box": ("rect", None),
    "diamond": ("polygon", 4),
    "octagon": ("polygon", 8),
    "double-ellipse": ("ellipse", None),
    "cylinder": ("path", None),
    "hexagon": ("polygon", 6),
}


#: A node of each type, by type.
NODE_OF = {
    "start": "start",
    "task": "work",
    "decision": "choose",
    "escalate": "stuck",
    "exit": "done",
    "checkpoint": "saved",
    "human": "ask",
}


def every_type_plan() -> Plan:
    return (
        Graph.builder()
        .task("work", name="Do the work")
        .decision("choose", name="Pick a way")
        .escalate("stuck", name="Ask for help", reason="r")
        .checkpoint("saved", name="Saved point")
        .human("ask", name="Ask the user", prompt="Go?")
        .exit("done", name="All done")
        .chain("start", "work", "choose", "saved", "ask")
        .edge("choose", "stuck", "on_fail")
        .edge("ask", "done", label="[Y] Yes")
        .plan("p", triggers=["go"], trigger_threshold=1)
    )


def test_the_model_lists_the_types_of_the_table():
    assert NODE_TYPES == tuple(NODE_TYPE_SPECS) == get_args(NodeType)
    assert set(MERMAID_SHAPES) == set(NODE_TYPES)


@pytest.mark.parametrize("kind", NODE_TYPES)
def test_each_drawing_shows_a_type_as_its_row_says(kind: str):
    spec, node_id = NODE_TYPE_SPECS[kind], NODE_OF[kind]
    plan = every_type_plan()
    opening, closing = spec.mermaid
    line = f'    n_{node_id}{opening}"'
    assert any(
        text.startswith(line) and text.endswith(f'"{closing}')
        for text in to_mermaid(plan).splitlines()
    ), kind
    svg = to_svg(plan)
    drawn = re.search(rf'<g class="node t-{kind}[^"]*"[^>]*>(.*?)</g>', svg, re.S)
    assert drawn is not None and node_id in drawn.group(1), kind
    element, corners = OUTLINE_ELEMENTS[spec.shape]
    shape = re.search(rf'<{element} class="shape"(?: points="([^"]+)")?', drawn.group(1))
    assert shape is not None, drawn.group(1)
    if corners is not None:
        assert len(shape.group(1).split()) == corners
    if spec.fill is not None:
        assert f".t-{kind} .shape{{fill:{spec.fill};stroke:{spec.stroke}}}" in SVG_CSS
    dot = plan_to_dot(plan)
    assert re.search(rf'^\s*"?{node_id}"? \[shape={spec.dot_shape}\b', dot, re.M), dot
    assert parse_dot(dot).graph.nodes[node_id].type == kind


def test_every_dot_shape_written_reads_back_as_its_type():
    for kind, spec in NODE_TYPE_SPECS.items():
        assert TYPE_OF_SHAPE[spec.dot_shape.lower()] == kind


def test_a_field_a_type_does_not_use_is_reported_as_ignored():
    every_field = {name for spec in NODE_TYPE_SPECS.values() for name in spec.fields}
    values = {
        "verify": {"type": "any_output"},
        "max_retries": 1,
        "status": "aborted",
        "reason": "r",
        "pace_level": "p",
        "next_plan": "q",
        "next_plan_when": "always",
        "prompt": "Go?",
    }
    assert every_field == set(values)
    for kind in ("task", "decision", "checkpoint"):
        spec = NODE_TYPE_SPECS[kind]
        plan = (
            Graph.builder()
            .node("n", kind, **{name: values[name] for name in sorted(every_field)})
            .exit("done")
            .chain("start", "n", "done")
            .plan("p", triggers=["go"], trigger_threshold=1)
        )
        ignored = {p.field for p in check_plan(plan) if p.code == "ignored-field" and p.node == "n"}
        assert ignored == every_field - set(spec.fields), kind


def test_the_docs_describe_each_type_as_the_table_does():
    text = " ".join(DOCS.read_text(encoding="utf-8").split())
    for kind, spec in NODE_TYPE_SPECS.items():
        assert f"**{kind}** — {spec.description}" in text, kind
