"""Issue 13, defect 1: every goal is answered exactly once through random SIGKILLs.

A ``waygraph planner`` and a ``waygraph worker`` process (NATS JetStream and
PostgreSQL) are killed with SIGKILL at random moments while 200 goals go
through them, and restarted each time. The default ``on_transition`` moves a
plan onto its terminal state and answers its goal in one commit, and a
restarted planner answers plans a dead one left on a terminal state, so
every goal gets its answer, and only one (JetStream drops a republished copy
by its event id).
"""

from __future__ import annotations

import asyncio
import random
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.bus_contract import async_test, eventually
from tests.test_events_faults import Stack, ready, shared_bus_url  # noqa: F401 (fixture)
from waygraph.events import (
    Envelope,
    InProcessBus,
    PlanContext,
    Planner,
    StateAction,
    StateConfig,
    StateTransition,
    Topic,
    Transition,
    Worker,
)
from waygraph.events.nats_bus import NatsBus
from waygraph.store import Store, open_store

GOALS = 200
KILLS = 12

MODULE = '''
"""Two states and a terminal one; the planner uses the default on_transition."""

import asyncio

from waygraph.events import PlanContext, Planner, StateAction, StateConfig, StateTransition, Worker

SM = {
    "start": StateConfig(state_name="start", default_next="working"),
    "working": StateConfig(
        state_name="working",
        action=StateAction(event_type="once.work.requested", response_event="once.work.done",
                           data={"n": "{goal_data.n}"}),
        transitions=[StateTransition(on_event="once.work.done", to_state="checking")],
    ),
    "checking": StateConfig(
        state_name="checking",
        action=StateAction(event_type="once.check.requested", response_event="once.check.done",
                           data={"n": "{goal_data.n}"}),
        transitions=[StateTransition(on_event="once.check.done", to_state="done")],
    ),
    "done": StateConfig(state_name="done", is_terminal=True),
}

planner = Planner("once-planner", recovery_interval=1.0)
worker = Worker("once-worker")


@planner.on_goal("once.goal")
async def on_goal(goal, context):
    plan = await PlanContext.create_from_goal(goal, state_machine=SM, context=context)
    await plan.execute_next()


@worker.on_task("once.work.requested")
async def work(task, context):
    await asyncio.sleep(0.01)
    return {"n": task.data.get("n")}


@worker.on_task("once.check.requested")
async def check(task, context):
    await asyncio.sleep(0.01)
    return {"ok": True}
'''


class OnceStack(Stack):
    def __init__(self, folder: Path, bus_url: str) -> None:
        super().__init__(folder, bus_url)
        self.module.write_text(MODULE)


@pytest.mark.slow
@pytest.mark.services
@async_test(timeout=170)
async def test_random_kills_of_planner_and_worker_answer_every_goal_exactly_once(
    shared_bus_url: str,  # noqa: F811 (the fixture)
    postgres_url: str,
    tmp_path: Path,
) -> None:
    rng = random.Random(1313)
    async with OnceStack(tmp_path, shared_bus_url) as stack:
        planner = await stack.spawn("planner", "--store", postgres_url)
        worker = await stack.spawn("worker")
        await ready(planner, worker)
        async with NatsBus(shared_bus_url, source="test/once") as client:
            answers: list[Envelope] = []

            async def record(event: Envelope) -> None:
                answers.append(event)

            await client.subscribe(Topic.ACTION_RESULTS, "once.goal.done", record)

            async def send_goals() -> None:
                for n in range(GOALS):
                    await client.request(
                        "once.goal", {"n": n}, "once.goal.done", correlation_id=f"goal-{n}"
                    )

            sending = asyncio.create_task(send_goals())
            kills = 0
            while kills < KILLS:
                await asyncio.sleep(rng.uniform(0.1, 0.5))
                if rng.random() < 0.7:
                    planner.process.send_signal(signal.SIGKILL)
                    await planner.process.wait()
                    planner = await stack.spawn("planner", "--store", postgres_url)
                    await ready(planner)
                else:
                    worker.process.send_signal(signal.SIGKILL)
                    await worker.process.wait()
                    worker = await stack.spawn("worker")
                    await ready(worker)
                kills += 1
            await sending
            await eventually(
                lambda: len({a.correlation_id for a in answers}) == GOALS,
                timeout=60,
                what=f"an answer to each of {GOALS} goals after the last restart",
            )
            await asyncio.sleep(1.5)  # time for a second answer to show up, if there were one
        per_goal = Counter(a.correlation_id for a in answers)
        assert set(per_goal) == {f"goal-{n}" for n in range(GOALS)}
        assert set(per_goal.values()) == {1}, [g for g, c in per_goal.items() if c > 1]
        assert all(a.data["status"] == "completed" for a in answers)
        assert all(a.data["result"]["state"] == "done" for a in answers)


