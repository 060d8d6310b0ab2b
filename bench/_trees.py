"""Measuring several source trees in turn: this checkout's and others' (``--against``).

Each tree runs a benchmark's child mode in a process of its own, with that
tree's ``src`` first on ``PYTHONPATH``, and the trees take turns round by
round, so old and new code meet the same machine load.

Example::

    runs = interleaved(__file__, ["/tmp/old/src"], rounds=3, child_args=["--child"])
    runs["this checkout"][0]  # the first round's figures of this checkout
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["HERE_SRC", "interleaved"]

#: This checkout's ``src`` folder.
HERE_SRC = str(Path(__file__).resolve().parent.parent / "src")


def interleaved(
    script: str,
    against: Sequence[str],
    *,
    rounds: int,
    child_args: Callable[[str], list[str]],
) -> dict[str, list[dict[str, float]]]:
    """Each tree's figures per round: ``script``'s child prints them as its last line of JSON.

    ``child_args(src)`` gives the child's command-line arguments for a tree.
    """
    trees = {"this checkout": HERE_SRC, **{src: src for src in against}}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for _ in range(rounds):
        for name, src in trees.items():  # interleaved: the load hits every tree alike
            out = subprocess.run(
                [sys.executable, script, *child_args(src)],
                env={**os.environ, "PYTHONPATH": src},
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            runs[name].append(json.loads(out.splitlines()[-1]))
    return runs
