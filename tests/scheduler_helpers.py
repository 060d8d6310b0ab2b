"""Shared helpers of the scheduler tests (tests/test_planning_execution_*.py): plans given
directly, run by a PlanningAgent that must never call its model."""

from __future__ import annotations

import asyncio
from typing import Any

from waygraph.planning import LLMResponse, Plan, PlanningAgent, PlanningPattern


class NoModel:
    """An LLM for plans given directly: any model call fails the test."""

    async def complete(self, messages, *, json_schema=None, schema_name="reply") -> LLMResponse:
        raise AssertionError(f"unexpected model call: {messages[-1]['content'][:80]}")


def step(step_id: str, action: str, deps: tuple[str, ...] = (), **params: Any) -> dict[str, Any]:
    return {"id": step_id, "action": action, "parameters": params, "dependencies": list(deps)}


def plan_of(*steps: dict[str, Any]) -> Plan:
    return Plan(goal="test goal", steps=list(steps))


def execute(
    plan: Plan, tools: list[Any], *, side_effect_tools: tuple[str, ...] = (), **pattern: Any
):
    pattern.setdefault("allow_revision", False)
    agent = PlanningAgent(
        NoModel(),
        tools=tools,
        side_effect_tools=side_effect_tools,
        pattern=PlanningPattern(**pattern),
    )
    return asyncio.run(agent.execute_plan(plan))


def statuses(result) -> dict[str, str]:
    return {sid: r.status.value for sid, r in result.step_results.items()}
