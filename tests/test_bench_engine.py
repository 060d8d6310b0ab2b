"""bench/engine.py: its floors do the Navigator's work, and its report is the promised JSON."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).parent.parent / "bench" / "engine.py"

pytestmark = pytest.mark.timeout(60)


def load_bench() -> Any:
    spec = importlib.util.spec_from_file_location("bench_engine", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_engine"] = module
    spec.loader.exec_module(module)
    return module


bench = load_bench()


def test_the_floors_make_the_transitions_the_navigator_runs_make() -> None:
    for workload, (_, _, outputs) in bench.NAV_WORKLOADS.items():
        _, floor_turns = bench.pure_floor(workload, runs=2)()
        _, nav_turns = bench.navigator_run("memory://", workload, sessions=2)()
        assert floor_turns == nav_turns == 2 * len(outputs), workload


def test_the_raw_sqlite_floor_writes_the_records_and_events_a_run_writes(tmp_path: Path) -> None:
    path = tmp_path / "floor.db"
    _, turns = bench.sqlite_floor(path, "retry loop", runs=1)()
    writes = bench.turn_writes("retry loop")
    assert turns == len(writes) - 1
    with sqlite3.connect(path) as conn:
        version, data = conn.execute("SELECT version, data FROM records").fetchone()
        events = [json.loads(d) for (d,) in conn.execute("SELECT data FROM events ORDER BY seq")]
    assert version == len(writes)
    assert json.loads(data)["status"] == "completed"
    assert events == [e for _, new in writes for e in new]


def test_interleaved_rounds_run_every_work_once_a_round_in_turn() -> None:
    times = iter([3.0, 1.0, 2.0, 4.0])  # rounds: a, b, a, b
    samples = bench.interleaved(
        {"a": lambda: (next(times), 1), "b": lambda: (next(times), 2)}, rounds=2
    )
    assert samples == {"a": [3e6, 2e6], "b": [0.5e6, 2e6]}


def test_a_guard_is_the_median_of_its_rounds_ratios_not_of_its_best_figures() -> None:
    floor, turn = "floor: advance + render, linear", "waygraph Navigator.turn, memory://, linear"
    rows = {floor: 10.0, turn: 20.0, "waygraph Navigator.turn, sqlite (NORMAL), linear": 1.0}
    rows |= {"floor: raw SQLite transaction (NORMAL), linear": 1.0}
    # A busy moment doubled both sides of round 2 alike; round 3's floor ran alone in one.
    samples = {floor: [10.0, 20.0, 40.0], turn: [30.0, 60.0, 40.0]}
    guards = {name: ratio for name, ratio, _, _ in bench.targets_of(rows, samples)}
    assert guards["memory turn <= 3.5x its pure floor (advance + render), linear"] == 3.0


def test_json_report_has_figures_and_targets(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = {
        "waygraph engine, linear": 10.0,
        "LangGraph, no checkpointer, linear": 300.0,
        "LangGraph, no checkpointer, retry loop": 100.0,
        "LangGraph, SqliteSaver, linear": 3000.0,
        "waygraph Navigator.turn, sqlite (FULL), linear": 600.0,
    }
    for workload in bench.NAV_WORKLOADS:
        rows[f"floor: advance + render, {workload}"] = 50.0
        rows[f"waygraph Navigator.turn, memory://, {workload}"] = 90.0
        rows[f"floor: raw SQLite transaction (NORMAL), {workload}"] = 200.0
        rows[f"waygraph Navigator.turn, sqlite (NORMAL), {workload}"] = 300.0
        rows[f"bound: Navigator.turn, a store that keeps nothing, {workload}"] = 60.0
        rows[f"bound: advance + render + the run record, {workload}"] = 55.0
    monkeypatch.setattr(bench, "measure", lambda tmp: (rows, ["burr"], {}))
    assert bench.main(["--json"]) == 1  # 100 / 90: LangGraph's retry loop, not 1.5x dearer
    report = json.loads(capsys.readouterr().out)
    assert report["bench"] == "engine" and report["figures"] == rows
    assert report["unmeasured"] == ["burr"]
    by_name = {t["name"]: t for t in report["targets"]}
    memory = by_name["memory turn <= 3.5x its pure floor (advance + render), linear"]
    assert (memory["ratio"], memory["needed"], memory["met"]) == (1.8, 3.5, True)
    sql = by_name["sqlite turn <= 3.0x the raw SQLite transaction, retry loop"]
    assert (sql["ratio"], sql["met"]) == (1.5, True)
    lg = by_name["memory turn >= 1.5x cheaper than a LangGraph node step, linear"]
    assert lg["ratio"] == pytest.approx(3.333, abs=1e-3) and lg["compare"] == ">="
    # The shape every bench script reports in (bench/_report.py).
    assert all({"name", "ratio", "needed", "met", "compare"} <= set(t) for t in report["targets"])
    assert report["missed"] == [
        "memory turn >= 1.5x cheaper than a LangGraph node step, retry loop"
    ]
    # The memory guards' bounds, as ratios to the pure floor of the same workload.
    bounds = report["bounds"]
    assert bounds["Navigator.turn, a store that keeps nothing / the pure floor, linear"] == 1.2
    assert bounds["advance + render + the run record / the pure floor, retry loop"] == 1.1
    # The SqliteSaver guard's: its step against the raw transaction plus a
    # turn that stores nothing (3000 / (200 + 60)); only where it was measured.
    saver = "LangGraph + SqliteSaver / (raw SQLite transaction + a turn whose store keeps nothing)"
    assert bounds[f"{saver}, linear"] == pytest.approx(11.538, abs=1e-3)
    assert f"{saver}, retry loop" not in bounds


def test_the_store_that_keeps_nothing_runs_the_same_turns_and_keeps_nothing() -> None:
    for workload, (_, _, outputs) in bench.NAV_WORKLOADS.items():
        work = bench.navigator_run("memory://", workload, sessions=2, keep=False)
        _, turns = work()
        assert turns == 2 * len(outputs), workload
        # The turns' writes were handed to the store and none was kept (the
        # plan's version, stored when its first run starts, is).
        kept = work.navigator.store.list()
        assert [r.kind for r in kept] == ["plan"], workload
        assert work.navigator.store.sessions() == [], workload
