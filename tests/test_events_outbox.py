"""Issue 19, target 4: what a plan costs the store, and the outbox marks that no longer
take a commit of their own.

A change is committed with its outbox, then published; the entries are
marked published by the plan's next commit, or (a finished plan makes none)
by a batch that writes many plans at once. Delivery is unchanged: an entry
leaves the stored outbox only after it went out, and one that went out but
was never marked (the process died) is sent again with the same id.
"""

from __future__ import annotations

import asyncio
from typing import Any
from unittest import mock

from tests.bus_contract import async_test, eventually
from waygraph.events import (
    Envelope,
    InProcessBus,
    PlanContext,
    Planner,
    StateAction,
    StateConfig,
    StateTransition,
    Topic,
    Worker,
)
from waygraph.store import open_store

SM = {
    "start": StateConfig(state_name="start", default_next="working"),
    "working": StateConfig(
        state_name="working",
        action=StateAction(
            event_type="job.requested", response_event="job.done", data={"n": "{goal_data.n}"}
        ),
        transitions=[StateTransition(on_event="job.done", to_state="done")],
    ),
    "done": StateConfig(state_name="done", is_terminal=True),
}


async def spied_bus() -> tuple[InProcessBus, list[Envelope]]:
    """A started bus, and the requests of job.requested it carries, as they arrive."""
    bus = InProcessBus()
    await bus.start()
    requests: list[Envelope] = []

    async def spy(event: Envelope) -> None:
        requests.append(event)

    await bus.subscribe(Topic.ACTION_REQUESTS, "job.requested", spy)
    return bus, requests


@async_test(60)
async def test_a_plan_costs_three_commits_and_its_marks_share_batches(tmp_path: Any) -> None:
    store = open_store(f"sqlite:///{tmp_path}/plans.db")
    # Every plan commit is one commit_all (a single store transaction).
    store.commit_all = mock.Mock(wraps=store.commit_all)  # type: ignore[method-assign]
    bus = InProcessBus()
    planner = Planner("outbox-planner", bus=bus, store=store)
    worker = Worker("outbox-worker", bus=bus)

    @planner.on_goal("job.goal")
    async def on_goal(goal: Any, context: Any) -> None:
        plan = await PlanContext.create_from_goal(goal, state_machine=SM, context=context)
        await plan.execute_next()

    @worker.on_task("job.requested")
    async def work(task: Any, context: Any) -> dict[str, Any]:
        return {"n": task.data["n"]}

    try:
        await planner.start()
        await worker.start()
        answers = await asyncio.gather(
            *(bus.ask("job.goal", {"n": n}, "job.goal.completed", timeout=20) for n in range(20))
        )
        assert sorted(a.data["result"]["results"]["working"]["n"] for a in answers) == list(
            range(20)
        )
        plans = await planner.plans()
        await eventually(
            lambda: not planner.context.marks._entries, timeout=10, what="the marks written"
        )
        stored = [await PlanContext.restore(p.plan_id, planner.context) for p in plans]
        assert all(p.status == "completed" and not p.outbox for p in stored)
        # Per plan: created, started (with its request), finished (with its answer, and
        # the request's mark); the finished plans' marks went in shared batches.
        assert 3 * 20 < store.commit_all.call_count < 4 * 20
        assert not await PlanContext.publish_all_pending(planner.context)
    finally:
        await worker.close()
        await planner.close()
        await bus.close()
        store.close()


@async_test(60)
async def test_a_published_entry_is_not_sent_again_while_its_mark_waits(tmp_path: Any) -> None:
    store_url = f"sqlite:///{tmp_path}/plans.db"
    bus, requests = await spied_bus()
    planner = Planner("outbox-planner", bus=bus, store=store_url)
    try:
        goal = bus.envelope("job.goal", {"n": 1}, correlation_id="g1")
        plan = await PlanContext.create_from_goal(goal, state_machine=SM, context=planner.context)
        assert await plan.execute_next()
        await bus.drain()
        assert len(requests) == 1
        # Stored with the request still in the outbox: its mark waits for the next commit.
        stored = await PlanContext.restore(plan.plan_id, planner.context)
        assert [e["id"] for e in stored.outbox] == [requests[0].id]
        # Recovery in this process knows it went out and does not send it again.
        assert await stored.publish_pending() == 0
        # The plan's next commit drops it, at no extra commit.
        version = plan.version
        await plan.save()
        assert plan.version == version + 1 and plan.outbox == []
        assert not planner.context.marks.pending(plan.plan_id)
    finally:
        await planner.close()
        await bus.close()


