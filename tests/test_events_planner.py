"""The event planner suite (the issue's list), on every stack of tests/event_stacks.py.

Planners, workers and plans here are the user-code shape of the issue: a
``research-planner`` with ``on_goal`` / ``on_transition``, a worker with
``on_task``, and the search state machine with its retry, ask-the-user and
failure branches.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.bus_contract import async_test, eventually
from tests.event_stacks import Stack, stack_fixture  # noqa: F401
from waygraph.errors import Conflict, PlanContextNotFoundError
from waygraph.events import (
    Bus,
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


def search_transitions(no_results: str) -> list[StateTransition]:
    return [
        StateTransition(
            on_event="web.search.completed", to_state="analyzing", condition="data.count > 0"
        ),
        StateTransition(on_event="web.search.completed", to_state=no_results),
        StateTransition(on_event="web.search.failed", to_state="failed"),
    ]


SM: dict[str, StateConfig] = {
    "start": StateConfig(state_name="start", description="begin", default_next="searching"),
    "searching": StateConfig(
        state_name="searching",
        description="search",
        action=StateAction(
            event_type="web.search.requested",
            response_event="web.search.completed",
            data={"query": "{goal_data.topic}"},
        ),
        transitions=search_transitions("retry_search"),
    ),
    "retry_search": StateConfig(
        state_name="retry_search",
        action=StateAction(
            event_type="web.search.requested",
            response_event="web.search.completed",
            data={"query": "{goal_data.topic}", "retry": True},
        ),
        transitions=search_transitions("ask_user"),
    ),
    "ask_user": StateConfig(
        state_name="ask_user",
        action=StateAction(event_type="user.input.requested", data={"about": "{goal_data.topic}"}),
        transitions=[StateTransition(on_event="user.input.completed", to_state="analyzing")],
    ),
    "analyzing": StateConfig(
        state_name="analyzing",
        action=StateAction(event_type="analysis.requested", data={"found": "{results}"}),
        transitions=[StateTransition(on_event="analysis.completed", to_state="done")],
    ),
    "done": StateConfig(state_name="done", is_terminal=True),
    "failed": StateConfig(state_name="failed", is_terminal=True),
}


@dataclass
class Research:
    """A running planner + worker pair and what their handlers saw."""

    bus: Bus
    planner: Planner
    worker: Worker
    goals: list[tuple[Envelope, Any]] = field(default_factory=list)
    transitions: list[tuple[str, str, str, str | None]] = field(default_factory=list)
    searches: list[dict[str, Any]] = field(default_factory=list)

    async def ask(self, topic: str, timeout: float = 15, **attributes: Any) -> Envelope:
        return await self.bus.ask(
            "research.goal", {"topic": topic}, "research.done", timeout=timeout, **attributes
        )

    async def path(self, plan_id: str) -> list[str]:
        store = self.planner.store
        events = await asyncio.to_thread(store.events, plan_id)
        return [e.data["state"] for e in events if e.data["type"] == "state_entered"]


def search_result(query: str, retry: bool) -> dict[str, Any]:
    if query == "boom":
        raise RuntimeError("the search engine is down")
    hits = {"hit": 2, "late": 2 if retry else 0}.get(query, 0)
    return {"count": hits, "hits": [f"{query}-{i}" for i in range(hits)]}


async def restore_settled(plan_id: str, context: Any, timeout: float = 10) -> PlanContext:
    """The plan once its outbox is marked published (which follows the publish itself)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        plan = await PlanContext.restore(plan_id, context)
        if not plan.outbox or asyncio.get_running_loop().time() > deadline:
            return plan
        await asyncio.sleep(0.02)


def unique(name: str) -> str:
    # Plans of every test share one PostgreSQL schema; names keep their queries apart.
    return f"{name}-{uuid.uuid4().hex[:8]}"


