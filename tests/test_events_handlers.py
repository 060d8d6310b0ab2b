"""Planner handlers are called the way they are written (waygraph.callbacks)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.bus_contract import async_test, eventually
from tests.research_planner import SM
from waygraph.errors import PlanStateError
from waygraph.events import (
    Envelope,
    GoalContext,
    InProcessBus,
    PlanContext,
    Planner,
    StateAction,
    StateConfig,
    StateTransition,
    Topic,
    current_planner_context,
)

#: A state that sends its request and, when told to move on without an answer,
#: follows its default_next: a second start must not be taken for that.
WAIT_OR_SKIP = {
    "start": StateConfig(state_name="start", default_next="work"),
    "work": StateConfig(
        state_name="work",
        action=StateAction(event_type="job.requested", response_event="job.completed"),
        transitions=[StateTransition(on_event="job.completed", to_state="done")],
        default_next="skipped",
    ),
    "skipped": StateConfig(state_name="skipped", is_terminal=True),
    "done": StateConfig(state_name="done", is_terminal=True),
}


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


@async_test(30)
async def test_a_goal_started_twice_in_one_commit_leaves_the_started_plan_as_it_is() -> None:
    bus = InProcessBus()
    planner = Planner("p", bus=bus, store="memory://")
    requests: list[Envelope] = []

    async def spy(event: Envelope) -> None:
        requests.append(event)

    async with bus:
        await bus.subscribe(Topic.ACTION_REQUESTS, "job.requested", spy)
        goal = bus.envelope("job.goal", {}, correlation_id="twice")
        start = PlanContext.create_from_goal
        plan = await start(goal, state_machine=WAIT_OR_SKIP, context=planner.context, start=True)
        again = await start(goal, state_machine=WAIT_OR_SKIP, context=planner.context, start=True)
        await eventually(lambda: len(requests) == 1, what="the request")
        stored = await PlanContext.restore(plan.plan_id, planner.context)
    # The second start found the stored plan: it neither skipped past the request
    # it waits for nor sent another.
    assert again.plan_id == plan.plan_id
    assert stored.current_state == again.current_state == "work"
    assert stored.version == again.version == plan.version
    assert len(requests) == 1


@async_test(30)
async def test_the_default_goal_handler_takes_a_goal_delivered_again_without_a_look_up() -> None:
    bus = InProcessBus()
    planner = Planner("p", bus=bus, store="memory://")
    planner.on_goal("job.goal", state_machine=WAIT_OR_SKIP)
    requests: list[Envelope] = []

    async def spy(event: Envelope) -> None:
        requests.append(event)

    reads: list[str] = []
    get = planner.store.get

    def counted_get(key: str) -> Any:
        reads.append(key)
        return get(key)

    planner.store.get = counted_get  # type: ignore[method-assign]
    async with planner:
        await bus.subscribe(Topic.ACTION_REQUESTS, "job.requested", spy)
        goal = bus.envelope("job.goal", {}, correlation_id="twice")
        # The same goal event twice, as a redelivery brings it; close() lets both finish.
        await bus.publish(goal, Topic.ACTION_REQUESTS)
        await eventually(lambda: len(requests) == 1, what="the request")
        await bus.publish(goal, Topic.ACTION_REQUESTS)
        await bus.close()
        [record] = planner.store.list(kind="event")
    assert record.data["current_state"] == "work" and len(requests) == 1
    assert record.version == 1  # stored once, started, and not changed by the second delivery
    # No look-up before the handler: the first delivery reads nothing, the second
    # reads the plan once, after its insert found it stored.
    assert reads == [record.key]
