"""Planner.create_plan and reason_next_action over the planning LLM protocol."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from tests.bus_contract import async_test
from tests.research_planner import SM
from waygraph.errors import ConfigError
from waygraph.events import (
    InProcessBus,
    PlanContext,
    Planner,
    StateAction,
    StateConfig,
    Worker,
    validate_state_machine,
)
from waygraph.events.modelplans import state_machine_schema
from waygraph.planning import InvalidPlanError, LLMResponse, OpenAILLM
from waygraph.testing import ScriptedChatServer


class ScriptedLLM:
    """An LLM (the planning protocol) that replies from a list and keeps the requests."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.calls: list[list[dict[str, str]]] = []
        self.schemas: list[Any] = []

    async def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        json_schema: Mapping[str, Any] | None = None,
        schema_name: str = "reply",
    ) -> LLMResponse:
        self.calls.append([dict(m) for m in messages])
        self.schemas.append(json_schema)
        return LLMResponse(self.replies.pop(0))


def states_json(states: dict[str, StateConfig]) -> str:
    return json.dumps(
        {"states": [s.model_dump(mode="json", exclude_defaults=True) for s in states.values()]}
    )


BROKEN = json.dumps(
    {
        "states": [
            {"state_name": "start", "default_next": "searching"},
            {
                "state_name": "searching",
                "action": {"event_type": "web.search.requested"},
                "transitions": [{"on_event": "web.search.completed", "to_state": "finished"}],
            },
            {"state_name": "done", "is_terminal": True},
        ]
    }
)


def research_worker(bus: InProcessBus) -> Worker:
    worker = Worker("researcher", bus=bus)
    for event_type in ("web.search.requested", "user.input.requested", "analysis.requested"):

        @worker.on_task(event_type)
        async def handle(task, context):  # type: ignore[no-untyped-def]
            return {}

    return worker


@async_test()
async def test_create_plan_validates_and_sends_problems_back() -> None:
    bus = InProcessBus()
    llm = ScriptedLLM(BROKEN, "```json\n" + states_json(SM) + "\n```")
    planner = Planner("p", bus=bus, store="memory://", llm=llm)
    goal = bus.envelope("research.goal", {"topic": "graphs"})
    plan = await planner.create_plan(goal, [research_worker(bus)], {"deadline": "today"})
    assert plan.state_machine == validate_state_machine(SM).states
    assert (plan.status, plan.started, plan.goal_data) == ("running", False, {"topic": "graphs"})
    assert (await PlanContext.restore(plan.plan_id, planner.context)).plan_id == plan.plan_id
    first, second = llm.calls
    assert "web.search.requested" in first[1]["content"]
    assert '"topic": "graphs"' in first[1]["content"] and "deadline" in first[1]["content"]
    problem = second[-1]["content"]
    assert "unknown target state 'finished'" in problem and "searching" in problem
    assert llm.schemas[0] == state_machine_schema()
    # Code that passed create_plan's result on, as before, gets the same plan.
    again = await PlanContext.create_from_goal(goal, state_machine=plan, context=planner.context)
    assert again.plan_id == plan.plan_id
    # A goal delivered twice is planned once.
    assert (await planner.create_plan(goal, [research_worker(bus)])).plan_id == plan.plan_id
    assert len(llm.calls) == 2
    # The plan it made runs like a hand-written one.
    assert await plan.execute_next()
    assert (plan.current_state, plan.awaiting["event_type"]) == (
        "searching",
        "web.search.requested",
    )


@async_test()
async def test_create_plan_refuses_actions_no_agent_offers() -> None:
    bus = InProcessBus()
    llm = ScriptedLLM(states_json(SM), states_json(SM))
    planner = Planner("p", bus=bus, store="memory://", llm=llm)
    agents = [{"name": "searcher", "tasks": ["web.search.requested"]}]
    with pytest.raises(InvalidPlanError) as caught:
        await planner.create_plan("research graphs", agents, repair_attempts=1)
    assert caught.value.attempts == 2
    assert "no agent offers 'user.input.requested'" in str(caught.value)
    assert "field 'action.event_type'" in str(caught.value)


