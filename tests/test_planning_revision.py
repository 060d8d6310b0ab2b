"""Plan revision: every trigger and every strategy, through the scripted server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from waygraph.errors import ConfigError
from waygraph.planning import (
    ConsoleApproval,
    OpenAILLM,
    Plan,
    PlanningAgent,
    PlanningPattern,
    RevisionDecision,
    RevisionStrategy,
    RevisionTrigger,
    StepContext,
)
from waygraph.testing import ScriptedChatServer

pytestmark = pytest.mark.timeout(30)


@contextmanager
def model(*replies: Any) -> Iterator[tuple[ScriptedChatServer, OpenAILLM]]:
    with ScriptedChatServer(list(replies)) as server:
        yield (
            server,
            OpenAILLM(
                "scripted", base_url=server.base_url, api_key="test", max_retries=0, timeout=5
            ),
        )


def step(step_id: str, action: str, deps: tuple[str, ...] = (), **params: Any) -> dict[str, Any]:
    return {"id": step_id, "action": action, "parameters": params, "dependencies": list(deps)}


def reply(*steps: dict[str, Any], **usage: int) -> Any:
    content = json.dumps({"goal": "revised", "steps": list(steps)})
    if usage:
        return {"content": content, "usage": usage}
    return content


def plan_of(*steps: dict[str, Any]) -> Plan:
    return Plan(goal="make the thing", steps=list(steps))


def ok(x: str = "") -> str:
    return "ok" + x


def bad(x: str = "") -> str:
    raise RuntimeError("bad luck")


def describe(x: object = None) -> str:
    return f"got {x!r}"


TOOLS = [ok, bad, describe]


def execute(
    llm: Any, plan: Plan, *, tools: list[Any] = TOOLS, agent_options: Any = None, **pattern: Any
):
    pattern.setdefault("retry_failed_steps", 0)
    agent = PlanningAgent(
        llm, tools=tools, pattern=PlanningPattern(**pattern), **(agent_options or {})
    )

    async def main():
        try:
            return await agent.execute_plan(plan)
        finally:
            await llm.aclose()

    return asyncio.run(main())


def statuses(result) -> dict[str, str]:
    return {sid: r.status.value for sid, r in result.step_results.items()}


# ------------------------------------------------------------------ strategies


def test_replan_remaining_keeps_finished_steps_and_replaces_the_rest():
    plan = plan_of(step("a", "ok"), step("b", "bad", ("a",)), step("c", "ok", ("b",)))
    new = reply(step("b2", "ok", ("a",), x="$a"), step("c2", "ok", ("b2",), x="!"))
    with model(new) as (server, llm):
        result = execute(llm, plan)
        [request] = server.requests
    assert result.success
    assert result.revision_count == 1
    assert result.final_plan.step_ids == ["a", "b2", "c2"]
    assert result.final_output == "ok!"
    assert result.step_results["b2"].output == "okok"
    assert statuses(result) == {
        "a": "completed",
        "b2": "completed",
        "c2": "completed",
        "b": "revised",
        "c": "revised",
    }
    assert result.step_results["b"].error == "attempt 1: RuntimeError: bad luck"
    [revision] = result.execution_state.revisions
    assert (revision.trigger, revision.strategy, revision.applied) == (
        RevisionTrigger.STEP_FAILED,
        RevisionStrategy.REPLAN_REMAINING,
        True,
    )
    assert revision.step_id == "b"
    assert revision.old_plan == plan and revision.new_plan == result.final_plan
    text = request["messages"][-1]["content"]
    assert "Why it is being revised: step b failed: attempt 1: RuntimeError: bad luck" in text
    assert "- a: ok" in text
    assert "do not reuse their ids (a)" in text


@pytest.mark.parametrize("works", [True, False])
def test_on_plan_revised_sees_each_revision_once_it_is_applied_or_failed(works: bool):
    seen: list[tuple[bool, list[str] | None, list[str]]] = []

    def on_plan_revised(*, revision, state, depth, **future):
        assert depth == 0 and revision == state.revisions[-1]
        new_ids = revision.new_plan.step_ids if revision.new_plan else None
        seen.append((revision.applied, new_ids, state.plan.step_ids))

    plan = plan_of(step("a", "ok"), step("b", "bad", ("a",)))
    # A replan that works, or one that stays unreadable through every attempt.
    replies = [reply(step("b2", "ok", ("a",)))] if works else ["no"] * 3
    with model(*replies) as (_, llm):
        result = execute(
            llm, plan, plan_repair_attempts=2, agent_options={"on_plan_revised": on_plan_revised}
        )
    if works:
        assert seen == [(True, ["a", "b2"], ["a", "b2"])] and result.success
    else:
        assert seen == [(False, None, ["a", "b"])] and not result.success


def test_insert_recovery_puts_new_steps_in_place_of_the_failed_one():
    plan = plan_of(step("a", "bad"), step("b", "ok", ("a",), x="$a"))
    with model(reply(step("r1", "ok", x="R"))) as (server, llm):
        result = execute(llm, plan, revision_strategy="insert_recovery")
        prompt = server.requests[0]["messages"][-1]["content"]
    assert result.success
    assert result.final_plan.step_ids == ["r1", "b"]
    b = result.final_plan.step("b")
    assert b.dependencies == ("r1",)
    assert b.parameters == {"x": "${r1}"}
    assert result.final_output == "okokR"
    assert statuses(result)["a"] == "revised"
    assert "Step a (bad) went wrong" in prompt
    assert "Their last step stands in for a" in prompt


def test_skip_and_continue_skips_the_failed_step_and_runs_its_dependents():
    plan = plan_of(step("a", "bad"), step("b", "describe", ("a",), x="$a"))
    with model() as (server, llm):
        result = execute(llm, plan, revision_strategy="skip_and_continue")
        assert server.requests == []
    assert result.success  # skipped by a chosen strategy counts as done
    assert statuses(result) == {"a": "skipped", "b": "completed"}
    assert result.final_output == "got None"
    assert result.step_results["a"].error.startswith("skipped by skip_and_continue after: ")


def test_abort_stops_the_run_and_asks_no_model():
    plan = plan_of(step("a", "ok"), step("b", "bad", ("a",)), step("c", "ok", ("b",)))
    with model() as (server, llm):
        result = execute(llm, plan, revision_strategy="abort")
        assert server.requests == []
    assert not result.success
    assert statuses(result) == {"a": "completed", "b": "failed", "c": "blocked"}
    [revision] = result.execution_state.revisions
    assert (revision.strategy, revision.applied) == (RevisionStrategy.ABORT, False)
    assert result.final_output.startswith(
        "The plan did not complete: aborted by the step_failed revision: step b failed"
    )
    assert result.revision_count == 0


def test_ask_user_needs_someone_to_ask():
    with pytest.raises(ConfigError, match="on_revision_needed"):
        PlanningAgent(ok, pattern=PlanningPattern(revision_strategy="ask_user"))


def test_ask_user_applies_the_decision_of_on_revision_needed():
    asked = []

    def on_revision_needed(*, trigger, reason, step_id, strategy, state, **future):
        asked.append((trigger, step_id, strategy, state.statuses["a"].value))
        return RevisionDecision(strategy="skip_and_continue")

    plan = plan_of(step("a", "bad"), step("b", "describe", ("a",)))
    with model() as (_, llm):
        result = execute(
            llm,
            plan,
            revision_strategy="ask_user",
            agent_options={"on_revision_needed": on_revision_needed},
        )
    assert result.success
    assert asked == [(RevisionTrigger.STEP_FAILED, "a", RevisionStrategy.ASK_USER, "failed")]


def test_ask_user_without_an_answer_stops_the_run():
    plan = plan_of(step("a", "bad"))
    with model() as (_, llm):
        result = execute(
            llm,
            plan,
            revision_strategy="ask_user",
            agent_options={"on_revision_needed": lambda **kw: None},
        )
    assert not result.success
    assert "needed a decision and got none" in result.final_output


def test_ask_user_at_the_console():
    answers = iter(["x", "s"])
    lines: list[str] = []
    console = ConsoleApproval(input=lambda prompt: next(answers), output=lines.append)
    plan = plan_of(step("a", "bad"), step("b", "describe", ("a",)))
    with model() as (_, llm):
        result = execute(
            llm,
            plan,
            revision_strategy="ask_user",
            agent_options={"on_revision_needed": console.on_revision_needed},
        )
    assert result.success
    assert lines[0].startswith("Revision needed (step_failed) at step a: step a failed")
    assert "answer r, i, s or a" in lines


def test_on_revision_needed_may_override_the_configured_strategy():
    plan = plan_of(step("a", "bad"), step("b", "ok", ("a",)))
    with model() as (server, llm):
        result = execute(llm, plan, agent_options={"on_revision_needed": lambda **kw: "abort"})
        assert server.requests == []
    assert result.execution_state.revisions[0].strategy is RevisionStrategy.ABORT


def test_a_decision_may_bring_its_own_replacement_steps():
    replacement = Plan(goal="by hand", steps=[step("m", "ok", x="manual")])
    plan = plan_of(step("a", "bad"), step("b", "ok", ("a",)))
    with model() as (server, llm):
        result = execute(
            llm,
            plan,
            agent_options={
                "on_revision_needed": lambda **kw: RevisionDecision(
                    strategy="replan_remaining", plan=replacement
                )
            },
        )
        assert server.requests == []
    assert result.success and result.final_output == "okmanual"


def test_a_revision_waits_for_running_steps_to_finish():
    seen = []

    async def slow() -> str:
        for _ in range(10):
            await asyncio.sleep(0)
        return "slow"

    def on_revision_needed(*, state, **future):
        seen.append((state.running, state.statuses["s"].value))
        return "skip_and_continue"

    plan = plan_of(step("s", "slow"), step("a", "bad"))
    with model() as (_, llm):
        result = execute(
            llm,
            plan,
            tools=[*TOOLS, slow],
            execution_mode="parallel",
            agent_options={"on_revision_needed": on_revision_needed},
        )
    assert result.success
    assert seen == [((), "completed")]


# ------------------------------------------------------------------ triggers


def test_with_continue_on_failure_a_failure_rate_over_the_threshold_triggers_revision():
    plan = plan_of(step("a", "ok"), step("b", "bad"), step("c", "ok", ("b",)))
    with model(reply(step("b2", "ok", x="2"))) as (_, llm):
        result = execute(
            llm, plan, continue_on_failure=True, revision_threshold=0.3, execution_mode="sequential"
        )
    assert result.success
    [revision] = result.execution_state.revisions
    assert revision.trigger is RevisionTrigger.FAILURE_RATE
    assert "(1 of 2 finished steps failed, over the revision_threshold of 0.3)" in (revision.reason)


def test_with_continue_on_failure_a_low_failure_rate_only_skips_dependents():
    plan = plan_of(step("a", "ok"), step("b", "bad"), step("c", "ok", ("b",)))
    with model() as (server, llm):
        result = execute(
            llm, plan, continue_on_failure=True, revision_threshold=0.9, execution_mode="sequential"
        )
        assert server.requests == []
    assert statuses(result) == {"a": "completed", "b": "failed", "c": "skipped"}
    assert not result.success


def expectation_agent(execution: OpenAILLM, planning: OpenAILLM, **pattern: Any):
    def number() -> str:
        return "seven"

    return PlanningAgent(
        execution,
        tools=[number, ok],
        planning_llm=planning,
        pattern=PlanningPattern(check_expected_output=True, retry_failed_steps=0, **pattern),
    )


MISMATCH = '{"matches": false, "reason": "a word, not a number"}'
NUMBER_PLAN = plan_of(
    dict(step("n", "number"), expected_output="a number"), step("u", "ok", ("n",), x="$n")
)


def run_agent(agent: PlanningAgent, plan: Plan, *llms: OpenAILLM):
    async def main():
        try:
            return await agent.execute_plan(plan)
        finally:
            for llm in llms:
                await llm.aclose()

    return asyncio.run(main())


def test_an_output_that_does_not_match_expected_output_triggers_revision():
    with (
        model(MISMATCH) as (_, execution),
        model(reply(step("n2", "ok", x="7"))) as (planning_server, planning),
    ):
        result = run_agent(expectation_agent(execution, planning), NUMBER_PLAN, execution, planning)
        assert len(planning_server.requests) == 1
    assert result.success
    assert result.final_plan.step_ids == ["n2"]
    [revision] = result.execution_state.revisions
    assert revision.trigger is RevisionTrigger.OUTPUT_MISMATCH
    assert "a word, not a number" in revision.reason


def test_a_mismatch_without_revision_fails_the_step():
    with model(MISMATCH) as (_, execution), model() as (_, planning):
        result = run_agent(
            expectation_agent(execution, planning, allow_revision=False),
            NUMBER_PLAN,
            execution,
            planning,
        )
    assert statuses(result) == {"n": "failed", "u": "blocked"}
    assert result.step_results["n"].error == (
        "the output does not match expected_output: a word, not a number"
    )


def test_skipping_a_mismatch_accepts_the_output():
    with model(MISMATCH) as (_, execution), model() as (_, planning):
        agent = expectation_agent(execution, planning, revision_strategy="skip_and_continue")
        result = run_agent(agent, NUMBER_PLAN, execution, planning)
    assert result.success
    assert result.final_output == "okseven"


def test_new_information_from_a_step_triggers_revision():
    def probe(ctx: StepContext) -> str:
        ctx.report_new_information("the site moved to /v2")
        return "probed"

    plan = plan_of(step("p", "probe"), step("old", "ok", ("p",), x="/v1"))
    with model(reply(step("new", "ok", ("p",), x="/v2"))) as (server, llm):
        result = execute(llm, plan, tools=[*TOOLS, probe])
        prompt = server.requests[0]["messages"][-1]["content"]
    assert result.success and result.final_output == "ok/v2"
    assert result.step_results["p"].new_information == "the site moved to /v2"
    [revision] = result.execution_state.revisions
    assert revision.trigger is RevisionTrigger.NEW_INFORMATION
    assert "step p reported: the site moved to /v2" in prompt


def test_a_user_can_request_a_revision_during_the_run():
    agent_box: list[PlanningAgent] = []

    def on_step_complete(*, step, **future):
        if step.id == "a":
            assert agent_box[0].request_revision("prefer the archive")

    plan = plan_of(step("a", "ok"), step("b", "ok", ("a",), x="live"))
    with model(reply(step("b2", "ok", ("a",), x="archive"))) as (server, llm):
        agent = PlanningAgent(
            llm,
            tools=TOOLS,
            on_step_complete=on_step_complete,
            pattern=PlanningPattern(allow_revision=False),
        )
        agent_box.append(agent)
        result = run_agent(agent, plan, llm)
        assert len(server.requests) == 1
    assert result.success and result.final_output == "okarchive"
    assert result.execution_state.revisions[0].trigger is RevisionTrigger.USER_REQUEST
    assert agent.request_revision("nothing is running") is False


def test_a_token_budget_running_low_triggers_revision():
    def expensive(ctx: StepContext) -> str:
        ctx.report_tokens(30)
        return "spent"

    plan = plan_of(
        dict(step("a", "expensive"), estimated_tokens=10),
        dict(step("b", "ok", ("a",)), estimated_tokens=80),
    )
    cheap = reply(
        dict(step("c", "ok", ("a",), x="cheap"), estimated_tokens=20),
        prompt_tokens=5,
        completion_tokens=5,
        total_tokens=10,
    )
    with model(cheap) as (server, llm):
        result = execute(llm, plan, tools=[*TOOLS, expensive], token_budget=100)
        prompt = server.requests[0]["messages"][-1]["content"]
    assert result.success and result.final_output == "okcheap"
    [revision] = result.execution_state.revisions
    assert revision.trigger is RevisionTrigger.BUDGET_LOW
    assert "30 of 100 budget tokens are used" in revision.reason
    assert "at most 70" in server.requests[0]["messages"][0]["content"]
    assert "Why it is being revised: 30 of 100" in prompt
    assert result.token_usage.total_tokens == 40


def test_an_exhausted_token_budget_stops_the_run():
    def expensive(ctx: StepContext) -> str:
        ctx.report_tokens(150)
        return "spent"

    plan = plan_of(step("a", "expensive"), step("b", "ok", ("a",)))
    with model() as (_, llm):
        result = execute(llm, plan, tools=[*TOOLS, expensive], token_budget=100)
    assert not result.success
    assert statuses(result) == {"a": "completed", "b": "blocked"}
    assert result.final_output.startswith(
        "The plan did not complete: token budget exhausted: 150 of 100 tokens used"
    )


# ------------------------------------------------------------------ limits


def test_revisions_are_bounded_by_max_revisions():
    plan = plan_of(step("a", "bad"))
    with model(reply(step("a2", "bad")), reply(step("a3", "ok"))) as (server, llm):
        result = execute(llm, plan, max_revisions=1)
        assert len(server.requests) == 1
    assert not result.success
    assert result.revision_count == 1
    assert statuses(result) == {"a2": "failed", "a": "revised"}


def test_a_revision_that_stays_invalid_is_not_applied():
    plan = plan_of(step("a", "bad"), step("b", "ok", ("a",)))
    with model(reply(step("x", "nope"))) as (_, llm):
        result = execute(llm, plan, plan_repair_attempts=0)
    assert not result.success
    [revision] = result.execution_state.revisions
    assert revision.applied is False and revision.new_plan is None
    assert "revision failed: the plan is invalid" in revision.reason
    assert "unknown tool 'nope'" in result.final_output
    assert result.final_plan == plan


def test_a_revised_plan_is_validated_and_sent_back_like_a_new_one():
    plan = plan_of(step("a", "ok"), step("b", "bad", ("a",)))
    with model(reply(step("a", "ok")), reply(step("b2", "ok", ("a",)))) as (server, llm):
        result = execute(llm, plan)
        resend = server.requests[1]["messages"][-1]["content"]
    assert result.success
    assert "two steps have this id" in resend


class BrokenModel:
    """A custom LLM whose own errors are not LLMError."""

    async def complete(self, messages, *, json_schema=None, schema_name="reply"):
        raise OSError("disk on fire")


def test_a_custom_model_failing_during_revision_keeps_the_results():
    plan = plan_of(step("a", "ok"), step("b", "bad", ("a",)))
    agent = PlanningAgent(BrokenModel(), tools=TOOLS, pattern=PlanningPattern(retry_failed_steps=0))
    result = asyncio.run(agent.execute_plan(plan))
    assert statuses(result) == {"a": "completed", "b": "failed"}
    [revision] = result.execution_state.revisions
    assert not revision.applied
    assert "revision failed: OSError('disk on fire')" in revision.reason


def test_a_custom_model_failing_during_planning_is_a_failed_result():
    result = PlanningAgent(BrokenModel(), tools=TOOLS).run("anything")
    assert not result.success
    assert result.final_output == "planning failed: OSError('disk on fire')"
