"""Attractor pipelines: parse and simulated-run cost per node, real pipelines vs generated ones.

Run: ``python bench/pipelines.py [--repeat N] [--folder DIR] [--json]``. Prints markdown
tables; exits 1 when a target is missed. Everything is measured in this one
process, and the targets are ratios between figures of the same run, so a
slower or faster machine moves both sides alike.

Workloads:

- real: every DOT file of the public Attractor corpus (tests/fixtures/attractor)
  and of tests/fixtures/dot, as written. Their figures are aggregates: the
  total time over every file divided by the total nodes parsed (parse) or
  executed (run). A file that does not run to an end is left out of the run
  figures and counted in the table.
- generated: a seeded pipeline of 100 and of 1,000 nodes, built from
  10-node segments shaped like the corpus's: a codergen stage, a conditional
  diamond routing success forward and fail back, a human gate whose first
  choice goes on and second loops back, a tool node, a parallel fan-out of
  three branches into a fan-in, and a goal gate with a retry target. The
  graph has a goal and a model stylesheet. The simulated run visits every node.

Parse: :func:`waygraph.formats.dot.read_dot` of the text (tokenizing,
statements, typed attributes, conditions, the stylesheet); per node parsed.

Run: :func:`waygraph.pipelines.runner.run_pipeline` with no backend (codergen
stages return the specification's simulated SUCCESS), the auto-approving
interviewer, a stub tool handler (nothing is executed), no sleeping and no
lint (``validate=False``: linting is its own cost, not the loop's). Per node
executed (``len(result.path)``). Two ways, each with a fresh run folder in a
temporary directory:

- ``files``: as ``waygraph run`` runs: each stage writes prompt.md,
  response.md and status.json, and a checkpoint.json is written after every
  node;
- ``no checkpoint file``: the same with ``save_checkpoint`` a no-op (the
  checkpoint is still built after every node; the stage files are still
  written, as the handlers write them into the run folder whatever the saver).

Time is the process's CPU time (``time.process_time``: every thread, user and
system), not the wall clock: the runs write thousands of small files, and on
a shared machine the wall clock mostly measured the other processes' load
(a round's wall time was four times its CPU time). The system time of the
writes is counted; waiting for the disk is not.

The run folders go to the system's temporary directory, or ``--folder``: on
a disk file system, creating a thousand stage folders and their files costs
more per file than a hundred (system time that grows with the run folder
and the file system's state, not with waygraph's work), and ``--folder
/dev/shm`` (tmpfs) measures the run without it.

Targets: the 1,000-node pipeline's cost per node at most 1.5x that of the
real pipelines, and at most 1.5x that of the 100-node pipeline, for parsing
and for each way of running: the cost of a node must not grow with the
pipeline.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from _report import Report, add_json_flag  # noqa: E402

from waygraph.errors import WaygraphError  # noqa: E402
from waygraph.formats.dot import read_dot  # noqa: E402
from waygraph.model import Node, Plan  # noqa: E402
from waygraph.pipelines.context import Context  # noqa: E402
from waygraph.pipelines.interviewers import AutoApproveInterviewer  # noqa: E402
from waygraph.pipelines.outcome import Outcome  # noqa: E402
from waygraph.pipelines.runner import run_pipeline  # noqa: E402

CORPUS = ROOT / "tests" / "fixtures" / "attractor"
FIXTURES = ROOT / "tests" / "fixtures" / "dot"
SIZES = (100, 1000)
FLAT_TARGET = 1.5
REAL_MAX_STEPS = 200  # as the corpus test: one corpus file loops until the step bound
REPEAT = 3


# ---------------------------------------------------------------- the pipelines


def generated_dot(size: int, seed: int) -> str:
    """A pipeline of about ``size`` nodes (10-node segments between start and exit; one
    segment in five fans out to three parallel branches)."""
    rnd = random.Random(seed)
    segments = max(1, round((size - 2) / 10))
    lines = [
        f"digraph generated_{size} {{",
        f'  goal="Ship feature {seed} in {segments} parts"',
        '  model_stylesheet="* { llm_model: sim-small; } .review { llm_model: sim-large; }"',
        "  default_max_retry=2",
        "  start [shape=Mdiamond]",
        "  exit [shape=Msquare]",
    ]
    previous = "start"
    for k in range(segments):
        effort = rnd.choice(("low", "medium", "high"))
        lines += [
            f'  w{k} [prompt="Part {k} of: $goal", reasoning_effort={effort}]',
            f"  v{k} [shape=diamond]",
            f'  h{k} [shape=hexagon, label="Approve part {k}?"]',
            f'  t{k} [shape=parallelogram, tool_command="make test PART={k}", timeout="5m"]',
            # One part in five fans out; the others review in sequence, as most
            # real pipelines do (a thread pool per node would make the
            # generated pipelines a different workload from the corpus).
            f"  f{k} [shape=component, max_parallel=3]"
            if k % 5 == 0
            else f'  f{k} [prompt="Split part {k}"]',
            f"  j{k} [shape=tripleoctagon]" if k % 5 == 0 else f'  j{k} [prompt="Join part {k}"]',
            f'  g{k} [prompt="Review part {k}", class=review, goal_gate=true, retry_target=w{k}]',
            f"  {previous} -> w{k} -> v{k}",
            f'  v{k} -> h{k} [condition="outcome=success"]',
            f'  v{k} -> w{k} [condition="outcome=fail", label="retry"]',
            f'  h{k} -> t{k} [label="[A] Approve"]',
            f'  h{k} -> w{k} [label="[R] Rework"]',
            f"  t{k} -> f{k}",
        ]
        for branch in "abc":
            lines.append(f'  b{k}{branch} [prompt="Branch {branch} of part {k}", max_retries=1]')
            if k % 5 == 0:
                lines.append(f"  f{k} -> b{k}{branch} -> j{k}")
        if k % 5:
            lines.append(f"  f{k} -> b{k}a -> b{k}b -> b{k}c -> j{k}")
        weight = rnd.randint(0, 3)
        lines.append(f"  j{k} -> g{k} [weight={weight}]")
        previous = f"g{k}"
    lines += [f"  {previous} -> exit", "}"]
    return "\n".join(lines) + "\n"


def real_files() -> list[Path]:
    """The corpus's and the fixtures' DOT files, in a fixed order."""
    return sorted(CORPUS.rglob("*.dot")) + sorted(FIXTURES.glob("*.dot"))


class StubTool:
    """Tool nodes succeed without running anything: this measures the loop, not a command."""

    def execute(self, node: Node, context: Context, plan: Plan, logs_root: Path) -> Outcome:
        return Outcome(status="success", context_updates={"tool.output": ""})


# ---------------------------------------------------------------- measuring


def parse_seconds(texts: list[tuple[str, str]]) -> tuple[float, int]:
    """Seconds to read every text, and the nodes read."""
    gc.collect()
    nodes = 0
    start = time.process_time()
    for name, text in texts:
        report = read_dot(text, file=name)
        if report.plan is not None:
            nodes += len(report.plan.graph.nodes)
    return time.process_time() - start, nodes


def _noop(checkpoint: Any) -> None:
    return None


def run_seconds(plans: list[Plan], checkpoint_file: bool) -> tuple[float, int, int]:
    """Seconds to run every plan, the nodes executed, and the runs that raised."""
    total, executed, raised = 0.0, 0, 0
    for plan in plans:
        with tempfile.TemporaryDirectory(prefix="wg-bench-") as folder:
            options: dict[str, Any] = {} if checkpoint_file else {"save_checkpoint": _noop}
            gc.collect()
            start = time.process_time()
            try:
                result = run_pipeline(
                    plan,
                    interviewer=AutoApproveInterviewer(),
                    handlers={"tool": StubTool()},
                    logs=folder,
                    sleep=lambda seconds: None,
                    validate=False,
                    max_steps=max(REAL_MAX_STEPS, 2 * len(plan.graph.nodes)),
                    **options,
                )
            except WaygraphError:
                raised += 1
                continue
            total += time.process_time() - start
            executed += len(result.path)
    return total, executed, raised


@dataclass
class Workload:
    name: str
    texts: list[tuple[str, str]]
    plans: list[Plan]
    nodes: int  # nodes in the plans
    parse_us: float = 0.0  # µs per node parsed
    run_us: dict[str, float] | None = None  # µs per node executed, by way
    executed: int = 0  # nodes executed by one round of runs
    raised: int = 0


WAYS = {"files": True, "no checkpoint file": False}


def workload(name: str, texts: list[tuple[str, str]]) -> Workload:
    plans = []
    for file, text in texts:
        plan = read_dot(text, file=file).plan
        if plan is not None:
            plans.append(plan)
    nodes = sum(len(p.graph.nodes) for p in plans)
    return Workload(name, texts, plans, nodes, run_us={})


def measure(loads: list[Workload], repeat: int) -> None:
    """Medians over ``repeat`` rounds, interleaved so drift hits every workload alike."""
    parse: dict[str, list[float]] = {w.name: [] for w in loads}
    run: dict[tuple[str, str], list[float]] = {}
    for _ in range(repeat):
        for w in loads:
            seconds, nodes = parse_seconds(w.texts)
            parse[w.name].append(seconds / nodes * 1e6)
            for way, checkpoint_file in WAYS.items():
                seconds, executed, raised = run_seconds(w.plans, checkpoint_file)
                run.setdefault((w.name, way), []).append(seconds / executed * 1e6)
                w.executed, w.raised = executed, raised
        print("  measured one round", file=sys.stderr)
    for w in loads:
        w.parse_us = statistics.median(parse[w.name])
        w.run_us = {way: statistics.median(run[(w.name, way)]) for way in WAYS}


# ---------------------------------------------------------------- report


def table(header: list[str], rows: list[list[str]]) -> None:
    print("| " + " | ".join(header) + " |")
    print("| " + " | ".join(["---"] + ["---:"] * (len(header) - 1)) + " |")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=REPEAT, help="rounds (median is reported)")
    parser.add_argument(
        "--folder",
        help="where the run folders go (default: the system's temporary directory); "
        "/dev/shm takes the disk's file system out of the run figures",
    )
    add_json_flag(parser)
    args = parser.parse_args(argv)
    report = Report("pipelines", json_out=args.json)
    if args.folder:
        tempfile.tempdir = args.folder  # every run folder goes there
    report.extra["folder"] = tempfile.gettempdir()

    real = workload(
        "real",
        [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in real_files()],
    )
    loads = [real] + [
        workload(f"generated {n}", [(f"generated_{n}.dot", generated_dot(n, seed=n))])
        for n in SIZES
    ]
    measure(loads, max(1, args.repeat))
    big, small = loads[-1], loads[-2]

    with report.tables():
        print(f"### Attractor pipelines: cost per node (run folders in {tempfile.gettempdir()})\n")
        header = ["pipelines", "files", "nodes", "executed per round", "runs raised"]
        header += ["parse µs/node"] + [f"run µs/node, {way}" for way in WAYS]
        rows = []
        for w in loads:
            assert w.run_us is not None
            rows.append(
                [w.name, str(len(w.texts)), f"{w.nodes:,}", f"{w.executed:,}", str(w.raised)]
                + [f"{w.parse_us:,.1f}"]
                + [f"{w.run_us[way]:,.1f}" for way in WAYS]
            )
        table(header, rows)
        print()

    lines = []
    for w in loads:
        assert w.run_us is not None
        report.figure(f"parse, {w.name}", w.parse_us, "µs per node")
        for way in WAYS:
            report.figure(f"run ({way}), {w.name}", w.run_us[way], "µs per node")
    for base in (real, small):
        checks = [("parse", big.parse_us / base.parse_us)]
        assert big.run_us is not None and base.run_us is not None
        checks += [(f"run ({way})", big.run_us[way] / base.run_us[way]) for way in WAYS]
        for what, ratio in checks:
            name = f"{what}: {big.name} per node <= {FLAT_TARGET}x {base.name}"
            met = report.target(name, ratio, FLAT_TARGET)
            lines.append([name, f"{ratio:.2f}x", "met" if met else "MISSED"])
    with report.tables():
        print("### Targets\n")
        table(["target", "ratio", ""], lines)
    report.extra["executed"] = {w.name: w.executed for w in loads}
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
