"""bench/events.py's reading: the CPU it counts per process, and the bounds and budgets
it reads from the stacks (issue 19, target 4)."""

from __future__ import annotations

import asyncio
import importlib.util
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).parent.parent / "bench"

pytestmark = pytest.mark.timeout(60)


def load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[f"bench_{name}"] = module
    spec.loader.exec_module(module)
    return module


events = load("events")  # puts bench/ on sys.path for the helpers below
import _cpu  # noqa: E402
import _events_reading  # noqa: E402
from _report import Report  # noqa: E402

linux = pytest.mark.skipif(not Path("/proc/stat").exists(), reason="reads /proc (Linux)")


@linux
def test_a_snapshot_counts_the_cpu_a_process_spent_and_the_machine_counts_it_too() -> None:
    snap = _cpu.Snapshot({"me": [os.getpid()]})
    started = time.process_time()
    while time.process_time() - started < 0.3:
        pass
    spent = snap.per_unit_ms(3)  # three "plans"
    # 0.3 s of CPU over three plans: about 100 ms each (clock ticks are 10 ms).
    assert 80 <= spent["me"] <= 200
    assert spent["machine"] >= spent["me"] - 10


@linux
def test_a_process_gone_counts_nothing_and_reads_as_nan() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert math.isnan(_cpu.process_seconds(proc.pid))
    snap = _cpu.Snapshot({"gone": [proc.pid]})
    assert snap.per_unit_ms(1)["gone"] == 0


@linux
def test_a_server_is_found_by_its_command_name() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        name = Path(f"/proc/{proc.pid}/comm").read_text().strip()
        assert proc.pid in _cpu.pids_named(name)
        assert proc.pid not in _cpu.pids_named("no-such-server")
    finally:
        proc.kill()
        proc.wait()


@linux
def test_a_process_that_appears_after_the_first_read_counts_all_it_used() -> None:
    # A server's connection opened during the batch is one such process.
    found: list[int] = []
    snap = _cpu.Snapshot({"server": lambda: list(found)})
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"
    child = subprocess.Popen([sys.executable, "-c", burn + "time.sleep(30)"])
    try:
        found.append(child.pid)
        deadline = time.monotonic() + 20
        while _cpu.process_seconds(child.pid) < 0.3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert snap.per_unit_ms(1)["server"] >= 280
    finally:
        child.kill()
        child.wait()


def test_the_budget_is_the_machines_cpu_at_the_rate_less_the_others() -> None:
    b = _cpu.budget(plans_per_s=800, cpus=2, others_ms=2.0)
    assert b.allowed_ms == pytest.approx(2.5)
    assert b.planner_ms == pytest.approx(0.5)
    assert _cpu.budget(400, 2, 6.0).planner_ms == pytest.approx(-1.0)  # no planner could
    assert _cpu.budget(0, 2, 1.0).allowed_ms == math.inf


def test_the_planner_gets_at_most_one_cpu_whatever_the_others_leave() -> None:
    # 500 plans/s on 4 CPUs: 8 ms a plan in all, 6 left, but one event loop has 2.
    b = _cpu.budget(plans_per_s=500, cpus=4, others_ms=2.0)
    assert b.allowed_ms == pytest.approx(8.0)
    assert b.one_cpu_ms == pytest.approx(2.0)
    assert b.planner_ms == pytest.approx(2.0)


def stack(name: str, plans_per_s: float, cpu: dict[str, float] | None) -> dict[str, Any]:
    row: dict[str, Any] = {"stack": name, "plans_per_s": plans_per_s, "p99_ms": 900.0}
    if cpu is not None:
        row["cpu_ms_per_plan"] = cpu
    return row


CEILINGS = {"postgres_commits_per_s": 16000.0, "jetstream_publishes_per_s": 16000.0}


def test_the_nats_bound_and_budgets_are_reported_and_set_no_target() -> None:
    # Bracket: min(16000 / 8, 16000 / 4) = 2000 plans/s; half of it, 1000 plans/s
    # on 2 CPUs, allows 2 ms of CPU a plan.
    cpu = {"planner": 3.0, "worker": 0.25, "client": 0.25, "NATS server": 0.5}
    rows = [
        stack("NATS + PostgreSQL, 3 processes", 300, {**cpu, "PostgreSQL server": 1.0}),
        stack("NATS + memory://, 3 processes", 600, {**cpu, "planner": 1.5, "machine": 2.5}),
    ]
    rows[0]["cpu_ms_per_plan"]["machine"] = 5.0
    report = Report("events", json_out=True)
    text = _events_reading.set_targets(report, rows, CEILINGS)
    # One target (issue 41: the PostgreSQL stack against the memory:// one);
    # issue 19's bracket is reported, not a target.
    assert [t["name"].split(" >=")[0] for t in report.targets] == ["NATS + PostgreSQL, 3 processes"]
    assert report.targets[0]["ratio"] == pytest.approx(0.5)
    assert list(report.extra["brackets"].values()) == [0.15]
    assert report.extra["bounds"] == {"NATS + memory:// / the NATS bracket": 0.3}
    budgets = report.extra["budgets"]
    cpus = os.cpu_count() or 1
    allowed = cpus / 1000 * 1e3
    assert budgets["NATS + PostgreSQL, 3 processes"] == {
        "plans_per_s": 1000.0,
        "allowed_ms": pytest.approx(allowed),
        "others_ms": pytest.approx(2.0),
        "one_cpu_ms": pytest.approx(1.0),
        "planner_budget_ms": pytest.approx(min(allowed - 2.0, 1.0)),
        "planner_ms": 3.0,
    }
    assert budgets["NATS + memory://, 3 processes"]["others_ms"] == pytest.approx(1.0)
    assert "0.30 x the bracket (2000)" in text
    assert "the PostgreSQL server 1.00" in text


def test_without_the_nats_ceilings_there_is_no_nats_reading() -> None:
    report = Report("events", json_out=True)
    rows = [stack("in-process + memory://", 700, None)]
    text = _events_reading.set_targets(report, rows, {"sqlite_commits_per_s": 80000.0})
    assert "budget" not in text and "budgets" not in report.extra
    assert report.extra["bounds"] == {"in-process + memory:// / the SQLite bracket": 0.07}


def test_the_memory_bound_reuses_the_ceilings_measured_for_the_postgresql_stack() -> None:
    known = {**CEILINGS}
    got = asyncio.run(events.measure_ceilings("NATS + memory://, 3 processes", known))
    assert got == {}
