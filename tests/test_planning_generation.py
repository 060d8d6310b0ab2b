"""Plan generation through the real openai client and ScriptedChatServer:
structured output, the JSON-repair fallback, the send-back loop, token counting."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from waygraph.errors import LLMError
from waygraph.planning import (
    OpenAILLM,
    PlanningAgent,
    PlanningPattern,
    plan_json_schema,
)
from waygraph.testing import ScriptedChatServer

pytestmark = pytest.mark.timeout(30)


@contextmanager
def scripted(*replies: Any, **llm_options: Any) -> Iterator[tuple[ScriptedChatServer, OpenAILLM]]:
    with ScriptedChatServer(list(replies)) as server:
        yield (
            server,
            OpenAILLM(
                "scripted",
                base_url=server.base_url,
                api_key="test",
                max_retries=0,
                timeout=5,
                **llm_options,
            ),
        )


def step(
    step_id: str, action: str = "search", deps: tuple[str, ...] = (), **params: Any
) -> dict[str, Any]:
    return {
        "id": step_id,
        "action": action,
        "parameters": params or {"query": step_id},
        "dependencies": list(deps),
    }


def plan_json(*steps: dict[str, Any], goal: str = "find things", **extra: Any) -> str:
    return json.dumps({"goal": goal, "steps": list(steps), **extra})


class Recorder:
    """Tools that record their calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def tools(self) -> list[Any]:
        def search(query: str) -> str:
            """Search the notes."""
            self.calls.append(("search", query))
            return f"notes on {query}"

        def summarize(text: str) -> str:
            """Summarize a text."""
            self.calls.append(("summarize", text))
            return f"summary of {text}"

        return [search, summarize]


def agent_for(llm: OpenAILLM, recorder: Recorder, **pattern: Any) -> PlanningAgent:
    return PlanningAgent(llm, tools=recorder.tools(), pattern=PlanningPattern(**pattern))


def generate(agent: PlanningAgent, goal: str, **kwargs: Any):
    """generate_plan in a fresh event loop, closing the model's client at its end."""

    async def main():
        try:
            return await agent.generate_plan(goal, **kwargs)
        finally:
            await agent.llm.aclose()

    return asyncio.run(main())


def words(value: Any) -> int:
    return len(value.split()) if isinstance(value, str) else 0


# ------------------------------------------------------------------ generation


def test_generate_plan_asks_for_structured_output_with_the_plan_schema():
    rec = Recorder()
    reply = plan_json(step("s1"), step("s2", "summarize", ("s1",), text="$s1"))
    with scripted(reply) as (server, llm):
        plan = generate(agent_for(llm, rec), "find things")
        [request] = server.requests
    assert plan.step_ids == ["s1", "s2"]
    assert request["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "plan", "schema": plan_json_schema(), "strict": False},
    }
    system, user = request["messages"]
    assert "search(query: string): Search the notes." in system["content"]
    assert "summarize(text: string)" in system["content"]
    assert user == {"role": "user", "content": "Goal: find things"}
    assert rec.calls == []  # generating a plan runs nothing


def test_execute_runs_the_generated_plan_and_substitutes_results():
    rec = Recorder()
    reply = plan_json(
        step("s1", query="cats"), step("s2", "summarize", ("s1",), text="About ${s1}!")
    )
    with scripted(reply) as (_, llm):
        result = agent_for(llm, rec).run("find things")
    assert result.success
    assert rec.calls == [("search", "cats"), ("summarize", "About notes on cats!")]
    assert result.final_output == "summary of About notes on cats!"


@pytest.mark.parametrize("reply", [
    "```json\n" + plan_json(step("s1")) + "\n```",
    plan_json(step("s1")).replace("]}", ",],}").replace('"dependencies": []',
                                                       '"dependencies": [],'),
    "Here is my plan:\n" + plan_json(step("s1")) + "\nIt should work.",
])  # fmt: skip
def test_servers_without_structured_output_fall_back_to_extracting_json(reply):
    rec = Recorder()
    rejected = {"status": 400, "error": "response_format is not supported"}
    with scripted(rejected, rejected, reply, plan_json(step("s1"))) as (server, llm):
        agent = agent_for(llm, rec)
        assert agent.run("find things").success
        assert agent.run("again").success
        schema, json_object, text, again = server.requests
    assert schema["response_format"]["type"] == "json_schema"
    assert json_object["response_format"] == {"type": "json_object"}  # the next format
    assert "response_format" not in text  # then asked as plain text
    assert "response_format" not in again  # and not asked with one any more
    assert rec.calls == [("search", "s1"), ("search", "s1")]