@async_test()
async def test_create_plan_gives_up_on_replies_without_json() -> None:
    llm = ScriptedLLM("I cannot help", "still no", "nope")
    planner = Planner("p", bus=InProcessBus(), store="memory://", llm=llm)
    with pytest.raises(InvalidPlanError, match="after 3 attempts"):
        await planner.create_plan("x")
    assert len(llm.calls) == 3


@async_test()
async def test_create_plan_over_a_real_chat_completions_server() -> None:
    with ScriptedChatServer([states_json(SM)]) as server:
        llm = OpenAILLM("scripted", base_url=server.base_url, api_key="test")
        planner = Planner("p", bus=InProcessBus(), store="memory://", llm=llm)
        plan = await planner.create_plan("research graphs", ["researcher"])
        assert list(plan.state_machine) == list(SM)
        assert (plan.goal_event, plan.goal_data) == ("p.goal", {"goal": "research graphs"})
        assert plan.correlation_id
        assert server.requests[0]["messages"][0]["role"] == "system"


@async_test()
async def test_choose_action_picks_from_the_options() -> None:
    bus = InProcessBus()
    llm = ScriptedLLM(
        '{"event_type": "web.delete.requested"}',
        '{"event_type": "analysis.requested", "data": {"depth": 2}, "reason": "enough hits"}',
        '{"event_type": "web.search.requested"}',
    )
    planner = Planner("p", bus=bus, store="memory://", llm=llm)
    goal = bus.envelope("research.goal", {"topic": "graphs"})
    plan = await PlanContext.create_from_goal(goal, state_machine=SM, context=planner.context)
    plan.results["searching"] = {"count": 3}
    action = await planner.choose_action(plan, hint="Prefer finishing.")
    assert action == StateAction(
        event_type="analysis.requested", response_event=None, data={"depth": 2}
    )
    assert "not one of" in llm.calls[1][-1]["content"]
    assert "Prefer finishing." in llm.calls[0][1]["content"]
    assert '"count": 3' in llm.calls[0][1]["content"]
    kept = await planner.choose_action(plan)
    # Without data the option's own data is kept (templates included).
    assert kept.data == {"query": "{goal_data.topic}"}


@async_test()
async def test_choose_action_fails_after_repeated_bad_choices() -> None:
    bus = InProcessBus()
    llm = ScriptedLLM('{"event_type": "x"}', '{"event_type": "web.search.requested", "data": []}')
    planner = Planner("p", bus=bus, store="memory://", llm=llm)
    goal = bus.envelope("research.goal", {"topic": "graphs"})
    plan = await PlanContext.create_from_goal(goal, state_machine=SM, context=planner.context)
    with pytest.raises(InvalidPlanError, match="data must be a JSON object"):
        await planner.choose_action(plan, ["web.search.requested"])


@async_test()
async def test_reason_next_action_returns_an_event_type_or_none_when_done() -> None:
    bus = InProcessBus()
    llm = ScriptedLLM(
        '{"event_type": "analysis.requested", "reason": "enough hits"}',
        '{"event_type": null, "reason": "the goal is reached"}',
    )
    planner = Planner("p", bus=bus, store="memory://", llm=llm)
    goal = bus.envelope("research.goal", {"topic": "graphs"})
    plan = await PlanContext.create_from_goal(goal, state_machine=SM, context=planner.context)
    event = bus.envelope("web.search.completed", {"count": 3})
    assert await planner.reason_next_action(plan, event, planner.context) == "analysis.requested"
    asked = llm.calls[0][1]["content"]
    assert "web.search.completed" in asked and '"count": 3' in asked and "null" in asked
    assert await planner.reason_next_action(plan, event, planner.context) is None
    # dispatch takes the event type and sends the state's own action with it.
    await plan.execute_next()
    await plan.dispatch("analysis.requested")
    assert plan.awaiting["event_type"] == "analysis.requested"
    # A plan on a terminal state is complete: the model is not asked.
    plan = plan.model_copy(update={"current_state": "done"})  # fields are read-only
    assert await planner.reason_next_action(plan, event, planner.context) is None
    assert len(llm.calls) == 2


@async_test()
async def test_a_planner_without_a_model_says_how_to_give_it_one() -> None:
    planner = Planner("p", bus=InProcessBus(), store="memory://")
    with pytest.raises(ConfigError, match="llm=OpenAILLM"):
        await planner.create_plan("x")
