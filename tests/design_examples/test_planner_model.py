"""Document 002, the Planner model, as it writes it (only the imports are waygraph's).

Its state machine example (section "State Machine Example"), its pause/resume
example, finalize on the goal's explicit response event, create_plan and
reason_next_action with a model (the shipped chat server), and its seven
"Tests to Add", each under the document's own name.

Where the document's sketch leaves plumbing out (who answers the requests,
how a test waits), the test adds it around the document's lines.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.bus_contract import async_test, eventually
from waygraph.events import (
    Envelope,
    GoalContext,
    InProcessBus,
    PlanContext,
    Planner,
    PlannerContext,
    StateAction,
    StateConfig,
    StateTransition,
    Topic,
    TransitionContext,
)
from waygraph.planning import OpenAILLM
from waygraph.testing import ScriptedChatServer

# The document's state machine, as written.
state_machine = {
    "start": StateConfig(
        state_name="start",
        description="Initial state",
        default_next="searching",
    ),
    "searching": StateConfig(
        state_name="searching",
        description="Searching for information",
        action=StateAction(
            event_type="web.search.requested",
            response_event="web.search.completed",
            data={"query": "{goal_data.topic}"},
        ),
        transitions=[
            # Different events lead to different states
            StateTransition(on_event="web.search.completed", to_state="analyzing"),
            StateTransition(on_event="web.search.failed", to_state="retry_search"),
            StateTransition(on_event="web.search.no_results", to_state="ask_user"),
        ],
    ),
    "retry_search": StateConfig(
        state_name="retry_search",
        description="Retry with broader query",
        action=StateAction(
            event_type="web.search.requested",
            response_event="web.search.completed",
            data={"query": "{goal_data.topic}", "broad": True},
        ),
        transitions=[
            StateTransition(on_event="web.search.completed", to_state="analyzing"),
            StateTransition(on_event="web.search.failed", to_state="failed"),
        ],
    ),
    "ask_user": StateConfig(
        state_name="ask_user",
        description="Ask user for clarification",
        action=StateAction(
            event_type="notification.human_input",
            response_event="user.clarification.provided",
            data={"question": "No results found. Can you provide more details?"},
        ),
        transitions=[
            StateTransition(on_event="user.clarification.provided", to_state="searching"),
        ],
    ),
    "analyzing": StateConfig(
        state_name="analyzing",
        description="Analyzing search results",
        action=StateAction(
            event_type="content.analyze.requested",
            response_event="content.analyze.completed",
        ),
        transitions=[
            StateTransition(on_event="content.analyze.completed", to_state="done"),
        ],
    ),
    "done": StateConfig(
        state_name="done",
        description="Plan completed successfully",
        is_terminal=True,
    ),
    "failed": StateConfig(
        state_name="failed",
        description="Plan failed",
        is_terminal=True,
    ),
}


class World:
    """The workers the document's states talk to, scripted per topic.

    A topic maps to the search outcomes in order ("completed", "failed",
    "no_results"); a person answers clarifications with "try graph theory".
    """

    def __init__(self, bus: InProcessBus, outcomes: dict[str, list[str]]) -> None:
        self.bus = bus
        self.outcomes = outcomes
        self.requests: list[Envelope] = []

    async def start(self) -> None:
        await self.bus.subscribe(Topic.ACTION_REQUESTS, "web.search.requested", self.search)
        await self.bus.subscribe(Topic.ACTION_REQUESTS, "content.analyze.requested", self.analyze)
        await self.bus.subscribe(Topic.ACTION_REQUESTS, "notification.human_input", self.person)

    async def search(self, event: Envelope) -> None:
        self.requests.append(event)
        topic = str(event.data["query"]).split(" (")[0]
        outcome = self.outcomes[topic].pop(0)
        await self.bus.respond(
            f"web.search.{outcome}",
            {"hits": [f"{event.data['query']} paper"]} if outcome == "completed" else {},
            event.correlation_id,
        )

    async def analyze(self, event: Envelope) -> None:
        self.requests.append(event)
        await self.bus.respond("content.analyze.completed", {"summary": "ok"}, event.correlation_id)

    async def person(self, event: Envelope) -> None:
        self.requests.append(event)
        await self.bus.respond(
            "user.clarification.provided", {"answer": "try graph theory"}, event.correlation_id
        )


def research_planner(bus: InProcessBus, store: Any = "memory://") -> Planner:
    planner = Planner("research-planner", bus=bus, store=store, recovery_interval=None)

    @planner.on_goal("research.goal")
    async def start(goal, context):  # type: ignore[no-untyped-def]
        plan = await PlanContext.create_from_goal(
            goal, state_machine=state_machine, context=context
        )
        await plan.execute_next()

    @planner.on_transition()
    async def step(transition, context):  # type: ignore[no-untyped-def]
        plan = transition.plan
        await plan.execute_next(transition.event)
        if plan.is_complete():
            await plan.finalize({"state": plan.current_state})

    return planner


async def run_goal(outcomes: list[str]) -> tuple[Envelope, PlanContext, World]:
    bus = InProcessBus()
    world = World(bus, {"graphs": outcomes})
    async with research_planner(bus) as planner:
        await world.start()
        answer = await bus.ask("research.goal", {"topic": "graphs"}, "research.done", timeout=10)
        plan = await PlanContext.restore(answer.data["plan_id"], planner.context)
    return answer, plan, world


# ---------------------------------------------------------------- the example


@async_test(30)
async def test_the_state_machine_example_follows_the_event_it_receives() -> None:
    answer, plan, world = await run_goal(["completed"])
    assert answer.data["result"] == {"state": "done"}
    assert plan.status == "completed" and plan.current_state == "done"
    assert [r.type for r in world.requests] == ["web.search.requested", "content.analyze.requested"]
    assert world.requests[0].data == {"query": "graphs"}  # "{goal_data.topic}" filled in


@async_test(30)
async def test_a_failed_search_is_retried_broader_then_analyzed() -> None:
    _, plan, world = await run_goal(["failed", "completed"])
    assert plan.current_state == "done"
    assert world.requests[1].data == {"query": "graphs", "broad": True}


@async_test(30)
async def test_a_second_failure_ends_in_the_failed_state() -> None:
    answer, plan, _ = await run_goal(["failed", "failed"])
    assert answer.data["status"] == "failed" and plan.status == "failed"
    assert plan.current_state == "failed"


@async_test(30)
async def test_no_results_asks_the_user_and_searches_again() -> None:
    _, plan, world = await run_goal(["no_results", "completed"])
    assert plan.current_state == "done"
    asked = world.requests[1]
    assert asked.type == "notification.human_input"
    assert asked.data == {"question": "No results found. Can you provide more details?"}
    assert plan.results["ask_user"] == {"answer": "try graph theory"}
    assert [r.type for r in world.requests][2:] == [
        "web.search.requested",
        "content.analyze.requested",
    ]


# ---------------------------------------------------------- pause and resume

approval_machine = {
    "start": StateConfig(state_name="start", default_next="quoting"),
    "quoting": StateConfig(
        state_name="quoting",
        description="Get a quote",
        action=StateAction(event_type="quote.requested", response_event="quote.completed"),
        transitions=[
            StateTransition(on_event="quote.completed", to_state="awaiting_budget_approval")
        ],
    ),
    "awaiting_budget_approval": StateConfig(
        state_name="awaiting_budget_approval",
        description="Buy, once the budget is approved",
        action=StateAction(
            event_type="purchase.requested",
            response_event="purchase.completed",
            data={"amount": "{results.user_input.approved_amount}"},
        ),
        transitions=[StateTransition(on_event="purchase.completed", to_state="done")],
    ),
    "done": StateConfig(state_name="done", is_terminal=True),
}


@async_test(30)
async def test_the_planner_pause_resume_example() -> None:
    bus = InProcessBus()
    planner = Planner("buyer", bus=bus, store="memory://", recovery_interval=None)
    purchases: list[Envelope] = []

    @planner.on_goal("purchase.goal")
    async def start(goal, context):  # type: ignore[no-untyped-def]
        plan = await PlanContext.create_from_goal(
            goal, state_machine=approval_machine, context=context
        )
        await plan.execute_next()

    # The document's handler. waygraph enters the state paused (execute_next's
    # pause=), so the purchase cannot go out before the approval.
    @planner.on_transition()
    async def handle_transition(transition, context):  # type: ignore[no-untyped-def]
        plan = transition.plan
        if transition.next_state == "awaiting_budget_approval":
            await plan.execute_next(transition.event, pause="budget_approval_required")
            return
        await plan.execute_next(transition.event)
        if plan.is_complete():
            await plan.finalize(plan.results["user_input"])

    # Resume is triggered by external event (e.g., webhook -> event): as written.
    @planner.on_event(topic="business-facts", event_type="budget.approved")
    async def handle_approval(event, context):  # type: ignore[no-untyped-def]
        plan = await PlanContext.restore_by_correlation(event.correlation_id)
        if plan and plan.status == "paused":
            await plan.resume({"approved_amount": event.data["amount"]})

    async def quote(event: Envelope) -> None:
        await bus.respond("quote.completed", {"price": 900}, event.correlation_id)

    async def purchase(event: Envelope) -> None:
        purchases.append(event)
        await bus.respond("purchase.completed", {}, event.correlation_id)

    async with planner:
        await bus.subscribe(Topic.ACTION_REQUESTS, "quote.requested", quote)
        await bus.subscribe(Topic.ACTION_REQUESTS, "purchase.requested", purchase)
        notices: list[Envelope] = []

        async def notice(event: Envelope) -> None:
            notices.append(event)

        await bus.subscribe(Topic.NOTIFICATION_EVENTS, "plan.paused", notice)
        answered = asyncio.ensure_future(
            bus.ask("purchase.goal", {"item": "gpu"}, "purchase.done", 10, correlation_id="c7")
        )
        await eventually(lambda: bool(notices), timeout=10, what="the pause notice")
        [plan] = await planner.plans()
        assert (plan.status, plan.current_state) == ("paused", "awaiting_budget_approval")
        assert plan.pause_reason == "budget_approval_required" and purchases == []
        approval = bus.envelope("budget.approved", {"amount": 1000}, correlation_id="c7")
        await bus.publish(approval, Topic.BUSINESS_FACTS)
        answer = await answered
        plan = await PlanContext.restore(plan.plan_id, planner.context)
    assert [p.data for p in purchases] == [{"amount": 1000}]
    assert answer.data["result"] == {"approved_amount": 1000}
    assert plan.results["user_input"] == {"approved_amount": 1000}


# ------------------------------------------------------ the model's interfaces

SEARCH = {"event_type": "web.search.requested", "data": {"query": "{goal_data.topic}"}}
MODEL_PLAN = {
    "states": [
        {"state_name": "start", "default_next": "searching"},
        {
            "state_name": "searching",
            "action": {
                "event_type": "web.search.requested",
                "data": {"query": "{goal_data.topic}"},
            },
            "transitions": [{"on_event": "web.search.completed", "to_state": "done"}],
        },
        {"state_name": "done", "is_terminal": True},
    ]
}


@async_test(30)
async def test_create_plan_returns_a_saved_plan_context() -> None:
    bus = InProcessBus()
    with ScriptedChatServer([json.dumps(MODEL_PLAN)]) as server:
        llm = OpenAILLM("scripted", base_url=server.base_url, api_key="test")
        planner = Planner("research-planner", bus=bus, store="memory://", llm=llm)
        agents = [{"name": "searcher", "tasks": ["web.search.requested"]}]
        made: list[PlanContext] = []

        @planner.on_goal("research.goal")
        async def start(goal, context):  # type: ignore[no-untyped-def]
            plan = await planner.create_plan(goal, agents, context)
            made.append(plan)
            await plan.execute_next()

        async with planner:
            await bus.request("research.goal", {"topic": "graphs"}, "research.done")
            await eventually(lambda: bool(made), timeout=10, what="the plan")
            [plan] = made
            assert isinstance(plan, PlanContext)
            assert plan.goal_data == {"topic": "graphs"} and list(plan.state_machine) == [
                "start",
                "searching",
                "done",
            ]
            stored = await PlanContext.restore(plan.plan_id, planner.context)
            assert stored.current_state == "searching"
            assert "web.search.requested" in server.requests[0]["messages"][1]["content"]


@async_test(30)
async def test_reason_next_action_returns_an_event_type_or_none() -> None:
    bus = InProcessBus()
    replies = [
        json.dumps({"event_type": "content.analyze.requested", "reason": "hits are in"}),
        json.dumps({"event_type": None, "reason": "the goal is reached"}),
    ]
    with ScriptedChatServer(replies) as server:
        llm = OpenAILLM("scripted", base_url=server.base_url, api_key="test")
        planner = Planner("research-planner", bus=bus, store="memory://", llm=llm)
        goal = bus.envelope("research.goal", {"topic": "graphs"}, correlation_id="c1")
        plan = await PlanContext.create_from_goal(
            goal, state_machine=state_machine, context=planner.context
        )
        event = bus.envelope("web.search.completed", {"hits": ["a"]}, correlation_id="c1")
        context = planner.context
        assert await planner.reason_next_action(plan, event, context) == (
            "content.analyze.requested"
        )
        assert await planner.reason_next_action(plan, event, context) is None
        assert len(server.requests) == 2


# ------------------------------------------------ the document's seven tests


@async_test(30)
async def test_plan_context_save_restore() -> None:
    """PlanContext should persist and restore from memory."""
    planner = Planner("p", bus=InProcessBus(), store="memory://")
    goal = planner.bus.envelope("research.goal", {"topic": "graphs"}, session_id="s1")
    plan = await PlanContext.create_from_goal(
        goal, state_machine=state_machine, context=planner.context
    )
    plan.results["notes"] = {"seen": 3}
    await plan.save()
    restored = await PlanContext.restore(plan.plan_id, planner.context)
    assert restored.results == {"notes": {"seen": 3}}
    assert (restored.goal_event, restored.goal_data, restored.session_id) == (
        "research.goal",
        {"topic": "graphs"},
        "s1",
    )
    assert restored.state_machine == plan.state_machine


@async_test(30)
async def test_planner_on_goal_creates_plan() -> None:
    """on_goal handler should receive GoalContext."""
    bus = InProcessBus()
    planner = Planner("p", bus=bus, store="memory://")
    seen: list[tuple[Any, Any]] = []

    @planner.on_goal("research.goal")
    async def start(goal, context):  # type: ignore[no-untyped-def]
        seen.append((goal, context))
        plan = await PlanContext.create_from_goal(
            goal, state_machine=state_machine, context=context
        )
        await plan.execute_next()

    async with planner:
        await bus.request("research.goal", {"topic": "graphs"}, "research.done")
        await eventually(lambda: bool(seen), timeout=10, what="the goal")
        [(goal, context)] = seen
        assert isinstance(goal, GoalContext) and isinstance(context, PlannerContext)
        assert (goal.event_type, goal.goal_data) == ("research.goal", {"topic": "graphs"})
        [plan] = await planner.plans()
        assert plan.current_state == "searching"


@async_test(30)
async def test_planner_on_transition_routes_events() -> None:
    """on_transition should match events to plans by correlation_id."""
    bus = InProcessBus()
    planner = Planner("p", bus=bus, store="memory://")
    seen: list[TransitionContext] = []

    @planner.on_goal("research.goal")
    async def start(goal, context):  # type: ignore[no-untyped-def]
        plan = await PlanContext.create_from_goal(
            goal, state_machine=state_machine, context=context
        )
        await plan.execute_next()

    @planner.on_transition()
    async def step(transition, context):  # type: ignore[no-untyped-def]
        seen.append(transition)
        await transition.plan.execute_next(transition.event)

    async with planner:
        for topic in ("graphs", "trees"):
            await bus.request("research.goal", {"topic": topic}, "research.done")
        await eventually(lambda: len(_awaiting(planner)) == 2, timeout=10, what="two requests")
        plans = {p.goal_data["topic"]: p for p in await planner.plans()}
        request = plans["trees"].awaiting
        assert request is not None
        await bus.respond("web.search.failed", {}, "no-such-correlation")
        await bus.respond("web.search.failed", {}, request["correlation_id"])
        await eventually(lambda: bool(seen), timeout=10, what="the transition")
        await asyncio.sleep(0.05)
    [transition] = seen
    assert isinstance(transition, TransitionContext)
    assert transition.plan.plan_id == plans["trees"].plan_id
    assert transition.event.type == "web.search.failed"
    assert transition.next_state == "retry_search"


def _awaiting(planner: Planner) -> list[str]:
    records = planner.store.list(kind="plan_context")
    return [r.data["awaiting"]["correlation_id"] for r in records if r.data.get("awaiting")]


def test_state_machine_transition() -> None:
    """State machine should transition based on event type."""
    plan = PlanContext(
        plan_id="p1",
        planner="p",
        goal_event="research.goal",
        goal={},
        state_machine=state_machine,
        current_state="searching",
    )

    def event(event_type: str) -> Envelope:
        return Envelope(source="worker", type=event_type)

    assert plan.get_next_state(event("web.search.completed")) == "analyzing"
    assert plan.get_next_state(event("web.search.failed")) == "retry_search"
    assert plan.get_next_state(event("web.search.no_results")) == "ask_user"
    assert plan.get_next_state(event("content.analyze.completed")) is None
    assert TransitionContext(event=event("web.search.failed"), plan=plan).next_state == (
        "retry_search"
    )


@async_test(30)
async def test_planner_finalize_uses_response_event() -> None:
    """finalize() should publish to the explicit response_event."""
    bus = InProcessBus()
    world = World(bus, {"graphs": ["completed"]})
    async with research_planner(bus) as planner:
        await world.start()
        answer = await bus.ask(
            "research.goal", {"topic": "graphs"}, "custom.answer.event", timeout=10
        )
        plan = await PlanContext.restore(answer.data["plan_id"], planner.context)
    assert answer.type == "custom.answer.event"
    assert answer.data["plan_id"] == plan.plan_id and answer.data["result"] == {"state": "done"}
    assert plan.results["final"] == {"state": "done"} and plan.status == "completed"


@async_test(30)
async def test_planner_pause_resume() -> None:
    """Plan should support pause/resume flow."""
    bus = InProcessBus()
    planner = Planner("p", bus=bus, store="memory://")
    goal = bus.envelope("research.goal", {"topic": "graphs"}, correlation_id="c1")
    plan = await PlanContext.create_from_goal(
        goal, state_machine=state_machine, context=planner.context
    )
    await plan.execute_next()
    assert await plan.pause()  # the document's default reason
    assert (plan.status, plan.pause_reason) == ("paused", "user_input_required")
    answer = Envelope(source="w", type="web.search.completed", correlation_id="c1")
    assert not await plan.execute_next(answer)  # a paused plan takes no events
    assert await plan.resume({"topic": "graph theory"})
    assert plan.status == "running" and plan.results["user_input"] == {"topic": "graph theory"}
    assert plan.current_state == "searching" and plan.awaiting is not None
    assert not await plan.resume({"again": True})  # resuming a running plan does nothing


@async_test(30)
async def test_nested_plans() -> None:
    """Sub-plans should link via parent_plan_id."""
    planner = Planner("p", bus=InProcessBus(), store="memory://")
    goal = planner.bus.envelope("research.goal", {"topic": "graphs"}, correlation_id="c1")
    parent = await PlanContext.create_from_goal(
        goal, state_machine=state_machine, context=planner.context
    )
    sub_goal = planner.bus.envelope("research.subgoal", {"topic": "graph planners"})
    child = await PlanContext.create_from_goal(
        sub_goal,
        state_machine=state_machine,
        context=planner.context,
        parent_plan_id=parent.plan_id,
    )
    assert child.parent_plan_id == parent.plan_id
    assert [c.plan_id for c in await parent.children()] == [child.plan_id]
    found = await child.parent()
    assert found is not None and found.plan_id == parent.plan_id