# ---------------------------------------------------------------- in-process + SQLite

SMALL_SM = {
    "start": StateConfig(state_name="start", default_next="working"),
    "working": StateConfig(
        state_name="working",
        action=StateAction(event_type="small.work.requested", response_event="small.work.done"),
        transitions=[StateTransition(on_event="small.work.done", to_state="done")],
    ),
    "done": StateConfig(state_name="done", is_terminal=True),
}


def small_stack(store: Store, *, transition: Any = None) -> tuple[InProcessBus, Planner, Worker]:
    bus = InProcessBus()
    planner = Planner("small", bus=bus, store=store, recovery_interval=None)
    worker = Worker("small-worker", bus=bus)

    @planner.on_goal("small.goal")
    async def on_goal(goal: Envelope, context: Any) -> None:
        plan = await PlanContext.create_from_goal(goal, state_machine=SMALL_SM, context=context)
        await plan.execute_next()

    if transition is not None:
        planner.on_transition()(transition)

    @worker.on_task("small.work.requested")
    async def work(task: Envelope, context: Any) -> dict[str, Any]:
        return {"ok": True}

    return bus, planner, worker


@async_test(timeout=30)
async def test_the_terminal_state_and_the_answer_are_one_commit(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'plans.db'}")
    bus, planner, worker = small_stack(store)
    commits: list[list[str]] = []
    real = planner.store.commit_all

    def recording(writes: Any) -> list[int]:
        # A plan's commit is one commit_all (a batch of outbox marks has no events).
        commits.extend([e.get("type") for e in w.events] for w in writes)
        return real(writes)

    planner.store.commit_all = recording  # type: ignore[method-assign]
    async with planner, worker:
        answer = await bus.ask("small.goal", {}, "small.goal.completed", timeout=10)
    record = store.get(answer.data["plan_id"])
    assert record is not None and record.data["status"] == "completed"
    # The commit that finishes the plan enters the terminal state too: no
    # moment exists where the plan stands on "done" with its goal unanswered.
    (finishing,) = [c for c in commits if "plan_completed" in c]
    assert finishing[:3] == ["event_applied", "state_entered", "plan_completed"]
    store.close()


@async_test(timeout=30)
async def test_a_goal_left_unanswered_on_a_terminal_state_is_answered_after_restart(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'plans.db'}"
    store = open_store(url)

    async def dies_before_finalizing(transition: Transition, context: Any) -> None:
        # The two-commit pattern, killed between its commits: the plan stands
        # on its terminal state and nobody answers the goal.
        await transition.plan.execute_next(transition.event)

    bus, planner, worker = small_stack(store, transition=dies_before_finalizing)
    answers: list[Envelope] = []

    async def record(event: Envelope) -> None:
        answers.append(event)

    async with planner, worker:
        await bus.subscribe(Topic.ACTION_RESULTS, "small.goal.completed", record)
        await bus.request("small.goal", {}, "small.goal.completed", correlation_id="g-1")
        await eventually(
            lambda: (
                [r.data.get("current_state") for r in planner.store.list(status="running")]
                == ["done"]
            ),
            timeout=10,
            what="the plan standing on done, unanswered",
        )
    assert answers == []
    # A new planner process on the same store: start() answers it, once.
    store.close()
    bus2, planner2, _ = small_stack(open_store(url))
    answers2: list[Envelope] = []

    async def record2(event: Envelope) -> None:
        answers2.append(event)

    await bus2.start()
    await bus2.subscribe(Topic.ACTION_RESULTS, "small.goal.completed", record2)
    async with planner2:
        await eventually(lambda: len(answers2) == 1, timeout=10, what="the late answer")
        assert await planner2.recover() == 0  # nothing left to do the second time
    assert answers2[0].correlation_id == "g-1"
    assert answers2[0].data["status"] == "completed"
    plan = planner2.store.list(status="completed")
    assert len(plan) == 1
