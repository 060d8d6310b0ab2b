"""The event planner: execute_next sends one request per state, a plan pauses and resumes
on an event, and a goal missing a template's data fails its plan;
on every stack of tests/event_stacks.py, with the research planner of tests/research_planner.py."""

from __future__ import annotations

import asyncio
import uuid

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
    Transition,
    Worker,
)


@async_test(60)
async def test_an_approval_event_resumes_a_paused_plan(stack: Stack) -> None:
    bus = stack.bus()
    planner = Planner(unique("publisher"), bus=bus, store=stack.store_url)
    worker = Worker(unique("press"), bus=bus)
    machine = {
        "start": StateConfig(state_name="start", default_next="drafting"),
        "drafting": StateConfig(
            state_name="drafting",
            action=StateAction(event_type="draft.requested"),
            transitions=[StateTransition(on_event="draft.completed", to_state="publishing")],
        ),
        "publishing": StateConfig(
            state_name="publishing",
            action=StateAction(event_type="publish.requested"),
            transitions=[StateTransition(on_event="publish.completed", to_state="done")],
        ),
        "done": StateConfig(state_name="done", is_terminal=True),
    }
    published: list[str] = []
    resumed: list[bool] = []

    @planner.on_goal("post.goal")
    async def start(goal, context):  # type: ignore[no-untyped-def]
        plan = await PlanContext.create_from_goal(goal, state_machine=machine, context=context)
        await plan.execute_next()

    @planner.on_transition()
    async def advance(transition: Transition, context):  # type: ignore[no-untyped-def]
        plan = transition.plan
        if transition.next_state == "publishing":
            # Hold the plan before the publish request goes out.
            await plan.execute_next(transition.event, pause="an editor must approve publishing")
        else:
            await plan.execute_next(transition.event)
        if plan.is_complete():
            await plan.finalize(plan.results)

    @planner.on_event(Topic.BUSINESS_FACTS, "approval.granted")
    async def approve(event, context):  # type: ignore[no-untyped-def]
        plan = await PlanContext.restore_by_correlation(event.correlation_id, context)
        resumed.append(await plan.resume(event.data, event=event))

    @worker.on_task("draft.requested")
    async def draft(task, context):  # type: ignore[no-untyped-def]
        return {"text": "hello"}

    @worker.on_task("publish.requested")
    async def publish(task, context):  # type: ignore[no-untyped-def]
        published.append(task.correlation_id)
        return {"url": "https://example.org/post"}

    notices: list[Envelope] = []

    async def notice(event: Envelope) -> None:
        notices.append(event)

    try:
        await bus.start()
        await planner.start()
        await worker.start()
        await bus.subscribe(Topic.NOTIFICATION_EVENTS, "plan.paused", notice)
        waiting = asyncio.ensure_future(bus.ask("post.goal", {}, "post.goal.completed", timeout=20))
        await eventually(lambda: len(notices) == 1, timeout=10, what="the pause notice")
        plan_id = notices[0].data["plan_id"]
        await stack.settle()
        plan = await PlanContext.restore(plan_id, planner.context)
        assert plan.status == "paused" and plan.current_state == "publishing"
        assert plan.pause_reason == notices[0].data["reason"] == "an editor must approve publishing"
        assert published == [] and not waiting.done()

        approval = bus.envelope(
            "approval.granted", {"by": "editor"}, correlation_id=plan.correlation_id
        )
        await bus.publish(approval, Topic.BUSINESS_FACTS)
        answer = await waiting
        assert answer.data["status"] == "completed"
        assert answer.data["result"]["resume_input"] == {"by": "editor"}
        assert answer.data["result"]["publishing"] == {"url": "https://example.org/post"}
        assert len(published) == 1
        # A second approval (NATS would drop a re-sent one by its id) changes nothing.
        second = bus.envelope(
            "approval.granted", {"by": "other"}, correlation_id=plan.correlation_id
        )
        await bus.publish(second, Topic.BUSINESS_FACTS)
        await eventually(lambda: len(resumed) == 2, timeout=10, what="the second approval")
        assert resumed == [True, False]
    finally:
        await worker.close()
        await planner.close()
        await stack.close()


