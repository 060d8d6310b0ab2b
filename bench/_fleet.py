"""A fleet of stored runs for the benchmarks that measure stores at size (dashboard, scale).

Every run is a copy of one real run record and its events, written by the
Navigator on the store being measured (:func:`template`); :func:`session_writes`
makes one session's writes from it.

Example:
    >>> writes = session_writes({"plan_id": "p"}, [], 3, "agent-3", old=True)
    >>> [(w.key, w.status, w.make_current) for w in writes]
    [('old_3', 'completed', False), ('run_3', 'aborted', True)]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from _report import Report, add_json_flag

from waygraph import load_library
from waygraph.navigator import Navigator
from waygraph.store import Write

DATABASE_URL = os.environ.get("WAYGRAPH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
STATUSES = ("running", "completed", "escalated", "aborted")
BUG = {"user_message": "I need to fix a bug in the login module", "domain": "bugfix"}
FAIL = {"tool_output": "AssertionError: login failed", "exit_code": 1}


def template(url: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A real run record and its events: two turns of bugfix_workflow on the Navigator."""
    nav = Navigator(load_library(), store=url)
    nav.turn("template", **BUG)
    nav.turn("template", **FAIL)
    key = nav.store.current("template")
    assert key is not None
    record = nav.store.get(key)
    assert record is not None and record.status == "running", record
    events = [e.data for e in nav.store.events(key)]
    nav.store.clear_current("template")
    nav.close()
    return record.data, events


def session_writes(
    record: dict[str, Any], events: list[dict[str, Any]], n: int, session: str, *, old: bool
) -> list[Write]:
    """Session ``n``'s writes: its current run (status by ``n``), after an older finished one."""
    writes = []
    if old:
        data = {**record, "run_id": f"old_{n}", "session_id": session, "status": "completed"}
        writes.append(
            Write(
                f"old_{n}",
                data,
                0,
                events,
                session=session,
                status="completed",
                plan=record["plan_id"],
            )
        )
    status = STATUSES[n % len(STATUSES)]
    data = {**record, "run_id": f"run_{n}", "session_id": session, "status": status}
    writes.append(
        Write(
            f"run_{n}",
            data,
            0,
            events,
            session=session,
            status=status,
            plan=record["plan_id"],
            make_current=True,
        )
    )
    return writes


def reachable(url: str) -> str | None:
    """None when a TCP connection to the URL's host and port opens, else why not."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 5432
    try:
        with socket.create_connection((host, port), timeout=2):
            return None
    except OSError as exc:
        return f"{host}:{port} unreachable ({exc})"


@contextlib.contextmanager
def postgres_schemas(names: list[str]) -> Iterator[None]:
    """Drop the schemas afterwards, whatever happens."""
    try:
        yield
    finally:
        import psycopg
        from psycopg import sql

        with psycopg.connect(DATABASE_URL, autocommit=True) as conn:
            for name in names:
                conn.execute(
                    sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name))
                )


def report_ratios(
    report: Report,
    results: dict[str, dict[str, dict[int, float]]],
    sizes: tuple[int, int],
    target: float,
    what: str = "",
) -> None:
    """Each operation's ms at both sizes as a figure, its ratio as a target, and the table.

    ``results``: store kind -> operation -> {runs: ms}; ``what`` goes before
    the operation in the targets' names.
    """
    small, large = sizes
    for kind, ops in results.items():
        for name, ms in ops.items():
            report.figure(f"{kind}, {name}", {f"{n} runs": v for n, v in ms.items()}, "ms")
            report.target(
                f"{kind} {what}{name} at {large:,} runs <= {target:g}x at {small:,}",
                ms[large] / ms[small],
                target,
            )
    with report.tables():
        print(f"| store | operation | ms at {small:,} runs | ms at {large:,} runs | ratio | met |")
        print("| --- | --- | ---: | ---: | ---: | :---: |")
        for kind, ops in results.items():
            for name, ms in ops.items():
                ratio = ms[large] / ms[small]
                met = "yes" if ratio <= target else "**no**"
                print(
                    f"| {kind} | {name} | {ms[small]:,.2f} | {ms[large]:,.2f} | {ratio:,.2f}x "
                    f"| {met} |"
                )
        for note in report.notes:
            print(f"\n{note}")


def size_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a benchmark comparing a small and a large store of each kind."""
    parser.add_argument("--runs", type=int, default=100_000, help="runs in the large store")
    parser.add_argument("--small", type=int, default=1_000, help="runs in the small store")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds (7)")
    parser.add_argument("--quick", action="store_true", help="fewer rounds (5)")
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    add_json_flag(parser)


def each_kind(
    report: Report,
    args: argparse.Namespace,
    prefix: str,
    measure: Callable[[str, Path], dict[str, dict[int, float]]],
    *,
    sqlite: bool = True,
) -> dict[str, dict[str, dict[int, float]]]:
    """``measure(kind, folder)`` for SQLite and, when reachable, PostgreSQL.

    PostgreSQL's schemas ``<prefix>_<pid>_<runs>`` are dropped afterwards.
    """
    kinds = ["SQLite"] if sqlite else []
    why = "--no-postgres" if args.no_postgres else reachable(DATABASE_URL)
    if why is None:
        kinds.append("PostgreSQL")
    else:
        report.note(f"PostgreSQL not measured: {why}")
    results: dict[str, dict[str, dict[int, float]]] = {}
    with tempfile.TemporaryDirectory(prefix=f"waygraph-{prefix}-") as folder:
        for kind in kinds:
            if kind == "PostgreSQL":
                names = [f"{prefix}_{os.getpid()}_{n}" for n in (args.small, args.runs)]
                with postgres_schemas(names):
                    results[kind] = measure(kind, Path(folder))
            else:
                results[kind] = measure(kind, Path(folder))
    return results
