"""Document 004 (the Planning pattern): its examples and callbacks, as it writes them.

Each example is the document's code with only the imports changed to
waygraph's; the model is the shipped chat server with scripted replies,
found through the environment (``OPENAI_BASE_URL``, ``OPENAI_MODEL``), since
the document's ``Agent(...)`` names no model.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from waygraph.planning import (
    Agent,
    Plan,
    PlanExecutionState,
    PlanningCallbacks,
    PlanningPattern,
    PlanStep,
    RevisionDecision,
    StepResult,
)
from waygraph.testing import ScriptedChatServer

pytestmark = pytest.mark.timeout(30)


def plan_reply(*steps: tuple[str, str, dict[str, Any], list[str]]) -> str:
    return json.dumps(
        {
            "goal": "the goal",
            "steps": [
                {
                    "id": i,
                    "description": f"{a} step",
                    "action": a,
                    "parameters": p,
                    "dependencies": d,
                }
                for i, a, p, d in steps
            ],
        }
    )


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedChatServer]:
    with ScriptedChatServer() as chat:
        monkeypatch.setenv("OPENAI_BASE_URL", chat.base_url)
        monkeypatch.setenv("OPENAI_MODEL", "scripted")
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        yield chat


def script(server: ScriptedChatServer, *replies: Any) -> None:
    server._replies.extend(replies)


# The tools of example 5.1, small and real.
written: dict[str, str] = {}


def web_search(query: str) -> str:
    return f"results for {query}: Django, Flask, FastAPI"


def read_file(path: str) -> str:
    return written.get(path, "")


def write_file(path: str, content: str) -> str:
    written[path] = content
    return f"wrote {path}"


def test_example_5_1_basic_planning_agent(server: ScriptedChatServer):
    script(
        server,
        plan_reply(
            ("search", "web_search", {"query": "top Python web frameworks"}, []),
            ("write", "write_file", {"path": "comparison.md", "content": "$search"}, ["search"]),
        ),
    )
    pattern = PlanningPattern(max_steps=15, execution_mode="sequential", allow_revision=True)

    agent = Agent(
        pattern=pattern,
        tools=[web_search, read_file, write_file],
        system_prompt="You are a research assistant.",
    )

    result = asyncio.run(
        agent.run("Research the top 3 Python web frameworks and create a comparison document")
    )

    # Inspect the plan that was generated
    print("Generated Plan:")
    for step in result.plan.steps:
        print(f"  {step.id}: {step.description}")
    assert result.success and [s.id for s in result.plan.steps] == ["search", "write"]
    assert "FastAPI" in written["comparison.md"]
    assert "You are a research assistant." in server.requests[0]["messages"][0]["content"]


@pytest.mark.parametrize(("answer", "runs"), [("y", True), ("n", False)])
def test_example_5_2_planning_with_human_approval(
    server: ScriptedChatServer, monkeypatch: pytest.MonkeyPatch, answer: str, runs: bool
):
    script(server, plan_reply(("w", "write_file", {"path": "a.txt", "content": "x"}, [])))
    monkeypatch.setattr("builtins.input", lambda prompt="": answer)
    written.clear()

    pattern = PlanningPattern(require_plan_approval=True, max_steps=20)

    # Custom approval callback
    class MyCallbacks(PlanningCallbacks):
        async def on_plan_approved(self, plan: Plan) -> bool:
            print("Proposed plan:")
            for step in plan.steps:
                print(f"  - {step.description}")
            response = input("Approve? (y/n): ")
            return response.lower() == "y"

    agent = Agent(
        pattern=pattern,
        callbacks=MyCallbacks(),
        tools=[write_file],
    )
    result = asyncio.run(agent.run("Write a.txt"))
    assert result.success is runs
    assert ("a.txt" in written) is runs


def test_example_5_3_parallel_execution(server: ScriptedChatServer):
    running, peak, lock = [0], [0], threading.Lock()

    def scan(path: str) -> str:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.05)
        with lock:
            running[0] -= 1
        if path == "7.log":
            raise RuntimeError("unreadable")
        return f"{path}: 0 errors"

    script(server, plan_reply(*[(f"s{i}", "scan", {"path": f"{i}.log"}, []) for i in range(10)]))
    pattern = PlanningPattern(
        execution_mode="parallel",
        max_parallel=5,
        continue_on_failure=True,  # Don't block on individual failures
    )
    agent = Agent(pattern=pattern, tools=[scan])  # the document's agent, with this tool

    # The agent will execute independent steps concurrently
    result = asyncio.run(agent.run("Analyze these 10 log files for errors"))
    assert peak[0] == 5
    statuses = result.execution_state.step_statuses
    assert statuses["s7"] == "failed" and sum(s == "completed" for s in statuses.values()) == 9


def test_the_callbacks_class_as_the_document_writes_it(server: ScriptedChatServer):
    calls: list[tuple[str, Any]] = []

    class DocumentCallbacks(PlanningCallbacks):
        async def on_plan_generated(self, plan: Plan) -> Plan:
            """Called after plan generation. Can modify plan."""
            calls.append(("generated", [s.id for s in plan.steps]))
            return plan

        async def on_plan_approved(self, plan: Plan) -> bool:
            """Called to get approval. Return False to reject."""
            calls.append(("approved", len(plan.steps)))
            return True

        async def on_step_start(self, step: PlanStep) -> None:
            """Called before each step execution."""
            calls.append(("start", step.id))

        async def on_step_complete(self, step: PlanStep, result: StepResult) -> None:
            """Called after each step completion."""
            calls.append(("complete", (step.id, result.status.value)))

        async def on_revision_needed(
            self, state: PlanExecutionState, reason: str
        ) -> RevisionDecision:
            """Called when revision is triggered."""
            calls.append(("revision", (dict(state.step_statuses), state.current_step, reason)))
            return RevisionDecision.REPLAN

    attempts = []

    def flaky(path: str) -> str:
        attempts.append(path)
        if path == "bad":
            raise RuntimeError("no such file")
        return f"read {path}"

    script(
        server,
        plan_reply(("a", "flaky", {"path": "bad"}, [])),
        plan_reply(("b", "flaky", {"path": "good"}, [])),  # the replan
    )
    agent = Agent(
        pattern=PlanningPattern(retry_failed_steps=0),
        tools=[flaky],
        callbacks=DocumentCallbacks(),
    )
    result = asyncio.run(agent.run("read the file"))
    assert result.success and result.final_output == "read good"
    assert [c[0] for c in calls] == [
        "generated",
        "approved",
        "start",
        "complete",
        "revision",
        "start",
        "complete",
    ]
    statuses, current, reason = calls[4][1]
    assert statuses == {"a": "failed"} and current is None and "no such file" in reason
    state = result.execution_state
    assert state.revision_history == list(state.revisions) and len(state.revision_history) == 1
    assert state.step_results is state.results and state.completed_at == state.finished_at
    assert state.revision_count == 1 and state.started_at <= state.completed_at


def test_without_a_model_the_agent_says_what_to_set(monkeypatch: pytest.MonkeyPatch):
    from waygraph.errors import ConfigError

    for name in ("OPENAI_BASE_URL", "OPENAI_MODEL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigError, match="set OPENAI_MODEL and OPENAI_BASE_URL"):
        Agent(pattern=PlanningPattern(), tools=[write_file])
