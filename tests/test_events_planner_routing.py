"""The event planner (the issue's list): goals start plans, events reach them by type and
correlation id, conditions pick transitions, finalize answers once;
on every stack of tests/event_stacks.py, with the research planner of tests/research_planner.py."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from tests.bus_contract import async_test, eventually
from tests.event_stacks import Stack, stack_fixture  # noqa: F401
from tests.research_planner import (
    SM,
    research,
    restore_settled,
)
from waygraph.events import (
    Envelope,
    PlanContext,
    StateConfig,
    StateTransition,
    Topic,
)

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
        plan = plan.model_copy(update={"current_state": "searching"})  # fields are read-only
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
        other = other.model_copy(update={"current_state": "wait"})  # fields are read-only
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
