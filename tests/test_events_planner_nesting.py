"""The event planner: nested plans link by parent_plan_id and a plan waits for the plans
it depends on; on every stack of tests/event_stacks.py,
with the research planner of tests/research_planner.py."""

from __future__ import annotations

import asyncio

from tests.bus_contract import async_test, eventually
from tests.event_stacks import Stack, stack_fixture  # noqa: F401
from tests.research_planner import (
    SM,
    research,
    unique,
)
from waygraph.events import (
    Envelope,
    PlanContext,
    Planner,
    StateAction,
    StateConfig,
    StateTransition,
    Topic,
    Worker,
)


@async_test(60)
async def test_nested_plans_link_by_parent_plan_id(stack: Stack) -> None:
    bus = stack.bus()
    parent_planner = Planner(unique("editor"), bus=bus, store=stack.store_url)
    child_planner = Planner(unique("writer"), bus=bus, store=stack.store_url)
    worker = Worker(unique("typist"), bus=bus)
    parent_sm = {
        "start": StateConfig(state_name="start", default_next="delegating"),
        "delegating": StateConfig(
            state_name="delegating",
            action=StateAction(
                event_type="chapter.goal",
                response_event="chapter.done",
                data={"title": "{goal_data.book}: chapter 1"},
            ),
            transitions=[
                StateTransition(
                    on_event="chapter.done", to_state="done", condition="data.status == 'completed'"
                ),
                StateTransition(on_event="chapter.done", to_state="failed"),
            ],
        ),
        "done": StateConfig(state_name="done", is_terminal=True),
        "failed": StateConfig(state_name="failed", is_terminal=True),
    }
    child_sm = {
        "start": StateConfig(state_name="start", default_next="typing"),
        "typing": StateConfig(
            state_name="typing",
            action=StateAction(event_type="type.requested", data={"title": "{goal_data.title}"}),
            default_next="done",
        ),
        "done": StateConfig(state_name="done", is_terminal=True),
    }

    @parent_planner.on_goal("book.goal")
    async def book(goal, context):  # type: ignore[no-untyped-def]
        plan = await PlanContext.create_from_goal(goal, state_machine=parent_sm, context=context)
        await plan.execute_next()

    @child_planner.on_goal("chapter.goal")
    async def chapter(goal, context):  # type: ignore[no-untyped-def]
        plan = await PlanContext.create_from_goal(goal, state_machine=child_sm, context=context)
        await plan.execute_next()

    @worker.on_task("type.requested")
    async def type_it(task, context):  # type: ignore[no-untyped-def]
        return {"words": len(task.data["title"].split())}

    try:
        for part in (parent_planner, child_planner, worker):
            await part.start()
        answer = await bus.ask("book.goal", {"book": "Graphs"}, "book.done", timeout=20)
        assert answer.data["status"] == "completed"
        parent = await PlanContext.restore(answer.data["plan_id"], parent_planner.context)
        [child] = await parent.children()
        assert child.parent_plan_id == parent.plan_id
        assert child.planner == child_planner.name and child.status == "completed"
        assert child.goal_data == {"title": "Graphs: chapter 1"}
        assert (await child.parent()).plan_id == parent.plan_id
        # The child answered on the parent's request correlation id.
        assert child.correlation_id in parent.correlation_ids
        assert parent.results["delegating"]["result"]["results"]["typing"] == {"words": 3}
    finally:
        await worker.close()
        await child_planner.close()
        await parent_planner.close()
        await stack.close()


@async_test(60)
async def test_a_plan_waits_for_the_plans_it_depends_on(stack: Stack) -> None:
    async with research(stack) as r:
        ctx = r.planner.context
        first = await PlanContext.create_from_goal(
            r.bus.envelope("research.goal", {"topic": "hit"}), state_machine=SM, context=ctx
        )
        second = await PlanContext.create_from_goal(
            r.bus.envelope("research.goal", {"topic": "late"}, correlation_id="after-1"),
            state_machine=SM,
            context=ctx,
            depends_on=[first.plan_id],
        )
        assert second.status == "pending"
        assert await second.execute_next() is False  # the dependency is still running
        assert second.status == "pending" and not second.started
        await first.execute_next()

        async def status(plan_id: str) -> str:
            return (await PlanContext.restore(plan_id, ctx)).status

        statuses: dict[str, str] = {}

        async def poll() -> None:
            while (await status(second.plan_id)) != "completed":
                await asyncio.sleep(0.02)
            statuses["first"] = await status(first.plan_id)

        await asyncio.wait_for(poll(), 15)
        assert statuses["first"] == "completed"

        # A failed dependency fails the plan waiting for it, which answers its goal.
        broken = await PlanContext.create_from_goal(
            r.bus.envelope("research.goal", {"topic": "boom"}), state_machine=SM, context=ctx
        )
        answers: list[Envelope] = []

        async def collect(event: Envelope) -> None:
            answers.append(event)

        await r.bus.subscribe(Topic.ACTION_RESULTS, "waiting.done", collect)
        waiting = await PlanContext.create_from_goal(
            r.bus.envelope(
                "research.goal", {"topic": "hit"}, correlation_id="w", response_event="waiting.done"
            ),
            state_machine=SM,
            context=ctx,
            depends_on=[broken.plan_id],
        )
        await broken.execute_next()
        await eventually(lambda: len(answers) == 1, timeout=15, what="the waiting plan's answer")
        assert answers[0].data["status"] == "failed"
        assert answers[0].data["result"]["error"] == f"dependency {broken.plan_id!r} failed"
        assert (await status(waiting.plan_id)) == "failed"
