"""Broken planners fail early and loudly; permanent errors answer the goal at once.

A state machine given to ``on_goal`` is validated when it is registered, a
goal type declared without a handler stops ``start()``, and a goal whose
handling fails permanently is answered on its response event with
``status: failed`` and an ``error`` object, once, instead of being
redelivered until the caller times out. Transient errors keep redelivery.
Runs on every stack of tests/event_stacks.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.bus_contract import async_test
from tests.event_stacks import Stack, stack_fixture  # noqa: F401
from tests.research_planner import SM, unique
from waygraph.errors import StateMachineError, WaygraphError
from waygraph.events import Envelope, InProcessBus, PlanContext, Planner, StateConfig, Topic, Worker
from waygraph.events.failures import (
    PermanentError,
    PlannerSetupError,
    TransientError,
    is_permanent,
)

TYPO = {
    **SM,
    "analyzing": StateConfig(
        state_name="analyzing",
        action=SM["analyzing"].action,
        transitions=[
            t.model_copy(update={"to_state": "dnoe"}) for t in SM["analyzing"].transitions
        ],
    ),
}


def test_a_typo_in_a_registered_state_machine_is_refused_at_registration() -> None:
    planner = Planner("research-planner", bus=InProcessBus(), store="memory://")
    with pytest.raises(PlannerSetupError) as caught:
        planner.on_goal("research.goal", state_machine=TYPO)
    error = caught.value
    assert isinstance(error, StateMachineError) and isinstance(error, WaygraphError)
    assert str(error) == (
        "planner 'research-planner', goal 'research.goal', state 'analyzing', "
        "field 'transitions[0].to_state': unknown target state 'dnoe'; states are: start, "
        "searching, retry_search, ask_user, analyzing, done, failed (got 'dnoe')"
    )
    assert planner.goal_types == []


def test_on_goal_without_an_event_type_is_a_clear_error() -> None:
    planner = Planner("p", bus=InProcessBus(), store="memory://")
    with pytest.raises(WaygraphError, match=r"planner 'p': on_goal needs the goal's event type"):

        @planner.on_goal  # type: ignore[arg-type]
        async def start(goal, context):  # type: ignore[no-untyped-def]
            pass


@async_test(30)
async def test_start_refuses_a_goal_type_declared_without_a_handler() -> None:
    planner = Planner("p", bus=InProcessBus(), store="memory://")
    planner.on_goal("research.goal")  # the decorator was never applied
    with pytest.raises(PlannerSetupError, match=r"planner 'p', goal 'research.goal': on_goal"):
        await planner.start()
    await planner.close()


def test_which_errors_are_permanent() -> None:
    permanent = [PermanentError("x"), StateMachineError("x"), KeyError("k"), TypeError("t")]
    permanent += [AttributeError("a"), NotImplementedError(), ValueError("v")]
    transient = [RuntimeError("r"), ConnectionError("c"), TimeoutError(), TransientError("t")]
    assert [is_permanent(e) for e in permanent] == [True] * len(permanent)
    assert [is_permanent(e) for e in transient] == [False] * len(transient)


class Answers:
    """Every answer on ``research.done``, by correlation id."""

    def __init__(self) -> None:
        self.seen: list[Envelope] = []

    async def __call__(self, event: Envelope) -> None:
        self.seen.append(event)

    def of(self, correlation_id: str) -> list[Envelope]:
        return [e for e in self.seen if e.correlation_id == correlation_id]


async def planner_with(stack: Stack, handler: Any, **options: Any) -> tuple[Planner, Answers]:
    bus = stack.bus()
    planner = Planner(unique("failing-planner"), bus=bus, store=stack.store_url)
    planner.on_goal("research.goal", **options)(handler)
    answers = Answers()
    await bus.start()
    await bus.subscribe(Topic.ACTION_RESULTS, "research.done", answers)
    await planner.start()
    return planner, answers


@async_test(60)
async def test_an_invalid_machine_met_at_goal_time_is_answered_once_not_redelivered(
    stack: Stack,
) -> None:
    calls: list[str] = []

    async def start(goal, context):  # type: ignore[no-untyped-def]
        calls.append(goal.id)
        plan = await PlanContext.create_from_goal(goal, state_machine=TYPO, context=context)
        await plan.execute_next()

    planner, answers = await planner_with(stack, start)
    try:
        answer = await planner.bus.ask(
            "research.goal", {"topic": "hit"}, "research.done", timeout=15, session_id="s-9"
        )
        data = answer.data
        assert data["status"] == "failed" and data["result"] is None
        assert data["error"]["type"] == "StateMachineError"
        assert "unknown target state 'dnoe'" in data["error"]["message"]
        assert (data["error"]["state"], data["error"]["field"]) == (
            "analyzing",
            "transitions[0].to_state",
        )
        assert answer.session_id == "s-9"
        # The goal delivered again (a redelivery, a second publisher) is answered no more.
        goal = await PlanContext.restore(data["plan_id"], planner.context)
        await planner.bus.publish(goal.goal_envelope, Topic.ACTION_REQUESTS)
        await stack.settle(1.0)
        assert calls == [goal.goal_envelope.id]
        assert len(answers.of(answer.correlation_id or "")) == 1
        assert goal.status == "failed" and goal.error == data["error"]
        assert not (await PlanContext.restore(goal.plan_id, planner.context)).outbox
    finally:
        await planner.close()
        await stack.close()


@async_test(60)
async def test_a_handler_raising_a_permanent_error_fails_the_plan_it_made(stack: Stack) -> None:
    calls: list[str] = []

    async def start(goal, context):  # type: ignore[no-untyped-def]
        calls.append(goal.id)
        await PlanContext.create_from_goal(goal, state_machine=SM, context=context)
        raise PermanentError(f"no customer {goal.data['customer']!r}")

    planner, answers = await planner_with(stack, start)
    try:
        answer = await planner.bus.ask(
            "research.goal", {"customer": "c-1"}, "research.done", timeout=15
        )
        assert answer.data["status"] == "failed"
        assert answer.data["error"] == {"type": "PermanentError", "message": "no customer 'c-1'"}
        plan = await PlanContext.restore(answer.data["plan_id"], planner.context)
        assert plan.status == "failed" and plan.current_state == "start"
        await stack.settle(1.0)
        assert len(calls) == 1 and len(answers.of(answer.correlation_id or "")) == 1
    finally:
        await planner.close()
        await stack.close()


@async_test(60)
async def test_a_transient_error_is_still_redelivered(stack: Stack) -> None:
    calls: list[str] = []

    async def start(goal, context, state_machine):  # type: ignore[no-untyped-def]
        calls.append(goal.id)
        if len(calls) < 3:
            raise ConnectionError("the database blinked")
        plan = await PlanContext.create_from_goal(
            goal, state_machine=state_machine, context=context
        )
        await plan.execute_next()

    planner, _ = await planner_with(stack, start, state_machine=SM)
    worker = Worker(unique("researcher"), bus=planner.bus)
    for task in ("web.search.requested", "analysis.requested"):
        worker.on_task(task)(lambda task, context: asyncio.sleep(0, {"count": 1}))
    await worker.start()
    try:
        answer = await planner.bus.ask("research.goal", {"topic": "x"}, "research.done", timeout=20)
        assert answer.data["status"] == "completed" and "error" not in answer.data
        assert len(calls) == 3 and len(set(calls)) == 1
    finally:
        await worker.close()
        await planner.close()
        await stack.close()


@async_test(60)
async def test_a_registered_machine_runs_without_a_handler_of_its_own(stack: Stack) -> None:
    bus = stack.bus()
    planner = Planner(unique("machine-planner"), bus=bus, store=stack.store_url)
    planner.on_goal("research.goal", state_machine=SM)
    worker = Worker(unique("researcher"), bus=bus)
    searched: list[dict[str, Any]] = []

    @worker.on_task("web.search.requested")
    async def search(task, context):  # type: ignore[no-untyped-def]
        searched.append(task.data)
        return {"count": 1}

    @worker.on_task("analysis.requested")
    async def analyse(task, context):  # type: ignore[no-untyped-def]
        return {"summary": "ok"}

    await bus.start()
    await planner.start()
    await worker.start()
    try:
        answer = await bus.ask("research.goal", {"topic": "graphs"}, "research.done", timeout=15)
        assert answer.data["status"] == "completed"
        assert answer.data["result"]["state"] == "done"
        assert searched == [{"query": "graphs"}]
    finally:
        await worker.close()
        await planner.close()
        await stack.close()


@async_test(60)
async def test_a_permanent_error_in_on_transition_fails_the_plan_and_answers(
    stack: Stack,
) -> None:
    bus = stack.bus()
    planner = Planner(unique("transition-planner"), bus=bus, store=stack.store_url)
    planner.on_goal("research.goal", state_machine=SM)
    steps: list[str] = []

    @planner.on_transition()
    async def advance(transition, context):  # type: ignore[no-untyped-def]
        steps.append(transition.event.id)
        raise KeyError("summary")

    worker = Worker(unique("researcher"), bus=bus)
    worker.on_task("web.search.requested")(lambda task, context: asyncio.sleep(0, {"count": 1}))
    await bus.start()
    await planner.start()
    await worker.start()
    try:
        answer = await bus.ask("research.goal", {"topic": "graphs"}, "research.done", timeout=15)
        assert answer.data["status"] == "failed"
        assert answer.data["error"] == {"type": "KeyError", "message": "'summary'"}
        plan = await PlanContext.restore(answer.data["plan_id"], planner.context)
        assert plan.status == "failed" and plan.current_state == "searching"
        await stack.settle(1.0)
        assert len(steps) == 1
    finally:
        await worker.close()
        await planner.close()
        await stack.close()