def test_a_server_error_for_json_schema_falls_back_to_json_object_and_stays_there():
    # llama-cpp-python's server answers json_schema with a 500 ("Input should be
    # 'text' or 'json_object'"); waygraph plan could not be used with it at all.
    refused = {"status": 500, "error": "Input should be 'text' or 'json_object'"}
    with scripted(refused, plan_json(step("s1")), plan_json(step("s1"))) as (server, llm):
        agent = agent_for(llm, Recorder())
        assert agent.run("find things").success
        assert agent.run("again").success
    formats = [r.get("response_format", {}).get("type") for r in server.requests]
    assert formats == ["json_schema", "json_object", "json_object"]  # remembered


def test_structured_output_on_makes_a_refusal_an_error():
    rejected = {"status": 400, "error": "response_format is not supported"}
    with (
        scripted(rejected, structured_output="on") as (_server, llm),
        pytest.raises(LLMError, match="response_format is not supported"),
    ):
        asyncio.run(llm.complete([{"role": "user", "content": "hi"}], json_schema={}))
    with pytest.raises(ValueError, match="auto, on, off"):
        OpenAILLM("m", structured_output="sometimes")


def test_structured_output_can_be_switched_off():
    with scripted(plan_json(step("s1"))) as (server, llm):
        assert agent_for(llm, Recorder(), structured_output=False).run("g").success
        assert "response_format" not in server.requests[0]


def test_planning_prompt_replaces_the_opening_instructions():
    with scripted(plan_json(step("s1"))) as (server, llm):
        agent_for(llm, Recorder(), planning_prompt="Plan like a librarian.").run("g")
    system = server.requests[0]["messages"][0]["content"]
    assert system.startswith("Plan like a librarian.")
    assert "Rules:" in system and "Tools:" in system


def test_context_is_passed_to_the_model():
    with scripted(plan_json(step("s1"))) as (server, llm):
        generate(agent_for(llm, Recorder()), "g", context="use the wiki")
    assert server.requests[0]["messages"][1]["content"] == "Goal: g\n\nContext:\nuse the wiki"


# ------------------------------------------------------------------ send back and fail


def test_an_invalid_plan_is_sent_back_with_its_problems():
    rec = Recorder()
    bad = plan_json(step("s1", "serch"))
    with scripted(bad, plan_json(step("s1"))) as (server, llm):
        result = agent_for(llm, rec).run("find things")
        second = server.requests[1]["messages"]
    assert result.success
    assert second[-2] == {"role": "assistant", "content": bad}
    assert second[-1]["role"] == "user"
    assert "step 's1': unknown tool 'serch' (did you mean 'search'?)" in second[-1]["content"]
    assert rec.calls == [("search", "s1")]


def test_a_reply_without_json_is_sent_back_too():
    with scripted("I would search first.", plan_json(step("s1"))) as (server, llm):
        assert agent_for(llm, Recorder()).run("g").success
    assert "no JSON object could be read" in server.requests[1]["messages"][-1]["content"]


INVALID = {
    "unknown tool": ([step("s1", "serch")], "unknown_tool", "unknown tool 'serch'"),
    "bad parameters": (
        [step("s1", "summarize", words=3)],
        "bad_parameters",
        "unknown parameter 'words'",
    ),
    "unknown dependency": (
        [step("s1", deps=("s0",))],
        "unknown_dependency",
        "depends on unknown step 's0'",
    ),
    "cycle": (
        [step("s1", deps=("s4",)), step("s4", deps=("s1",))],
        "cycle",
        "cycle: s1 -> s4 -> s1",
    ),
    "too many steps": ([step(f"s{i}") for i in range(4)], "too_many_steps", "4 steps; at most 3"),
    "token budget": (
        [dict(step("s1"), estimated_tokens=5000)],
        "over_budget",
        "estimated at 5000 tokens",
    ),
}


@pytest.mark.parametrize("case", list(INVALID))
def test_a_plan_still_invalid_after_the_repairs_never_runs(case):
    steps, code, fragment = INVALID[case]
    rec = Recorder()
    bad = plan_json(*steps)
    with scripted(bad, bad, bad) as (server, llm):
        result = agent_for(llm, rec, max_steps=3, token_budget=4000).run("find things")
        assert len(server.requests) == 3  # the first plan and plan_repair_attempts=2 more
    assert result.success is False
    assert rec.calls == []
    assert result.step_results == {}
    assert code in [p.code for p in result.problems]
    assert fragment in result.final_output
    assert result.final_output.startswith("the plan is invalid after 3 attempts:")
    assert result.plan is not None and result.plan.step_ids == [s["id"] for s in steps]
    if case == "cycle":
        assert "cycle" in result.final_output and "s1 -> s4 -> s1" in result.final_output


def test_every_problem_is_named_in_the_final_output():
    rec = Recorder()
    bad = plan_json(step("s1", "serch"), step("s2", "summarize", ("s9",), text="x"))
    with scripted(bad, **{}) as (_, llm):
        result = agent_for(llm, rec, plan_repair_attempts=0).run("g")
    assert not result.success
    assert [p.code for p in result.problems] == ["unknown_dependency", "unknown_tool"]
    assert "unknown tool 'serch'" in result.final_output
    assert "depends on unknown step 's9'" in result.final_output


