"""The event planner: redelivered events and goals change nothing, plans save and restore,
the outbox is sent again after a stop, two planners share one store;
on every stack of tests/event_stacks.py, with the research planner of tests/research_planner.py."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from tests.bus_contract import async_test, eventually
from tests.event_stacks import Stack, stack_fixture  # noqa: F401
from tests.research_planner import (
    SM,
    research,
    restore_settled,
    search_result,
    unique,
)
from waygraph.errors import Conflict, PlanContextNotFoundError
from waygraph.events import (
    Envelope,
    PlanContext,
    Planner,
    Topic,
    Worker,
)


@async_test(60)
async def test_a_redelivered_event_and_an_event_no_transition_accepts_change_nothing(
    stack: Stack,
) -> None:
    async with research(stack) as r:
        ctx = r.planner.context
        goal = r.bus.envelope("research.goal", {"topic": "x"}, correlation_id=uuid.uuid4().hex)
        plan = await PlanContext.create_from_goal(goal, state_machine=SM, context=ctx)
        # Standing on "searching", awaiting "req-1": fields are read-only, a changed copy is saved.
        plan = plan.model_copy(
            update={
                "started": True,
                "current_state": "searching",
                "awaiting": {"correlation_id": "req-1"},
                "correlation_ids": [*plan.correlation_ids, "req-1"],
            }
        )
        await plan.save()
        version = plan.version
        events_before = len(await asyncio.to_thread(ctx.store.events, plan.plan_id))

        unknown = r.bus.envelope("web.search.progress", {"count": 9}, correlation_id="req-1")
        assert plan.accepts(unknown) is None
        assert await plan.execute_next(unknown) is False
        stale = r.bus.envelope("web.search.completed", {"count": 1}, correlation_id="old-req")
        assert await plan.execute_next(stale) is False
        assert await plan.execute_next(goal) is False  # the goal itself never moves a plan
        assert plan.version == version
        assert len(await asyncio.to_thread(ctx.store.events, plan.plan_id)) == events_before

        # Through the bus: none of them reaches on_transition.
        for event in (unknown, stale, goal):
            await r.bus.publish(event, Topic.ACTION_RESULTS)
        await stack.settle()
        assert not [t for t in r.transitions if t[0] == plan.plan_id]

        reply = r.bus.envelope(
            "web.search.completed", {"count": 0, "hits": []}, correlation_id="req-1"
        )
        await r.bus.publish(reply, Topic.ACTION_RESULTS)
        await eventually(
            lambda: any(t[0] == plan.plan_id for t in r.transitions), what="the first delivery"
        )
        await stack.settle()
        moved = await PlanContext.restore(plan.plan_id, ctx)
        assert moved.current_state in ("retry_search", "ask_user", "analyzing", "done")
        assert reply.id in moved.processed_event_ids
        # Redelivered (the same id): a no-op, even straight into execute_next.
        before = await PlanContext.restore(plan.plan_id, ctx)
        assert await before.execute_next(reply) is False
        calls = len(r.transitions)
        await r.bus.publish(reply, Topic.ACTION_RESULTS)
        await stack.settle()
        after = await PlanContext.restore(plan.plan_id, ctx)
        assert len([t for t in r.transitions[calls:] if t[3] == "req-1"]) == 0
        assert after.processed_event_ids.count(reply.id) == 1


@async_test(60)
async def test_a_goal_delivered_twice_makes_one_plan(stack: Stack) -> None:
    async with research(stack) as r:
        answers: list[Envelope] = []

        async def collect(event: Envelope) -> None:
            answers.append(event)

        await r.bus.subscribe(Topic.ACTION_RESULTS, "research.done", collect)
        goal = r.bus.envelope(
            "research.goal",
            {"topic": "hit"},
            correlation_id="twice",
            response_event="research.done",
        )
        await r.bus.publish(goal, Topic.ACTION_REQUESTS)
        await eventually(lambda: len(answers) == 1, timeout=10, what="the answer")
        await r.bus.publish(goal, Topic.ACTION_REQUESTS)
        await stack.settle(0.5)
        assert len(answers) == 1
        assert len(await r.planner.plans()) == 1


@async_test(60)
async def test_save_and_restore_round_trip(stack: Stack) -> None:
    async with research(stack) as r:
        ctx = r.planner.context
        goal = r.bus.envelope(
            "research.goal",
            {"topic": "graphs", "depth": 2, "tags": ["a", "é"]},
            correlation_id="round-trip",
            response_event="research.done",
            session_id="s",
            user_id="u",
            tenant_id="t",
        )
        plan = await PlanContext.create_from_goal(
            goal, state_machine=SM, context=ctx, parent_plan_id="parent-1"
        )
        plan.results["notes"] = {"n": 1.5, "ok": True, "none": None, "list": [1, "2"]}
        await plan.save()
        restored = await PlanContext.restore(plan.plan_id, ctx)
        assert restored.model_dump() == plan.model_dump()
        assert restored.version == plan.version == 2
        assert restored.state_machine == SM
        assert restored.goal_envelope.to_wire() == goal.to_wire()
        assert (await PlanContext.restore_by_correlation("round-trip", ctx)).plan_id == plan.plan_id
        assert await PlanContext.restore_by_correlation("nobody", ctx) is None
        with pytest.raises(PlanContextNotFoundError, match="no plan 'missing'"):
            await PlanContext.restore("missing", ctx)
        # Every write is version-checked: a stale copy cannot overwrite a newer plan.
        restored.results["x"] = 1
        await restored.save()
        plan.results["y"] = 2
        with pytest.raises(Conflict):
            await plan.save()


@async_test(60)
async def test_the_outbox_is_sent_again_after_the_process_stopped(stack: Stack) -> None:
    bus = stack.bus()
    await bus.start()

    class Crashing:
        """The planner's bus dies right after the state was stored."""

        source = bus.source

        async def start(self) -> None:
            pass

        async def publish(self, envelope: Envelope, topic: Any = None) -> None:
            raise ConnectionError("the process died")

        async def subscribe(self, *args: Any, **kwargs: Any) -> Any:
            return await bus.subscribe(*args, **kwargs)

    name = unique("research-planner")
    crashed = Planner(name, bus=Crashing(), store=stack.store_url)  # type: ignore[arg-type]
    goal = bus.envelope(
        "research.goal", {"topic": "hit"}, correlation_id="crash", response_event="research.done"
    )
    plan = await PlanContext.create_from_goal(goal, state_machine=SM, context=crashed.context)
    with pytest.raises(ConnectionError):
        await plan.execute_next()
    stored = await PlanContext.restore(plan.plan_id, crashed.context)
    assert stored.current_state == "searching" and len(stored.outbox) == 1
    crashed.store.close()

    answers: list[Envelope] = []

    async def collect(event: Envelope) -> None:
        answers.append(event)

    try:
        await bus.subscribe(Topic.ACTION_RESULTS, "research.done", collect)
        async with research(stack, planner_bus=bus) as r:
            # research() made its own planner; the restarted one has the crashed name.
            restarted = Planner(name, bus=bus, store=stack.store_url)
            await restarted.start()
            try:
                await eventually(lambda: len(answers) == 1, timeout=15, what="the answer")
                assert answers[0].correlation_id == "crash"
                done = await restore_settled(plan.plan_id, restarted.context)
                assert done.status == "completed" and done.outbox == []
                assert r.searches == [{"query": "hit"}]
            finally:
                await restarted.close()
    finally:
        await stack.close()


