"""The DOT format: writing plans, and round trips of every field and of random plans."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.dot_helpers import COMPAT_PLANS, everything_plan
from waygraph.errors import PlanFormatError
from waygraph.formats.dot import parse_dot, plan_to_dot
from waygraph.ids import id_problem
from waygraph.model import NODE_TYPES, Graph, Plan, Verify

from .strategies import graph_plans
from .test_predicates import condition_trees, field_paths

# ---------------------------------------------------------------- writing and round trips


@pytest.mark.parametrize("plan", COMPAT_PLANS, ids=lambda p: f"{p.id}-{int(p.linear)}")
def test_compat_plans_round_trip(plan):
    text = plan_to_dot(plan)
    assert parse_dot(text) == plan
    assert parse_dot(text).linear is plan.linear


def test_output_reads_well():
    plan = COMPAT_PLANS[0]
    lines = plan_to_dot(plan).splitlines()
    assert lines[0] == f"digraph {plan.id} {{" and lines[-1] == "}"
    body = [line.strip() for line in lines[1:-1]]
    blank = [i for i, line in enumerate(body) if not line]
    attrs, nodes, edges = body[: blank[0]], body[blank[0] + 1 : blank[1]], body[blank[1] + 1 :]
    assert all("=" in a and "[" not in a.split("=")[0] for a in attrs)
    assert len(nodes) == len(plan.graph.nodes) and len(edges) == len(plan.graph.edges)
    assert all(" -> " not in n for n in nodes) and all(" -> " in e for e in edges)
    assert nodes[0].startswith("start [shape=Mdiamond")


def test_every_field_round_trips():
    plan = everything_plan()
    text = plan_to_dot(plan)
    assert parse_dot(text) == plan
    assert 'start="begin"' not in text and "start=begin" in text  # two start nodes: named


def test_builder_plan_round_trips():
    plan = (
        Graph.builder()
        .task("build", action="Run make", verify={"type": "exit_code_zero"}, max_retries=1)
        .exit("done")
        .escalate("stuck", reason="build keeps failing")
        .edge("start", "build")
        .edge("build", "done", "on_success")
        .edge("build", "stuck", "on_exhaust")
        .plan("ci", triggers=("run ci",), trigger_threshold=1)
    )
    assert parse_dot(plan_to_dot(plan)) == plan


def test_writing_refuses_what_dot_cannot_hold():
    dangling = Graph.builder().edge("start", "ghost").plan("p")
    with pytest.raises(PlanFormatError, match="ghost"):
        plan_to_dot(dangling)
    with pytest.raises(ValueError, match="must not be empty"):
        Graph.builder().plan("")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph_plans())
def test_random_graph_plans_round_trip(plan):
    assert parse_dot(plan_to_dot(plan)) == plan


_texts = st.text(max_size=10)
#: Valid ids (issues 13 and 33): text without control or format characters or
#: lone surrogates (id_problem also refuses a few still unassigned code points).
_ids = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cf", "Cs")), min_size=1, max_size=8
).filter(lambda s: id_problem(s) is None)
_verifies = st.one_of(
    condition_trees,
    st.builds(lambda v: Verify(type="output_contains", value=v), _texts),
    st.just(Verify(type="any_output")),
    st.builds(lambda t: Verify(type="all", checks=(t,)), condition_trees),
)


@st.composite
def rich_plans(draw: st.DrawFn) -> Plan:
    """Small plans that use every field, with awkward ids and text."""
    ids = draw(st.lists(st.one_of(field_paths, _ids), min_size=1, max_size=5, unique=True))
    optional = st.none() | _texts
    nodes: dict[str, dict[str, Any]] = {}
    for node_id in ids:
        node: dict[str, Any] = {
            "type": draw(st.sampled_from(NODE_TYPES)),
            "name": draw(_texts),
            "description": draw(optional),
            "action": draw(optional),
            "tool": draw(optional),
            "max_retries": draw(st.none() | st.integers(0, 5)),
            "join": draw(st.sampled_from(["any", "all"])),
            "required": draw(st.none() | st.booleans()),
            "meta": draw(st.none() | st.dictionaries(_texts, _texts, max_size=2)),
        }
        if draw(st.booleans()):
            node["verify"] = draw(_verifies)
        nodes[node_id] = node
    edges = []
    for _ in range(draw(st.integers(0, 6))):
        edge: dict[str, Any] = {
            "from": draw(st.sampled_from(ids)),
            "to": draw(st.sampled_from(ids)),
            "condition": draw(st.sampled_from(["on_success", "on_fail", "on_retry", "always"])),
            "weight": draw(st.sampled_from([0, 1, -2, 0.5, 1e-9, 3.25e18])),
            "label": draw(optional),
            "on_event": draw(optional),
        }
        if draw(st.booleans()):
            edge["when"] = draw(_verifies)
        edges.append(edge)
    return Plan.model_validate(
        {
            "id": draw(_ids),
            "name": draw(_texts),
            "goal": draw(optional),
            "triggers": draw(st.lists(_texts, max_size=3)),
            "domains": draw(st.lists(_texts, max_size=2)),
            "trigger_threshold": draw(st.integers(0, 3)),
            "match_mode": draw(st.sampled_from([None, "phrase", "substring"])),
            "linear": draw(st.booleans()),
            "graph": {"start": draw(st.sampled_from([*ids, ""])), "nodes": nodes, "edges": edges},
        }
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rich_plans())
def test_rich_random_plans_round_trip(plan):
    assert parse_dot(plan_to_dot(plan)) == plan
