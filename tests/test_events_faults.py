"""Faults: a worker killed mid-task, a NATS server restarted mid-plan, two planners on PostgreSQL.

Planners and workers run as real ``waygraph planner`` / ``waygraph worker``
subprocesses on the module below (written to the test's folder). Every
handler run is appended as a JSON line to a log file, so the tests can prove
"exactly once" from what actually ran: each plan enters each state once, is
finalized once, and its goal gets one answer.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections import Counter
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.bus_contract import async_test, eventually
from tests.test_cli_events import Command
from tests.test_events_nats import (
    PrivateNatsServer,
    delete_streams,
    shared_nats_url,
    unique_prefixes,
)
from waygraph.events import Envelope, Topic
from waygraph.events.nats_bus import NatsBus

pytestmark = [pytest.mark.slow, pytest.mark.services]

FAULT_MODULE = '''
"""A three-state planner (searching -> analyzing -> done) and its worker, logging every run."""

import asyncio
import json
import os

from waygraph.events import PlanContext, Planner, StateAction, StateConfig, StateTransition, Worker

LOG = os.environ["FAULT_LOG"]
HANG = os.environ.get("FAULT_HANG") == "1"  # tasks never finish: the test kills this worker
DELAY = float(os.environ.get("FAULT_DELAY", "0"))

SM = {
    "start": StateConfig(state_name="start", default_next="searching"),
    "searching": StateConfig(
        state_name="searching",
        action=StateAction(event_type="fault.search.requested",
                           response_event="fault.search.completed",
                           data={"topic": "{goal_data.topic}"}),
        transitions=[StateTransition(on_event="fault.search.completed", to_state="analyzing")],
    ),
    "analyzing": StateConfig(
        state_name="analyzing",
        action=StateAction(event_type="fault.analysis.requested",
                           response_event="fault.analysis.completed",
                           data={"found": "{results}"}),
        transitions=[StateTransition(on_event="fault.analysis.completed", to_state="done")],
    ),
    "done": StateConfig(state_name="done", is_terminal=True),
}


def log(kind, **fields):
    with open(LOG, "a") as out:
        out.write(json.dumps({"kind": kind, "pid": os.getpid(), **fields}) + "\\n")


planner = Planner("fault-planner")
worker = Worker("fault-worker")


@planner.on_goal("fault.goal")
async def on_goal(goal, context):
    plan = await PlanContext.create_from_goal(goal, state_machine=SM, context=context)
    moved = await plan.execute_next()
    log("goal", plan=plan.plan_id, corr=goal.correlation_id, moved=moved)


@planner.on_transition()
async def advance(transition, context):
    plan = transition.plan
    moved = await plan.execute_next(transition.event)
    log("transition", plan=plan.plan_id, to=transition.next_state, moved=moved)
    if plan.is_complete():
        finalized = await plan.finalize({"results": plan.results})
        log("finalized", plan=plan.plan_id, moved=finalized)


async def run(task, step):
    log("task", step=step, plan=task.plan_id, request=task.id)
    if HANG:
        await asyncio.sleep(3600)
    await asyncio.sleep(DELAY)
    return {"step": step, "topic": task.data.get("topic")}


@worker.on_task("fault.search.requested")
async def search(task, context):
    return await run(task, "search")


@worker.on_task("fault.analysis.requested")
async def analyse(task, context):
    return await run(task, "analysis")
'''


class Stack:
    """The module, its log, and the subprocesses of one test (all killed at the end)."""

    def __init__(self, folder: Path, bus_url: str) -> None:
        self.folder = folder
        self.bus_url = bus_url
        self.module = folder / "fault_stack.py"
        self.module.write_text(FAULT_MODULE)
        self.log = folder / "runs.jsonl"
        self.processes: list[Command] = []

    async def spawn(self, command: str, *args: str, **env: str) -> Command:
        os.environ["FAULT_LOG"] = str(self.log)
        saved = {k: os.environ.get(k) for k in ("FAULT_HANG", "FAULT_DELAY")}
        os.environ.update(env)
        try:
            process = await Command.start(command, str(self.module), "--bus", self.bus_url, *args)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
        self.processes.append(process)
        return process

    def runs(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line]

    async def __aenter__(self) -> Stack:
        return self

    async def __aexit__(self, *exc: object) -> None:
        """SIGTERM what still runs (a clean shutdown), SIGKILL what does not stop in 10 s."""
        for command in self.processes:
            if command.process.returncode is None:
                command.process.send_signal(signal.SIGTERM)
        for command in self.processes:
            try:
                await asyncio.wait_for(command.process.communicate(), 10)
            except TimeoutError:
                command.kill()
                await command.process.communicate()


async def ready(*commands: Command) -> None:
    await asyncio.gather(*(c.wait_for_stderr("running; Ctrl-C to stop") for c in commands))


async def watch_answers(bus: NatsBus) -> list[Envelope]:
    """Every ``fault.done`` on action-results, as published (duplicates included)."""
    answers: list[Envelope] = []

    async def record(event: Envelope) -> None:
        answers.append(event)

    await bus.subscribe(Topic.ACTION_RESULTS, "fault.done", record)
    return answers


def assert_each_plan_ran_once(stack: Stack, answers: list[Envelope], plans: int) -> None:
    runs = stack.runs()
    goals = [r for r in runs if r["kind"] == "goal" and r["moved"]]
    assert len(goals) == plans, goals
    moves = Counter((r["plan"], r["to"]) for r in runs if r["kind"] == "transition" and r["moved"])
    assert sorted(set(moves.values())) == [1], f"a state was entered twice: {moves}"
    assert {to for _, to in moves} == {"analyzing", "done"}
    assert len(moves) == 2 * plans
    finals = Counter(r["plan"] for r in runs if r["kind"] == "finalized" and r["moved"])
    assert len(finals) == plans and set(finals.values()) == {1}, finals
    per_goal = Counter(a.correlation_id for a in answers)
    assert len(per_goal) == plans and set(per_goal.values()) == {1}, per_goal
    assert all(a.data["status"] == "completed" for a in answers)


@pytest.fixture
def shared_bus_url() -> Iterator[str]:
    url = shared_nats_url()
    stream_prefix, subject_prefix = unique_prefixes()
    yield f"{url}?stream_prefix={stream_prefix}&subject_prefix={subject_prefix}&ack_wait=2"
    asyncio.run(delete_streams(url, stream_prefix))


@async_test(timeout=60)
async def test_a_worker_killed_mid_task_loses_nothing_and_the_plan_completes_once(
    shared_bus_url: str, tmp_path: Path
) -> None:
    async with Stack(tmp_path, shared_bus_url) as stack:
        planner = await stack.spawn("planner", "--store", f"sqlite:///{tmp_path / 'plans.db'}")
        doomed = await stack.spawn("worker", FAULT_HANG="1")
        await ready(planner, doomed)
        async with NatsBus(shared_bus_url, source="test/faults") as client:
            answers = await watch_answers(client)
            asking = asyncio.create_task(
                client.ask("fault.goal", {"topic": "kill"}, "fault.done", timeout=40)
            )
            await eventually(
                lambda: any(r["kind"] == "task" for r in stack.runs()),
                timeout=15,
                what="the worker taking the task",
            )
            doomed.process.send_signal(signal.SIGKILL)
            await doomed.process.wait()
            survivor = await stack.spawn("worker")
            await ready(survivor)
            answer = await asyncio.wait_for(asking, 40)
            await asyncio.sleep(0.5)  # time for a duplicate answer to show up, if there were one
        tasks = [r for r in stack.runs() if r["kind"] == "task"]
        searches = [t for t in tasks if t["step"] == "search"]
        # The search ran in the killed worker, then again (the same request) in the survivor.
        assert [t["pid"] for t in searches] == [doomed.process.pid, survivor.process.pid]
        assert searches[0]["request"] == searches[1]["request"]
        assert [t["pid"] for t in tasks if t["step"] == "analysis"] == [survivor.process.pid]
        assert answer.data["status"] == "completed"
        assert answer.data["result"]["results"]["analyzing"]["step"] == "analysis"
        assert_each_plan_ran_once(stack, answers, plans=1)


@async_test(timeout=60)
async def test_a_nats_restart_mid_plan_loses_nothing_and_applies_nothing_twice(
    tmp_path: Path,
) -> None:
    with PrivateNatsServer(tmp_path / "nats-store") as server:
        async with Stack(tmp_path, f"{server.url}?ack_wait=2") as stack:
            planner = await stack.spawn("planner", "--store", f"sqlite:///{tmp_path / 'plans.db'}")
            worker = await stack.spawn("worker", FAULT_DELAY="0.4")
            await ready(planner, worker)
            async with AsyncExitStack() as resources:
                client = NatsBus(stack.bus_url, source="test/faults")
                await client.start()
                resources.push_async_callback(client.close)
                answers = await watch_answers(client)
                asking = [
                    asyncio.create_task(
                        client.ask("fault.goal", {"topic": f"t{n}"}, "fault.done", timeout=45)
                    )
                    for n in range(6)
                ]
                await eventually(
                    lambda: sum(r["kind"] == "task" for r in stack.runs()) >= 3,
                    timeout=15,
                    what="plans under way",
                )
                in_flight_before = len(stack.runs())
                server.stop(signal.SIGKILL)
                await asyncio.sleep(0.5)
                server.start()
                results = await asyncio.wait_for(asyncio.gather(*asking), 45)
                await asyncio.sleep(0.5)
            assert 0 < in_flight_before < len(stack.runs())  # the restart really was mid-plan
            assert sorted(r.data["result"]["results"]["searching"]["topic"] for r in results) == [
                f"t{n}" for n in range(6)
            ]
            assert_each_plan_ran_once(stack, answers, plans=6)


@async_test(timeout=60)
async def test_two_planner_processes_on_one_postgresql_complete_every_plan_once(
    shared_bus_url: str, postgres_url: str, tmp_path: Path
) -> None:
    async with Stack(tmp_path, shared_bus_url) as stack:
        planners = [await stack.spawn("planner", "--store", postgres_url) for _ in range(2)]
        workers = [await stack.spawn("worker") for _ in range(2)]
        await ready(*planners, *workers)
        async with NatsBus(shared_bus_url, source="test/faults") as client:
            answers = await watch_answers(client)
            results = await asyncio.gather(
                *(
                    client.ask("fault.goal", {"topic": f"p{n}"}, "fault.done", timeout=40)
                    for n in range(30)
                )
            )
            await asyncio.sleep(0.5)
        assert len({r.data["plan_id"] for r in results}) == 30
        assert_each_plan_ran_once(stack, answers, plans=30)
        runs = stack.runs()
        # Both planner processes did work: goals, transitions or both.
        busy = {r["pid"] for r in runs if r["kind"] in ("goal", "transition")}
        assert busy == {p.process.pid for p in planners}
