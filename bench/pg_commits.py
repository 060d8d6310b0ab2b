"""PostgreSQL store commits: how many per second from 8 threads, and the client's CPU per commit.

The writes an event plan makes: a 3 KB JSON record of kind ``event`` in a
session of its own, four correlation ids, one event per commit; each thread
creates a plan and updates it once (2 commits, as a plan costs the planner),
again and again, on one ``PostgresStore`` (pool of 8). Then the reads an
event plan makes, from one thread: ``get`` and ``list(correlation_id=...)``
alternately. Figures, per source tree:

- *commits/s*: commits from 8 threads per wall second;
- *CPU µs/commit*: the process's CPU time (every thread: encoding, psycopg,
  the pool) per commit, while the 8 threads commit;
- *server CPU µs/commit*: the CPU time of every ``postgres`` process on the
  machine over the same window, per commit (other clients of the server
  count too, so an upper bound);
- *one commit µs*: median wall time of one commit with nothing else running;
- *reads/s* and *CPU µs/read*: the reads, one thread.

``--against SRC`` (a ``src`` folder of another checkout, e.g. a worktree of
main) measures that code too, each tree in a child process of its own, the
trees interleaved ``--rounds`` times, so old and new meet the same load.
Needs the server of ``WAYGRAPH_DATABASE_URL`` (default
postgresql://postgres@127.0.0.1:5432/test); each child writes into a schema
of its own, dropped afterwards.

Example::

    python bench/pg_commits.py --against /tmp/old/src --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import Report, add_json_flag
from _trees import interleaved

DATABASE_URL = os.environ.get("WAYGRAPH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
THREADS = 8


def _record(key: str, step: int) -> dict[str, Any]:
    """About 3.1 KB of JSON, shaped like an event plan's record."""
    states = {
        f"state_{i}": {"action": {"agent": f"worker_{i}", "payload": {"q": "x" * 40}}, "next": i}
        for i in range(12)
    }
    return {
        "plan_id": key,
        "step": step,
        "state_machine": states,
        "outbox": [{"id": f"{key}-o{step}", "type": "work.request", "data": {"n": step}}],
        "results": {"start": {"text": "y" * 200}},
    }


def _write(store: Any, key: str, step: int, ids: list[str]) -> None:
    """One of a plan's commits: created (step 0) or moved on."""
    store.commit(
        key,
        _record(key, step),
        step,
        [{"type": "moved" if step else "created"}],
        kind="event",
        session=f"s-{key}",
        status="running",
        plan=key,
        correlation_ids=ids,
    )


def server_cpu() -> float:
    """CPU seconds of every ``postgres`` process on this machine (0 when none is visible).

    Other clients' work counts too: read it as an upper bound, old and new
    measured alike.
    """
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # gone since the listing
            continue
        name, _, rest = text.partition(") ")
        if name.endswith("(postgres"):
            fields = rest.split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


def _commits(store: Any, seconds: float) -> tuple[int, float, float, float]:
    """Commits from THREADS threads for ``seconds``: (commits, wall s, CPU s, server CPU s)."""
    counts = [0] * THREADS
    stop = threading.Event()
    ready = threading.Barrier(THREADS + 1)

    def run(t: int) -> None:
        ready.wait()
        i = 0
        while not stop.is_set():
            key = f"p-{t}-{i}-{uuid.uuid4().hex[:6]}"
            ids = [f"goal-{key}", f"req-{key}", f"after:{t}", "waygraph:outbox"]
            _write(store, key, 0, ids)
            _write(store, key, 1, ids[:3])
            counts[t] += 2
            i += 1

    threads = [threading.Thread(target=run, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    ready.wait()
    cpu, wall, server = time.process_time(), time.perf_counter(), server_cpu()
    time.sleep(seconds)
    stop.set()
    done, wall, cpu = sum(counts), time.perf_counter() - wall, time.process_time() - cpu
    server = server_cpu() - server
    for thread in threads:
        thread.join()
    return done, wall, cpu, server


def child(src: str, seconds: float) -> dict[str, float]:
    """Measure the store of ``src`` (already first on sys.path)."""
    import psycopg

    from waygraph.store import open_store

    schema = f"waygraph_pgbench_{uuid.uuid4().hex[:8]}"
    url = f"{DATABASE_URL}{'&' if '?' in DATABASE_URL else '?'}schema={schema}"
    store = open_store(url)
    try:
        _commits(store, 0.5)  # warm-up: the pool's connections, prepared statements
        n, wall, cpu, server = _commits(store, seconds)
        alone = []
        for i in range(200):
            key = f"alone-{i}"
            started = time.perf_counter()
            _write(store, key, 0, [f"goal-{key}"])
            alone.append(time.perf_counter() - started)
        reads = 0
        cpu0, wall0 = time.process_time(), time.perf_counter()
        while time.perf_counter() - wall0 < seconds / 2:
            key = f"alone-{reads % 200}"
            store.get(key)
            store.list(correlation_id=f"goal-{key}")
            reads += 2
        read_wall, read_cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    finally:
        store.close()
        with psycopg.connect(DATABASE_URL, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    return {
        "commits/s": n / wall,
        "CPU µs/commit": cpu / n * 1e6,
        "server CPU µs/commit": server / n * 1e6,
        "one commit µs": statistics.median(alone) * 1e6,
        "reads/s": reads / read_wall,
        "CPU µs/read": read_cpu / reads * 1e6,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", action="append", default=[], help="another src folder")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    add_json_flag(parser)
    args = parser.parse_args(argv)
    if args.child:
        sys.path.insert(0, args.child)
        print(json.dumps(child(args.child, args.seconds)))
        return 0
    report = Report("pg_commits", json_out=args.json)
    seconds = str(args.seconds)
    runs = interleaved(
        __file__,
        args.against,
        rounds=args.rounds,
        child_args=lambda src: ["--child", src, "--seconds", seconds],
    )
    for name, found in runs.items():
        report.figure(name, {k: [round(r[k], 1) for r in found] for k in found[0]})
    with report.tables():
        print(f"PostgreSQL commits from {THREADS} threads, {args.rounds} rounds, interleaved\n")
        keys = list(next(iter(runs.values()))[0])
        print("| tree | round | " + " | ".join(keys) + " |")
        print("| --- | ---: |" + " ---: |" * len(keys))
        for i in range(args.rounds):
            for name, found in runs.items():
                cells = " | ".join(f"{found[i][k]:,.0f}" for k in keys)
                print(f"| {name} | {i + 1} | {cells} |")
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
