"""bench/events.py's issue-41 target: PostgreSQL against memory:// in the same run,
and the CPU budget that rate leaves the planner."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))

import _events_reading
from _report import Report


def stack(name: str, plans_per_s: float, cpu: dict[str, float]) -> dict[str, Any]:
    return {"stack": name, "plans_per_s": plans_per_s, "p99_ms": 900.0, "cpu_ms_per_plan": cpu}


def test_the_goal_is_the_postgresql_stack_over_the_memory_stack_with_its_budget() -> None:
    cpu = {"planner": 1.5, "worker": 0.25, "client": 0.25, "NATS server": 0.5, "machine": 2.5}
    rows = [
        stack(
            _events_reading.POSTGRES_STACK,
            340,
            {**cpu, "planner": 3.0, "PostgreSQL server": 1.0, "machine": 5.0},
        ),
        stack(_events_reading.MEMORY_STACK, 400, {**cpu, "PostgreSQL server": 0.1}),
    ]
    report = Report("events", json_out=True)
    text = _events_reading.set_targets(report, rows, {})
    [target] = report.targets
    assert target["ratio"] == pytest.approx(0.85) and target["met"]
    assert target["needed"] == 0.85 and target["compare"] == ">="
    # 0.85 x 400 = 340 plans/s: the CPUs allow CPUs / 340 s a plan; the others took 2.0.
    goal = report.extra["goal_budget"]
    allowed = (os.cpu_count() or 1) / 340 * 1e3
    assert goal["allowed_ms"] == pytest.approx(allowed, abs=1e-3)
    assert goal["others_ms"] == pytest.approx(2.0)
    assert goal["postgres_server_ms"] == 1.0 and goal["postgres_server_ms_memory_stack"] == 0.1
    assert goal["planner_budget_ms"] == pytest.approx(min(allowed - 2.0, 1e3 / 340), abs=1e-3)
    assert "the PostgreSQL server 1.00, against 0.10 in the memory:// run" in text
    # On CPU alone: the planner's loop 1.5 / 3.0; every process 2.6 / 5.0.
    assert report.extra["goal_bounds"] == {
        "planner CPU a plan, memory:// / PostgreSQL": 0.5,
        "the stacks' CPU a plan, memory:// / PostgreSQL": 0.52,
    }


def test_a_slower_postgresql_stack_misses_the_goal() -> None:
    rows = [
        stack(_events_reading.POSTGRES_STACK, 200, {}),
        stack(_events_reading.MEMORY_STACK, 400, {}),
    ]
    report = Report("events", json_out=True)
    _events_reading.set_targets(report, rows, {})
    assert report.targets[0]["ratio"] == pytest.approx(0.5) and not report.targets[0]["met"]
    assert "goal_budget" not in report.extra
