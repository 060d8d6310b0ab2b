"""Document 004's interface in the shapes it writes: ``revise_plan(agent,
current_state=..., reason=...)``, ``PlanningPattern(planning_model="gpt-4o")``
and an ``on_plan_generated`` that changes the plan in place
(``plan.steps.append(...)``, as its dataclass ``Plan`` allows).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.design_examples.test_planning_pattern import (
    plan_reply,
    read_file,
    script,
    server,
    web_search,
    write_file,
    written,
)
from waygraph.errors import ConfigError, InputError
from waygraph.planning import (
    Agent,
    LLMResponse,
    OpenAILLM,
    Plan,
    PlanningAgent,
    PlanningCallbacks,
    PlanningPattern,
    PlanStep,
    Tool,
)
from waygraph.testing import ScriptedChatServer

__all__ = ["server"]  # the fixture, used by name

pytestmark = pytest.mark.timeout(30)

SEARCH = ("search", "web_search", {"query": "frameworks"}, [])
WRITE = ("write", "write_file", {"path": "c.md", "content": "$search"}, ["search"])


def test_revise_plan_takes_current_state_and_reason(server: ScriptedChatServer) -> None:
    script(server, plan_reply(SEARCH), plan_reply(SEARCH, WRITE))
    pattern = PlanningPattern()
    agent = Agent(pattern=pattern, tools=[web_search, read_file, write_file])
    asyncio.run(agent.run("Research frameworks"))
    state = pattern.get_execution_state()

    revised = asyncio.run(
        pattern.revise_plan(agent, current_state=state, reason="also write it down")
    )

    assert [s.id for s in revised.steps] == ["search", "write"]
    assert "also write it down" in server.requests[-1]["messages"][-1]["content"]
    with pytest.raises(InputError, match="not both"):
        asyncio.run(pattern.revise_plan(agent, state, "r", current_state=state))


def test_planning_model_names_a_model_on_the_agents_endpoint(server: ScriptedChatServer) -> None:
    script(server, plan_reply(SEARCH))
    pattern = PlanningPattern(planning_model="gpt-4o")
    llm = OpenAILLM("small-model", base_url=server.base_url, api_key="k")

    result = PlanningAgent(llm, tools=[web_search], pattern=pattern).run("Research frameworks")

    assert result.success
    assert [r["model"] for r in server.requests] == ["gpt-4o"]  # the planning call


def test_planning_model_with_an_llm_that_cannot_switch_models_is_refused() -> None:
    class Fixed:
        async def complete(self, messages: Any, **_: Any) -> LLMResponse:
            return LLMResponse("{}")

    with pytest.raises(ConfigError, match="with_model"):
        PlanningAgent(Fixed(), pattern=PlanningPattern(planning_model="gpt-4o"))


def test_on_plan_generated_appends_a_step_in_place(server: ScriptedChatServer) -> None:
    script(server, plan_reply(SEARCH))

    class AddWrite(PlanningCallbacks):
        async def on_plan_generated(self, plan: Plan) -> Plan:
            plan.steps.append(
                PlanStep(
                    id="write",
                    description="Write the comparison",
                    action="write_file",
                    parameters={"path": "added.md", "content": "$search"},
                    dependencies=["search"],
                    expected_output="a file",
                    fallback_action=None,
                    estimated_tokens=None,
                )
            )
            return plan

    agent = Agent(
        pattern=PlanningPattern(),
        tools=[web_search, read_file, write_file],
        callbacks=AddWrite(),
    )
    result = asyncio.run(agent.run("Research frameworks"))

    assert result.success, result.final_output
    assert [s.id for s in result.plan.steps] == ["search", "write"]
    assert "Django" in written["added.md"]


def test_an_invalid_change_by_on_plan_generated_is_not_run(server: ScriptedChatServer) -> None:
    script(server, plan_reply(SEARCH))
    ran: list[str] = []

    def on_plan_generated(plan: Plan) -> Plan:
        plan.steps.append(PlanStep(id="bad", action="no_such_tool", dependencies=["search"]))
        return plan

    def searching(query: str) -> str:
        ran.append(query)
        return query

    agent = Agent(
        tools=[Tool(searching, name="web_search")],
        callbacks=PlanningCallbacks(on_plan_generated=on_plan_generated),
    )
    result = asyncio.run(agent.run("Research frameworks"))

    assert not result.success and ran == []
    assert "on_plan_generated made the plan invalid" in str(result.final_output)
    assert "no_such_tool" in str(result.final_output)