@async_test(90)
async def test_two_planners_on_one_store_complete_every_plan_once(stack: Stack) -> None:
    name = unique("shared-planner")
    bus_a, bus_b = stack.bus(), stack.bus()
    worker_bus = stack.bus()
    planners = [Planner(name, bus=b, store=stack.store_url) for b in (bus_a, bus_b)]
    worker = Worker(unique("researcher"), bus=worker_bus)
    handled: list[str] = []

    for planner in planners:

        @planner.on_goal("research.goal")
        async def start(goal, context):  # type: ignore[no-untyped-def]
            handled.append(context.name)
            plan = await PlanContext.create_from_goal(goal, state_machine=SM, context=context)
            await plan.execute_next()

    @worker.on_task("web.search.requested")
    async def search(task, context):  # type: ignore[no-untyped-def]
        return search_result(task.data["query"], bool(task.data.get("retry")))

    @worker.on_task("user.input.requested")
    async def ask_user(task, context):  # type: ignore[no-untyped-def]
        return {"answer": "anything"}

    @worker.on_task("analysis.requested")
    async def analyse(task, context):  # type: ignore[no-untyped-def]
        return {"ok": True}

    answers: list[Envelope] = []

    async def collect(event: Envelope) -> None:
        answers.append(event)

    try:
        for planner in planners:
            await planner.start()
        await worker.start()
        client = stack.bus()
        await client.start()
        await client.subscribe(Topic.ACTION_RESULTS, "research.done", collect)
        topics = ["hit", "late", "none", "boom"] * 5
        for i, topic in enumerate(topics):
            await client.request(
                "research.goal", {"topic": topic}, "research.done", correlation_id=f"g{i}"
            )
        await eventually(lambda: len(answers) >= len(topics), timeout=60, what="every answer")
        await stack.settle(1.0)
        assert sorted(a.correlation_id for a in answers) == sorted(
            f"g{i}" for i in range(len(topics))
        )
        plans = await planners[0].plans()
        assert len(plans) == len(topics)
        assert all(p.status in ("completed", "failed") for p in plans)
        # A request one planner sent and the other moved past is marked sent by a
        # batch of the first, shortly after (its own next commit never comes).
        for plan in plans:
            assert not (await restore_settled(plan.plan_id, planners[0].context)).outbox
        for p in plans:
            events = await asyncio.to_thread(planners[0].store.events, p.plan_id)
            finals = [e for e in events if e.data["type"] in ("plan_completed", "plan_failed")]
            assert len(finals) == 1
        assert len(handled) == len(topics)
    finally:
        await worker.close()
        for planner in planners:
            await planner.close()
        await stack.close()
