"""What a planner reads from its store per plan (issue 41): no look-up on a goal's first
delivery, and the plan waiting for an answer taken from what the planner committed,
never kept past another writer's commit; on every stack of tests/event_stacks.py."""

from __future__ import annotations

import asyncio
import collections
from typing import Any

from tests.bus_contract import async_test, eventually
from tests.event_stacks import Stack, stack_fixture  # noqa: F401
from waygraph.events import (
    InProcessBus,
    PlanContext,
    Planner,
    StateAction,
    StateConfig,
    StateTransition,
    Topic,
)
from waygraph.events.bus import DELIVERY, first_delivery
from waygraph.store import Store, open_store

SM = {
    "start": StateConfig(state_name="start", default_next="working"),
    "working": StateConfig(
        state_name="working",
        action=StateAction(event_type="reads.work.requested", response_event="reads.work.done"),
        transitions=[StateTransition(on_event="reads.work.done", to_state="done")],
    ),
    "done": StateConfig(state_name="done", is_terminal=True),
}


class Counted:
    """``store`` with its reads counted: ``gets[key]``, ``lists[correlation id]``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.gets: collections.Counter[str] = collections.Counter()
        self.lists: collections.Counter[str] = collections.Counter()
        get, listing = store.get, store.list

        def counted_get(key: str) -> Any:
            self.gets[key] += 1
            return get(key)

        def counted_list(**filters: Any) -> Any:
            self.lists[filters.get("correlation_id") or ""] += 1
            return listing(**filters)

        store.get = counted_get  # type: ignore[method-assign]
        store.list = counted_list  # type: ignore[method-assign]


def counted_planner(stack: Stack) -> tuple[Planner, Store, Counted]:
    """A planner "reads" on ``stack`` whose store's reads are counted (its cache on, as
    for a store in another process, on every stack)."""
    store = open_store(stack.store_url)
    reads = Counted(store)
    planner = Planner("reads", bus=stack.bus(), store=store, recovery_interval=None)
    planner.context.cache.enabled = True
    return planner, store, reads


def cached_planner(stack: Stack) -> Planner:
    """A planner "reads" on ``stack``'s store, its cache on on every stack."""
    planner = Planner("reads", bus=stack.bus(), store=stack.store_url, recovery_interval=None)
    planner.context.cache.enabled = True
    return planner


def test_only_a_store_in_another_process_is_worth_a_cached_copy(tmp_path: Any) -> None:
    for url, kept in (("memory://", False), (f"sqlite:///{tmp_path / 'p.db'}", False)):
        planner = Planner("reads", bus=InProcessBus(), store=url, recovery_interval=None)
        assert planner.context.cache.enabled is kept, url
        planner.store.close()


def test_a_postgresql_planner_keeps_cached_copies(postgres_url: str) -> None:
    planner = Planner("reads", bus=InProcessBus(), store=postgres_url, recovery_interval=None)
    try:
        assert planner.context.cache.enabled
    finally:
        planner.store.close()


async def running_planner(stack: Stack) -> tuple[Planner, Store, Counted]:
    """:func:`counted_planner`, running plans of SM for its goals."""
    planner, store, reads = counted_planner(stack)
    planner.on_goal("reads.goal", state_machine=SM)
    await planner.start()
    return planner, store, reads


def test_only_a_bus_that_counts_deliveries_says_first_delivery() -> None:
    assert not first_delivery("e1")  # no bus said anything
    token = DELIVERY.set(("e1", 1))
    try:
        assert first_delivery("e1")
        assert not first_delivery("e2")  # another event than the one being handled
    finally:
        DELIVERY.reset(token)
    token = DELIVERY.set(("e1", 2))
    try:
        assert not first_delivery("e1")  # a redelivery
    finally:
        DELIVERY.reset(token)


@async_test(60)
async def test_a_goals_first_delivery_looks_up_no_plan_and_a_redelivery_does(
    stack: Stack,
) -> None:
    planner, store, reads = counted_planner(stack)
    calls: list[str] = []

    @planner.on_goal("reads.goal")
    async def start(goal: Any, context: Any) -> None:
        calls.append(goal.id)
        await PlanContext.create_from_goal(goal, state_machine=SM, context=context, start=True)
        if len(calls) == 1:
            raise RuntimeError("lost after the commit: the goal is delivered again")

    await planner.start()
    client = stack.bus()
    await client.start()
    try:
        goal = client.envelope("reads.goal", {}, correlation_id="c-reads")
        await client.publish(goal, Topic.ACTION_REQUESTS)
        plan_id = planner_plan_id(goal)
        await eventually(lambda: reads.gets[plan_id] >= 1, 20, "the redelivery's look-up")
        await stack.settle(1.0)
        # NATS says which delivery is the first: it ran the handler without a
        # look-up; the redelivery looked, found the plan started and did not run
        # it again. The in-process bus cannot tell a redelivery from a second
        # publish of the goal, so both deliveries look.
        assert calls == [goal.id]
        assert reads.gets[plan_id] == (1 if stack.kind == "nats+postgres" else 2)
        plan = await PlanContext.restore(plan_id, planner.context)
        assert plan.current_state == "working"
    finally:
        await planner.close()
        await client.close()
        store.close()
        await stack.close()


