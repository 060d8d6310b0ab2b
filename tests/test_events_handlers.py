"""Planner handlers are called the way they are written (waygraph.callbacks)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.bus_contract import async_test, eventually
from tests.test_events_planner import SM
from waygraph.errors import PlanStateError
from waygraph.events import (
    Envelope,
    GoalContext,
    InProcessBus,
    PlanContext,
    Planner,
    Topic,
    current_planner_context,
)


@async_test(30)
async def test_handlers_get_the_arguments_their_signatures_ask_for() -> None:
    bus = InProcessBus()
    planner = Planner("p", bus=bus, store="memory://")
    seen: dict[str, Any] = {}

    @planner.on_goal("research.goal")
    async def start(goal):  # type: ignore[no-untyped-def]
        seen["goal"] = goal
        seen["current"] = current_planner_context()
        plan = await PlanContext.create_from_goal(goal, state_machine=SM, context=planner.context)
        await plan.execute_next()

    @planner.on_transition()
    async def step(transition, **extra):  # type: ignore[no-untyped-def]
        seen["extra"] = sorted(extra)
        await transition.plan.execute_next(transition.event)

    @planner.on_event(Topic.BUSINESS_FACTS, "fact.noted")
    async def noted(event, context, *, planner):  # type: ignore[no-untyped-def]
        seen["planner"] = planner

    async with planner:
        goal = await bus.request("research.goal", {"topic": "hit"}, "research.done")
        await eventually(lambda: "goal" in seen, timeout=10, what="the goal")
        [plan] = await planner.plans()
        assert plan.awaiting is not None
        await bus.respond("web.search.completed", {"count": 1}, plan.awaiting["correlation_id"])
        await bus.publish(bus.envelope("fact.noted", {}), Topic.BUSINESS_FACTS)
        await eventually(lambda: {"extra", "planner"} <= set(seen), timeout=10, what="handlers")
    assert isinstance(seen["goal"], GoalContext) and seen["goal"].id == goal.id
    assert seen["current"] is planner.context
    assert seen["extra"] == ["context", "planner"]
    assert seen["planner"] is planner
    assert current_planner_context() is None  # only while a handler runs


@async_test(30)
async def test_restoring_without_a_context_outside_a_handler_says_what_to_pass() -> None:
    with pytest.raises(PlanStateError, match=r"context=planner\.context"):
        await PlanContext.restore_by_correlation("c1")


def test_a_goal_context_is_the_goal_envelope() -> None:
    event = Envelope(id="e1", source="s", type="research.goal", data={"topic": "x"})
    goal = GoalContext.from_event(event)
    assert goal.to_wire() == event.to_wire()
    assert GoalContext.from_event(goal) is goal
    assert type(goal.event) is Envelope and goal.event == event
