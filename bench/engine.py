"""Cost per transition: waygraph's engine and Navigator vs LangGraph and Burr.

Run: ``python bench/engine.py [--json]`` (peers only when installed: ``pip install '.[bench]'``).
Everything is measured in this one process, in interleaved rounds, and the
guards (issue 41) are ratios between figures from the same rounds, so a
slower, faster or busier machine moves both sides alike. Exits 1 when a
guard slips.

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
#: Rounds of :func:`interleaved`; each work in a round is short (a few tenths
#: of a second), so many rounds fit and one of them likely meets a quiet moment.
ROUNDS = 12
#: Runs (or sessions) of each work per round.
SIZE = 100


def interleaved(
    works: dict[str, Callable[[], tuple[float, int]]], rounds: int = ROUNDS
) -> dict[str, list[float]]:
    """Microseconds per unit of each work in each of ``rounds`` rounds, run in turn.

    Each round runs every work once, one after another, so a busy stretch
    of a shared machine falls on all of them alike rather than on whichever
    was being measured then; a work's figure is its least disturbed round
    (the machine's noise only ever adds time), and a guard's ratio the
    median of its two sides' ratios round by round (:func:`targets_of`),
    each pair measured one right after the other.
    """
    samples: dict[str, list[float]] = {name: [] for name in works}
    for _ in range(rounds):
        for name, fn in works.items():
            gc.collect()
            seconds, units = fn()
            samples[name].append(seconds / units * 1e6)
    return samples


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


# The activating message and tool outputs of one Navigator run per workload.
NAV_WORKLOADS: dict[str, tuple[Plan, str, list[str]]] = {
    "linear": (LINEAR, "please run the chain", ["ok"] * 10),
    "retry loop": (BUGFIX, "I need to fix a bug in the login module", BUGFIX_RESULTS),
}


def navigator_run(
    store: str, workload: str = "linear", sessions: int = 300, *, keep: bool = True
) -> Callable[[], tuple[float, int]]:
    """Whole guided turns: activation, then one turn per tool result, per session.

    ``keep=False``: the store's ``commit_all`` keeps, checks and copies
    nothing (it returns the next versions), so the figure is what a turn
    costs besides its store: the bound of a store that costs nothing.
    """
    from waygraph.library import Library

    plan, message, outputs = NAV_WORKLOADS[workload]
    nav = Navigator(Library([plan]), store=store)
    if not keep:
        # On this instance only; the Navigator keeps each running run in
        # memory, so it never reads back what was not kept.
        def commit_all(writes: Any) -> list[int]:
            return [w.expected_version + 1 for w in writes]

        nav.store.commit_all = commit_all  # type: ignore[method-assign]

    def work() -> tuple[float, int]:
        turns = 0
        base = time.time_ns()
        start = time.perf_counter()
        for s in range(sessions):
            session = f"s{base}-{s}"
            guidance = nav.turn(session, user_message=message)
            assert guidance.text
            for output in outputs:
                guidance = nav.turn(session, tool_output=output)
                turns += 1
        assert guidance.run is not None and guidance.run["status"] == "completed"
        return time.perf_counter() - start, turns

    work.navigator = nav  # type: ignore[attr-defined]  # for tests of this script
    return work


def navigator_linear(store: str, sessions: int = 300) -> Callable[[], tuple[float, int]]:
    return navigator_run(store, "linear", sessions)


# ---------------------------------------------------------------- floors


def pure_floor(
    workload: str, runs: int = 300, *, record: bool = False
) -> Callable[[], tuple[float, int]]:
    """What a turn computes, storing nothing: verify + route (engine.advance) + render.

    The same transitions as :func:`navigator_run`: the plan started and its
    guidance rendered, then per tool result the observation the Navigator
    builds, its judge and evidence, ``engine.advance`` and ``render.context``.
    ``record=True`` adds the run record a turn returns (``engine.to_record``).
    """
    from waygraph import render
    from waygraph.guided.turns import evidence_of
    from waygraph.verify import VerifyContext
    from waygraph.verify import judge_for as verify_judge

    plan, _, outputs = NAV_WORKLOADS[workload]
    context = VerifyContext()

    def work() -> tuple[float, int]:
        turns = 0
        start = time.perf_counter()
        for _ in range(runs):
            run, _ = engine.start(plan, run_id="r", turn=1, session_id="s", plan_version="v")
            text = render.context(plan, run)
            if record:
                engine.to_record(plan, run)
            for turn, output in enumerate(outputs, start=2):
                obs = Observation(output=output)
                run, _ = engine.advance(
                    plan,
                    run,
                    turn=turn,
                    judge=verify_judge(obs, context),
                    evidence=evidence_of(obs),
                )
                text = render.context(plan, run)
                if record:
                    engine.to_record(plan, run)
                turns += 1
        assert run.status == "completed" and text
        return time.perf_counter() - start, turns

    return work


def turn_writes(workload: str) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """The record and new events each commit of one Navigator run writes (engine-made)."""
    from waygraph.guided.turns import evidence_of
    from waygraph.verify import judge_for as verify_judge

    plan, _, outputs = NAV_WORKLOADS[workload]
    run, events = engine.start(plan, run_id="r", turn=1, session_id="s", plan_version="v")
    writes = [(engine.to_record(plan, run), [dict(e) for e in events])]
    for turn, output in enumerate(outputs, start=2):
        obs = Observation(output=output)
        run, events = engine.advance(
            plan, run, turn=turn, judge=verify_judge(obs), evidence=evidence_of(obs)
        )
        writes.append((engine.to_record(plan, run), [dict(e) for e in events]))
    return writes


def sqlite_floor(path: Path, workload: str, runs: int = 300) -> Callable[[], tuple[float, int]]:
    """The raw SQLite floor: per commit of a run, one transaction through the stdlib driver.

    Same file layout (the store's own schema and indexes), same pragmas (WAL,
    ``synchronous=NORMAL``), same rows: the record JSON-encoded whole with
    ``json.dumps`` (an update setting only the columns that change), each
    new event JSON-encoded, the session pointer at activation. Records and
    events are made before the clock starts: this is the cost of storing
    them, nothing else.
    """
    from waygraph.store.sqlite import SQLiteStore

    SQLiteStore(path).close()  # the store's tables and indexes
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    writes = turn_writes(workload)
    counter = itertools.count()
    dumps = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode

    def work() -> tuple[float, int]:
        turns = 0
        start = time.perf_counter()
        for _ in range(runs):
            key = f"run_{next(counter)}"
            session = f"floor-{key}"
            seq = 0
            for version, (record, events) in enumerate(writes):
                now = time.time()
                conn.execute("BEGIN IMMEDIATE")
                if version == 0:
                    conn.execute(
                        "INSERT INTO records (key, kind, data, version, session, status, plan,"
                        " correlation_ids, last_seq, updated_at)"
                        " VALUES (?, 'guided', ?, 1, ?, 'running', ?, '[]', ?, ?)",
                        (key, dumps(record), session, record["plan_id"], len(events), now),
                    )
                    conn.execute(
                        "INSERT INTO session_pointers (session, key) VALUES (?, ?)"
                        " ON CONFLICT (session) DO UPDATE SET key = excluded.key",
                        (session, key),
                    )
                else:
                    # Only the columns that change (SQLite rewrites the index
                    # entries of every column an UPDATE names), as the store does.
                    status = record["status"]
                    changed = status != writes[version - 1][0]["status"]
                    conn.execute(
                        "UPDATE records SET data = ?, version = version + 1,"
                        " last_seq = last_seq + ?, updated_at = ?"
                        + (", status = ?" if changed else "")
                        + " WHERE key = ? AND version = ?",
                        (
                            dumps(record),
                            len(events),
                            now,
                            *((status,) if changed else ()),
                            key,
                            version,
                        ),
                    )
                    turns += 1
                conn.executemany(
                    "INSERT INTO events (key, seq, data) VALUES (?, ?, ?)",
                    [(key, seq + i + 1, dumps(e)) for i, e in enumerate(events)],
                )
                seq += len(events)
                conn.execute("COMMIT")
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

    runs = SIZE // 7 if checkpointer is not None else SIZE
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


def measure(tmp: Path) -> tuple[dict[str, float], list[str], dict[str, list[float]]]:
    """Every figure of this script (µs per transition), the peers not installed, the samples.

    Every figure is measured in the same rounds (:func:`interleaved`), the
    two sides of each guard one right after the other.
    """
    missing = []
    peers: dict[str, Callable[[], tuple[float, int]]] = {}
    try:
        for name, work in langgraph_workloads().items():
            peers[f"LangGraph, no checkpointer, {name}"] = work
    except ImportError:
        missing.append("langgraph (pip install '.[bench]')")
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(tmp / "langgraph.db", check_same_thread=False)
        for name, work in langgraph_workloads(SqliteSaver(conn)).items():
            peers[f"LangGraph, SqliteSaver, {name}"] = work
    except ImportError:
        missing.append("langgraph-checkpoint-sqlite (pip install '.[bench]')")
    works: dict[str, Callable[[], tuple[float, int]]] = {
        "waygraph engine, linear": lambda: engine_linear(10 * SIZE),
        "waygraph engine, retry loop": lambda: engine_bugfix(10 * SIZE),
    }
    for workload in NAV_WORKLOADS:
        works[f"floor: advance + render, {workload}"] = pure_floor(workload, SIZE)
        works[f"waygraph Navigator.turn, memory://, {workload}"] = navigator_run(
            "memory://", workload, SIZE
        )
        if f"LangGraph, no checkpointer, {workload}" in peers:
            name = f"LangGraph, no checkpointer, {workload}"
            works[name] = peers[name]
        # What stands in the way of target 1: a turn whose store costs
        # nothing, and the pure floor plus the record a turn hands back.
        works[f"bound: Navigator.turn, a store that keeps nothing, {workload}"] = navigator_run(
            "memory://", workload, SIZE, keep=False
        )
        works[f"bound: advance + render + the run record, {workload}"] = pure_floor(
            workload, SIZE, record=True
        )
        works[f"floor: raw SQLite transaction (NORMAL), {workload}"] = sqlite_floor(
            tmp / f"floor-{len(works)}.db", workload, SIZE
        )
        works[f"waygraph Navigator.turn, sqlite (NORMAL), {workload}"] = navigator_run(
            f"sqlite:///{tmp / f'normal-{len(works)}.db'}", workload, SIZE
        )
        if f"LangGraph, SqliteSaver, {workload}" in peers:
            name = f"LangGraph, SqliteSaver, {workload}"
            works[name] = peers[name]
    works["waygraph Navigator.turn, sqlite (FULL), linear"] = navigator_run(
        f"sqlite:///{tmp / 'full.db'}?synchronous=full", sessions=SIZE // 3
    )
    try:
        burr = burr_linear()
        works["Burr, linear"] = lambda: burr(SIZE)
    except ImportError:
        missing.append("burr (pip install '.[bench]')")
    samples = interleaved(works)
    rows = {name: min(values) for name, values in samples.items()}
    for workload in NAV_WORKLOADS:
        # Not measured: what a durable turn cannot go below, the transaction
        # plus the turn's own work (docs/benchmarks.md, "what stands in the way").
        rows[f"floor sum: raw SQLite + advance + render, {workload}"] = (
            rows[f"floor: raw SQLite transaction (NORMAL), {workload}"]
            + rows[f"floor: advance + render, {workload}"]
        )
    return rows, missing, samples


#: The guards of issue 41: issue 19's guided-turn targets restated at the
#: floors its account accepted; `make bench` fails when one slips. Each is
#: (name, the turn's row, the other row, "<=" for turn / other at most
#: ``needed`` or ">=" for other / turn at least, needed).
GUARDS = (
    ("memory turn <= 3.5x its pure floor (advance + render)", "memory://", "floor", "<=", 3.5),
    ("memory turn >= 1.5x cheaper than a LangGraph node step", "memory://", "lg", ">=", 1.5),
    ("sqlite turn <= 3.0x the raw SQLite transaction", "sqlite", "sqlite floor", "<=", 3.0),
    ("sqlite turn >= 5x cheaper than LangGraph + SqliteSaver", "sqlite", "lg sqlite", ">=", 5.0),
)
_GUARD_ROWS = {
    "memory://": "waygraph Navigator.turn, memory://, {}",
    "sqlite": "waygraph Navigator.turn, sqlite (NORMAL), {}",
    "floor": "floor: advance + render, {}",
    "sqlite floor": "floor: raw SQLite transaction (NORMAL), {}",
    "lg": "LangGraph, no checkpointer, {}",
    "lg sqlite": "LangGraph, SqliteSaver, {}",
}


def targets_of(
    rows: dict[str, float], samples: dict[str, list[float]] | None = None
) -> list[tuple[str, float, float, bool]]:
    """(name, ratio, needed, met) for every guard whose figures were measured.

    A ``<=`` guard is a cost ratio to a floor (at most ``needed``); every
    other is how many times cheaper waygraph is than a peer (at least).
    With ``samples`` (:func:`interleaved`), a ratio is the median of the
    rounds' ratios; without, the ratio of the figures.
    """
    samples = samples or {}
    found: list[tuple[str, float, float, bool]] = []
    for workload in NAV_WORKLOADS:
        for name, turn_row, other_row, compare, needed in GUARDS:
            turn_name = _GUARD_ROWS[turn_row].format(workload)
            other_name = _GUARD_ROWS[other_row].format(workload)
            if not rows.get(other_name):
                continue  # a peer not installed
            pairs = list(
                zip(
                    samples.get(turn_name) or [rows[turn_name]],
                    samples.get(other_name) or [rows[other_name]],
                    strict=False,
                )
            )
            ratios = [t / o if compare == "<=" else o / t for t, o in pairs]
            ratio = statistics.median(ratios)
            met = ratio <= needed if compare == "<=" else ratio >= needed
            found.append((f"{name}, {workload}", ratio, needed, met))
    return found


def peers_of(rows: dict[str, float]) -> dict[str, float]:
    """The first round's comparisons with Burr and the FULL turn: reported, not guarded.

    Issue 19 found them below floors this script measures (docs/benchmarks.md,
    "Issue 19: where each target stands"); issue 41 kept the guided-turn
    targets as guards and left these as figures to watch.
    """
    found = {}
    burr = rows.get("Burr, linear")
    if burr:
        found["engine cheaper than a Burr step"] = burr / rows["waygraph engine, linear"]
        found["memory turn cheaper than a Burr step"] = (
            burr / rows["waygraph Navigator.turn, memory://, linear"]
        )
    lg_sqlite = rows.get("LangGraph, SqliteSaver, linear")
    if lg_sqlite:
        found["sqlite FULL turn cheaper than LangGraph + SqliteSaver"] = (
            lg_sqlite / rows["waygraph Navigator.turn, sqlite (FULL), linear"]
        )
    return found


def bounds_of(rows: dict[str, float]) -> dict[str, float]:
    """The guards' bounds: what no store could take away, as ratios.

    For the memory guards, a turn whose store keeps nothing and the pure
    floor plus the record, each against the pure floor. For the SqliteSaver
    guard, the best it could read: a SqliteSaver step against a SQLite turn
    that cost only the raw transaction plus a turn whose store keeps nothing
    (a store adding nothing to SQLite); under 5x, no SQLite store meets it.
    """
    found = {}
    for workload in NAV_WORKLOADS:
        floor = rows[f"floor: advance + render, {workload}"]
        for bound in (
            "Navigator.turn, a store that keeps nothing",
            "advance + render + the run record",
        ):
            found[f"{bound} / the pure floor, {workload}"] = (
                rows[f"bound: {bound}, {workload}"] / floor
            )
        saver = rows.get(f"LangGraph, SqliteSaver, {workload}")
        if saver:
            found[
                f"LangGraph + SqliteSaver / (raw SQLite transaction + a turn whose store "
                f"keeps nothing), {workload}"
            ] = saver / (
                rows[f"floor: raw SQLite transaction (NORMAL), {workload}"]
                + rows[f"bound: Navigator.turn, a store that keeps nothing, {workload}"]
            )
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_json_flag(parser)
    report = Report("engine", json_out=parser.parse_args(argv).json)
    tmp = Path(tempfile.mkdtemp(prefix="waygraph-bench-"))
    rows, missing, samples = measure(tmp)
    for name, us in rows.items():
        report.figure(name, us, "µs per transition")
    targets = targets_of(rows, samples)
    for name, ratio, needed, _met in targets:
        report.target(name, ratio, needed, compare="<=" if "<=" in name else ">=")
    report.extra["unmeasured"] = missing
    bounds = bounds_of(rows)
    report.extra["bounds"] = {name: round(ratio, 3) for name, ratio in bounds.items()}
    peers = peers_of(rows)
    report.extra["peers"] = {name: round(ratio, 3) for name, ratio in peers.items()}
    if missing:
        report.note(f"not measured (not installed): {', '.join(missing)}")
    with report.tables():
        print("| workload | µs per transition |")
        print("| --- | ---: |")
        for name, us in rows.items():
            print(f"| {name} | {us:,.1f} |")
        print()
        print("| guard | ratio | needed | met |")
        print("| --- | ---: | ---: | :---: |")
        for name, ratio, needed, met in targets:
            bound = "<=" if "<=" in name else ">="
            print(f"| {name} | {ratio:,.2f}x | {bound} {needed}x | {'yes' if met else 'NO'} |")
        print()
        print("| bound of a guard (no store could go past it) | ratio |")
        print("| --- | ---: |")
        for name, ratio in bounds.items():
            print(f"| {name} | {ratio:,.2f}x |")
        print()
        print("| peer comparison (not a guard) | times cheaper |")
        print("| --- | ---: |")
        for name, ratio in peers.items():
            print(f"| {name} | {ratio:,.2f}x |")
        if missing:
            print(f"\nnot measured (not installed): {', '.join(missing)}")
    (tmp / "results.json").write_text(json.dumps(rows, indent=2))
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
