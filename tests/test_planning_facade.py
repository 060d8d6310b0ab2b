"""The pattern-style API: Agent, PlanningCallbacks and the pattern's own methods."""

from __future__ import annotations

import asyncio
import copy
import json
import pickle
from typing import Any

import pytest

from waygraph.errors import ConfigError
from waygraph.planning import (
    Agent,
    InvalidPlanError,
    OpenAILLM,
    Plan,
    PlanExecutionResult,
    PlanningAgent,
    PlanningCallbacks,
    PlanningPattern,
    StepStatus,
    ToolDefinitionError,
)
from waygraph.planning._prompts import DEFAULT_PLANNING_PROMPT
from waygraph.testing import ScriptedChatServer

pytestmark = pytest.mark.timeout(30)


def step(step_id: str, deps: tuple[str, ...] = (), **params: Any) -> dict[str, Any]:
    return {
        "id": step_id,
        "action": "note",
        "parameters": params or {"text": step_id},
        "dependencies": list(deps),
    }


PLAN = {"goal": "notes", "steps": [step("a"), step("b"), step("c", ("a", "b"), text="$a+$b")]}
PLAN_JSON = json.dumps(PLAN)


def llm_for(server: ScriptedChatServer) -> OpenAILLM:
    return OpenAILLM(base_url=server.base_url, model="scripted", api_key="k", max_retries=0)


class Book:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def note(self, text: str) -> str:
        """Write a line."""
        self.lines.append(text)
        return text.upper()


def system_message(request: dict[str, Any]) -> str:
    return next(m["content"] for m in request["messages"] if m["role"] == "system")


# ------------------------------------------------------------------ Agent.run


def test_await_agent_run_plans_and_runs_with_the_pattern():
    book = Book()
    with ScriptedChatServer([PLAN_JSON]) as server:
        agent = Agent(
            pattern=PlanningPattern(execution_mode="parallel"),
            tools=[book.note],
            llm=llm_for(server),
            system_prompt="You keep a tidy notebook.",
        )
        result = asyncio.run(agent.run("write notes"))
    assert isinstance(result, PlanExecutionResult)
    assert result.success and result.final_output == "A+B"
    assert sorted(book.lines) == sorted(["a", "b", "A+B"])
    assert agent.get_plan() is not None and agent.get_plan().step_ids == ["a", "b", "c"]
    state = agent.get_execution_state()
    assert state is not None and set(state.statuses.values()) == {StepStatus.COMPLETED}
    # The system prompt opens the planner's instructions; waygraph's own follow.
    system = system_message(server.requests[0])
    assert system.startswith("You keep a tidy notebook.\n\n" + DEFAULT_PLANNING_PROMPT)


def test_system_prompt_precedes_a_custom_planning_prompt_and_reaches_revisions():
    book = Book()
    revised = json.dumps({"goal": "notes", "steps": [step("only")]})
    with ScriptedChatServer([PLAN_JSON, revised]) as server:
        pattern = PlanningPattern(planning_prompt="Plan briefly.")
        agent = Agent(
            pattern=pattern, tools=[book.note], llm=llm_for(server), system_prompt="Be exact."
        )
        plan = asyncio.run(pattern.generate_plan(agent, "write notes"))
        new = asyncio.run(pattern.revise_plan(agent, None, "one step is enough"))
    assert plan.step_ids == ["a", "b", "c"] and new.step_ids == ["only"]
    for request in server.requests:
        assert system_message(request).startswith("Be exact.\n\nPlan briefly.")
    assert "one step is enough" in server.requests[1]["messages"][-1]["content"]
    assert book.lines == []  # generating and revising never runs a tool


def test_an_invalid_plan_is_a_result_not_an_exception():
    cyclic = json.dumps({"goal": "g", "steps": [step("a", ("b",)), step("b", ("a",))]})
    with ScriptedChatServer([cyclic] * 6) as server:  # 3 attempts each
        agent = Agent(tools=[Book().note], llm=llm_for(server))
        result = asyncio.run(agent.run("loop"))
        assert not result.success and "cycle" in str(result.final_output)
        with pytest.raises(InvalidPlanError, match="cycle"):
            asyncio.run(agent.pattern.generate_plan(agent, "loop"))


# ------------------------------------------------------------------ the pattern's methods


def test_pattern_methods_drive_the_agent_and_remember_the_latest_run():
    book = Book()
    pattern = PlanningPattern(execution_mode="sequential")
    assert pattern.get_plan() is None and pattern.get_execution_state() is None
    with ScriptedChatServer([PLAN_JSON]) as server:
        agent = Agent(pattern=pattern, tools=[book.note], llm=llm_for(server))
        plan = asyncio.run(pattern.generate_plan(agent, "write notes"))
        assert book.lines == [] and pattern.get_plan() == plan
        result = asyncio.run(pattern.execute_plan(agent, plan))
    assert result.success and book.lines == ["a", "b", "A+B"]  # sequential: plan order
    state = pattern.get_execution_state()
    assert state is not None and state.plan.step_ids == ["a", "b", "c"]
    # revise_plan accepts the state a run left behind.
    with ScriptedChatServer([json.dumps({"goal": "notes", "steps": [step("z")]})]) as server:
        agent2 = Agent(pattern=pattern, tools=[book.note], llm=llm_for(server))
        revised = asyncio.run(pattern.revise_plan(agent2, state, "start over"))
    assert revised.step_ids == ["z"]
    assert '"id":"a"' in server.requests[0]["messages"][-2]["content"].replace(" ", "")


