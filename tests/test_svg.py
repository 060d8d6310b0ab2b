"""waygraph.draw.svg: valid XML, every node and edge drawn, escaping, status classes, layout."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from hypothesis import given, settings

from tests.strategies import graph_plans
from waygraph.draw import to_svg as draw_svg
from waygraph.draw.svg import to_svg
from waygraph.library import load_library
from waygraph.model import Graph, Plan

NS = "{http://www.w3.org/2000/svg}"

BUGFIX_STATE = {
    "status": "running",
    "current_node": "fix",
    "visited": {
        "reproduce": {"outcome": "success", "attempts": 1},
        "isolate": {"outcome": "success", "attempts": 1},
        "test": {"outcome": "fail", "attempts": 1},
        "fix": {"outcome": "pending", "attempts": 2},
    },
    "path": ["start", "reproduce", "isolate", "cause_found", "fix", "test", "fix"],
}


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def nodes(root: ET.Element) -> dict[str, ET.Element]:
    return {g.get("data-node"): g for g in root.iter(f"{NS}g") if g.get("data-node") is not None}


def edges(root: ET.Element) -> list[ET.Element]:
    return [g for g in root.iter(f"{NS}g") if "edge" in (g.get("class") or "").split()]


def test_every_shipped_plan_is_valid_xml_with_every_node_and_edge():
    for plan in load_library():
        root = parse(to_svg(plan))
        assert root.tag == f"{NS}svg"
        assert set(nodes(root)) == set(plan.graph.nodes)
        drawn = [(g.get("data-from"), g.get("data-to")) for g in edges(root)]
        assert drawn == [(e.from_, e.to) for e in plan.graph.edges]


def test_status_classes_attempts_and_followed_edges():
    plan = load_library()["bugfix_workflow"]
    root = parse(to_svg(plan, state=BUGFIX_STATE))
    drawn = nodes(root)
    status = {
        node: set(g.get("class").split()) & {"done", "failed", "current", "pending"}
        for node, g in drawn.items()
    }
    assert status["fix"] == {"current"} and status["reproduce"] == {"done"}
    assert status["test"] == {"failed"} and status["done"] == {"pending"}
    assert "t-task" in drawn["fix"].get("class") and "t-exit" in drawn["done"].get("class")
    assert "attempt 2/3" in "".join(drawn["fix"].itertext())
    followed = {
        (g.get("data-from"), g.get("data-to"))
        for g in edges(root)
        if "followed" in g.get("class").split()
    }
    assert followed == {
        ("start", "reproduce"),
        ("reproduce", "isolate"),
        ("isolate", "cause_found"),
        ("cause_found", "fix"),
        ("fix", "test"),
        ("test", "fix"),
    }
    # Without a run record there are no status classes at all.
    plain = to_svg(plan)
    assert not any(f'class="node t-task {s}"' in plain for s in ("done", "current", "pending"))


def test_retry_loops_are_back_edges_drawn_upwards():
    plan = load_library()["bugfix_workflow"]
    root = parse(to_svg(plan))
    back = {
        (g.get("data-from"), g.get("data-to"))
        for g in edges(root)
        if "back" in g.get("class").split()
    }
    assert ("test", "fix") in back and ("gather_context", "reproduce") in back
    assert ("fix", "test") not in back
    y = {}
    for node, g in nodes(root).items():
        text = g.find(f"{NS}text/{NS}tspan")
        y[node] = float(text.get("y"))
    # Longest-path layers: every forward edge points down.
    for edge in plan.graph.edges:
        if (edge.from_, edge.to) not in back:
            assert y[edge.from_] < y[edge.to], edge.describe()


def test_untrusted_text_is_escaped_and_control_characters_dropped():
    evil = '<script>alert("x")</script> & \x01\x08'
    plan = (
        Graph.builder()
        .task("a<b>", name=evil, action=evil)
        .exit("done", name="]]> <!-- -->")
        .edge("start", "a<b>")
        .edge("a<b>", "done", "on_success", label=evil)
        .plan("p&q", name=evil)
    )
    svg = to_svg(plan, state={"current_node": "a<b>", "status": "running"})
    root = parse(svg)  # well-formed despite the markup and the control characters
    assert "<script" not in svg and "\x01" not in svg
    assert not list(root.iter(f"{NS}script"))
    assert set(nodes(root)) == {"start", "a<b>", "done"}
    assert evil.replace("\x01\x08", "") in "".join(nodes(root)["a<b>"].itertext())


def test_self_loops_and_edges_to_missing_nodes_are_drawn():
    plan = Plan.model_validate(
        {
            "id": "odd",
            "graph": {
                "start": "start",
                "nodes": {"start": {"type": "start"}, "poll": {"type": "task"}},
                "edges": [
                    {"from": "start", "to": "poll"},
                    {"from": "poll", "to": "poll", "condition": "on_retry"},
                    {"from": "poll", "to": "ghost", "condition": "on_success"},
                ],
            },
        }
    )
    root = parse(to_svg(plan))
    assert "t-missing" in nodes(root)["ghost"].get("class")
    assert len(edges(root)) == 3


def test_draw_to_svg_falls_back_to_the_native_layout(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    plan = load_library()["git_merge_pr"]
    assert draw_svg(plan) == to_svg(plan)


@settings(max_examples=40, deadline=None)
@given(graph_plans())
def test_any_generated_plan_draws_as_valid_xml(plan):
    root = parse(to_svg(plan, state={"current_node": plan.graph.start, "status": "running"}))
    assert set(plan.graph.nodes) <= set(nodes(root))
    assert len(edges(root)) == len(plan.graph.edges)


def _label_boxes(root: ET.Element) -> list[tuple[str, tuple[float, float, float, float]]]:
    from waygraph.draw._svg_layout import SMALL_SIZE, text_width

    boxes = []
    for edge in edges(root):
        text = edge.find(f"{NS}text")
        if text is None:
            continue
        spans = text.findall(f"{NS}tspan")
        lines = [span.text or "" for span in spans]
        x = float(spans[0].get("x") or 0)
        ys = [float(span.get("y") or 0) for span in spans]
        width = max(text_width(line, SMALL_SIZE) for line in lines)
        left = x if text.get("text-anchor") == "start" else x - width
        boxes.append((" ".join(lines), (left, ys[0] - 11, left + width, ys[-1] + 3)))
    return boxes


def test_edge_labels_of_the_shipped_plans_do_not_overlap():
    # Two edges between the same nodes drew their labels over each other (on_exhon_exhaust).
    for plan in load_library():
        boxes = _label_boxes(parse(to_svg(plan)))
        for i, (text, a) in enumerate(boxes):
            for other, b in boxes[i + 1 :]:
                apart = a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]
                assert apart, (plan.id, text, other)
