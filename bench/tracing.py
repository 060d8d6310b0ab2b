"""Cost of OpenTelemetry tracing on a guided turn: off, a no-op tracer, the SDK.

Run: ``python bench/tracing.py`` (a table) or ``python bench/tracing.py --json``
(the figures as one JSON object). Exits 1 when a turn with the OpenTelemetry
API's no-op tracer costs more than 1.10x a turn with tracing off. Needs the
``otel`` extra and, for the third row, the OpenTelemetry SDK (``dev`` has both).

Workload: the linear 10-node plan of bench/engine.py in ``memory://``: a user
message activates it, then ten tool results pass one node each; a figure is
CPU µs per tool-result turn (load, verify, route, render, commit). Three
ways, interleaved session by session so load on a shared machine hits them alike,
each figure the best of its rounds (CPU time of this process):

- *off*: ``tracing.uninstrument()`` (as with ``WAYGRAPH_OTEL=0`` or no extra);
- *no-op tracer*: ``tracing.instrument(NoOpTracerProvider())``, the API with
  nothing behind it (what a library pays when the application traces nothing);
- *SDK*: ``tracing.instrument(TracerProvider())`` with a ``SimpleSpanProcessor``
  into an ``InMemorySpanExporter``: every turn a recorded span with its events
  and attributes (no network; a real exporter batches off the turn's thread).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from _report import Report, add_json_flag  # noqa: E402

from waygraph import tracing  # noqa: E402
from waygraph.library import Library  # noqa: E402
from waygraph.model import Plan  # noqa: E402
from waygraph.navigator import Navigator  # noqa: E402

ROUNDS = 9
SESSIONS = 100
TARGET = 1.10

LINEAR = Plan.model_validate(
    {
        "id": "linear10",
        "triggers": ["run the chain"],
        "trigger_threshold": 1,
        "steps": [{"name": f"step {i}", "verify": {"type": "any_output"}} for i in range(10)],
    }
)


def one_round(rows: dict[str, Callable[[], Any]], sessions: int = SESSIONS) -> dict[str, float]:
    """CPU µs per tool-result turn of each row over ``sessions`` runs of the linear plan.

    The rows take turns session by session (a few milliseconds each), so a
    spell of load hits them alike; each row has a new Navigator and store,
    so every row writes into a store of the same size.
    """
    navs = {name: Navigator(Library([LINEAR]), store="memory://") for name in rows}
    elapsed = dict.fromkeys(rows, 0.0)
    gc.collect()
    gc.disable()  # a collection landing in one row and not another is noise
    try:
        for s in range(sessions):
            session = f"s{s}"
            for name, setup in rows.items():
                setup()
                nav = navs[name]
                nav.turn(session, user_message="please run the chain")
                start = time.process_time()
                for _ in range(10):
                    guidance = nav.turn(session, tool_output="ok")
                    assert guidance.text, guidance
                elapsed[name] += time.process_time() - start
    finally:
        gc.enable()
        tracing.uninstrument()
    return {name: seconds / (sessions * 10) * 1e6 for name, seconds in elapsed.items()}


def setups() -> dict[str, Callable[[], Any]]:
    """How each row switches tracing on; ``(exporter)`` gives the SDK row's spans."""
    from opentelemetry.trace import NoOpTracerProvider

    rows: dict[str, Callable[[], Any]] = {
        "off": tracing.uninstrument,
        "no-op tracer": lambda: tracing.instrument(NoOpTracerProvider()),
    }
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError:
        return rows
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    rows["SDK, in-memory exporter"] = lambda: tracing.instrument(provider)
    rows["(exporter)"] = lambda: exporter
    return rows


def measure(rounds: int = ROUNDS) -> dict[str, Any]:
    """The best µs per turn of every row, the ratios to ``off`` and whether the target is met."""
    rows = setups()
    exporter = rows.pop("(exporter)", None)
    samples: dict[str, list[float]] = {name: [] for name in rows}
    one_round(rows, 10)  # warm caches and imports outside the figures
    for _ in range(rounds):
        for name, value in one_round(rows).items():
            samples[name].append(value)
        if exporter is not None:
            spans = exporter()
            assert spans.get_finished_spans(), "the SDK row recorded no span"
            spans.clear()  # spans kept from round to round would only cost memory
    us = {name: min(values) for name, values in samples.items()}
    ratios = {name: us[name] / us["off"] for name in us if name != "off"}
    return {
        "us_per_turn": {k: round(v, 2) for k, v in us.items()},
        "ratio_to_off": {k: round(v, 3) for k, v in ratios.items()},
        "target": {"no-op tracer": TARGET},
        "met": ratios["no-op tracer"] <= TARGET,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_json_flag(parser)
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="interleaved rounds per row")
    args = parser.parse_args(argv)
    report = Report("tracing", json_out=args.json)
    figures = measure(args.rounds)
    for name, value in figures["us_per_turn"].items():
        report.figure(name, value, "CPU µs per turn")
    noop = figures["ratio_to_off"]["no-op tracer"]
    report.target(f"no-op tracer turn <= {TARGET:.2f}x off", noop, TARGET)
    # The keys this script printed before the shared shape stay, for tools that read them.
    report.extra.update(figures)
    with report.tables():
        print("| tracing | µs per turn | ratio to off |")
        print("| --- | ---: | ---: |")
        for name, value in figures["us_per_turn"].items():
            ratio = figures["ratio_to_off"].get(name)
            print(f"| {name} | {value:.1f} | {'' if ratio is None else f'{ratio:.2f}x'} |")
        verdict = "yes" if figures["met"] else "**no**"
        print(f"\nno-op tracer turn <= {TARGET:.2f}x off: {noop:.2f}x, met: {verdict}")
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