@asynccontextmanager
async def research(stack: Stack, *, planner_bus: Bus | None = None) -> AsyncIterator[Research]:
    bus = stack.bus()
    planner = Planner(unique("research-planner"), bus=planner_bus or bus, store=stack.store_url)
    worker = Worker(unique("researcher"), bus=bus)
    setup = Research(bus, planner, worker)

    @planner.on_goal("research.goal")
    async def start_research(goal, context):  # type: ignore[no-untyped-def]
        setup.goals.append((goal, context))
        plan = await PlanContext.create_from_goal(goal, state_machine=SM, context=context)
        await plan.execute_next()

    @planner.on_transition()
    async def advance(transition, context):  # type: ignore[no-untyped-def]
        setup.transitions.append(
            (
                transition.plan.plan_id,
                transition.plan.current_state,
                transition.next_state,
                transition.event.correlation_id,
            )
        )
        await transition.plan.execute_next(transition.event)
        if transition.plan.is_complete():
            await transition.plan.finalize({"summary": transition.plan.results})

    @worker.on_task("web.search.requested")
    async def search(task, context):  # type: ignore[no-untyped-def]
        setup.searches.append(task.data)
        return search_result(task.data["query"], bool(task.data.get("retry")))

    @worker.on_task("user.input.requested")
    async def ask_user(task, context):  # type: ignore[no-untyped-def]
        return {"answer": f"look for {task.data['about']} papers"}

    @worker.on_task("analysis.requested")
    async def analyse(task, context):  # type: ignore[no-untyped-def]
        return {"summary": sorted(task.data["found"])}

    await bus.start()
    await planner.start()
    await worker.start()
    try:
        yield setup
    finally:
        await worker.close()
        await planner.close()
        await stack.close()


# ---------------------------------------------------------------- the seed's list


@async_test(60)
async def test_transitions_by_event_type_through_every_branch(stack: Stack) -> None:
    async with research(stack) as r:
        topics = ["hit", "late", "none", "boom"]
        answers = await asyncio.gather(*(r.ask(t) for t in topics))
        by_topic = dict(zip(topics, answers, strict=True))
        paths = {t: await r.path(a.data["plan_id"]) for t, a in by_topic.items()}
        assert paths == {
            "hit": ["searching", "analyzing", "done"],
            "late": ["searching", "retry_search", "analyzing", "done"],
            "none": ["searching", "retry_search", "ask_user", "analyzing", "done"],
            "boom": ["searching", "failed"],
        }
        assert [a.data["status"] for a in answers] == ["completed"] * 3 + ["failed"]
        none = by_topic["none"].data["result"]["summary"]
        assert none["ask_user"] == {"answer": "look for none papers"}
        assert none["analyzing"] == {"summary": ["ask_user", "retry_search", "searching"]}
        failure = by_topic["boom"].data["result"]["summary"]["searching"]
        assert failure["error_type"] == "RuntimeError"
        assert "down" in failure["error"]
        # The template filled the query from the goal's data.
        assert sorted(s["query"] for s in r.searches) == sorted(
            ["hit", "late", "late", "none", "none", "boom"]
        )


@async_test(60)
async def test_on_goal_receives_the_goal_and_the_planner_context(stack: Stack) -> None:
    async with research(stack) as r:
        answer = await r.ask("hit", session_id="s-1", user_id="u-1", tenant_id="t-1")
        [(goal, context)] = r.goals
        assert goal.type == "research.goal"
        assert goal.data == {"topic": "hit"}
        assert goal.correlation_id == answer.correlation_id
        assert goal.response_event == "research.done"
        assert goal.session_id == "s-1" and goal.user_id == "u-1" and goal.tenant_id == "t-1"
        assert context is r.planner.context
        assert context.bus is r.planner.bus and context.store is r.planner.store
        plan = await PlanContext.restore(answer.data["plan_id"], context)
        assert (plan.session_id, plan.user_id, plan.tenant_id) == ("s-1", "u-1", "t-1")
        assert plan.goal_event == "research.goal" and plan.goal_data == {"topic": "hit"}
        # Plans group by session; the store lists them by session and status.
        listed = await r.planner.plans(session="s-1", status="completed")
        assert [p.plan_id for p in listed] == [plan.plan_id]
        assert await r.planner.plans(session="s-1", status="running") == []


@async_test(60)
async def test_on_transition_routes_events_to_plans_by_correlation_id(stack: Stack) -> None:
    async with research(stack) as r:
        topics = [f"t{i}" for i in range(4)] + ["hit"]
        answers = await asyncio.gather(*(r.ask(t) for t in topics))
        for topic, answer in zip(topics, answers, strict=True):
            plan = await PlanContext.restore(answer.data["plan_id"], r.planner.context)
            assert plan.goal_data["topic"] == topic
            assert answer.correlation_id == plan.correlation_id
            again = await PlanContext.restore_by_correlation(answer.correlation_id, plan.context)
            assert again is not None and again.plan_id == plan.plan_id
            seen = [t for t in r.transitions if t[0] == plan.plan_id]
            assert seen, f"no transition reached plan {plan.plan_id}"
            for _, _, _, correlation_id in seen:
                # Every event that reached the plan answered one of its own requests.
                assert correlation_id in plan.correlation_ids
                assert correlation_id != plan.correlation_id
        assert len({t[3] for t in r.transitions}) == len(r.transitions)


