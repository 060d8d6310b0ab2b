"""`waygraph stats` at 100,000 stored runs vs 1,000: statistics computed in the store.

Run: ``python bench/stats.py [--runs 100000] [--small 1000] [--quick] [--no-postgres] [--json]``.
Both stores of each kind are built and measured in this one process, and the
targets are ratios between them, so a slower or faster machine moves both
sides alike. Exits 1 when a target is missed.

Stores: SQLite files (WAL, ``synchronous=NORMAL``) and PostgreSQL schemas of
their own (``WAYGRAPH_DATABASE_URL``, default
postgresql://postgres@127.0.0.1:5432/test, ``?schema=bench_stats_<pid>_<n>``,
dropped afterwards; skipped, saying why, when the server is unreachable).
Each holds N finished runs of bugfix_workflow, copies of six real runs the
Navigator made with scripted tool results (straight through; one failing
test then a second fix; a bug that never shows; three failing fixes; reset at
once; reset after the first step), under four plan names, written through
``Store.commit_all`` in batches of 1,000 with their events, so each counts
as the Navigator's finishing commit counts it. The runs finish evenly over
one day, as a fleet's would (the store's clock is set per run).

Operations, each the median of its rounds, interleaved small and large:

- *all*: ``plan_stats(store)``, what ``waygraph stats`` reads;
- *last 6 hours*: ``plan_stats(store, since=now - 6 h)``;
- *one plan*: ``plan_stats(store, plan=...)``.

Target: each costs at most 20x at N = 100,000 what it costs at 1,000.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from _fleet import DATABASE_URL, each_kind, report_ratios, size_arguments  # noqa: E402
from _report import Report  # noqa: E402

from waygraph.learning.stats import plan_stats  # noqa: E402
from waygraph.navigator import Navigator  # noqa: E402
from waygraph.store import Store, Write  # noqa: E402
from waygraph.store.memory import MemoryStore  # noqa: E402
from waygraph.store.sqlite import SQLiteStore  # noqa: E402

TARGET = 20.0
BATCH = 1000
DAY = 86400.0
PLANS = ("bugfix_workflow", "bugfix_workflow_api", "bugfix_workflow_ui", "bugfix_workflow_db")
BUG = "I need to fix a bug in the login module"
FAILED = ("FAILED tests/test_login.py::test_ok - AssertionError: 401 != 200\n1 failed", 1)
OK = [
    ("Traceback (most recent call last):\nKeyError: 'user'", 1),
    ("src/login.py:42 reads user before the check", 0),
    (" 1 file changed, 1 insertion(+), 1 deletion(-)", 0),
    ("3 passed", 0),
    ("120 passed", 0),
]
#: name -> (tool results, reset at the end); the fleet repeats them in this order.
SCRIPTS: dict[str, tuple[list[tuple[str, int]], bool]] = {
    "clean": (OK, False),
    "retry": ([*OK[:3], FAILED, *OK[2:]], False),
    "no repro": ([("", 0), ("", 0)], False),
    "stuck": ([*OK[:2], *[OK[2], FAILED] * 3], False),
    "reset": ([], True),
    "reset later": (OK[:1], True),
}
OPS = ("all", "last 6 hours", "one plan")


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def templates() -> list[tuple[dict[str, Any], list[dict[str, Any]], str]]:
    """The six real runs: (record, events, status), made by the Navigator."""
    found = []
    with MemoryStore() as store:
        nav = Navigator(store=store, strict=True)
        for name, (results, reset) in SCRIPTS.items():
            nav.turn(name, user_message=BUG, domain="bugfix")
            for output, code in results:
                nav.turn(name, tool_output=output, exit_code=code)
            if reset:
                nav.reset(name)
            key = next(r.key for r in store.list(session=name))
            record = store.get(key)
            assert record is not None and record.status != "running", (name, record)
            found.append((record.data, [e.data for e in store.events(key)], str(record.status)))
    return found


def seed(store: Store, runs: int, clock: Clock) -> None:
    """Write ``runs`` finished runs, finishing evenly over the day before ``clock.end``."""
    made = templates()
    writes: list[Write] = []
    started = time.perf_counter()
    for j in range(runs):
        record, events, status = made[j % len(made)]
        plan = PLANS[(j // len(made)) % len(PLANS)]
        key = f"run_{j:07d}"
        data = {**record, "run_id": key, "session_id": f"agent-{j}", "plan_id": plan}
        data["plan"] = plan
        writes.append(Write(key, data, 0, events, session=f"agent-{j}", status=status, plan=plan))
        if len(writes) >= BATCH or j == runs - 1:
            clock.times = [
                clock.end - DAY + DAY * (i + 1) / runs for i in range(j + 1 - len(writes), j + 1)
            ]
            store.commit_all(writes)
            writes.clear()
    log(f"  {store.url.split('?')[0]}: {runs:,} runs in {time.perf_counter() - started:,.1f} s")


class Clock:
    """The store's clock while seeding: each write's planned finishing time, in order."""

    def __init__(self, end: float) -> None:
        self.end = end
        self.times: list[float] = []

    def __call__(self) -> float:
        return self.times.pop(0) if self.times else time.time()


def timed(store: Store, op: str, end: float) -> float:
    """Milliseconds one operation takes."""
    start = time.perf_counter()
    if op == "all":
        stats = plan_stats(store, now=end)
    elif op == "last 6 hours":
        stats = plan_stats(store, since=end - 6 * 3600, now=end)
    else:
        stats = plan_stats(store, plan=PLANS[1], now=end)
    elapsed = (time.perf_counter() - start) * 1000
    assert stats.plans, op
    return elapsed


def measure(
    stores: list[tuple[int, Store]], rounds: int, end: float
) -> dict[str, dict[int, float]]:
    samples: dict[str, dict[int, list[float]]] = {op: {n: [] for n, _ in stores} for op in OPS}
    for _ in range(rounds):
        for op in OPS:
            for n, store in stores:
                samples[op][n].append(timed(store, op, end))
    return {op: {n: statistics.median(v) for n, v in by.items()} for op, by in samples.items()}


def open_kind(kind: str, n: int, clock: Clock, tmp: Path) -> Store:
    if kind == "SQLite":
        return SQLiteStore(tmp / f"stats-{n}.db", clock=clock)
    from waygraph.store.postgres import PostgresStore

    joiner = "&" if "?" in DATABASE_URL else "?"
    return PostgresStore(f"{DATABASE_URL}{joiner}schema=bench_stats_{os.getpid()}_{n}", clock=clock)


def run_kind(kind: str, sizes: tuple[int, int], rounds: int, tmp: Path) -> Any:
    log(f"{kind}: building stores of {sizes[0]:,} and {sizes[1]:,} runs")
    end = time.time()
    stores = []
    try:
        for n in sizes:
            clock = Clock(end)
            store = open_kind(kind, n, clock, tmp)
            stores.append((n, store))
            seed(store, n, clock)
        return measure(stores, rounds, end)
    finally:
        for _, store in stores:
            store.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size_arguments(parser)
    args = parser.parse_args(argv)
    report = Report("stats", json_out=args.json)
    rounds = args.rounds or (5 if args.quick else 7)
    sizes = (args.small, args.runs)
    results = each_kind(
        report, args, "bench_stats", lambda kind, folder: run_kind(kind, sizes, rounds, folder)
    )
    report_ratios(report, results, sizes, TARGET, "stats: ")
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
