"""Scale of the stores: a turn, `sessions list` and the dashboard at 100,000 runs vs 1,000.

Run: ``python bench/scale.py [--runs 100000] [--small 1000] [--quick] [--json]``.
Both stores of each kind are built and measured in this one process, and the
targets are ratios between them, so a slower or faster machine moves both
sides alike. Exits 1 when a target is missed.

Stores: SQLite files (WAL, ``synchronous=NORMAL``) and PostgreSQL schemas of
their own (``WAYGRAPH_DATABASE_URL``, default
postgresql://postgres@127.0.0.1:5432/test, ``?schema=bench_scale_<pid>_<n>``,
dropped afterwards; skipped, saying why, when the server is unreachable;
``VACUUM ANALYZE`` after the bulk load, as autovacuum would do a minute later).
Each holds N stored runs of bugfix_workflow: a real run the Navigator wrote
on that very store (two turns: the bug reported, a failing test) copied under
new keys and sessions with its events, through ``Store.commit_all`` in
batches of 1,000, so every row is what the Navigator writes. Nine sessions
in ten hold one run; every ninth holds an older finished run too, so a
"latest record per session" has work to do. Statuses cycle through running,
completed, escalated, aborted.

Operations, each timed by the wall clock (PostgreSQL works in its own
process), interleaved store by store, each figure the median of its rounds:

- *turn*: ``Navigator.turn`` of a running session continuing its run (a
  tool result at the ``fix`` node), distinct sessions spread over the store;
- *sessions list*: ``waygraph sessions list``'s rows
  (``cli.session_cmds.session_rows``), its first page of 50 rows;
- *dashboard list*: the sessions page's query, ``Service.session_page``
  (``Store.session_rows``: 50 rows, the total and the count per status);
- *session page*: what ``/sessions/{id}`` reads: ``Service.session``,
  ``Service.events`` and ``Service.drawing``, for sessions spread over the store.

Target: each costs at most 1.5x at N = 100,000 what it costs at 1,000.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from _fleet import (  # noqa: E402
    DATABASE_URL,
    STATUSES,
    each_kind,
    report_ratios,
    session_writes,
    size_arguments,
    template,
)
from _report import Report  # noqa: E402

from waygraph import load_library  # noqa: E402
from waygraph.cli.session_cmds import session_rows  # noqa: E402
from waygraph.navigator import Navigator  # noqa: E402
from waygraph.server.service import PAGE_ROWS, Service  # noqa: E402
from waygraph.store import Write, open_store  # noqa: E402

TARGET = 1.5
BATCH = 1000
FIX = {"tool_output": "Edited src/login.py: compare hashed passwords", "exit_code": 0}
OPS = ("turn", "sessions list", "dashboard list", "session page")


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- the stores


def session_of(j: int) -> str:
    return f"agent-{j:06d}"


def seed(url: str, runs: int) -> int:
    """Write ``runs`` runs; return the number of sessions."""
    record, events = template(url)
    sessions = runs * 9 // 10
    olds = runs - sessions  # every ninth session has an older finished run
    writes: list[Write] = []
    started = time.perf_counter()
    with open_store(url) as store:
        for j in range(sessions):
            session = session_of(j)
            writes += session_writes(record, events, j, session, old=j % 9 == 0 and j // 9 < olds)
            if len(writes) >= BATCH:
                store.commit_all(writes)
                writes.clear()
        if writes:
            store.commit_all(writes)
    if url.startswith("postgresql"):
        settle(url)
    log(f"  {url.split('?')[0]}: {runs:,} runs in {time.perf_counter() - started:,.1f} s")
    return sessions


def settle(url: str) -> None:
    """VACUUM ANALYZE the bulk-loaded tables, as autovacuum would a minute later.

    Without it the planner has no statistics for a table that grew from
    nothing in seconds (it picked the status index and read every record's
    row for the counts) and index-only scans visit the heap for every row.
    """
    import psycopg

    schema = url.rsplit("schema=", 1)[1]
    with psycopg.connect(DATABASE_URL, autocommit=True) as conn:
        for table in ("records", "events", "session_pointers", "record_correlations", "row_counts"):
            conn.execute(f"VACUUM ANALYZE {schema}.{table}")


def spread(sessions: int, count: int, running: bool) -> list[str]:
    """``count`` sessions spread evenly over the store (running ones only, if asked)."""
    pool = range(0, sessions, len(STATUSES)) if running else range(sessions)
    step = max(1, len(pool) // count)
    return [session_of(j) for j in pool[::step][:count]]


class Fleet:
    """One store of N runs and what the operations need."""

    def __init__(self, url: str, runs: int, turns: int, pages: int) -> None:
        self.url = url
        self.runs = runs
        self.sessions = seed(url, runs)
        self.nav = Navigator(load_library(), store=url, strict=True)
        self.service = Service(self.nav)
        self.turn_sessions = spread(self.sessions, turns, running=True)
        self.page_sessions = spread(self.sessions, pages, running=False)

    def op(self, name: str, count: int) -> Callable[[], int]:
        """The operation ``name``; each call does ``count`` of them (or fewer); returns how many."""
        if name == "turn":

            def turn() -> int:
                done = 0
                for _ in range(count):
                    if not self.turn_sessions:
                        break
                    guidance = self.nav.turn(self.turn_sessions.pop(), **FIX)
                    assert guidance.text
                    done += 1
                return done

            return turn
        if name == "sessions list":

            def listing() -> int:
                for _ in range(count):
                    rows = session_rows(self.nav.store, limit=50)
                    assert len(rows) == 50
                return count

            return listing
        if name == "dashboard list":

            def dashboard() -> int:
                for _ in range(count):
                    page = self.service.session_page(offset=0, limit=PAGE_ROWS)
                    assert page["total"] >= self.sessions, page["total"]
                return count

            return dashboard

        def session_page() -> int:
            for i in range(count):
                sid = self.page_sessions[i % len(self.page_sessions)]
                detail = self.service.session(sid)
                assert detail["key"].startswith("run_"), detail["key"]
                assert self.service.events(sid)["events"]
                self.service.drawing(session_id=sid)
            return count

        return session_page

    def close(self) -> None:
        self.nav.close()


# ---------------------------------------------------------------- measuring


def timed(fn: Callable[[], int]) -> float | None:
    """Milliseconds per operation of one call of ``fn`` (None when it did none)."""
    start = time.perf_counter()
    done = fn()
    return (time.perf_counter() - start) / done * 1e3 if done else None


def measure(small: Fleet, large: Fleet, rounds: int, quick: bool) -> dict[str, dict[int, float]]:
    """Milliseconds per operation at each size: medians of interleaved rounds."""
    counts = {"turn": 20, "sessions list": 1, "dashboard list": 5, "session page": 20}
    list_rounds = 1 if quick else 3  # tens of seconds each at 100,000 runs
    results: dict[str, dict[int, float]] = {}
    for name in OPS:
        samples: dict[int, list[float]] = {small.runs: [], large.runs: []}
        fns = {f.runs: f.op(name, counts[name]) for f in (small, large)}
        if name != "turn":
            for fn in fns.values():
                fn()  # warm: caches, first query plans
        for _ in range(list_rounds if name == "sessions list" else rounds):
            for runs, fn in fns.items():
                ms = timed(fn)
                if ms is not None:
                    samples[runs].append(ms)
        results[name] = {runs: statistics.median(values) for runs, values in samples.items()}
        log(f"  {name}: " + ", ".join(f"{ms:,.2f} ms at {n:,}" for n, ms in results[name].items()))
    return results


def with_schema(url: str, schema: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


def run_kind(kind: str, sizes: tuple[int, int], rounds: int, quick: bool, tmp: Path) -> Any:
    """Build both stores of one kind and measure them."""
    log(f"{kind}: building stores of {sizes[0]:,} and {sizes[1]:,} runs")
    turns = rounds * 20
    if kind == "SQLite":
        urls = [f"sqlite:///{tmp / f'scale-{n}.db'}" for n in sizes]
    else:
        urls = [with_schema(DATABASE_URL, f"bench_scale_{os.getpid()}_{n}") for n in sizes]
    fleets = [Fleet(url, n, turns, 50) for url, n in zip(urls, sizes, strict=True)]
    try:
        return measure(fleets[0], fleets[1], rounds, quick)
    finally:
        for fleet in fleets:
            fleet.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size_arguments(parser)
    parser.add_argument("--no-sqlite", action="store_true", help="PostgreSQL only")
    args = parser.parse_args(argv)
    report = Report("scale", json_out=args.json)
    rounds = args.rounds or (5 if args.quick else 7)
    sizes = (args.small, args.runs)
    # The turn needs a running session per turn: a quarter of the small store's.
    if rounds * 20 > args.small * 9 // 10 // len(STATUSES):
        parser.error(f"--small {args.small}: too few running sessions for {rounds} rounds")
    results = each_kind(
        report,
        args,
        "bench_scale",
        lambda kind, folder: run_kind(kind, sizes, rounds, args.quick, folder),
        sqlite=not args.no_sqlite,
    )
    report_ratios(report, results, sizes, TARGET, "")
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
