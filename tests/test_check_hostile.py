"""Issue 33, item 4: ``waygraph check`` on hostile plan files prints rows, not tracebacks.

A JSON file nested 100,000 levels (200 KB) printed a RecursionError
traceback; a plan id holding a lone surrogate killed ``check --json`` (and
the table) with UnicodeEncodeError while printing. These run the real
command in a subprocess: the crash was in writing to a real stdout.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def run_check(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "waygraph", "check", *map(str, args)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="strict",
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("opening", ["[", '{"a":'])
def test_json_nested_100000_levels_is_an_error_row(tmp_path: Path, opening: str):
    path = tmp_path / "deep.json"
    closing = "]" if opening == "[" else "}"
    path.write_text(opening * 100_000 + ("" if opening == "[" else "1") + closing * 100_000)
    table = run_check(path)
    assert table.returncode == 1
    assert "Traceback" not in table.stderr
    assert "JSON nested too deeply" in table.stdout
    report = json.loads(run_check("--json", path).stdout)
    assert [(p["code"], p["message"]) for p in report["problems"]] == [
        ("load-error", "JSON nested too deeply")
    ]


def test_a_lone_surrogate_in_an_id_prints_in_every_output(tmp_path: Path):
    path = tmp_path / "plans.json"
    path.write_text('{"plans": {"p\\ud800x": {"triggers": ["a"], "steps": [{"name": "A"}]}}}')
    table = run_check(path)
    assert (table.returncode, table.stderr) == (1, "")
    assert "lone surrogate" in table.stdout
    assert "p\\ud800x" in table.stdout  # escaped, so it can be printed
    done = run_check("--json", path)
    assert (done.returncode, done.stderr) == (1, "")
    # The escape is JSON's own: the output reads back to the id the file holds.
    (problem,) = json.loads(done.stdout)["problems"]
    assert problem["plan"] == "p\ud800x"
    assert "lone surrogate" in problem["message"]


def test_a_right_to_left_override_in_an_id_is_refused_and_shown_escaped(tmp_path: Path):
    path = tmp_path / "plans.json"
    path.write_text('{"plans": {"p\\u202ex": {"triggers": ["a"], "steps": [{"name": "A"}]}}}')
    table = run_check(path)
    assert table.returncode == 1
    assert "format characters (U+202E)" in " ".join(table.stdout.split())
    # The table never holds the character itself, which would reverse the row.
    assert "\u202e" not in table.stdout
    assert "p\\u202ex" in table.stdout
