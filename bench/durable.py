"""Durable generated runs: what committing every finished step costs.

Run: ``python bench/durable.py [--steps 100] [--repeat 5] [--json]``. Prints a
markdown table; exits 1 when the target is missed.

The same seeded random DAG as bench/dag.py (layered, up to 12 steps wide),
run by ``PlanningAgent.execute_plan`` three ways in this one process:
``store=False`` (nothing kept: the scheduler alone), ``memory://`` and
SQLite in a temporary folder (the default store's kind, WAL,
``synchronous=NORMAL``). Each way runs with a tool that sleeps 10 ms (the
reference tool call) and with one that returns at once (all CPU: the worst
case, where nothing overlaps the commits). Figures are medians of
``--repeat`` runs; each is (makespan of the way - makespan without a store)
/ steps, the cost per step of keeping the run.

Target: with 10 ms tool calls, keeping the run in SQLite costs under 2% of
a tool call per step (200 µs): commits run off the event loop, in groups,
so they overlap the steps.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from _report import Report, add_json_flag  # noqa: E402
from dag import NoModel, Recorder, random_dag, to_plan  # noqa: E402

from waygraph.planning import PlanningAgent, PlanningPattern, Tool  # noqa: E402

TOOL_MS = 10.0
TARGET_SHARE = 0.02


async def makespan(steps: int, store: object, *, zero: bool) -> float:
    dag = random_dag(steps, seed=7)
    plan = to_plan(dag, zero=zero)
    recorder = Recorder()
    pattern = PlanningPattern(
        execution_mode="parallel", max_parallel=steps, max_steps=steps, allow_revision=False
    )
    agent = PlanningAgent(
        NoModel(),
        tools=[Tool(recorder.call, name="call")],
        pattern=pattern,
        store=store,  # type: ignore[arg-type]
    )
    gc.collect()
    start = time.perf_counter()
    result = await agent.execute_plan(plan)
    elapsed = time.perf_counter() - start
    if not result.success:
        raise RuntimeError(f"the plan failed: {result.final_output}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    add_json_flag(parser)
    args = parser.parse_args(argv)
    report = Report("durable", json_out=args.json)
    with tempfile.TemporaryDirectory() as folder:
        ways = {
            "no store": False,
            "memory://": "memory://",
            "SQLite": f"sqlite:///{Path(folder) / 'runs.db'}",
        }
        medians: dict[tuple[str, bool], float] = {}
        for zero in (False, True):
            samples: dict[str, list[float]] = {name: [] for name in ways}
            for _ in range(args.repeat):
                for name, store in ways.items():  # interleaved: drift hits every way alike
                    samples[name].append(asyncio.run(makespan(args.steps, store, zero=zero)))
            for name in ways:
                medians[name, zero] = statistics.median(samples[name])
    for zero in (False, True):
        label = "returns at once" if zero else "10 ms"
        base = medians["no store", zero]
        report.figure(
            f"{label} tool call",
            {
                name: {
                    "makespan ms": medians[name, zero] * 1e3,
                    "cost per step µs": (medians[name, zero] - base) / args.steps * 1e6,
                }
                for name in ways
            },
        )
    sqlite_cost = (medians["SQLite", False] - medians["no store", False]) / args.steps
    report.target(
        f"SQLite with 10 ms calls costs under {TARGET_SHARE:.0%} of a call per step",
        sqlite_cost / (TOOL_MS / 1000),
        TARGET_SHARE,
        compare="<",
    )
    met = not report.missed()
    with report.tables():
        print(
            f"Python {sys.version.split()[0]}; {args.steps} steps, {args.repeat} runs (medians)\n"
        )
        print("| tool call | keeping the run in | makespan ms | cost per step µs | % of 10 ms |")
        print("| --- | --- | ---: | ---: | ---: |")
        for zero in (False, True):
            base = medians["no store", zero]
            for name in ways:
                cost = (medians[name, zero] - base) / args.steps * 1e6
                share = cost / (TOOL_MS * 1000) * 100
                label = "returns at once" if zero else "10 ms"
                shown = "—" if name == "no store" else f"{cost:,.0f}"
                percent = "—" if name == "no store" else f"{share:.2f}%"
                ms = medians[name, zero] * 1000
                print(f"| {label} | {name} | {ms:,.1f} | {shown} | {percent} |")
        print(
            f"\nTarget: SQLite with 10 ms calls under {TARGET_SHARE:.0%} of a call per step: "
            f"{sqlite_cost * 1e6:,.0f} µs, {'met' if met else '**missed**'}"
        )
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
