"""The scheduler's results and state: final output, times and plans, state observable
during the run, the step context tools get, and one run at a time per agent.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.scheduler_helpers import NoModel, execute, plan_of, step
from waygraph.planning import (
    AgentBusyError,
    PlanningAgent,
    PlanningError,
    StepContext,
    StepStatus,
)

pytestmark = pytest.mark.timeout(30)


# ------------------------------------------------------------------ results and state


def test_final_output_is_the_single_final_step_or_a_dict_of_final_steps():
    def echo(x: str) -> str:
        return x

    one = execute(plan_of(step("a", "echo", x="1"), step("b", "echo", ("a",), x="2")), [echo])
    assert one.final_output == "2"
    two = execute(plan_of(step("a", "echo", x="1"), step("b", "echo", x="2")), [echo])
    assert two.final_output == {"a": "1", "b": "2"}


def test_result_records_times_plans_and_state():
    def echo(x: str) -> str:
        return x

    plan = plan_of(step("a", "echo", x="1"))
    result = execute(plan, [echo])
    outcome = result.step_results["a"]
    assert outcome.started_at <= outcome.finished_at
    assert outcome.duration >= 0 and result.execution_time >= outcome.duration
    assert result.plan == plan and result.final_plan == plan
    assert result.revision_count == 0
    state = result.execution_state
    assert state.statuses == {"a": StepStatus.COMPLETED}
    assert state.finished_at is not None and state.failure_rate == 0.0


def test_state_is_observable_during_the_run_and_callbacks_get_it():
    seen = []

    def echo(x: str) -> str:
        return x

    async def main():
        agent = PlanningAgent(
            NoModel(),
            tools=[echo],
            on_step_start=lambda **kw: seen.append(
                (
                    kw["step"].id,
                    agent.get_execution_state().statuses[kw["step"].id].value,
                    kw["state"].running,
                )
            ),
        )
        result = await agent.execute_plan(
            plan_of(step("a", "echo", x="1"), step("b", "echo", ("a",), x="2"))
        )
        return agent, result

    agent, result = asyncio.run(main())
    assert seen == [("a", "running", ("a",)), ("b", "running", ("b",))]
    assert agent.get_execution_state() == result.execution_state
    assert agent.get_plan() == result.final_plan


def test_tools_get_the_step_context():
    async def inspect_ctx(ctx: StepContext) -> dict[str, Any]:
        return {"step": ctx.step.id, "goal": ctx.goal, "seen": dict(ctx.results)}

    def first() -> int:
        return 1

    result = execute(
        plan_of(step("a", "first"), step("b", "inspect_ctx", ("a",))), [first, inspect_ctx]
    )
    assert result.final_output == {"step": "b", "goal": "test goal", "seen": {"a": 1}}


def test_an_invalid_plan_given_to_execute_plan_never_runs():
    calls = []

    def echo(x: str) -> str:
        calls.append(x)
        return x

    result = execute(plan_of(step("a", "echo", x="1"), step("b", "nope", ("a",))), [echo])
    assert not result.success
    assert [p.code for p in result.problems] == ["unknown_tool"]
    assert calls == [] and result.step_results == {}


def test_one_run_at_a_time_per_agent():
    gate = asyncio.Event

    async def main():
        started = gate()
        release = gate()

        async def wait() -> str:
            started.set()
            await release.wait()
            return "ok"

        agent = PlanningAgent(NoModel(), tools=[wait])
        task = asyncio.create_task(agent.execute_plan(plan_of(step("w", "wait"))))
        await started.wait()
        with pytest.raises(AgentBusyError, match="one PlanningAgent per concurrent run"):
            await agent.execute_plan(plan_of(step("w", "wait")))
        release.set()
        return await task

    assert asyncio.run(main()).success


def test_the_blocking_shell_refuses_to_run_inside_an_event_loop():
    async def main():
        with pytest.raises(PlanningError, match=r"use `await agent\.execute"):
            PlanningAgent(NoModel()).run("goal")

    asyncio.run(main())
