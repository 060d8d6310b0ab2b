"""The scheduler's modes and parallelism, proved without timing: independent steps run
at once, dependencies and max_parallel bound them, side-effect tools run alone.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.scheduler_helpers import execute, plan_of, statuses, step

pytestmark = pytest.mark.timeout(30)


class Concurrency:
    """Tools that count how many of them run at once."""

    def __init__(self) -> None:
        self.active = 0
        self.most = 0
        self.order: list[str] = []

    async def work(self, name: str) -> str:
        self.active += 1
        self.most = max(self.most, self.active)
        self.order.append(f"start {name}")
        for _ in range(5):  # yield so that any other ready step gets to start meanwhile
            await asyncio.sleep(0)
        self.order.append(f"end {name}")
        self.active -= 1
        return name


# ------------------------------------------------------------------ parallelism


def rendezvous() -> list[Any]:
    """Two tools that can only finish if they run at the same time."""
    events: dict[str, asyncio.Event] = {}

    def event(name: str) -> asyncio.Event:
        return events.setdefault(name, asyncio.Event())

    async def left() -> str:
        event("left").set()
        await event("right").wait()
        return "left"

    async def right() -> str:
        event("right").set()
        await event("left").wait()
        return "right"

    def join(a: str, b: str) -> str:
        return f"{a}+{b}"

    return [left, right, join]


RENDEZVOUS = plan_of(
    step("l", "left"), step("r", "right"), step("j", "join", ("l", "r"), a="$l", b="$r")
)


@pytest.mark.parametrize("mode", ["parallel", "adaptive"])
def test_independent_steps_run_concurrently(mode):
    result = execute(RENDEZVOUS, rendezvous(), execution_mode=mode, step_timeout=5)
    assert result.success
    assert result.final_output == "left+right"


def test_sequential_mode_runs_one_step_at_a_time():
    # The rendezvous cannot complete one at a time: the first step times out.
    result = execute(
        RENDEZVOUS,
        rendezvous(),
        execution_mode="sequential",
        step_timeout=0.05,
        retry_failed_steps=0,
    )
    assert not result.success
    assert result.step_results["l"].error == "attempt 1: timed out after 0.05 s"
    assert statuses(result) == {"l": "failed", "r": "blocked", "j": "blocked"}


def test_sequential_mode_follows_plan_order_among_ready_steps():
    c = Concurrency()
    plan = plan_of(
        step("c", "work", name="c"),
        step("a", "work", name="a"),
        step("b", "work", ("c",), name="b"),
    )
    result = execute(plan, [c.work], execution_mode="sequential")
    assert result.success
    assert c.most == 1
    assert c.order == ["start c", "end c", "start a", "end a", "start b", "end b"]


def test_parallel_modes_start_the_longest_chain_first():
    # leaf is first in plan order, but head has a chain of two behind it: with
    # one slot, a plan-order scheduler would make the chain wait for leaf.
    plan = plan_of(
        step("leaf", "work", name="leaf"),
        step("other", "work", name="other"),
        step("head", "work", name="head"),
        step("mid", "work", ("head",), name="mid"),
        step("tail", "work", ("mid", "other"), name="tail"),
    )
    c = Concurrency()
    assert execute(plan, [c.work], execution_mode="parallel", max_parallel=1).success
    starts = [entry for entry in c.order if entry.startswith("start")]
    # head (2 steps below it) first; then other and mid (1 each, plan order
    # between them); leaf and tail (0) last, in plan order.
    assert starts == ["start head", "start other", "start mid", "start leaf", "start tail"]
    # Sequential mode keeps plan order.
    c = Concurrency()
    assert execute(plan, [c.work], execution_mode="sequential").success
    assert [e for e in c.order if e.startswith("start")] == [
        "start leaf", "start other", "start head", "start mid", "start tail",
    ]  # fmt: skip


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_max_parallel_bounds_running_steps(limit):
    c = Concurrency()
    plan = plan_of(*[step(f"s{i}", "work", name=f"s{i}") for i in range(6)])
    result = execute(plan, [c.work], execution_mode="parallel", max_parallel=limit)
    assert result.success
    assert c.most == limit


def test_a_step_starts_when_its_last_dependency_finishes_not_after_the_whole_wave():
    gate = {}

    async def slow() -> str:
        gate.setdefault("open", asyncio.Event())
        await gate["open"].wait()
        return "slow"

    async def fast() -> str:
        return "fast"

    async def after_fast(x: str) -> str:
        # Runs while `slow` is still waiting: it releases it.
        gate.setdefault("open", asyncio.Event()).set()
        return x + "!"

    plan = plan_of(step("s", "slow"), step("f", "fast"), step("g", "after_fast", ("f",), x="$f"))
    result = execute(plan, [slow, fast, after_fast], execution_mode="parallel", step_timeout=5)
    assert result.success
    assert result.final_output == {"s": "slow", "g": "fast!"}


def test_adaptive_mode_runs_chains_in_order_and_side_effect_tools_alone():
    c = Concurrency()

    async def write(name: str) -> str:
        assert c.active == 0, "a side-effect tool must run alone in adaptive mode"
        return await c.work(name)

    plan = plan_of(
        step("a", "work", name="a"),
        step("w", "write", name="w"),
        step("b", "work", name="b"),
        step("c", "work", ("a", "w", "b"), name="c"),
    )
    result = execute(
        plan,
        [c.work, write],
        side_effect_tools=("write",),
        execution_mode="adaptive",
        max_parallel=3,
    )
    assert result.success
    assert c.order[:2] == ["start a", "end a"]  # w waits for a to finish
    assert c.order[2:4] == ["start w", "end w"]  # then runs alone
    assert c.order[-2:] == ["start c", "end c"]


def test_sync_tools_do_not_block_other_steps():
    import threading

    released = threading.Event()

    def blocking() -> str:
        assert released.wait(5)
        return "unblocked"

    async def release() -> str:
        released.set()
        return "released"

    plan = plan_of(step("b", "blocking"), step("r", "release"))
    result = execute(plan, [blocking, release], execution_mode="parallel")
    assert result.success
    assert result.final_output == {"b": "unblocked", "r": "released"}