@async_test(60)
async def test_conditions_are_evaluated_over_event_data_and_results(stack: Stack) -> None:
    async with research(stack) as r:
        goal = r.bus.envelope("research.goal", {"topic": "x"}, correlation_id=uuid.uuid4().hex)
        plan = await PlanContext.create_from_goal(goal, state_machine=SM, context=r.planner.context)

        def reply(data: dict[str, Any]) -> Envelope:
            return r.bus.envelope("web.search.completed", data, correlation_id="c")

        assert plan.get_next_state(reply({"count": 3})) is None  # still at start
        plan.current_state = "searching"
        assert plan.get_next_state(reply({"count": 3})) == "analyzing"
        assert plan.get_next_state(reply({"count": 0})) == "retry_search"
        assert plan.get_next_state(reply({"count": "3"})) == "retry_search"  # no coercion
        assert plan.get_next_state(reply({})) == "retry_search"  # missing is not > 0
        failed = r.bus.envelope("web.search.failed", {"error": "x"})
        assert plan.get_next_state(failed) == "failed"
        assert plan.get_next_state(r.bus.envelope("something.else")) is None

        machine = {
            "start": StateConfig(state_name="start", default_next="wait"),
            "wait": StateConfig(
                state_name="wait",
                transitions=[
                    StateTransition(
                        on_event="tick",
                        to_state="big",
                        condition="data.n >= 5 && data.tag in ['a', 'b'] && results.limit.on",
                    ),
                    StateTransition(on_event="tick", to_state="small", condition="!data.stop"),
                ],
            ),
            "big": StateConfig(state_name="big", is_terminal=True),
            "small": StateConfig(state_name="small", is_terminal=True),
        }
        other = await PlanContext.create_from_goal(
            r.bus.envelope("g", {}), state_machine=machine, context=r.planner.context
        )
        other.current_state = "wait"
        other.results["limit"] = {"on": True}

        def tick(**data: Any) -> Envelope:
            return r.bus.envelope("tick", data)

        assert other.get_next_state(tick(n=7, tag="a")) == "big"
        assert other.get_next_state(tick(n=7, tag="c")) == "small"
        assert other.get_next_state(tick(n=2, tag="a")) == "small"
        assert other.get_next_state(tick(n=2, stop=True)) is None


@async_test(60)
async def test_finalize_publishes_on_the_explicit_response_event_once(stack: Stack) -> None:
    async with research(stack) as r:
        answers: list[Envelope] = []

        async def collect(event: Envelope) -> None:
            answers.append(event)

        await r.bus.subscribe(Topic.ACTION_RESULTS, "custom.answered", collect)
        await r.bus.subscribe(Topic.ACTION_RESULTS, "research.done", collect)
        sent = await r.bus.request("research.goal", {"topic": "hit"}, "custom.answered")
        await eventually(lambda: len(answers) == 1, timeout=10, what="the answer")
        [answer] = answers
        assert answer.type == "custom.answered"
        assert answer.correlation_id == sent.correlation_id
        assert answer.topic is Topic.ACTION_RESULTS
        assert answer.data["status"] == "completed"
        plan = await restore_settled(answer.data["plan_id"], r.planner.context)
        steps = {k: v for k, v in plan.results.items() if k != "final"}
        assert answer.data["result"] == {"summary": steps} == plan.result
        # Document 002: finalize keeps its result in results["final"] too.
        assert plan.results["final"] == plan.result
        assert plan.status == "completed" and plan.outbox == []
        version = plan.version
        assert await plan.finalize({"again": True}) is False
        await stack.settle()
        assert len(answers) == 1
        assert (await PlanContext.restore(plan.plan_id, plan.context)).version == version


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
        plan.started, plan.current_state = True, "searching"
        plan.awaiting = {"correlation_id": "req-old"}
        plan.correlation_ids.append("req-old")
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


@async_test(60)
async def test_a_redelivered_event_and_an_event_no_transition_accepts_change_nothing(
    stack: Stack,
) -> None:
    async with research(stack) as r:
        ctx = r.planner.context
        goal = r.bus.envelope("research.goal", {"topic": "x"}, correlation_id=uuid.uuid4().hex)
        plan = await PlanContext.create_from_goal(goal, state_machine=SM, context=ctx)
        plan.started, plan.current_state = True, "searching"
        plan.awaiting = {"correlation_id": "req-1"}
        plan.correlation_ids.append("req-1")
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
