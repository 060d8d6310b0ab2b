"""Cost per transition: waygraph's engine and Navigator vs LangGraph and Burr.

Run: ``python bench/engine.py [--json]`` (peers only when installed: ``pip install '.[bench]'``).
Everything is measured in this one process, and the targets are ratios
between figures from the same run, so a slower or faster machine moves both
sides alike. Exits 1 when a target is missed.

Workloads:
- linear: a 10-node chain where every result passes (10 transitions per run);
- retry loop: bugfix_workflow (the public v2 graph) with two failing tests,
  so fix -> test -> fix goes round twice before passing.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from _report import Report, add_json_flag  # noqa: E402

from waygraph import engine, load_library  # noqa: E402
from waygraph.model import Plan  # noqa: E402
from waygraph.navigator import Navigator  # noqa: E402
from waygraph.verify import Observation, check  # noqa: E402

COMPAT_GRAPH = ROOT / "tests" / "fixtures" / "compat" / "agent-zero-graph-library-v2.json"
REPEATS = 5


def best_of(fn: Callable[[], tuple[float, int]], repeats: int = REPEATS) -> float:
    """Microseconds per unit: the median of ``repeats`` runs of ``fn``."""
    samples = []
    for _ in range(repeats):
        gc.collect()
        seconds, units = fn()
        samples.append(seconds / units * 1e6)
    return statistics.median(samples)


# ---------------------------------------------------------------- waygraph workloads

LINEAR = Plan.model_validate(
    {
        "id": "linear10",
        "triggers": ["run the chain"],
        "trigger_threshold": 1,
        "steps": [{"name": f"step {i}", "verify": {"type": "any_output"}} for i in range(10)],
    }
)
BUGFIX = load_library(COMPAT_GRAPH, validate=False)["bugfix_workflow"]
# reproduce, isolate, fix, test(fail), fix, test(fail), fix, test(pass), verify_no_regression
BUGFIX_RESULTS = ["ok", "ok", "ok", "1 error", "ok", "1 error", "ok", "ok", "ok"]


def judge_for(output: str) -> engine.Judge:
    obs = Observation(output=output)
    return lambda verify: check(verify, obs)


PASS = judge_for("ok")
BUGFIX_JUDGES = [judge_for(o) for o in BUGFIX_RESULTS]


def engine_linear(runs: int = 3000) -> tuple[float, int]:
    transitions = 0
    start = time.perf_counter()
    for _ in range(runs):
        run, _ = engine.start(LINEAR, run_id="r", turn=0)
        for turn in range(1, 11):
            run, _ = engine.observe(LINEAR, run, PASS, turn=turn)
        transitions += run.transitions
    return time.perf_counter() - start, transitions


def engine_bugfix(runs: int = 3000) -> tuple[float, int]:
    transitions = 0
    start = time.perf_counter()
    for _ in range(runs):
        run, _ = engine.start(BUGFIX, run_id="r", turn=0)
        for turn, judge in enumerate(BUGFIX_JUDGES, start=1):
            run, _ = engine.observe(BUGFIX, run, judge, turn=turn)
        transitions += run.transitions
    assert run.status == "completed", run.status
    return time.perf_counter() - start, transitions


def navigator_linear(store: str, sessions: int = 300) -> Callable[[], tuple[float, int]]:
    from waygraph.library import Library

    nav = Navigator(Library([LINEAR]), store=store)

    def work() -> tuple[float, int]:
        turns = 0
        base = time.time_ns()
        start = time.perf_counter()
        for s in range(sessions):
            session = f"s{base}-{s}"
            guidance = nav.turn(session, user_message="please run the chain")
            assert guidance.text
            for _ in range(10):
                guidance = nav.turn(session, tool_output="ok")
                assert guidance.text
                turns += 1
        return time.perf_counter() - start, turns

    return work


# ---------------------------------------------------------------- peers


def langgraph_workloads(checkpointer: Any = None) -> dict[str, Callable[[], tuple[float, int]]]:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        i: int
        fails: int

    def bump(state: State) -> dict[str, int]:
        return {"i": state["i"] + 1}

    linear = StateGraph(State)
    for k in range(10):
        linear.add_node(f"n{k}", bump)
    linear.add_edge(START, "n0")
    for k in range(9):
        linear.add_edge(f"n{k}", f"n{k + 1}")
    linear.add_edge("n9", END)
    linear_app = linear.compile(checkpointer=checkpointer)

    loop = StateGraph(State)
    for name in ("reproduce", "isolate", "fix", "verify_no_regression"):
        loop.add_node(name, bump)

    def test(state: State) -> dict[str, int]:
        return {"i": state["i"] + 1, "fails": state["fails"] + 1}

    loop.add_node("test", test)
    loop.add_edge(START, "reproduce")
    loop.add_edge("reproduce", "isolate")
    loop.add_edge("isolate", "fix")
    loop.add_edge("fix", "test")
    loop.add_conditional_edges(
        "test", lambda s: "fix" if s["fails"] <= 2 else "verify_no_regression"
    )
    loop.add_edge("verify_no_regression", END)
    loop_app = loop.compile(checkpointer=checkpointer)
    counter = iter(range(10**9))

    def runner(app: Any, steps: int, runs: int) -> Callable[[], tuple[float, int]]:
        def work() -> tuple[float, int]:
            start = time.perf_counter()
            for _ in range(runs):
                config = {"configurable": {"thread_id": f"t{next(counter)}"}}
                app.invoke({"i": 0, "fails": 0}, config)
            return time.perf_counter() - start, runs * steps

        return work

    runs = 40 if checkpointer is not None else 200
    return {"linear": runner(linear_app, 10, runs), "retry loop": runner(loop_app, 9, runs)}


def burr_linear() -> Callable[[], tuple[float, int]]:
    from burr.core import ApplicationBuilder, State, default
    from burr.core.action import action

    @action(reads=["i"], writes=["i"])
    def bump(state: State) -> State:
        return state.update(i=state["i"] + 1)

    names = [f"n{k}" for k in range(10)]
    transitions = [(a, b, default) for a, b in itertools.pairwise(names)]
    transitions.append((names[-1], names[0], default))

    def work(runs: int = 300) -> tuple[float, int]:
        app = (
            ApplicationBuilder()
            .with_actions(**{n: bump for n in names})
            .with_transitions(*transitions)
            .with_state(i=0)
            .with_entrypoint("n0")
            .build()
        )
        start = time.perf_counter()
        for _ in range(runs * 10):
            app.step()
        return time.perf_counter() - start, runs * 10

    return work


# ---------------------------------------------------------------- report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_json_flag(parser)
    report = Report("engine", json_out=parser.parse_args(argv).json)
    tmp = Path(tempfile.mkdtemp(prefix="waygraph-bench-"))
    rows: dict[str, float] = {}
    rows["waygraph engine, linear"] = best_of(engine_linear)
    rows["waygraph engine, retry loop"] = best_of(engine_bugfix)
    rows["waygraph Navigator.turn, memory://"] = best_of(navigator_linear("memory://"))
    rows["waygraph Navigator.turn, sqlite (NORMAL)"] = best_of(
        navigator_linear(f"sqlite:///{tmp / 'normal.db'}")
    )
    rows["waygraph Navigator.turn, sqlite (FULL)"] = best_of(
        navigator_linear(f"sqlite:///{tmp / 'full.db'}?synchronous=full", sessions=100), 3
    )
    missing = []
    try:
        for name, work in langgraph_workloads().items():
            rows[f"LangGraph, no checkpointer, {name}"] = best_of(work, 3)
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(tmp / "langgraph.db", check_same_thread=False)
        for name, work in langgraph_workloads(SqliteSaver(conn)).items():
            rows[f"LangGraph, SqliteSaver, {name}"] = best_of(work, 3)
    except ImportError:
        missing.append("langgraph (pip install '.[bench]')")
    try:
        rows["Burr, linear"] = best_of(burr_linear())
    except ImportError:
        missing.append("burr (pip install '.[bench]')")

    for name, us in rows.items():
        report.figure(name, us, "µs per transition")
    targets: list[tuple[str, float, int]] = []
    engine_us = rows["waygraph engine, linear"]
    burr = rows.get("Burr, linear")
    lg = rows.get("LangGraph, no checkpointer, linear")
    lg_sqlite = rows.get("LangGraph, SqliteSaver, linear")
    mem = rows["waygraph Navigator.turn, memory://"]
    if burr:
        targets.append(("engine >= 5x cheaper than a Burr step", burr / engine_us, 5))
        targets.append(("memory turn >= 2x cheaper than a Burr step", burr / mem, 2))
    if lg:
        targets.append(("memory turn >= 10x cheaper than a LangGraph node", lg / mem, 10))
    if lg_sqlite:
        normal = rows["waygraph Navigator.turn, sqlite (NORMAL)"]
        full = rows["waygraph Navigator.turn, sqlite (FULL)"]
        targets.append(
            ("sqlite turn >= 20x cheaper than LangGraph+SqliteSaver", lg_sqlite / normal, 20)
        )
        targets.append(
            ("sqlite FULL turn >= 2x cheaper than LangGraph+SqliteSaver", lg_sqlite / full, 2)
        )
    for label, ratio, needed in targets:
        report.target(label, ratio, needed, compare=">=")
    if missing:
        report.note(f"not measured (not installed): {', '.join(missing)}")
    with report.tables():
        print("| workload | µs per transition |")
        print("| --- | ---: |")
        for name, us in rows.items():
            print(f"| {name} | {us:,.1f} |")
        print()
        print("| target | ratio | needed | met |")
        print("| --- | ---: | ---: | :---: |")
        for t in report.targets:
            met = "yes" if t["met"] else "NO"
            print(f"| {t['name']} | {t['ratio']:,.1f}x | {t['needed']}x | {met} |")
        if missing:
            print(f"\nnot measured (not installed): {', '.join(missing)}")
    (tmp / "results.json").write_text(json.dumps(rows, indent=2))
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
