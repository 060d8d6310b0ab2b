"""Sum up a ``make bench`` run: every target missed, by script and by name.

Run: ``python bench/summary.py DIR``, where DIR holds, for each script run,
``N.cmd`` (the command line), ``N.json`` (its stdout under ``--json``: one
JSON object in bench/_report.py's shape) and ``N.rc`` (its exit status).
Prints one line per script, then a last line naming every target missed
(or saying all were met); exits 1 when a target was missed or a script
failed without saying which target (a crash, or output that is not JSON).

Example:
    >>> summarise([("bench/x.py", {"bench": "x", "targets": [], "missed": []}, 0)])
    (['x: 0 targets, all met'], [])
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

Run = tuple[str, dict[str, Any] | None, int]  # (command, JSON object or None, exit status)


def load(folder: Path) -> list[Run]:
    """The runs in ``folder``, in the order make ran them."""
    runs: list[Run] = []
    for cmd in sorted(folder.glob("*.cmd"), key=lambda p: int(p.stem)):
        command = cmd.read_text().strip()
        out = cmd.with_suffix(".json")
        rc_file = cmd.with_suffix(".rc")
        rc = int(rc_file.read_text().strip() or 1) if rc_file.exists() else 1
        try:
            obj = json.loads(out.read_text()) if out.exists() else None
        except json.JSONDecodeError:
            obj = None
        runs.append((command, obj if isinstance(obj, dict) else None, rc))
    return runs


def summarise(runs: list[Run]) -> tuple[list[str], list[str]]:
    """One line per script, and the problems: each missed target or failed script."""
    lines: list[str] = []
    problems: list[str] = []
    for command, obj, rc in runs:
        if obj is None:
            lines.append(f"{command}: no JSON report (exit status {rc})")
            problems.append(f"{command} failed (exit status {rc}, no report)")
            continue
        name = obj.get("bench", command)
        targets = obj.get("targets", [])
        missed = list(obj.get("missed", []))
        if missed:
            lines.append(f"{name}: {len(missed)} of {len(targets)} targets missed")
        else:
            lines.append(
                f"{name}: {len(targets)} target{'' if len(targets) == 1 else 's'}, all met"
            )
        problems += [f"{name}: {m}" for m in missed]
        if rc != 0 and not missed:
            problems.append(f"{name} exited {rc} with every target met")
    return lines, problems


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python bench/summary.py DIR", file=sys.stderr)
        return 2
    lines, problems = summarise(load(Path(args[0])))
    print("\n== summary")
    for line in lines:
        print(line)
    if problems:
        print("targets missed: " + "; ".join(problems))
        return 1
    print("every target met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
