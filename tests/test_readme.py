"""The README's code runs as printed (issue 37): its plan, the commands beside it and the
agent-loop snippet, in a fresh folder, twice."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._doc_blocks import blocks

README = Path(__file__).resolve().parent.parent / "README.md"
WAYGRAPH = [sys.executable, "-m", "waygraph"]


def _blocks(kind: str) -> list[str]:
    return [b.body for b in blocks(README) if b.lang == kind]


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "XDG_DATA_HOME": str(cwd / "data")}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def plans(tmp_path: Path) -> Path:
    (tmp_path / "plans").mkdir()
    (tmp_path / "plans" / "release.yaml").write_text(_blocks("yaml")[0], encoding="utf-8")
    return tmp_path


def test_the_plan_checks_activates_on_its_phrase_and_draws(plans: Path):
    checked = _run([*WAYGRAPH, "check", "plans/"], plans)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    matched = _run([*WAYGRAPH, "match", "cut a release", "--library", "plans/"], plans)
    assert matched.returncode == 0 and "release" in matched.stdout, matched.stdout
    assert "No plan activates" not in matched.stdout
    drawn = _run([*WAYGRAPH, "draw", "plans/release.yaml", "--format", "mermaid"], plans)
    assert drawn.returncode == 0 and drawn.stdout.startswith("flowchart"), drawn.stderr


def test_the_agent_loop_snippet_runs_as_printed_twice(tmp_path: Path):
    snippet = next(b for b in _blocks("python") if "nav.turn(" in b)
    (tmp_path / "snippet.py").write_text(snippet, encoding="utf-8")
    for _ in range(2):  # the second run carries the saved session on
        out = _run([sys.executable, "snippet.py"], tmp_path)
        assert out.returncode == 0, out.stderr
        assert "Traceback" not in out.stderr
    assert (tmp_path / "agent.db").exists()
    assert not (tmp_path / "data").exists()  # nothing in the user's data folder
