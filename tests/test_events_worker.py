"""Worker: answers, failures, human input with a timeout, and the public exports."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import waygraph.events
from tests.bus_contract import async_test, eventually
from waygraph.events import Envelope, InProcessBus, Task, Topic, Worker


async def answers_to(bus: InProcessBus, event_type: str, topic: Topic = Topic.ACTION_RESULTS):  # type: ignore[no-untyped-def]
    got: list[Envelope] = []

    async def collect(event: Envelope) -> None:
        got.append(event)

    await bus.subscribe(topic, event_type, collect)
    return got


@async_test()
async def test_the_return_value_is_the_response_events_data() -> None:
    async with InProcessBus() as bus:
        worker = Worker("w", bus=bus)
        seen: list[Task] = []

        @worker.on_task("calc.requested")
        async def calc(task, context):  # type: ignore[no-untyped-def]
            seen.append(task)
            assert context.worker is worker and context.task is task
            value = task.data["value"]
            return None if value == "none" else value

        await worker.start()
        await worker.start()  # idempotent: one subscription
        completed = await answers_to(bus, "calc.completed")
        custom = await answers_to(bus, "calc.custom", Topic.BUSINESS_FACTS)
        request = await bus.request(
            "calc.requested", {"value": {"n": 1}}, None, plan_id="p1", session_id="s1"
        )
        await bus.request("calc.requested", {"value": "none"}, None)
        await bus.request("calc.requested", {"value": [1, 2]}, None)
        await bus.request(
            "calc.requested", {"value": 7}, "calc.custom", response_topic="business-facts"
        )
        await bus.drain()
        assert sorted(str(a.data) for a in completed) == sorted(
            ["{'n': 1}", "{}", "{'result': [1, 2]}"]
        )
        assert [a.data for a in custom] == [{"result": 7}]
        first = next(a for a in completed if a.data == {"n": 1})
        assert first.correlation_id == request.correlation_id
        assert first.parent_event_id == request.id
        assert (first.plan_id, first.session_id) == ("p1", "s1")
        assert first.source == "waygraph/workers/w"
        task = seen[0]
        assert (task.event_type, task.correlation_id, task.response_event) == (
            "calc.requested",
            request.correlation_id,
            "calc.completed",
        )
        assert task.data == {"value": {"n": 1}} and task.plan_id == "p1"
        assert worker.task_types == ["calc.requested"]


@async_test()
async def test_a_failing_task_answers_with_the_failed_event() -> None:
    async with InProcessBus() as bus:
        worker = Worker("w", bus=bus)

        @worker.on_task("web.search.requested")
        async def search(task, context):  # type: ignore[no-untyped-def]
            raise LookupError("index offline")

        await worker.start()
        failed = await answers_to(bus, "web.search.failed")
        request = await bus.request("web.search.requested", {}, "web.search.completed")
        await bus.drain()
        [answer] = failed
        assert answer.data == {"error": "index offline", "error_type": "LookupError"}
        assert answer.correlation_id == request.correlation_id


@async_test()
async def test_a_request_handled_twice_is_answered_with_the_same_event_id() -> None:
    async with InProcessBus() as bus:
        worker = Worker("w", bus=bus)

        @worker.on_task("job.requested")
        async def job(task, context):  # type: ignore[no-untyped-def]
            return {"ok": True}

        await worker.start()
        done = await answers_to(bus, "job.completed")
        request = bus.envelope("job.requested", {}, correlation_id="c", topic=Topic.ACTION_REQUESTS)
        await bus.publish(request)
        await bus.publish(request)  # a redelivery after a crash
        await bus.drain()
        assert len(done) == 2 and done[0].id == done[1].id


@async_test()
async def test_workers_of_one_name_share_the_requests() -> None:
    async with InProcessBus() as bus:
        counts = {"a": 0, "b": 0}
        for label in counts:
            worker = Worker("pool", bus=bus)

            @worker.on_task("job.requested")
            async def job(task, context, label=label):  # type: ignore[no-untyped-def]
                counts[label] += 1

            await worker.start()
        for _ in range(6):
            await bus.request("job.requested", {}, None)
        await bus.drain()
        assert counts == {"a": 3, "b": 3}


@async_test()
async def test_an_unknown_response_topic_falls_back_to_action_results() -> None:
    async with InProcessBus() as bus:
        worker = Worker("w", bus=bus)

        @worker.on_task("job.requested")
        async def job(task, context):  # type: ignore[no-untyped-def]
            return {"ok": True}

        await worker.start()
        done = await answers_to(bus, "job.completed")
        await bus.request("job.requested", {}, None, response_topic="nowhere")
        await bus.drain()
        assert [a.topic for a in done] == [Topic.ACTION_RESULTS]


@async_test()
async def test_human_input_is_time_bound_with_a_default() -> None:
    async with InProcessBus() as bus:
        worker = Worker("w", bus=bus, human_timeout_seconds=0.1)
        asked: list[Envelope] = []

        @worker.on_task("confirm.requested")
        async def confirm(task, context):  # type: ignore[no-untyped-def]
            timeout = task.data.get("timeout")
            answer = await context.ask_human(
                "Deploy?", timeout_seconds=timeout, default="no", data={"env": "prod"}
            )
            return {"answer": answer}

        async def person(event: Envelope) -> None:
            asked.append(event)
            if event.data["timeout_seconds"] > 1:
                await bus.respond("human.input.provided", {"answer": "yes"}, event.correlation_id)

        await bus.subscribe(Topic.NOTIFICATION_EVENTS, "human.input.requested", person)
        await worker.start()
        loop = asyncio.get_running_loop()
        started = loop.time()
        silent = await bus.ask("confirm.requested", {}, "confirm.completed", timeout=5)
        assert silent.data == {"answer": "no"}
        assert loop.time() - started < 2
        answered = await bus.ask(
            "confirm.requested", {"timeout": 5}, "confirm.completed", timeout=10
        )
        assert answered.data == {"answer": "yes"}
        assert [a.data["prompt"] for a in asked] == ["Deploy?", "Deploy?"]
        assert asked[0].data == {
            "env": "prod",
            "prompt": "Deploy?",
            "timeout_seconds": 0.1,
            "default": "no",
        }
        assert asked[0].topic is Topic.NOTIFICATION_EVENTS
        assert asked[0].source == "waygraph/workers/w"


@async_test()
async def test_human_input_without_an_answer_key_returns_the_reply_data() -> None:
    async with InProcessBus() as bus:
        worker = Worker("w", bus=bus)
        results: list[Any] = []

        @worker.on_task("pick.requested")
        async def pick(task, context):  # type: ignore[no-untyped-def]
            results.append(await context.ask_human("Which?", timeout_seconds=5))

        async def person(event: Envelope) -> None:
            await bus.respond("human.input.provided", {"choice": 2}, event.correlation_id)

        await bus.subscribe(Topic.NOTIFICATION_EVENTS, "human.input.requested", person)
        await worker.start()
        await bus.request("pick.requested", {}, None)
        await eventually(lambda: results == [{"choice": 2}], what="the reply")


def test_a_worker_and_a_planner_need_names() -> None:
    with pytest.raises(ValueError, match="name"):
        Worker("", bus=InProcessBus())
    with pytest.raises(ValueError, match="name"):
        waygraph.events.Planner("", bus=InProcessBus(), store="memory://")


def test_the_public_names() -> None:
    expected = {
        "Bus",
        "Envelope",
        "GoalContext",
        "Handler",
        "InProcessBus",
        "NatsBus",
        "PermanentError",
        "PlanContext",
        "Planner",
        "PlannerContext",
        "PlannerSetupError",
        "StateAction",
        "StateConfig",
        "StateTransition",
        "Subscription",
        "Task",
        "Topic",
        "TransientError",
        "Transition",
        "TransitionContext",
        "Worker",
        "WorkerContext",
        "current_planner_context",
        "open_bus",
        "to_plan",
        "validate_state_machine",
    }
    assert set(waygraph.events.__all__) == expected
    for name in expected:
        assert getattr(waygraph.events, name) is not None
    assert waygraph.events.NatsBus.__name__ == "NatsBus"
    with pytest.raises(AttributeError):
        waygraph.events.Missing  # noqa: B018