def test_another_pattern_runs_the_same_agent_with_its_own_settings():
    book = Book()
    with ScriptedChatServer([PLAN_JSON]) as server:
        agent = Agent(pattern=PlanningPattern(max_steps=20), tools=[book.note], llm=llm_for(server))
        strict = PlanningPattern(max_steps=2, plan_repair_attempts=0)
        result = asyncio.run(strict.execute(agent, "write notes"))
    assert not result.success and "at most 2" in str(result.final_output)
    assert book.lines == []
    assert strict.get_plan() is None or strict.get_plan().step_ids == ["a", "b", "c"]
    assert agent.pattern.get_execution_state() is None  # the agent's own pattern did not run


def test_a_planning_agent_may_be_driven_by_its_own_pattern_only():
    pattern = PlanningPattern()
    engine = PlanningAgent(OpenAILLM("m", base_url="http://127.0.0.1:9"), pattern=pattern)
    assert pattern._engine(engine) is engine
    with pytest.raises(ConfigError, match="another pattern"):
        PlanningPattern(max_steps=3)._engine(engine)
    with pytest.raises(ConfigError, match="expected an Agent"):
        asyncio.run(pattern.execute("not an agent", "goal"))  # type: ignore[arg-type]


def test_patterns_stay_equal_copyable_and_picklable_after_a_run():
    with ScriptedChatServer([PLAN_JSON]) as server:
        pattern = PlanningPattern()
        asyncio.run(Agent(pattern=pattern, tools=[Book().note], llm=llm_for(server)).run("go"))
    assert pattern.get_plan() is not None
    assert pattern == PlanningPattern() and hash(pattern) == hash(PlanningPattern())
    for clone in (copy.copy(pattern), copy.deepcopy(pattern), pickle.loads(pickle.dumps(pattern))):
        assert clone == pattern and clone.get_plan() is None
    assert pattern.model_copy(update={"max_steps": 5}).get_plan() is None


# ------------------------------------------------------------------ callbacks


def test_callbacks_given_as_functions_fire_in_order():
    seen: list[str] = []
    callbacks = PlanningCallbacks(
        on_plan_generated=lambda plan, **_: seen.append("generated") or None,
        on_plan_approved=lambda plan, **_: seen.append("approved") or True,
        on_step_start=lambda step, **_: seen.append(f"start {step.id}"),
        on_step_complete=lambda step, result, **_: seen.append(f"done {step.id}"),
    )
    with ScriptedChatServer([PLAN_JSON]) as server:
        agent = Agent(
            pattern=PlanningPattern(execution_mode="sequential"),
            tools=[Book().note],
            llm=llm_for(server),
            callbacks=callbacks,
        )
        assert asyncio.run(agent.run("notes")).success
    assert seen == [
        "generated",
        "approved",
        "start a",
        "done a",
        "start b",
        "done b",
        "start c",
        "done c",
    ]
    assert repr(callbacks).startswith("PlanningCallbacks(on_plan_generated, on_plan_approved")


def test_a_callbacks_subclass_may_reject_the_plan():
    book = Book()

    class Reviewer(PlanningCallbacks):
        async def on_plan_approved(self, plan: Plan, **future: Any) -> bool:
            return len(plan.steps) < 3

    with ScriptedChatServer([PLAN_JSON]) as server:
        agent = Agent(tools=[book.note], llm=llm_for(server), callbacks=Reviewer())
        result = asyncio.run(agent.run("notes"))
    assert not result.success and "reject" in str(result.final_output).lower()
    assert book.lines == []


def test_any_object_with_callback_methods_is_accepted():
    class Observer:
        def __init__(self) -> None:
            self.ids: list[str] = []

        def on_step_complete(self, step, result, **future):
            self.ids.append(step.id)

    observer = Observer()
    with ScriptedChatServer([PLAN_JSON]) as server:
        agent = Agent(tools=[Book().note], llm=llm_for(server), callbacks=observer)
        asyncio.run(agent.run("notes"))
    assert sorted(observer.ids) == ["a", "b", "c"]


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "needs a model"),
        ({"llm": "x", "pattern": {"max_steps": 3}}, "must be a PlanningPattern"),
        ({"llm": "x", "system_prompt": 42}, "system_prompt must be text"),
        ({"llm": "x", "callbacks": object()}, "callbacks must be a PlanningCallbacks"),
        ({"llm": "x", "callbacks": PlanningCallbacks.__new__(PlanningCallbacks)}, None),
    ],
)
def test_bad_agent_arguments_are_config_errors(kwargs: dict[str, Any], message: str | None):
    if message is None:
        Agent(**kwargs)  # an empty callbacks object is fine
        return
    with pytest.raises(ConfigError, match=message):
        Agent(**kwargs)


def test_a_callback_that_is_not_callable_is_refused():
    with pytest.raises(ConfigError, match="on_step_start must be callable"):
        PlanningCallbacks(on_step_start="print")  # type: ignore[arg-type]


def test_a_bad_tool_fails_when_the_agent_is_built():
    def note(text: str) -> str:
        return text

    def other(text: str) -> str:
        return text

    other.__name__ = "note"
    with pytest.raises(ToolDefinitionError, match="two tools are named 'note'"):
        Agent(tools=[note, other], llm=OpenAILLM("m", base_url="http://127.0.0.1:9"))
