"""SQLite store commits: pages written and µs per commit of an event plan and a guided turn.

A SQLite commit in WAL mode writes every page it changed to the log, whole,
and every 1,000 such pages a checkpoint copies them into the file and
fsyncs: the pages a commit writes are most of what it costs. Figures, per
source tree:

- *pages*: WAL frames per commit (checkpoints off, so every frame stays in
  the log to be counted; the same every run): an event plan created (a
  2.6 KB record shaped like ``bench/events.py``'s, three correlation ids,
  three events) and then updated (finished: status ``completed``, the
  outbox id dropped), 500 plans; a guided run activated and its nine turns
  (the records ``bench/engine.py`` writes, linear workload), 300 runs;
- *µs*: ``SQLiteStore.commit`` of the same writes with the store's own
  settings (checkpoints on), 2,000 plans and 300 runs, median and mean (the
  mean carries the checkpoints), and a one-row commit (``bench/_ceilings.py``'s
  transaction) in the same process, for scale;
- *tail*: 6,000 commits of a 2 KB record on 300 keys with a pause of 2 ms
  every 50: median, p99, p99.9, slowest, mean, and how many took over 1 ms
  (a checkpoint inside a commit shows here).

``--against SRC`` (a ``src`` folder of another checkout, e.g. a worktree of
main) measures that code too, each tree in a child process of its own, the
trees interleaved ``--rounds`` times, so old and new meet the same load.

Example::

    python bench/sqlite_commits.py --against /tmp/old/src --rounds 3
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import Report, add_json_flag
from _trees import interleaved

PLANS, RUNS = 2000, 300


def _plan(key: str, n: int, done: bool) -> tuple[dict[str, Any], list[dict[str, Any]], list[str]]:
    """An event plan's record, new events and correlation ids: created, or finished."""
    request = {"id": f"req-{key}", "type": "bench.work.requested", "data": {"n": n}}
    states = {
        "start": {"state_name": "start", "action": None, "default_next": "working"},
        "working": {
            "state_name": "working",
            "action": {"event_type": "bench.work.requested", "data": {"n": "{goal_data.n}"}},
            "transitions": [{"on_event": "bench.work.completed", "to_state": "done"}],
        },
        "done": {"state_name": "done", "action": None, "is_terminal": True},
    }
    record = {
        "plan_id": key,
        "goal": {"id": f"goal-{key}", "type": "bench.goal", "data": {"n": n}, "x": "g" * 300},
        "state_machine": states,
        "status": "completed" if done else "running",
        "current_state": "done" if done else "working",
        "path": ["working", "done"] if done else ["working"],
        "results": {"working": {"n": n}} if done else {},
        "outbox": [{"id": f"out-{key}", "envelope": request, "pad": "e" * 600}],
        "processed_event_ids": [f"goal-{key}"],
        "pad": "p" * 900,
    }
    ids = [f"goal-{key}", f"corr-{key}"] + ([] if done else ["waygraph:outbox-pending"])
    events = [{"type": "state_entered", "state": record["current_state"], "n": n}] * 3
    return record, events, ids


def _plan_commit(store: Any, key: str, n: int, done: bool) -> None:
    record, events, ids = _plan(key, n, done)
    status = record["status"]
    store.commit(
        key, record, int(done), events, kind="event", status=status, plan=key, correlation_ids=ids
    )


def _guided() -> Callable[[Any, int, int], None]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from engine import turn_writes

    writes = turn_writes("linear")

    def commit(store: Any, run: int, version: int) -> None:
        record, events = writes[version]
        store.commit(
            f"run_{run}",
            record,
            version,
            events,
            kind="guided",
            session=f"s-{run}",
            status=record["status"],
            plan=record["plan_id"],
            make_current=version == 0,
        )

    commit.turns = len(writes)  # type: ignore[attr-defined]
    return commit


def _frames(wal: Path) -> int:
    return max(0, wal.stat().st_size - 32) // (24 + 4096) if wal.exists() else 0


