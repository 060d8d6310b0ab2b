"""The one shape every bench/ script reports in, as a table or as one JSON object.

Each script makes a ``Report``, adds its figures and its targets, and ends
with ``return report.finish()``. With ``--json`` (see ``add_json_flag``) the
script's stdout is one JSON object and nothing else: ``report.tables()``
sends the script's usual markdown tables to stderr, as progress. Without it
the tables print as before. Either way the script exits 1 when a target is
missed, naming every missed target (stderr under ``--json``, else stdout).

The JSON object::

    {"bench": "engine", "argv": [...], "python": "3.11.7", "date": "2026-11-25T22:30:00Z",
     "figures": {"waygraph engine, linear": 4.0, ...}, "units": {"...": "µs per transition"},
     "targets": [{"name": ..., "ratio": 5.2, "needed": 5.0, "compare": ">=", "met": true}],
     "missed": [names of the targets not met], "met": true, ...script's own keys}

``ratio`` is the figure the target bounds (a ratio between two figures of
the same run, or a share such as 0.012 for 1.2%); ``compare`` says which way:
``ratio <= needed``, ``ratio >= needed`` or ``ratio < needed``. bench/summary.py
reads these objects back.

Example:
    >>> r = Report("demo", json_out=True)
    >>> r.figure("turn", 12.5, "µs")
    >>> r.target("turn <= 2x floor", 2.4, 2.0, compare="<=")
    False
    >>> r.missed()
    ['turn <= 2x floor']
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import platform
import sys
import time
from collections.abc import Iterator
from typing import Any, TextIO

COMPARES = {
    "<=": lambda value, bound: value <= bound,
    ">=": lambda value, bound: value >= bound,
    "<": lambda value, bound: value < bound,
    ">": lambda value, bound: value > bound,
}


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    """Add the ``--json`` flag every bench script takes."""
    parser.add_argument(
        "--json",
        action="store_true",
        help="print figures, ratios and targets as one JSON object on stdout (tables to stderr)",
    )


def _plain(value: Any) -> Any:
    """JSON has no NaN or infinity: a figure that is one is reported as null."""
    if isinstance(value, float):
        return round(value, 6) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


class Report:
    """A bench script's figures and targets, printed as tables or one JSON object."""

    def __init__(self, bench: str, *, json_out: bool) -> None:
        self.bench = bench
        self.json_out = json_out
        self.figures: dict[str, Any] = {}
        self.units: dict[str, str] = {}
        self.targets: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.extra: dict[str, Any] = {}
        # Kept now: under --json, tables() points sys.stdout at stderr for a while.
        self._stdout: TextIO = sys.stdout

    @contextlib.contextmanager
    def tables(self) -> Iterator[None]:
        """Where the script prints its tables: stdout, or stderr under ``--json``."""
        if not self.json_out:
            yield
            return
        with contextlib.redirect_stdout(sys.stderr):
            yield

    def figure(self, name: str, value: Any, unit: str | None = None) -> None:
        """Record one figure (a number, or a small dict of numbers), with its unit."""
        self.figures[name] = value
        if unit:
            self.units[name] = unit

    def target(self, name: str, ratio: float, needed: float, *, compare: str = "<=") -> bool:
        """Record one target: ``ratio compare needed``; returns whether it is met."""
        met = bool(COMPARES[compare](ratio, needed))
        self.targets.append(
            {"name": name, "ratio": ratio, "needed": needed, "compare": compare, "met": met}
        )
        return met

    def note(self, text: str) -> None:
        """Something a reader of the figures needs, such as a peer not installed."""
        self.notes.append(text)

    def missed(self) -> list[str]:
        """The names of the targets not met."""
        return [t["name"] for t in self.targets if not t["met"]]

    def as_dict(self) -> dict[str, Any]:
        """The JSON object (see the module's docstring)."""
        missed = self.missed()
        out: dict[str, Any] = {
            "bench": self.bench,
            "argv": sys.argv[1:],
            "python": platform.python_version(),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "figures": self.figures,
            "units": self.units,
            "targets": self.targets,
            "missed": missed,
            "met": not missed,
            "notes": self.notes,
        }
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return _plain(out)  # type: ignore[no-any-return]

    def finish(self) -> int:
        """Print the JSON object (``--json``) and the missed targets; the exit status."""
        missed = self.missed()
        if self.json_out:
            self._stdout.write(json.dumps(self.as_dict(), ensure_ascii=False) + "\n")
            self._stdout.flush()
        where = sys.stderr if self.json_out else self._stdout
        for name in missed:
            print(f"{self.bench}: target missed: {name}", file=where)
        return 1 if missed else 0
