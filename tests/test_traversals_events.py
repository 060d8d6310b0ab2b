"""Event-driven traversal fixtures: the engine's routing and a real planner end the same way.

Each ``tests/fixtures/traversals/*.yaml`` of ``kind: event`` (format in the
README there) holds a state machine and the events that arrive. The
``engine`` driver follows the machine compiled by ``events.to_plan`` with
:func:`waygraph.engine.events.route_event`, and runs an immutable
:class:`~waygraph.engine.event_run.EventRun` through the engine's pure
transitions (``advance``, then ``accept`` for each event; each input run
must be left as it was); the ``planner`` driver runs a
:class:`~waygraph.events.PlanContext` of a real planner (in-process bus,
SQLite store) through ``execute_next``. Both must end in the expected state.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.test_traversals import kind_cases
from waygraph.engine import events as engine
from waygraph.engine.event_run import EventPlan, EventRun
from waygraph.engine.events import route_event
from waygraph.events import InProcessBus, PlanContext, Planner, to_plan, validate_state_machine
from waygraph.predicates import evaluate_data
from waygraph.store import open_store

DRIVERS = ("engine", "planner")


def _fixtures() -> list[Any]:
    return kind_cases("event", DRIVERS)


def _run_engine(machine_data: dict[str, Any], inputs: list[dict[str, Any]]) -> str:
    machine = validate_state_machine(machine_data, name="fixture")
    plan = to_plan(machine, plan_id="fixture")
    state = machine.follow_defaults(machine.start)
    results: dict[str, Any] = {}
    for event in inputs:
        scope = {"data": event.get("data", {}), "results": results, "goal_data": {}, "event": {}}
        target = route_event(
            plan, state, event["type"], lambda when, scope=scope: evaluate_data(when, scope)
        )
        if target is not None:
            results[state] = event.get("data", {})
            state = machine.follow_defaults(target)
    return state


def _run_transitions(machine_data: dict[str, Any], inputs: list[dict[str, Any]]) -> str:
    machine = validate_state_machine(machine_data, name="fixture")
    plan = EventPlan(plan_id="fixture", machine=machine, source="test", correlation_id="c1")
    counter = iter(range(1_000_000))

    def new_id() -> str:
        return f"id{next(counter)}"

    moved = engine.advance(plan, EventRun(current_state=machine.start), new_id)
    assert moved is not None
    run = moved.run
    for n, event in enumerate(inputs):
        envelope = InProcessBus().envelope(
            event["type"], event.get("data", {}), correlation_id="c1", id=f"e{n}"
        )
        before = repr(run)
        moved = engine.accept(plan, run, envelope, new_id)
        assert repr(run) == before
        if moved is not None:
            run = moved.run
    return run.current_state


def _run_planner(machine_data: dict[str, Any], inputs: list[dict[str, Any]], db: Path) -> str:
    async def run() -> str:
        planner = Planner("fixture", bus=InProcessBus(), store=open_store(f"sqlite:///{db}"))
        bus = planner.context.bus
        goal = bus.envelope("fixture.goal", {}, correlation_id="c1")
        plan = await PlanContext.create_from_goal(
            goal, state_machine=machine_data, context=planner.context
        )
        await plan.execute_next()
        for event in inputs:
            envelope = bus.envelope(event["type"], event.get("data", {}), correlation_id="c1")
            await plan.execute_next(envelope)
        return plan.current_state

    return asyncio.run(run())


@pytest.mark.parametrize(("path", "driver"), _fixtures())
def test_event_traversal(path: Path, driver: str, tmp_path: Path) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    inputs = list(data["inputs"])
    if driver == "engine":
        state = _run_engine(data["machine"], inputs)
        assert _run_transitions(data["machine"], inputs) == state, path.name
    else:
        state = _run_planner(data["machine"], inputs, tmp_path / "plans.db")
    assert state == data["expect"]["current_state"], f"{path.name} ({driver}): {data['rule']}"


def test_there_are_event_fixtures_for_both_drivers():
    assert len(_fixtures()) >= 10
