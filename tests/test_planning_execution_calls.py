"""The scheduler's tool calls: references to earlier results are substituted, and
identical calls reuse the first result (never for side-effect tools or failures).
"""

from __future__ import annotations

import pytest

from tests.scheduler_helpers import execute, plan_of, statuses, step
from waygraph.planning import (
    Tool,
)

pytestmark = pytest.mark.timeout(30)


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
