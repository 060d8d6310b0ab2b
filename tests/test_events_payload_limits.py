"""Every message the event layer sends fits the bus, or the plan says why (issue 39 item 1).

On both stacks of tests/event_stacks.py (the in-process bus keeps the limit
of a NATS server with its default ``max_payload``; NATS's is read from the
server): an 800 KB goal whose two steps echo it makes an answer too large
for the bus, which is answered as failed (naming size and limit) within the
goal's timeout while the full result stays in the store, and the next goal
is answered; the stored record stays a small multiple of the goal (it was
ten times); a worker result or a request too large fails the step or the
plan instead of being retried until dropped; a goal too large is refused
to the caller at once.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from tests.bus_contract import async_test
from tests.event_stacks import Stack, stack_fixture  # noqa: F401
from tests.research_planner import restore_settled, unique
from waygraph.errors import PayloadTooLargeError
from waygraph.events import (
    Bus,
    InProcessBus,
    PlanContext,
    Planner,
    StateAction,
    StateConfig,
    StateTransition,
    Topic,
    Worker,
)
from waygraph.events._payload import DEFAULT_MAX_PAYLOAD, HEADER_ROOM, check_size

GOAL_BYTES = 800_000
#: The goal's own timeout: the caller must hear back within it.
TIMEOUT = 30.0


def step(name: str, following: str, data: dict[str, Any]) -> StateConfig:
    return StateConfig(
        state_name=name,
        action=StateAction(event_type=f"echo.{name}.requested", data=data),
        transitions=[
            StateTransition(on_event=f"echo.{name}.completed", to_state=following),
            StateTransition(on_event=f"echo.{name}.failed", to_state="failed"),
        ],
    )


def machine(second: dict[str, Any]) -> dict[str, StateConfig]:
    first = {"text": "{goal_data.text}", "echo": "{goal_data.echo}", "blow": "{goal_data.blow}"}
    return {
        "start": StateConfig(state_name="start", default_next="one"),
        "one": step("one", "two", first),
        "two": step("two", "done", second),
        "done": StateConfig(state_name="done", is_terminal=True),
        "failed": StateConfig(state_name="failed", is_terminal=True),
    }


#: Both steps send the goal's text; the worker echoes it (or only says how long it is).
ECHO = machine({"text": "{goal_data.text}", "echo": "{goal_data.echo}", "blow": 0})
#: The second step sends every result so far: larger than the bus when the first echoed a lot.
GATHER = machine({"found": "{results}", "text": "{goal_data.text}", "echo": False, "blow": 0})


@dataclass
class Echo:
    planner: Planner
    client: Bus

    async def ask(self, data: dict[str, Any]) -> Any:
        goal = {"echo": True, "blow": 0, **data}
        return await self.client.ask("echo.goal", goal, "echo.done", timeout=TIMEOUT)


@asynccontextmanager
async def echo_stack(stack: Stack, states: dict[str, StateConfig]) -> AsyncIterator[Echo]:
    planner = Planner(unique("echo-planner"), bus=stack.bus(), store=stack.store_url)
    planner.on_goal("echo.goal", state_machine=states)
    worker = Worker(unique("echo-worker"), bus=stack.bus())

    async def echo(task: Any, context: Any) -> dict[str, Any]:
        if task.data.get("blow"):
            return {"text": "y" * int(task.data["blow"])}
        text = str(task.data.get("text", ""))
        return {"text": text} if task.data.get("echo") else {"length": len(text)}

    worker.on_task("echo.one.requested")(echo)
    worker.on_task("echo.two.requested")(echo)
    client = stack.bus()
    try:
        await planner.start()
        await worker.start()
        await client.start()
        yield Echo(planner, client)
    finally:
        await worker.close()
        await planner.close()
        await stack.close()


def stored_bytes(planner: Planner, plan_id: str) -> int:
    record = planner.store.get(plan_id)
    assert record is not None
    return len(json.dumps(record.data))


@async_test(120)
async def test_an_answer_too_large_is_answered_failed_and_the_next_goal_is_answered(
    stack: Stack,
) -> None:
    async with echo_stack(stack, ECHO) as e:
        limit = e.planner.bus.max_payload
        assert limit is not None
        if stack.uses_services:  # read from the server, less room for the headers
            assert limit == e.planner.bus._nc.max_payload - HEADER_ROOM  # type: ignore[attr-defined]
        else:
            assert limit == DEFAULT_MAX_PAYLOAD
        text = "x" * GOAL_BYTES
        answer = await e.ask({"text": text})
        assert answer.data["status"] == "failed" and answer.data["result"] is None
        error = answer.data["error"]
        assert error["type"] == "PayloadTooLargeError"
        assert error["limit"] == limit and error["size"] > limit
        assert f"is {error['size']} bytes; the bus carries at most {limit}" in error["message"]
        # Nothing lost: the full result is in the store, the outbox empties.
        plan = await restore_settled(answer.data["plan_id"], e.planner.context)
        assert plan.status == "failed" and plan.outbox == []
        assert plan.result["results"]["one"]["text"] == text
        assert plan.result["results"]["two"]["text"] == text
        assert plan.results["final"] == plan.result and plan.goal_data["text"] == text
        # The goal once, the two echoed results: about three times the goal (it was ten).
        assert stored_bytes(e.planner, plan.plan_id) < 3.5 * GOAL_BYTES
        following = await e.ask({"text": "small"})
        assert following.data["status"] == "completed"


@async_test(120)
async def test_goal_data_is_stored_once_however_many_steps_send_it(stack: Stack) -> None:
    async with echo_stack(stack, ECHO) as e:
        answer = await e.ask({"text": "z" * GOAL_BYTES, "echo": False})
        assert answer.data["status"] == "completed"
        assert answer.data["result"]["results"]["two"] == {"length": GOAL_BYTES}
        plan = await restore_settled(answer.data["plan_id"], e.planner.context)
        assert plan.goal_envelope.data["text"] == plan.goal_data["text"] == "z" * GOAL_BYTES
        assert stored_bytes(e.planner, plan.plan_id) < 1.2 * GOAL_BYTES


@async_test(120)
async def test_a_worker_result_too_large_answers_the_step_failed(stack: Stack) -> None:
    async with echo_stack(stack, ECHO) as e:
        answer = await e.ask({"text": "small", "blow": 2 * 1024 * 1024})
        # The plan took its failure branch at once instead of waiting for a lost answer.
        assert answer.data["status"] == "failed"
        failure = answer.data["result"]["results"]["one"]
        assert failure["error_type"] == "PayloadTooLargeError"
        assert failure["size"] > failure["limit"] == e.planner.bus.max_payload


@async_test(120)
async def test_a_request_too_large_fails_the_plan_naming_state_size_and_limit(
    stack: Stack,
) -> None:
    async with echo_stack(stack, GATHER) as e:
        answer = await e.ask({"text": "w" * 600_000})
        assert answer.data["status"] == "failed"
        error = answer.data["error"]
        assert error["type"] == "PayloadTooLargeError" and error["size"] > error["limit"]
        assert "state 'two'" in error["message"] and "echo.two.requested" in error["message"]
        plan = await restore_settled(answer.data["plan_id"], e.planner.context)
        assert plan.status == "failed" and plan.outbox == []


@async_test(60)
async def test_a_goal_too_large_is_refused_to_the_caller_at_once(stack: Stack) -> None:
    async with echo_stack(stack, ECHO) as e:
        with pytest.raises(PayloadTooLargeError, match="the bus carries at most"):
            await e.ask({"text": "v" * 2_000_000})
        assert (await e.ask({"text": "fine"})).data["status"] == "completed"


@async_test(30)
async def test_the_in_process_bus_limit_is_natss_default_or_none() -> None:
    async with InProcessBus() as bus:
        assert bus.max_payload == 1024 * 1024 - HEADER_ROOM
        with pytest.raises(PayloadTooLargeError, match=r"event \w+ \(big.one\) is \d+ bytes"):
            await bus.publish(bus.envelope("big.one", {"text": "u" * (1024 * 1024)}))
    async with InProcessBus(max_payload=None) as unbounded:
        assert unbounded.max_payload is None
        await unbounded.publish(unbounded.envelope("big.one", {"text": "u" * (1024 * 1024)}))


class UnknownLimitBus(InProcessBus):
    """Keeps NATS's default limit but does not say so: as a bus whose limit was lowered
    after the commit, or an answer committed by an earlier version."""

    @property
    def max_payload(self) -> int | None:
        return None

    async def publish(self, envelope: Any, topic: Any = None) -> None:
        payload = envelope.to_json()
        check_size(payload, limit=DEFAULT_MAX_PAYLOAD, what=f"event {envelope.id}")
        await super().publish(envelope, topic)


@async_test(60)
async def test_an_answer_refused_when_sent_goes_out_as_a_failed_answer(tmp_path: Any) -> None:
    bus = UnknownLimitBus(source="test", max_payload=None)
    stack = Stack("inprocess+sqlite", f"sqlite:///{tmp_path / 'plans.db'}")
    stack._shared = bus
    stack._buses.append(bus)
    async with echo_stack(stack, ECHO) as e:
        answer = await e.ask({"text": "x" * GOAL_BYTES})
        assert answer.data["status"] == "failed" and answer.data["result"] is None
        assert answer.data["error"]["limit"] == DEFAULT_MAX_PAYLOAD
        plan = await restore_settled(answer.data["plan_id"], e.planner.context)
        assert plan.outbox == [] and plan.result["results"]["two"]["text"] == "x" * GOAL_BYTES


@async_test(60)
async def test_a_failure_whose_answer_is_too_large_keeps_its_own_error_as_the_cause(
    tmp_path: Any,
) -> None:
    bus = InProcessBus(source="test")
    planner = Planner("cause-planner", bus=bus, store=f"sqlite:///{tmp_path / 'plans.db'}")
    answers: list[Any] = []

    async def collect(event: Any) -> None:
        answers.append(event)

    await bus.subscribe(Topic.ACTION_RESULTS, "echo.goal.completed", collect)
    goal = bus.envelope("echo.goal", {"text": "t"}, correlation_id="c1")
    plan = await PlanContext.create_from_goal(goal, state_machine=ECHO, context=planner.context)
    own = {"type": "PermanentError", "message": "no such customer"}
    assert await plan.finalize({"dump": "d" * (2 * 1024 * 1024)}, status="failed", error=own)
    await bus.drain()
    [answer] = answers
    assert answer.data["error"]["type"] == "PayloadTooLargeError"
    assert answer.data["error"]["cause"] == own
    stored = await PlanContext.restore(plan.plan_id, planner.context)
    assert stored.status == "failed" and stored.result["dump"] == "d" * (2 * 1024 * 1024)
    assert stored.error == answer.data["error"]
    await planner.close()
    await bus.close()


def test_a_plan_loads_its_shared_values_back() -> None:
    from waygraph.events._shared_values import pack, unpack

    result = {"state": "done", "results": {"one": {"n": 1}}}
    record = {
        "goal": {"id": "g", "data": {"text": "t"}},
        "goal_data": {"text": "t"},
        "results": {"one": {"n": 1}, "final": result},
        "result": result,
    }
    stored = pack(json.loads(json.dumps(record)))
    assert "data" not in stored["goal"] and "final" not in stored["results"]
    assert stored["result"] == {"state": "done"}
    loaded = unpack(stored)
    assert loaded == record
    # Independent copies, as fields of a loaded plan must be.
    loaded["result"]["results"]["one"]["n"] = 2
    assert loaded["results"]["one"]["n"] == 1 == loaded["results"]["final"]["results"]["one"]["n"]
