"""Event-driven planners: plans per second and goal-to-response latency.

Run: ``python bench/events.py [--plans 1000] [--only STACK] [--json]``. Prints a
markdown table (or, with ``--json``, the figures as one JSON object).
``--only "NATS + PostgreSQL, 3"`` (any start of a stack's name) runs that stack
alone. ``WAYGRAPH_BENCH_GOAL_HANDLER=default``: the planner's default goal
handler (``on_goal(..., state_machine=SM)``) instead of the benchmark's own,
which does the same but, being the application's, costs a look-up of the
goal's plan first on a bus that cannot say a delivery is the first (in-process).
``WAYGRAPH_BENCH_PROFILE=FILE`` runs the 3-process stack's planner under
bench/_profiled.py: a cProfile of its main thread's CPU in FILE, or with FILE
ending in ``.txt`` a sampled profile as text.

Each stack runs the same three-state plan (``start`` -> ``working``, whose
action is one request a worker answers -> ``done``, which finalizes and
answers the goal; two commits: created and started, then finished) for
``--plans`` goals sent **at once** (``asyncio.gather`` of ``bus.ask``).
Latency is per goal, from just before its ``ask`` to the response event;
plans per second is plans / wall time of the whole batch.
A warm-up batch (not measured) comes first. With every goal sent at once,
each waits for the whole batch, so p50 is close to the wall time; the last
column is the unloaded latency: the median of 50 goals sent one after
another.

Stacks:
- ``in-process + SQLite``: InProcessBus, plans in a SQLite file;
- ``in-process + memory://``: the same with plans in ``memory://``, no store
  I/O at all: the bound of the in-process target (what the event layer in
  one process allows), reported, not a target;
- ``NATS + PostgreSQL, 1 process``: the client, planner and worker in this
  process on NatsBus, plans in PostgreSQL;
- ``NATS + PostgreSQL, 3 processes``: planner and worker as ``waygraph
  planner`` / ``waygraph worker`` subprocesses, only the client here;
- ``NATS + memory://, 3 processes``: the same with the planner's plans in
  ``memory://``: the bound of the NATS target (what the bus and the event
  layer allow, whatever the store), reported, not a target.

Target (issue 41): NATS + PostgreSQL, 3 processes makes at least 0.85x the
plans/s of NATS + memory://, 3 processes, measured in the same run, the two
stacks in the order A B B A, each keeping its faster run; with a budget line
(what that rate leaves the planner once the other processes, the PostgreSQL
server among them, took their CPU). Issue 19's brackets, reported as ratios
and no longer targets, against ceilings measured in the same run just before
the stack (bench/_ceilings.py): in-process + SQLite against SQLite's one-row
commits/s / 8; NATS + PostgreSQL, 3 processes against min(PostgreSQL one-row
commits/s from 8 connections / 8, JetStream acknowledged publishes/s with 8
in flight / 4). The in-process stacks also
count the planner's store commits and bus publishes per plan; the 3-process
stacks report the planner process's CPU per plan during the batch, how
much of it its main thread (the event loop) used, and the CPU per plan of
the worker, the client, the NATS server, the PostgreSQL server and the whole
machine (bench/_cpu.py). From those, a budget line: at the target's rate the
machine's CPUs allow so many ms of CPU a plan, the other processes took so
many, and what is left is all the planner may use.

The NATS stacks use ``WAYGRAPH_NATS_URL`` (default nats://127.0.0.1:4222)
and ``WAYGRAPH_DATABASE_URL`` (default
postgresql://postgres@127.0.0.1:5432/test), in streams and a schema of their
own that are deleted afterwards; they are skipped, saying why, when a server
is unreachable.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from _ceilings import jetstream_publishes, postgres_commits, sqlite_commits  # noqa: E402
from _cpu import Snapshot, pids_named, process_seconds  # noqa: E402
from _events_reading import MEMORY_STACK, POSTGRES_STACK, set_targets, table  # noqa: E402
from _report import Report, add_json_flag  # noqa: E402

from waygraph.events import (  # noqa: E402
    Bus,
    InProcessBus,
    PlanContext,
    Planner,
    StateAction,
    StateConfig,
    StateTransition,
    Worker,
)
from waygraph.store import open_store  # noqa: E402

NATS_URL = os.environ.get("WAYGRAPH_NATS_URL", "").strip() or "nats://127.0.0.1:4222"
DATABASE_URL = (
    os.environ.get("WAYGRAPH_DATABASE_URL", "").strip()
    or "postgresql://postgres@127.0.0.1:5432/test"
)
WARMUP = 50

#: The plan: three states, one worker request.
SM = {
    "start": StateConfig(state_name="start", default_next="working"),
    "working": StateConfig(
        state_name="working",
        action=StateAction(
            event_type="bench.work.requested",
            response_event="bench.work.completed",
            data={"n": "{goal_data.n}"},
        ),
        transitions=[StateTransition(on_event="bench.work.completed", to_state="done")],
    ),
    "done": StateConfig(state_name="done", is_terminal=True),
}


def build(bus: Bus, store: Any) -> tuple[Planner, Worker]:
    """The benchmark's planner and worker (also what the subprocesses run, as FILE:build)."""
    planner = Planner("bench-planner", bus=bus, store=store)
    worker = Worker("bench-worker", bus=bus)

    if os.environ.get("WAYGRAPH_BENCH_GOAL_HANDLER") == "default":
        # The planner's own handler does the same; it needs no look-up of the plan first.
        planner.on_goal("bench.goal", state_machine=SM)
    else:

        @planner.on_goal("bench.goal")
        async def on_goal(goal: Any, context: Any) -> None:
            # Created and on its first state, with its request, in one commit.
            await PlanContext.create_from_goal(goal, state_machine=SM, context=context, start=True)

    @planner.on_transition()
    async def advance(transition: Any, context: Any) -> None:
        # The last state change and the goal's answer in one commit.
        await transition.plan.execute_next(
            transition.event, finalize=lambda plan: {"n": plan.results["working"]["n"]}
        )

    @worker.on_task("bench.work.requested")
    async def work(task: Any, context: Any) -> dict[str, Any]:
        return {"n": task.data["n"]}

    return planner, worker


