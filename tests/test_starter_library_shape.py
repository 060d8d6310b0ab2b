"""The shipped starter library: its identity and its shapes.

The matching fields (ids, names, domains, triggers, thresholds) must equal the
established Agent-Zero library's (tests/fixtures/compat, see its README for
attribution), because classifiers and allow-lists depend on them. Everything
else is waygraph's own, and every plan follows the shape rules below.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.starter_library_helpers import (
    ESTABLISHED,
    LIBRARY,
    PLAN_IDS,
    SUCCESS,
    edges,
)
from waygraph.check import check_plan
from waygraph.library import shipped_library_path
from waygraph.model import Plan

ROOT = Path(__file__).parent.parent
PACE_LEVELS = {"primary", "alternate", "contingent", "emergency"}


def success_cycles(plan: Plan) -> list[list[str]]:
    """Cycles made only of on_success/always edges (when-edges included)."""
    graph: dict[str, set[str]] = {}
    for e in plan.graph.edges:
        if e.condition in SUCCESS:
            graph.setdefault(e.from_, set()).add(e.to)
    cycles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in plan.graph.nodes:
        if node not in state:
            visit(node, [])
    return cycles


# ------------------------------------------------------------------ identity


def test_the_shipped_folder_holds_exactly_the_ten_plans_in_the_established_order():
    assert LIBRARY.path == shipped_library_path()
    # Library order breaks matching ties, so it follows the established library.
    assert LIBRARY.ids() == PLAN_IDS
    assert len(PLAN_IDS) == 10
    files = sorted(p.name for p in shipped_library_path().glob("*.yaml"))
    assert len(files) == 10
    assert all(Path(LIBRARY.sources[pid]).name.endswith(f"_{pid}.yaml") for pid in PLAN_IDS)


@pytest.mark.parametrize("plan_id", PLAN_IDS)
def test_matching_fields_equal_the_established_library(plan_id: str):
    plan, old = LIBRARY[plan_id], ESTABLISHED[plan_id]
    assert plan.name == old["name"]
    assert list(plan.domains) == old["domains"]
    assert list(plan.triggers) == old["triggers"]
    assert plan.trigger_threshold == old["trigger_threshold"]


@pytest.mark.parametrize("plan_id", PLAN_IDS)
def test_plan_checks_clean_no_errors_and_no_warnings(plan_id: str):
    problems = check_plan(LIBRARY[plan_id], file=LIBRARY.sources[plan_id])
    assert problems == [], "\n".join(str(p) for p in problems)


def test_library_check_is_clean():
    assert LIBRARY.check() == []


@pytest.mark.parametrize("plan_id", PLAN_IDS)
def test_wording_is_our_own(plan_id: str):
    theirs = {
        str(node[key]).strip().lower()
        for node in ESTABLISHED[plan_id]["graph"]["nodes"].values()
        for key in ("name", "action", "tool_hint", "reason")
        if node.get(key)
    }
    for node in LIBRARY[plan_id].graph.nodes.values():
        if node.type == "start":
            continue
        for key in ("name", "action", "tool_hint", "reason"):
            value = getattr(node, key)
            assert value is None or value.strip().lower() not in theirs, (node.id, key, value)


# ------------------------------------------------------------------ shape rules for every plan


@pytest.mark.parametrize("plan_id", PLAN_IDS)
def test_every_plan_is_a_real_graph(plan_id: str):
    plan = LIBRARY[plan_id]
    nodes = plan.graph.nodes
    assert not plan.linear
    assert plan.description
    kinds = [n.type for n in nodes.values()]
    assert kinds.count("start") == 1 and plan.graph.start == "start"
    assert "exit" in kinds and "checkpoint" in kinds
    escalates = [n for n in nodes.values() if n.type == "escalate"]
    assert escalates
    for node in escalates:
        assert node.reason and len(node.reason) > 40, node.id
        assert node.pace_level in PACE_LEVELS, node.id
    # Real branching: some node leads to different places on different outcomes.
    assert any(len({e.to for e in edges(plan, nid)}) > 1 for nid in nodes)
    # At least one bounded retry loop.
    assert any(n.type == "task" and (n.max_retries or 0) > 0 for n in nodes.values())
    assert success_cycles(plan) == []


@pytest.mark.parametrize("plan_id", PLAN_IDS)
def test_every_task_is_verified_and_bounded(plan_id: str):
    plan = LIBRARY[plan_id]
    for node in plan.graph.nodes.values():
        if node.type != "task":
            continue
        assert node.verify is not None, node.id
        assert node.action and node.name and node.tool, node.id
        assert node.max_retries is not None, node.id  # no unbounded holds
        conditions = {e.condition for e in edges(plan, node.id)}
        if conditions & {"on_retry", "on_exhaust"}:
            assert node.max_retries > 0, node.id
        # Every task has somewhere to go when it passes and when it is exhausted.
        assert conditions & SUCCESS, node.id
        assert conditions & {"on_exhaust", "on_fail", "always"}, node.id


@pytest.mark.parametrize("plan_id", PLAN_IDS)
def test_decisions_route_with_when_edges_and_a_fallback(plan_id: str):
    plan = LIBRARY[plan_id]
    for node in plan.graph.nodes.values():
        if node.type != "decision":
            continue
        out = edges(plan, node.id)
        assert any(e.when is not None for e in out), node.id
        assert [e for e in out if e.when is None], f"{node.id} has no fallback edge"
        assert node.description, node.id


# ------------------------------------------------------------------ docs


def test_every_plan_has_a_section_in_docs_library():
    text = (ROOT / "docs" / "library.md").read_text()
    headings = re.findall(r"^## `([a-z_]+)`", text, re.MULTILINE)
    assert headings == PLAN_IDS
    for plan in LIBRARY:
        assert plan.name in text, plan.id
