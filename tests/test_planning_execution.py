"""The scheduler: modes, parallelism (proved without timing), timeouts, retries,
fallbacks, failure handling, reuse of identical calls, state and results."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from waygraph.planning import (
    AgentBusyError,
    LLMResponse,
    Plan,
    PlanningAgent,
    PlanningError,
    PlanningPattern,
    StepContext,
    StepStatus,
    Tool,
)

pytestmark = pytest.mark.timeout(30)


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


def statuses(result) -> dict[str, str]:
    return {sid: r.status.value for sid, r in result.step_results.items()}


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


# ------------------------------------------------------------------ references


def test_results_are_substituted_whole_and_inside_text():
    def numbers() -> list[int]:
        return [1, 2, 3]

    def total(values: list[int], label: str) -> str:
        return f"{label}={sum(values)}"

    plan = plan_of(
        step("n", "numbers"), step("t", "total", ("n",), values="$n", label="sum of ${n}")
    )
    result = execute(plan, [numbers, total])
    assert result.final_output == "sum of [1, 2, 3]=6"


def test_a_result_of_the_wrong_type_fails_the_step_naming_the_parameter():
    def word() -> str:
        return "many"

    def double(n: int) -> int:
        return 2 * n

    result = execute(
        plan_of(step("w", "word"), step("d", "double", ("w",), n="$w")),
        [word, double],
        retry_failed_steps=0,
    )
    assert "parameter 'n'" in result.step_results["d"].error


# ------------------------------------------------------------------ timeouts, retries, fallback


def test_timeouts_are_retried_then_fail():
    calls = []

    async def hang() -> None:
        calls.append(1)
        await asyncio.Event().wait()

    result = execute(plan_of(step("h", "hang")), [hang], step_timeout=0.02, retry_failed_steps=2)
    outcome = result.step_results["h"]
    assert outcome.status is StepStatus.FAILED
    assert outcome.attempts == 3 and len(calls) == 3
    assert outcome.error == (
        "attempt 1: timed out after 0.02 s; attempt 2: timed out after "
        "0.02 s; attempt 3: timed out after 0.02 s"
    )


def test_a_retry_can_succeed():
    calls = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("reset by peer")
        return "ok"

    result = execute(plan_of(step("f", "flaky")), [flaky], retry_failed_steps=1)
    assert result.success
    outcome = result.step_results["f"]
    assert (outcome.attempts, outcome.output, outcome.used_fallback) == (2, "ok", False)


def test_the_fallback_runs_after_the_retries():
    def primary(city: str) -> str:
        raise RuntimeError(f"no data for {city}")

    def cached(city: str) -> str:
        return f"cached {city}"

    def archive(year: int) -> str:
        return f"archive {year}"

    plan = plan_of(
        dict(step("a", "primary", city="Oslo"), fallback_action="cached"),
        dict(
            step("b", "primary", city="Rome"),
            fallback_action="archive",
            fallback_parameters={"year": 1990},
        ),
    )
    result = execute(plan, [primary, cached, archive], retry_failed_steps=1)
    assert result.success
    a, b = result.step_results["a"], result.step_results["b"]
    assert (a.output, a.used_fallback, a.attempts) == ("cached Oslo", True, 2)
    assert b.output == "archive 1990"


def test_a_failing_fallback_fails_the_step_with_every_error():
    def broken() -> None:
        raise ValueError("broken")

    plan = plan_of(dict(step("a", "broken"), fallback_action="broken"))
    result = execute(plan, [broken], retry_failed_steps=0)
    assert result.step_results["a"].error == (
        "attempt 1: ValueError: broken; fallback broken: ValueError: broken"
    )


# ------------------------------------------------------------------ failure handling


def failing_tools() -> list[Any]:
    def ok(x: str = "") -> str:
        return "ok" + x

    def bad(x: str = "") -> str:
        raise RuntimeError("bad luck")

    return [ok, bad]


BRANCHY = plan_of(
    step("a", "ok"),
    step("f", "bad", ("a",)),
    step("g", "ok", ("f",), x="$f"),
    step("h", "ok", ("g",)),
    step("i", "ok", ("a",)),
)


def test_without_continue_on_failure_the_run_stops_and_keeps_partial_results():
    result = execute(BRANCHY, failing_tools(), execution_mode="sequential", retry_failed_steps=0)
    assert not result.success
    assert statuses(result) == {
        "a": "completed",
        "f": "failed",
        "g": "blocked",
        "h": "blocked",
        "i": "blocked",
    }
    assert result.step_results["a"].output == "ok"
    assert result.final_output.startswith(
        "The plan did not complete: step 'f' failed: attempt 1: RuntimeError: bad luck"
    )
    assert "not run: g, h, i" in result.final_output
    assert result.execution_state.stop_reason.startswith("step 'f' failed")


def test_with_continue_on_failure_dependents_are_skipped_and_other_branches_go_on():
    result = execute(
        BRANCHY,
        failing_tools(),
        continue_on_failure=True,
        retry_failed_steps=0,
        execution_mode="parallel",
    )
    assert not result.success
    assert statuses(result) == {
        "a": "completed",
        "f": "failed",
        "g": "skipped",
        "h": "skipped",
        "i": "completed",
    }
    assert result.step_results["g"].error == "not run: its dependency 'f' failed"
    assert result.step_results["h"].error == "not run: its dependency 'g' was skipped"
    assert "skipped after a failed dependency: g, h" in result.final_output


def test_steps_running_when_the_run_stops_finish_and_are_kept():
    gate = {}

    async def slow() -> str:
        gate.setdefault("go", asyncio.Event())
        await gate["go"].wait()
        return "slow done"

    async def bad() -> str:
        # Async, so b's failure lands before s can finish: a sync tool runs in a
        # thread, and its failure would race s's completion (and `after`'s start).
        gate.setdefault("go", asyncio.Event()).set()
        raise RuntimeError("bad")

    plan = plan_of(step("s", "slow"), step("b", "bad"), step("after", "slow", ("s",)))
    result = execute(
        plan, [slow, bad], execution_mode="parallel", retry_failed_steps=0, step_timeout=5
    )
    assert statuses(result) == {"s": "completed", "b": "failed", "after": "blocked"}
    assert result.step_results["s"].output == "slow done"


# ------------------------------------------------------------------ identical calls


def test_identical_calls_reuse_the_first_result():
    calls = []

    def lookup(term: str) -> str:
        calls.append(term)
        return f"def of {term}"

    plan = plan_of(
        step("a", "lookup", term="x"),
        step("b", "lookup", term="x"),
        step("c", "lookup", ("a",), term="$a"),
        step("d", "lookup", term="y"),
    )
    for mode in ("sequential", "parallel"):
        calls.clear()
        result = execute(plan, [lookup], execution_mode=mode)
        assert result.success
        assert sorted(calls) == ["def of x", "x", "y"]
        reused = [sid for sid, r in result.step_results.items() if r.reused]
        assert len(reused) == 1 and reused[0] in ("a", "b")
        assert result.step_results["a"].output == result.step_results["b"].output


def test_side_effect_tools_are_never_deduplicated():
    written = []

    def write(path: str) -> str:
        written.append(path)
        return path

    plan = plan_of(step("a", "write", path="f.txt"), step("b", "write", path="f.txt"))
    result = execute(plan, [Tool(write, side_effects=True)])
    assert written == ["f.txt", "f.txt"]
    assert not any(r.reused for r in result.step_results.values())
    written.clear()
    execute(plan, [write], side_effect_tools=("write",))
    assert written == ["f.txt", "f.txt"]


def test_a_failed_call_is_not_shared():
    calls = []

    def once_broken(x: str) -> str:
        calls.append(x)
        if len(calls) == 1:
            raise RuntimeError("first call fails")
        return "fine"

    plan = plan_of(step("a", "once_broken", x="same"), step("b", "once_broken", ("a",), x="same"))
    result = execute(plan, [once_broken], retry_failed_steps=0, continue_on_failure=True)
    assert statuses(result) == {"a": "failed", "b": "skipped"}
    calls.clear()
    result = execute(
        plan_of(step("a", "once_broken", x="same"), step("b", "once_broken", x="same")),
        [once_broken],
        retry_failed_steps=0,
        continue_on_failure=True,
        execution_mode="sequential",
    )
    assert statuses(result) == {"a": "failed", "b": "completed"}
    assert not result.step_results["b"].reused
    assert calls == ["same", "same"]


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