# ------------------------------------------------------------------ measuring


async def run_batch(client: Bus, plans: int, offset: int) -> tuple[float, list[float]]:
    """Send ``plans`` goals at once; return the wall time and each goal's latency (s)."""

    async def one(n: int) -> float:
        started = time.perf_counter()
        answer = await client.ask("bench.goal", {"n": n}, "bench.done", timeout=300)
        if answer.data.get("status") != "completed" or answer.data["result"]["n"] != n:
            raise RuntimeError(f"plan {n} answered {answer.data!r}")
        return time.perf_counter() - started

    started = time.perf_counter()
    latencies = await asyncio.gather(*(one(offset + n) for n in range(plans)))
    return time.perf_counter() - started, list(latencies)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


async def run_one_at_a_time(client: Bus, plans: int = 50) -> float:
    """Median latency (s) of ``plans`` goals sent one after another: the unloaded latency."""
    latencies = []
    for n in range(plans):
        wall, _ = await run_batch(client, 1, 2 * 10**6 + n)
        latencies.append(wall)
    return statistics.median(latencies)


def row(name: str, plans: int, wall: float, latencies: list[float], alone: float) -> dict[str, Any]:
    return {
        "stack": name,
        "plans": plans,
        "wall_s": wall,
        "plans_per_s": plans / wall,
        "p50_ms": percentile(latencies, 50) * 1000,
        "p99_ms": percentile(latencies, 99) * 1000,
        "mean_ms": statistics.fmean(latencies) * 1000,
        "alone_ms": alone * 1000,
    }