def test_missing_dependencies_are_required_by_default_and_implied_otherwise():
    loose = json.dumps({"goal": "g", "steps": [
        {"id": "a", "action": "search", "parameters": {"query": "x"}},
        {"id": "b", "action": "summarize", "parameters": {"text": "$a"}},
    ]})  # fmt: skip
    with scripted(loose, loose, loose) as (_, llm):
        strict = agent_for(llm, Recorder()).run("g")
    assert [p.code for p in strict.problems] == ["missing_dependencies"] * 2
    rec = Recorder()
    with scripted(loose) as (_, llm):
        relaxed = agent_for(llm, rec, require_dependencies=False).run("g")
    assert relaxed.success
    assert relaxed.final_plan.step("b").dependencies == ("a",)
    assert rec.calls == [("search", "x"), ("summarize", "notes on x")]


def test_model_errors_are_a_failed_result_not_an_exception():
    with scripted() as (_, llm):
        result = agent_for(llm, Recorder()).run("g")
    assert result.success is False
    assert result.final_output.startswith("planning failed: model 'scripted' failed")


def test_generate_plan_raises_when_no_valid_plan_comes_back():
    from waygraph.planning import InvalidPlanError

    bad = plan_json(step("s1", "serch"))
    with scripted(bad) as (_, llm), pytest.raises(InvalidPlanError) as info:
        generate(agent_for(llm, Recorder(), plan_repair_attempts=0), "g")
    assert [p.code for p in info.value.problems] == ["unknown_tool"]


# ------------------------------------------------------------------ feasibility review


def test_feasibility_review_is_off_by_default_and_sends_infeasible_plans_back():
    with scripted(plan_json(step("s1"))) as (server, llm):
        agent_for(llm, Recorder()).run("g")
        assert len(server.requests) == 1
    verdict_no = json.dumps({"feasible": False, "problems": ["nothing sends the e-mail"]})
    verdict_yes = json.dumps({"feasible": True, "problems": []})
    replies = (plan_json(step("s1")), verdict_no, plan_json(step("s2")), verdict_yes)
    with scripted(*replies) as (server, llm):
        result = agent_for(llm, Recorder(), feasibility_review=True).run("g")
        review = server.requests[1]
        resend = server.requests[2]["messages"][-1]["content"]
    assert result.success and result.final_plan.step_ids == ["s2"]
    assert review["response_format"]["json_schema"]["name"] == "review"
    assert '"id": "s1"' in review["messages"][1]["content"]
    assert "the feasibility review found: nothing sends the e-mail" in resend


# ------------------------------------------------------------------ tokens and models


def test_token_usage_is_counted_from_every_response():
    reply = plan_json(step("s1"), step("s2", "summarize", ("s1",), text="$s1"))
    with scripted("not a plan", reply) as (server, llm):
        result = agent_for(llm, Recorder()).run("g")
        requests = server.requests
    prompt = sum(words(m["content"]) for r in requests for m in r["messages"])
    completion = words("not a plan") + words(reply)
    assert result.token_usage.prompt_tokens == prompt
    assert result.token_usage.completion_tokens == completion
    assert result.token_usage.total_tokens == prompt + completion
    assert result.execution_state.token_usage == result.token_usage


def test_the_planning_model_may_differ_from_the_execution_model():
    reply = plan_json(dict(step("s1"), expected_output="notes"))
    with (
        scripted(reply) as (planning_server, planner),
        scripted('{"matches": true}') as (execution_server, executor),
    ):
        agent = PlanningAgent(
            executor,
            tools=Recorder().tools(),
            planning_llm=planner,
            pattern=PlanningPattern(check_expected_output=True),
        )
        result = agent.run("g")
        assert len(planning_server.requests) == 1
        [check] = execution_server.requests
    assert result.success
    assert "Expected: notes" in check["messages"][1]["content"]
    assert result.step_results["s1"].token_usage.total_tokens > 0


def test_revise_plan_asks_the_model_with_feedback():
    with scripted(plan_json(step("s1")), plan_json(step("s1"), step("s2"))) as (server, llm):
        agent = agent_for(llm, Recorder())

        async def main():
            try:
                first = await agent.generate_plan("g")
                return first, await agent.revise_plan("also search s2")
            finally:
                await llm.aclose()

        first, revised = asyncio.run(main())
        last = server.requests[1]["messages"]
    assert first.step_ids == ["s1"] and revised.step_ids == ["s1", "s2"]
    assert agent.get_plan() is revised
    assert last[-1]["content"].startswith("Revise the plan: also search s2")
    assert '"id":"s1"' in last[-2]["content"]
