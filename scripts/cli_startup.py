"""CLI start-up of two source trees, measured interleaved in one run.

For each tree: the wall time of ``python -m waygraph ARGS`` for a few commands
and what ``import waygraph.cli`` costs (``-X importtime``, every top-level
import summed), medians of N rounds. The trees alternate within each round, so
a busy machine slows both alike and the ratios stay comparable.

Usage: ``python scripts/cli_startup.py OLD_SRC NEW_SRC [N]``, e.g. with
``git worktree add /tmp/old main``: ``python scripts/cli_startup.py /tmp/old/src src 7``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

CASES = (("--help",), ("--version",), ("show", "--json"))


def import_seconds(env: dict[str, str]) -> float:
    """Seconds ``import waygraph.cli`` takes, summed over its top-level imports."""
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import waygraph.cli"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    rows = [line.split("|") for line in err.splitlines() if line.startswith("import time:")]
    top = [r for r in rows if len(r) == 3 and r[1].strip().isdigit() and r[2][:2] != "  "]
    return sum(int(r[1]) for r in top) / 1e6


def main() -> None:
    old, new, *rest = sys.argv[1:]
    rounds = int(rest[0]) if rest else 7
    trees = {"old": old, "new": new}
    walls: dict[tuple[str, str], list[float]] = {}
    imports: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(rounds):
        for name, src in trees.items():
            env = {**os.environ, "PYTHONPATH": os.path.abspath(src)}
            for case in CASES:
                start = time.perf_counter()
                subprocess.run(
                    [sys.executable, "-m", "waygraph", *case],
                    env=env,
                    capture_output=True,
                    check=False,
                )
                walls.setdefault((name, " ".join(case)), []).append(time.perf_counter() - start)
            imports[name].append(import_seconds(env))
    for case in CASES:
        key = " ".join(case)
        o, n = (statistics.median(walls[(t, key)]) for t in trees)
        print(f"waygraph {key:<14} old {o * 1000:6.0f} ms  new {n * 1000:6.0f} ms  {o / n:4.2f}x")
    o, n = (statistics.median(imports[t]) for t in trees)
    print(f"import waygraph.cli     old {o * 1000:6.0f} ms  new {n * 1000:6.0f} ms  {o / n:4.2f}x")


if __name__ == "__main__":
    main()
