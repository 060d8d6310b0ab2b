"""Guidance tokens per call for every shipped plan, in the full and the compact style.

Run: ``python bench/guidance.py``. A measurement, not a timing: the figures
depend only on the plans and the renderer, so they are the same on every
machine. Prints one markdown table (docs/benchmarks.md has it and the method).

Method: for each plan of the shipped library, every node the model works at
(task, decision, human) is visited: the guidance a model gets on arriving
there is one call, and for a task the guidance after one failed attempt there
is another (a scripted failing ``python -m pytest -q`` with three lines of
output), wherever the failure leads while the run still runs. Each call is
rendered with :func:`waygraph.render.context` in both styles: ``full`` (the
default, with the plan's own tool names) and ``compact``. Tokens are
characters / 4, waygraph's convention (the ``max_tokens`` budget counts the
same way); with ``tiktoken`` importable, cl100k_base counts are added.
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from waygraph import engine, render  # noqa: E402
from waygraph.library import load_library  # noqa: E402
from waygraph.model import Plan  # noqa: E402
from waygraph.render.style import GuidanceStyle  # noqa: E402

STYLES = {"full": GuidanceStyle.of("full"), "compact": GuidanceStyle.of("compact")}
FAILURE = engine.Evidence(
    tool="code_execution_tool",
    call="python -m pytest -q",
    output="F\nE   AssertionError: expected 3, got 4\n1 failed, 3 passed in 0.05s",
)


def chars_over_four(text: str) -> float:
    """Tokens as waygraph counts them: about four characters each."""
    return len(text) / 4


def tiktoken_counter() -> Callable[[str], float] | None:
    """cl100k_base token counts, when tiktoken is importable (it is no dependency)."""
    try:
        import tiktoken

        encoding = tiktoken.get_encoding("cl100k_base")
    except Exception:  # not installed, or its encoding cannot be fetched (offline)
        return None
    return lambda text: float(len(encoding.encode(text)))


def calls(plan: Plan) -> Iterator[engine.Run]:
    """The runs the model is guided at: each work node on arrival, each task after a failure."""
    started, _ = engine.start(plan, run_id="bench", turn=1)
    for node in plan.graph.nodes.values():
        if node.type not in ("task", "decision", "human"):
            continue
        run = dataclasses.replace(started, current_node=node.id)
        yield run
        if node.type != "task":
            continue
        failed, _ = engine.observe(plan, run, lambda verify: False, turn=2, evidence=FAILURE)
        if failed.status == "running":
            yield failed


def measure(counter: Callable[[str], float]) -> list[tuple[str, int, dict[str, list[float]]]]:
    """Per plan: its id, how many calls, and the tokens of each call in each style."""
    rows = []
    for plan in load_library():
        runs = list(calls(plan))
        sizes = {
            name: [counter(render.context(plan, run, style=style)) for run in runs]
            for name, style in STYLES.items()
        }
        rows.append((plan.id, len(runs), sizes))
    return rows


def table(counter: Callable[[str], float], unit: str) -> str:
    """The markdown table: mean and max tokens per call, full and compact, per plan and overall."""
    rows = measure(counter)
    lines = [
        f"| plan | calls | full mean | full max | compact mean | compact max | ({unit}) |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    every: dict[str, list[float]] = {name: [] for name in STYLES}
    for plan_id, count, sizes in rows:
        for name in STYLES:
            every[name] += sizes[name]
        lines.append(f"| {plan_id} | {count} | {_cells(sizes)} | |")
    total = sum(count for _, count, _ in rows)
    lines.append(f"| **all plans** | {total} | {_cells(every)} | |")
    return "\n".join(lines)


def _cells(sizes: dict[str, list[float]]) -> str:
    return " | ".join(
        f"{statistics.fmean(sizes[name]):.0f} | {max(sizes[name]):.0f}" for name in STYLES
    )


def main() -> int:
    print(table(chars_over_four, "chars / 4"))
    counter = tiktoken_counter()
    if counter is not None:
        print()
        print(table(counter, "tiktoken cl100k_base"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