def planner_plan_id(goal: Any) -> str:
    from waygraph.events._planner_context import plan_id_for

    return plan_id_for(goal)


async def started_plan(stack: Stack, planner: Planner) -> tuple[PlanContext, str]:
    """A plan of SM started on ``planner`` (waiting for its worker), and its request's id."""
    goal = planner.bus.envelope("reads.goal", {}, correlation_id="c-" + planner.name)
    plan = await PlanContext.create_from_goal(
        goal, state_machine=SM, context=planner.context, start=True
    )
    assert plan.awaiting is not None
    return plan, plan.awaiting["correlation_id"]


@async_test(60)
async def test_the_answer_moves_the_plan_committed_here_without_reading_it(
    stack: Stack,
) -> None:
    planner, store, reads = await running_planner(stack)
    try:
        plan, waits_on = await started_plan(stack, planner)
        await planner.bus.respond("reads.work.done", {"ok": 1}, waits_on)
        await eventually(lambda: planner.context.cache.waiting_for(waits_on) is None, 20)
        await stack.settle()
        done = await PlanContext.restore(plan.plan_id, planner.context)
        assert done.status == "completed" and done.results["working"] == {"ok": 1}
        assert reads.lists[waits_on] == 0
    finally:
        await planner.close()
        store.close()
        await stack.close()


@async_test(60)
async def test_a_plan_another_writer_changed_is_never_moved_from_the_cached_copy(
    stack: Stack,
) -> None:
    planner = cached_planner(stack)
    planner.on_goal("reads.goal", state_machine=SM)
    await planner.start()
    # Another process's planner of the same name, on the same store: its commits
    # do not pass through this planner's cache (not started: the answer goes to ours).
    other_bus = stack.bus()
    await other_bus.start()
    other = Planner("reads", bus=other_bus, store=stack.store_url, recovery_interval=None)
    try:
        plan, waits_on = await started_plan(stack, planner)
        assert planner.context.cache.waiting_for(waits_on) is not None
        theirs = await PlanContext.restore(plan.plan_id, other.context)
        await theirs.pause("held by an operator")
        await planner.bus.respond("reads.work.done", {"ok": 1}, waits_on)
        await stack.settle(1.0)
        await asyncio.sleep(0.2)
        now = await PlanContext.restore(plan.plan_id, planner.context)
        # The cached copy (running, waiting) would have taken the answer; the
        # version check found the pause, and the paused plan refused it.
        assert (now.status, now.current_state) == ("paused", "working")
        assert now.pause_reason == "held by an operator"
        assert "working" not in now.results
        # The paused plan waits on nothing: it is no longer kept.
        assert planner.context.cache.waiting_for(waits_on) is None
    finally:
        await planner.close()
        await other.close()
        await stack.close()


@async_test(60)
async def test_a_commit_made_here_replaces_the_cached_copy(stack: Stack) -> None:
    planner = cached_planner(stack)
    planner.on_goal("reads.goal", state_machine=SM)
    await planner.start()
    try:
        plan, waits_on = await started_plan(stack, planner)
        kept = planner.context.cache.waiting_for(waits_on)
        assert kept is not None and kept.version == plan.version
        again = await PlanContext.restore(plan.plan_id, planner.context)
        again.results["note"] = "kept"
        await again.save()
        kept = planner.context.cache.waiting_for(waits_on)
        assert kept is not None and kept.version == again.version == plan.version + 1
        # Changing the object handed out changes nothing kept.
        again.results["note"] = "not saved"
        from waygraph.events._plan_records import cached

        assert cached(PlanContext, kept, planner.context).results["note"] == "kept"
        await again.pause("wait")
        assert planner.context.cache.waiting_for(waits_on) is None
    finally:
        await planner.close()
        await stack.close()


@async_test(60)
async def test_a_finished_plans_answer_and_dependents_are_listed_in_its_commit(
    stack: Stack,
) -> None:
    planner, store, reads = await running_planner(stack)
    try:
        plan, waits_on = await started_plan(stack, planner)
        later = planner.bus.envelope("reads.goal", {}, correlation_id="c-later")
        dependent = await PlanContext.create_from_goal(
            later, state_machine=SM, context=planner.context, depends_on=[plan.plan_id], start=True
        )
        assert dependent.status == "pending"
        await planner.bus.respond("reads.work.done", {"ok": 1}, waits_on)

        async def started() -> bool:
            now = await PlanContext.restore(dependent.plan_id, planner.context)
            return now.status == "running" and now.current_state == "working"

        for _ in range(200):
            if await started():
                break
            await asyncio.sleep(0.05)
        assert await started(), "the dependent plan did not start"
        await stack.settle()
        # Who else may take the answer, and who waited for the plan: read by the
        # finishing commit (in its round trip on PostgreSQL; listed there by the
        # other stores), not again when the answer and plan.completed arrive.
        once = 0 if stack.kind == "nats+postgres" else 1
        assert reads.lists["c-reads"] == once
        assert reads.lists["waygraph:after:" + plan.plan_id] == once
    finally:
        await planner.close()
        store.close()
        await stack.close()