@async_test(60)
async def test_a_plan_paused_mid_request_ignores_the_old_answer_and_asks_again(
    stack: Stack,
) -> None:
    # No worker and no started planner: this test alone answers the requests.
    bus = stack.bus()
    await bus.start()
    planner = Planner(unique("research-planner"), bus=bus, store=stack.store_url)
    ctx = planner.context
    requests: list[Envelope] = []

    async def spy(event: Envelope) -> None:
        requests.append(event)

    try:
        await bus.subscribe(Topic.ACTION_REQUESTS, "analysis.requested", spy)
        goal = bus.envelope("research.goal", {"topic": "x"}, correlation_id=uuid.uuid4().hex)
        plan = await PlanContext.create_from_goal(goal, state_machine=SM, context=ctx)
        # On "searching", awaiting "req-old": fields are read-only, a changed copy is saved.
        plan = plan.model_copy(
            update={
                "started": True,
                "current_state": "searching",
                "awaiting": {"correlation_id": "req-old"},
                "correlation_ids": [*plan.correlation_ids, "req-old"],
            }
        )
        await plan.save()
        assert await plan.pause("waiting for a person") is True
        assert await plan.pause("again") is False
        late = bus.envelope("web.search.completed", {"count": 1}, correlation_id="req-old")
        assert plan.accepts(late) is None
        assert await plan.execute_next(late) is False
        assert await plan.resume({"ok": True}) is True
        assert await plan.resume({"ok": True}) is False
        assert plan.status == "running" and plan.results["resume_input"] == {"ok": True}
        assert plan.results["user_input"] == {"ok": True}  # document 002's name
        new_request = plan.awaiting["correlation_id"]
        assert new_request != "req-old" and new_request in plan.correlation_ids
        assert plan.accepts(late) is None  # still the old request's answer
        answer = bus.envelope("web.search.completed", {"count": 1}, correlation_id=new_request)
        assert plan.accepts(answer) == "analyzing"
        assert await plan.execute_next(answer) is True
        assert plan.current_state == "analyzing"
        await eventually(lambda: len(requests) == 1, timeout=10, what="the analysis request")
        assert requests[0].data == {
            "found": {
                "searching": {"count": 1},
                "user_input": {"ok": True},
                "resume_input": {"ok": True},
            }
        }
    finally:
        await planner.close()
        await stack.close()


@async_test(60)
async def test_the_first_execute_next_sends_one_request_and_a_second_changes_nothing(
    stack: Stack,
) -> None:
    bus = stack.bus()
    await bus.start()
    planner = Planner(unique("research-planner"), bus=bus, store=stack.store_url)
    requests: list[Envelope] = []

    async def spy(event: Envelope) -> None:
        requests.append(event)

    try:
        await bus.subscribe(Topic.ACTION_REQUESTS, "web.search.requested", spy)
        goal = bus.envelope(
            "research.goal", {"topic": "graphs"}, correlation_id="g", session_id="s"
        )
        plan = await PlanContext.create_from_goal(goal, state_machine=SM, context=planner.context)
        again = await PlanContext.create_from_goal(goal, state_machine=SM, context=planner.context)
        assert again.plan_id == plan.plan_id and again.version == plan.version == 1
        assert plan.status == "running" and not plan.started and plan.current_state == "start"
        assert await plan.execute_next() is True
        # One commit: the state with its request; the request's mark waits for the next one.
        assert plan.current_state == "searching" and plan.version == 2
        assert await plan.execute_next() is False
        assert await again.execute_next() is False  # a stale copy reloads and finds it done
        await eventually(lambda: len(requests) == 1, timeout=10, what="the request")
        await stack.settle()
        [request] = requests
        assert request.data == {"query": "graphs"}
        assert request.correlation_id == plan.awaiting["correlation_id"] != "g"
        assert request.response_event == "web.search.completed"
        assert (request.plan_id, request.session_id, request.goal_id) == (
            plan.plan_id,
            "s",
            goal.id,
        )
        assert request.source == planner.context.source
        assert len(requests) == 1
    finally:
        await planner.close()
        await stack.close()


@async_test(60)
async def test_a_goal_without_the_data_a_template_needs_fails_its_plan(stack: Stack) -> None:
    async with research(stack) as r:
        answer = await r.bus.ask("research.goal", {"subject": "oops"}, "research.done", timeout=15)
        assert answer.data["status"] == "failed"
        error = answer.data["result"]
        assert "template {goal_data.topic} has no value" in error["error"]
        assert error["field"] == "searching.action.data.query" and error["state"] == "start"
        plan = await PlanContext.restore(answer.data["plan_id"], r.planner.context)
        assert plan.status == "failed" and r.searches == []
