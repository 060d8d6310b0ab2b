"""What the machine's stores and bus can do at most, measured in the benchmark's own run.

bench/events.py sets its targets against these ceilings, so a slow or busy
machine lowers the bar and the figure together:

- ``sqlite_commits``: one-row commits per second into a SQLite file opened
  with the store's pragmas (WAL, ``synchronous = normal``), one connection,
  each ``BEGIN IMMEDIATE; INSERT; COMMIT``, as SQLiteStore commits;
- ``postgres_commits``: one-row autocommit INSERTs per second from 8
  psycopg connections (one thread each) into a table of its own;
- ``jetstream_publishes``: acknowledged JetStream publishes per second from
  nats-py, 8 in flight (8 tasks, each awaiting its ack before the next),
  each with its own ``Nats-Msg-Id`` as the bus sends them, into a stream of
  its own.

The tables and streams are deleted afterwards. Each ceiling is the best of
``rounds`` measurements of ``seconds`` each: the machine is shared, and a
ceiling is what it can do, not what it did while something else ran.

Example:
    >>> rate = sqlite_commits(seconds=0.05, rounds=1)
    >>> rate > 0
    True
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import tempfile
import threading
import time
import uuid

__all__ = ["jetstream_publishes", "postgres_commits", "sqlite_commits"]

ROW = "x" * 200  # about the size of a small record's row
CONNECTIONS = 8
IN_FLIGHT = 8


def sqlite_commits(seconds: float = 1.0, rounds: int = 3) -> float:
    """One-row commits per second into a SQLite file with the store's pragmas."""
    best = 0.0
    with tempfile.TemporaryDirectory() as folder:
        conn = sqlite3.connect(f"{folder}/ceiling.db", isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = normal")
            conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)")
            for _ in range(rounds):
                n = 0
                started = time.perf_counter()
                end = started + seconds
                while time.perf_counter() < end:
                    conn.execute("BEGIN IMMEDIATE")
                    conn.execute("INSERT INTO t (v) VALUES (?)", (ROW,))
                    conn.execute("COMMIT")
                    n += 1
                best = max(best, n / (time.perf_counter() - started))
        finally:
            conn.close()
    return best


def postgres_commits(url: str, seconds: float = 1.5, rounds: int = 2) -> float:
    """One-row autocommit INSERTs per second from 8 psycopg connections."""
    import psycopg

    table = f"waygraph_ceiling_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (k bigserial PRIMARY KEY, v text NOT NULL)")
    try:
        return max(_postgres_round(url, table, seconds) for _ in range(rounds))
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP TABLE IF EXISTS {table}")


def _postgres_round(url: str, table: str, seconds: float) -> float:
    import psycopg

    counts = [0] * CONNECTIONS
    ready = threading.Barrier(CONNECTIONS + 1)
    stop = threading.Event()
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            with psycopg.connect(url, autocommit=True) as conn:
                ready.wait()
                while not stop.is_set():
                    conn.execute(f"INSERT INTO {table} (v) VALUES (%s)", (ROW,))
                    counts[i] += 1
        except BaseException as exc:  # reported below, after the other threads stop
            errors.append(exc)
            ready.abort()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(CONNECTIONS)]
    for thread in threads:
        thread.start()
    with contextlib.suppress(threading.BrokenBarrierError):
        ready.wait()  # broken when a thread failed: reported below
    started = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    if errors:
        raise RuntimeError(f"PostgreSQL ceiling: {errors[0]!r}")
    return sum(counts) / (time.perf_counter() - started)


async def jetstream_publishes(url: str, seconds: float = 1.5, rounds: int = 2) -> float:
    """Acknowledged JetStream publishes per second from nats-py, 8 in flight."""
    import nats

    nc = await nats.connect(url)
    js = nc.jetstream()
    name = f"WAYGRAPH_CEILING_{uuid.uuid4().hex[:8]}"
    payload = ROW.encode() * 3  # about an envelope's size
    await js.add_stream(name=name, subjects=[f"{name}.>"])
    try:
        best = 0.0
        for _ in range(rounds):
            done = 0

            async def publisher(end: float) -> None:
                nonlocal done
                while time.perf_counter() < end:
                    headers = {"Nats-Msg-Id": uuid.uuid4().hex}
                    await js.publish(f"{name}.x", payload, stream=name, headers=headers)
                    done += 1

            started = time.perf_counter()
            end = started + seconds
            await asyncio.gather(*(publisher(end) for _ in range(IN_FLIGHT)))
            best = max(best, done / (time.perf_counter() - started))
        return best
    finally:
        await js.delete_stream(name)
        await nc.close()
