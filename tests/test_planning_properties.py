"""Properties of the scheduler and the graph compilation over random DAGs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from waygraph.planning import Plan, PlanningAgent, PlanningPattern, StepStatus

pytestmark = pytest.mark.timeout(120)


@st.composite
def dags(draw: st.DrawFn, max_steps: int = 9) -> Plan:
    """Random DAGs: step i may depend on any earlier step; listed in a random order."""
    n = draw(st.integers(1, max_steps))
    ids = [f"s{i}" for i in range(n)]
    steps = []
    for i, step_id in enumerate(ids):
        deps = draw(st.lists(st.sampled_from(ids[:i]), unique=True, max_size=3)) if i else []
        steps.append(
            {"id": step_id, "action": "noop", "parameters": {"name": step_id}, "dependencies": deps}
        )
    order = draw(st.permutations(range(n)))
    return Plan(goal="random", steps=[steps[k] for k in order])


class NoModel:
    async def complete(self, messages, *, json_schema=None, schema_name="reply"):
        raise AssertionError("no model call expected")


@settings(max_examples=60, deadline=None)
@given(
    plan=dags(),
    mode=st.sampled_from(["sequential", "parallel", "adaptive"]),
    limit=st.integers(1, 4),
    yields=st.integers(0, 3),
)
def test_every_step_completes_and_starts_only_after_its_dependencies(plan, mode, limit, yields):
    events: list[tuple[str, str]] = []
    running = {"now": 0, "most": 0}

    async def noop(name: str) -> str:
        running["now"] += 1
        running["most"] = max(running["most"], running["now"])
        for _ in range(yields):
            await asyncio.sleep(0)
        running["now"] -= 1
        return name

    agent = PlanningAgent(
        NoModel(),
        tools=[noop],
        pattern=PlanningPattern(execution_mode=mode, max_parallel=limit),
        on_step_start=lambda *, step, **kw: events.append(("start", step.id)),
        on_step_complete=lambda *, step, **kw: events.append(("done", step.id)),
    )
    result = asyncio.run(agent.execute_plan(plan))

    assert result.success
    assert all(r.status is StepStatus.COMPLETED for r in result.step_results.values())
    assert {sid: r.output for sid, r in result.step_results.items()} == {
        sid: sid for sid in plan.step_ids
    }
    position = {event: i for i, event in enumerate(events)}
    for step in plan.steps:
        for dep in step.dependencies:
            assert position[("done", dep)] < position[("start", step.id)]
    bound = 1 if mode == "sequential" else limit
    assert running["most"] <= bound


@settings(max_examples=80, deadline=None)
@given(
    plan=dags(),
    data=st.data(),
    mode=st.sampled_from(["sequential", "parallel", "adaptive"]),
    limit=st.integers(1, 4),
)
def test_with_continue_on_failure_exactly_the_failed_steps_dependents_are_skipped(
    plan, data, mode, limit
):
    failing = set(data.draw(st.lists(st.sampled_from(plan.step_ids), unique=True)))
    started: list[str] = []

    async def noop(name: str) -> str:
        started.append(name)
        await asyncio.sleep(0)
        if name in failing:
            raise RuntimeError(f"{name} fails")
        return name

    agent = PlanningAgent(
        NoModel(),
        tools=[noop],
        pattern=PlanningPattern(
            execution_mode=mode,
            max_parallel=limit,
            continue_on_failure=True,
            allow_revision=False,
            retry_failed_steps=0,
        ),
    )
    result = asyncio.run(agent.execute_plan(plan))

    deps = {step.id: set(step.dependencies) for step in plan.steps}
    blocked: dict[str, bool] = {}

    def behind_a_failure(sid: str) -> bool:
        if sid not in blocked:
            blocked[sid] = any(d in failing or behind_a_failure(d) for d in deps[sid])
        return blocked[sid]

    expected = {
        sid: "skipped" if behind_a_failure(sid) else "failed" if sid in failing else "completed"
        for sid in plan.step_ids
    }
    assert {sid: r.status.value for sid, r in result.step_results.items()} == expected
    assert sorted(started) == sorted(s for s, status in expected.items() if status != "skipped")
    assert result.success is (not failing)


@settings(max_examples=60, deadline=None)
@given(plan=dags())
def test_compiled_graph_has_one_node_per_step_and_one_edge_per_dependency(plan):
    graph = plan.to_graph_plan("random").graph
    tasks = {nid: n for nid, n in graph.nodes.items() if n.type == "task"}
    assert set(tasks) == set(plan.step_ids)
    assert all(node.join == "all" for node in tasks.values())
    dependency_edges = {
        (e.from_, e.to) for e in graph.edges if e.condition == "on_success" and e.to != "done"
    }
    assert dependency_edges == {(d, s.id) for s in plan.steps for d in s.dependencies}
    starts = {e.to for e in graph.edges if e.from_ == graph.start}
    assert starts == {s.id for s in plan.roots()}
    finals = {e.from_ for e in graph.edges if e.to == "done"}
    assert finals == {s.id for s in plan.leaves()}


@settings(max_examples=30, deadline=None)
@given(plan=dags(max_steps=6))
def test_graph_round_trip_is_lossless(plan: Any):
    assert Plan.from_graph_plan(plan.to_graph_plan("p")).model_dump() == plan.model_dump()