@async_test(60)
async def test_an_entry_published_by_a_process_that_died_is_sent_again_with_its_id(
    tmp_path: Any,
) -> None:
    store_url = f"sqlite:///{tmp_path}/plans.db"
    bus, requests = await spied_bus()
    first = Planner("outbox-planner", bus=bus, store=store_url)
    goal = bus.envelope("job.goal", {"n": 1}, correlation_id="g1")
    plan = await PlanContext.create_from_goal(goal, state_machine=SM, context=first.context)
    assert await plan.execute_next()
    await bus.drain()
    # The process dies before the mark is written: its marks are lost with it.
    first.context.marks.cancel()
    first.context.marks._entries.clear()
    second = Planner("outbox-planner", bus=bus, store=store_url)
    try:
        assert await second.recover() == 1
        await bus.drain()
        assert [r.id for r in requests] == [requests[0].id] * 2  # the same event, again
        stored = await PlanContext.restore(plan.plan_id, second.context)
        assert stored.outbox == []
    finally:
        await second.close()
        await first.close()
        await bus.close()


@async_test(60)
async def test_create_from_goal_with_start_stores_the_plan_and_its_request_in_one_commit(
    tmp_path: Any,
) -> None:
    bus, requests = await spied_bus()
    planner = Planner("outbox-planner", bus=bus, store=f"sqlite:///{tmp_path}/plans.db")
    try:
        goal = bus.envelope("job.goal", {"n": 3}, correlation_id="g3")
        plan = await PlanContext.create_from_goal(
            goal, state_machine=SM, context=planner.context, start=True
        )
        assert plan.version == 1 and plan.started and plan.current_state == "working"
        # The goal delivered again: the stored plan, started already; nothing more is sent.
        again = await PlanContext.create_from_goal(
            goal, state_machine=SM, context=planner.context, start=True
        )
        await bus.drain()
        assert again.plan_id == plan.plan_id and again.current_state == "working"
        assert [r.data for r in requests] == [{"n": 3}]
        events = await asyncio.to_thread(planner.store.events, plan.plan_id)
        assert [e.data["type"] for e in events] == ["plan_created", "state_entered", "request_sent"]
        # A goal without the data the request needs: the plan fails and answers at once.
        bad = bus.envelope("job.goal", {}, correlation_id="g4")
        failed = await PlanContext.create_from_goal(
            bad, state_machine=SM, context=planner.context, start=True
        )
        assert failed.status == "failed" and failed.error is not None
    finally:
        await planner.close()
        await bus.close()


def test_a_planner_run_in_a_second_event_loop_still_batches_its_marks(tmp_path: Any) -> None:
    store = open_store(f"sqlite:///{tmp_path}/plans.db")  # outlives the planner's runs
    planner = Planner("outbox-planner", bus=InProcessBus(), store=store)

    async def one_plan(n: int) -> None:
        await planner.start()
        goal = planner.bus.envelope("job.goal", {"n": n}, correlation_id=f"g{n}")
        await PlanContext.create_from_goal(
            goal, state_machine=SM, context=planner.context, start=True
        )
        # No worker: the request's mark waits for the plan's next commit, and the
        # batch task waits with it, in this loop.
        await asyncio.sleep(0.05)
        flusher = planner.context.marks._flusher
        assert flusher is not None and not flusher.done()
        await planner.close()

    for n in range(2):
        asyncio.run(one_plan(n))
    plans = asyncio.run(PlanContext.find(planner.context))
    assert len(plans) == 2 and all(p.outbox == [] for p in plans)  # marked at close
    store.close()