class Counts:
    """Store commits and bus publishes, counted by wrapping the methods of one store and bus."""

    def __init__(self, store: Any, bus: Bus) -> None:
        self.commits = 0
        self.publishes = 0
        commit, commit_all, publish = store.commit, store.commit_all, bus.publish

        def counted_commit(*args: Any, **kwargs: Any) -> Any:
            self.commits += 1
            return commit(*args, **kwargs)

        def counted_commit_all(writes: Any) -> Any:
            self.commits += 1
            return commit_all(writes)

        async def counted_publish(*args: Any, **kwargs: Any) -> Any:
            self.publishes += 1
            return await publish(*args, **kwargs)

        store.commit, store.commit_all = counted_commit, counted_commit_all
        bus.publish = counted_publish  # type: ignore[method-assign]
        together = getattr(store, "commit_and_list", None)
        if together is not None:
            # PostgreSQL's commit with the lists after it (store.commit_then_list): one commit.

            def counted_together(*args: Any, **kwargs: Any) -> Any:
                self.commits += 1
                return together(*args, **kwargs)

            store.commit_and_list = counted_together

    def reset(self) -> None:
        self.commits = self.publishes = 0


async def measure_in_process(
    bus: Bus, client: Bus, store_url: str, plans: int, name: str
) -> dict[str, Any]:
    store = open_store(store_url)
    counts = Counts(store, bus)
    planner, worker = build(bus, store)
    await planner.start()
    await worker.start()
    try:
        await run_batch(client, WARMUP, 10**6)
        counts.reset()
        wall, latencies = await run_batch(client, plans, 0)
        # Marks left to a later batched commit are counted with the batch they belong to.
        await planner.context.flush_marks()
        per_plan = {"commits_per_plan": counts.commits / plans}
        per_plan["publishes_per_plan"] = counts.publishes / plans
        alone = await run_one_at_a_time(client)
    finally:
        await worker.close()
        await planner.close()
        store.close()
    return {**row(name, plans, wall, latencies, alone), **per_plan}


# --------------------------------------------------------------------- stacks


async def inprocess_memory(plans: int) -> dict[str, Any]:
    """The bound of the in-process target: the same stack with no store I/O at all."""
    bus = InProcessBus(source="bench")
    await bus.start()
    try:
        return await measure_in_process(bus, bus, "memory://", plans, "in-process + memory://")
    finally:
        await bus.close()


