"""The scheduler when steps fail: timeouts, retries and fallbacks, and how a failure
stops the run or skips only its dependents.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.scheduler_helpers import execute, plan_of, statuses, step
from waygraph.planning import (
    StepStatus,
)

pytestmark = pytest.mark.timeout(30)


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