def _pages(folder: str, guided: Callable[[Any, int, int], None]) -> dict[str, float]:
    from waygraph.store import open_store

    store = open_store(f"sqlite:///{folder}/pages.db")
    store._conn().execute("PRAGMA wal_autocheckpoint = 0")  # type: ignore[attr-defined]
    # Nor the store's checkpoint thread (store._checkpoint; older trees have none).
    store._checkpoints = None  # type: ignore[attr-defined]
    wal = Path(f"{folder}/pages.db-wal")
    found: dict[str, float] = {}
    for name, done in (("plan created", False), ("plan updated", True)):
        start = _frames(wal)
        for i in range(500):
            _plan_commit(store, f"plan-{i:05d}-{i * 7919 % 1000:03d}", i, done)
        found[f"pages: {name}"] = (_frames(wal) - start) / 500
    turns: int = guided.turns  # type: ignore[attr-defined]
    for name, versions in (("guided activated", [0]), ("guided turn", range(1, turns))):
        start = _frames(wal)
        for run in range(RUNS):
            for version in versions:
                guided(store, run, version)
        found[f"pages: {name}"] = (_frames(wal) - start) / RUNS / len(versions)
    store.close()
    return found


def _timed(times: list[float], name: str, found: dict[str, float]) -> None:
    found[f"µs median: {name}"] = statistics.median(times) * 1e6
    found[f"µs mean: {name}"] = statistics.fmean(times) * 1e6


def _tail(path: str, found: dict[str, float]) -> None:
    """The latency tail of 6,000 commits (a 2 KB record on 300 keys, one event
    each, 2 ms idle every 50 commits, as between model calls): where the
    checkpoints show."""
    from waygraph.store import open_store

    store = open_store(f"sqlite:///{path}")
    times = []
    for i in range(6000):
        started = time.perf_counter()
        store.commit(f"k{i % 300}", {"x": "y" * 2000, "i": i}, i // 300, [{"type": "e", "i": i}])
        times.append(time.perf_counter() - started)
        if i % 50 == 0:
            time.sleep(0.002)
    store.close()
    times.sort()
    for name, q in (("median", 0.5), ("p99", 0.99), ("p99.9", 0.999)):
        found[f"tail µs {name}"] = times[int(q * len(times)) - 1] * 1e6
    found["tail µs max"] = times[-1] * 1e6
    found["tail µs mean"] = statistics.fmean(times) * 1e6
    found["tail: commits over 1 ms"] = sum(t > 1e-3 for t in times)


def child() -> dict[str, float]:
    """Measure the store of the ``waygraph`` first on sys.path."""
    from waygraph.store import open_store

    guided = _guided()
    with tempfile.TemporaryDirectory() as folder:
        found = _pages(folder, guided)
        store = open_store(f"sqlite:///{folder}/time.db")
        for name, done in (("plan created", False), ("plan updated", True)):
            times = []
            for i in range(PLANS):
                started = time.perf_counter()
                _plan_commit(store, f"plan-{i:05d}", i, done)
                times.append(time.perf_counter() - started)
            _timed(times, name, found)
        turns: list[float] = []
        for run in range(RUNS):
            for version in range(guided.turns):  # type: ignore[attr-defined]
                started = time.perf_counter()
                guided(store, run, version)
                if version:
                    turns.append(time.perf_counter() - started)
        _timed(turns, "guided turn", found)
        store.close()
        _tail(f"{folder}/tail.db", found)
        conn = sqlite3.connect(f"{folder}/one.db", isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = normal")
        conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)")
        rows = []
        for _ in range(PLANS):
            started = time.perf_counter()
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO t (v) VALUES ('x')")
            conn.execute("COMMIT")
            rows.append(time.perf_counter() - started)
        conn.close()
        _timed(rows, "one-row commit", found)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", action="append", default=[], help="another src folder")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    add_json_flag(parser)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child()))
        return 0
    report = Report("sqlite_commits", json_out=args.json)
    runs = interleaved(
        __file__, args.against, rounds=args.rounds, child_args=lambda src: ["--child"]
    )
    for name, found in runs.items():
        report.figure(name, {k: [round(r[k], 1) for r in found] for k in found[0]})
    with report.tables():
        print(f"SQLite store commits, {args.rounds} rounds, interleaved\n")
        print("| measure | " + " | ".join(runs) + " |")
        print("| --- |" + " ---: |" * len(runs))
        for key in next(iter(runs.values()))[0]:
            cells = [", ".join(f"{r[key]:,.1f}" for r in found) for found in runs.values()]
            print(f"| {key} | " + " | ".join(cells) + " |")
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