async def inprocess_sqlite(plans: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        bus = InProcessBus(source="bench")
        await bus.start()
        try:
            return await measure_in_process(
                bus, bus, f"sqlite:///{folder}/plans.db", plans, "in-process + SQLite"
            )
        finally:
            await bus.close()


def reachable(url: str, default_port: int) -> str | None:
    """None when ``url``'s host:port accepts TCP connections, else the reason."""
    parts = urlsplit(url.split(",")[0])
    host, port = parts.hostname or "127.0.0.1", parts.port or default_port
    try:
        with socket.create_connection((host, port), timeout=1):
            return None
    except OSError as exc:
        return f"{host}:{port} unreachable ({exc})"


class NatsPostgres:
    """Streams and a schema of the benchmark's own, removed on exit."""

    def __init__(self) -> None:
        tag = uuid.uuid4().hex[:8]
        self.stream_prefix = f"BENCH_{tag}"
        self.bus_url = (
            f"{NATS_URL.partition('?')[0]}?stream_prefix={self.stream_prefix}"
            f"&subject_prefix=bench_{tag}"
        )
        self.schema = f"waygraph_bench_{tag}"
        joiner = "&" if "?" in DATABASE_URL else "?"
        self.store_url = f"{DATABASE_URL}{joiner}schema={self.schema}"

    def bus(self, source: str) -> Bus:
        from waygraph.events.nats_bus import NatsBus

        return NatsBus(self.bus_url, source=source)

    async def cleanup(self) -> None:
        import nats
        import psycopg

        nc = await nats.connect(NATS_URL.partition("?")[0])
        try:
            js = nc.jetstream()
            for info in await js.streams_info():
                if info.config.name.startswith(self.stream_prefix):
                    await js.delete_stream(info.config.name)
        finally:
            await nc.close()
        with psycopg.connect(DATABASE_URL, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')


async def nats_one_process(plans: int) -> dict[str, Any]:
    stack = NatsPostgres()
    bus = stack.bus("bench")
    await bus.start()
    try:
        return await measure_in_process(
            bus, bus, stack.store_url, plans, "NATS + PostgreSQL, 1 process"
        )
    finally:
        await bus.close()
        await stack.cleanup()


async def nats_three_processes(plans: int, memory: bool = False) -> dict[str, Any]:
    """Planner and worker in processes of their own; with ``memory``, the planner's
    plans in ``memory://`` (the bound: what the bus and the event layer allow)."""
    stack = NatsPostgres()
    store_url = "memory://" if memory else stack.store_url
    target = f"{Path(__file__).resolve()}:build"
    procs = [
        await _spawn("planner", target, "--bus", stack.bus_url, "--store", store_url),
        await _spawn("worker", target, "--bus", stack.bus_url),
    ]
    client = stack.bus("bench-client")
    try:
        for proc in procs:
            await _ready(proc)
        await client.start()
        await run_batch(client, WARMUP, 10**6)
        planner = procs[0].pid
        cpu = Snapshot(
            {
                "planner": [planner],
                "worker": [procs[1].pid],
                "client": [os.getpid()],
                "NATS server": lambda: pids_named("nats-server"),
                "PostgreSQL server": lambda: pids_named("postgres"),
            }
        )
        loop_cpu = process_seconds(planner, main=True)
        wall, latencies = await run_batch(client, plans, 0)
        loop_cpu = process_seconds(planner, main=True) - loop_cpu
        by_process = cpu.per_unit_ms(plans)
        alone = await run_one_at_a_time(client)
        name = f"NATS + {'memory://' if memory else 'PostgreSQL'}, 3 processes"
        found = row(name, plans, wall, latencies, alone)
        # The planner is the busy process: its CPU per plan is what to compare,
        # and how much of it its event loop's thread spends (the rest: the store's threads).
        found["planner_cpu_ms_per_plan"] = by_process["planner"]
        found["planner_loop_cpu_ms_per_plan"] = loop_cpu / plans * 1e3
        # And what the rest of the machine spent on the same plans: the budget a
        # rate of plans leaves the planner (set_targets).
        found["cpu_ms_per_plan"] = by_process
        return found
    finally:
        await client.close()
        for proc in procs:
            if proc.returncode is None:
                proc.terminate()
            await proc.communicate()
        await stack.cleanup()


async def nats_memory_three_processes(plans: int) -> dict[str, Any]:
    """The bound of the NATS target: the same 3 processes, the planner's store ``memory://``."""
    return await nats_three_processes(plans, memory=True)


async def _spawn(*args: str) -> asyncio.subprocess.Process:
    # WAYGRAPH_BENCH_PROFILE=<file>: the planner runs under cProfile (its main thread's
    # CPU time), the profile written there when the bench stops it (SIGTERM ends
    # `waygraph planner` cleanly).
    profile = os.environ.get("WAYGRAPH_BENCH_PROFILE", "") if args[0] == "planner" else ""
    runner = [str(ROOT / "bench" / "_profiled.py"), profile] if profile else ["-m"]
    return await asyncio.create_subprocess_exec(
        sys.executable,
        *runner,
        "waygraph",
        *args,
        stdout=subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )


async def _ready(proc: asyncio.subprocess.Process) -> None:
    assert proc.stderr is not None
    seen = []
    while True:
        line = (await asyncio.wait_for(proc.stderr.readline(), 30)).decode()
        if not line:
            raise RuntimeError(f"a bench subprocess exited: {''.join(seen)}")
        seen.append(line)
        if "running; Ctrl-C to stop" in line:
            return


# ----------------------------------------------------------------------- main


async def measure_ceilings(stack: str, known: dict[str, float]) -> dict[str, float]:
    """The ceilings ``stack``'s target is set against (bench/_ceilings.py), measured
    just before it runs, so a burst of other work on the machine hits both alike."""
    if stack == "in-process + SQLite":
        return {"sqlite_commits_per_s": sqlite_commits()}
    if stack == "in-process + memory://":
        # A bound read against the SQLite stack's bracket (measured with that
        # stack, just before; alone, here).
        return {} if "sqlite_commits_per_s" in known else {"sqlite_commits_per_s": sqlite_commits()}
    if stack.startswith("NATS + ") and stack.endswith(", 3 processes"):
        if "postgres_commits_per_s" in known:
            return {}  # the memory:// bound, read against the PostgreSQL stack's bracket
        return {
            "postgres_commits_per_s": await asyncio.to_thread(postgres_commits, DATABASE_URL),
            "jetstream_publishes_per_s": await jetstream_publishes(NATS_URL.partition("?")[0]),
        }
    return {}


async def main(plans: int, json_out: bool = False, only: str = "") -> int:
    report = Report("events", json_out=json_out)
    header = (
        f"# {plans} concurrent three-state plans; {os.cpu_count()} CPUs, "
        f"{platform.python_implementation()} {platform.python_version()}, {platform.system()}\n"
    )
    runs: list[tuple[str, Callable[[int], Awaitable[dict[str, Any]]]]] = [
        ("in-process + SQLite", inprocess_sqlite),
        ("in-process + memory://", inprocess_memory),
    ]
    why = reachable(NATS_URL, 4222) or reachable(DATABASE_URL, 5432)
    if why is None:
        runs += [
            ("NATS + PostgreSQL, 1 process", nats_one_process),
            ("NATS + PostgreSQL, 3 processes", nats_three_processes),
            ("NATS + memory://, 3 processes", nats_memory_three_processes),
        ]
    if only:
        runs = [(stack, run) for stack, run in runs if stack.startswith(only)]
    paired = [r for r in runs if r[0] in (POSTGRES_STACK, MEMORY_STACK)]
    if len(paired) == 2:
        # The target's two stacks in the order A B B A: a load that rises or
        # falls through the run meets both alike; each keeps its faster run.
        runs = [r for r in runs if r not in paired] + paired + paired[::-1]
    rows: list[dict[str, Any]] = []
    ceilings: dict[str, float] = {}
    for stack, run in runs:
        ceilings.update(await measure_ceilings(stack, ceilings))
        found = await run(plans)
        print(f"  done: {stack}", file=sys.stderr)
        earlier = next((r for r in rows if r["stack"] == stack), None)
        if earlier is None:
            found["plans_per_s_runs"] = [round(found["plans_per_s"], 1)]
            rows.append(found)
            continue
        found["plans_per_s_runs"] = [*earlier["plans_per_s_runs"], round(found["plans_per_s"], 1)]
        if found["plans_per_s"] > earlier["plans_per_s"]:
            rows[rows.index(earlier)] = found
        else:
            earlier["plans_per_s_runs"] = found["plans_per_s_runs"]
    for r in rows:
        report.figure(r["stack"], {k: v for k, v in r.items() if k != "stack"})
    report.figure("ceilings", ceilings, "per second")
    reading = set_targets(report, rows, ceilings)
    skipped = ""
    if why is not None:
        skipped = (
            f"NATS + PostgreSQL skipped: {why}. Start them with scripts/services.sh up, "
            "or point WAYGRAPH_NATS_URL / WAYGRAPH_DATABASE_URL at running servers."
        )
        report.note(skipped)
    with report.tables():
        print(header)
        print(table(rows))
        print("\nceilings: " + ", ".join(f"{k} {v:.0f}" for k, v in ceilings.items()))
        print(reading)
        if skipped:
            print(f"\n{skipped}")
    return report.finish()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plans", type=int, default=1000, help="goals sent at once (1000)")
    parser.add_argument(
        "--only",
        default="",
        metavar="STACK",
        help="run only the stacks whose name starts with this ('in-process', "
        "'NATS + PostgreSQL, 3'); their targets are still checked",
    )
    add_json_flag(parser)
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.plans, args.json, args.only)))
