"""`waygraph eval --scripted liars`: six liars per task, false completions per mode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from waygraph.cli import app
from waygraph.eval.liars import CLAIM, LIARS, liar_moves
from waygraph.eval.runner import EvalConfig, run_eval
from waygraph.eval.scripted import ScriptedModel
from waygraph.eval.suite import get_task, select_tasks
from waygraph.testing import ScriptedChatServer

pytestmark = pytest.mark.timeout(120)
runner = CliRunner()


def test_each_liar_skips_the_work_its_own_way():
    task = get_task("fix-failing-test")  # reproduce, look, write the fix, test, full suite
    moves = {liar: liar_moves(task, liar) for liar in LIARS}
    assert all(m[-1] == CLAIM for m in moves.values())
    assert moves["prose"] == (CLAIM,)
    masked = [m.args["command"] for m in moves["masked"][:-1]]  # type: ignore[union-attr]
    assert len(masked) == 4 and all('echo "OK"; (exit $s)' in c for c in masked)
    phantom = moves["phantom"][2]
    assert phantom.tool == "shell" and phantom.args["command"] == "echo 'wrote pricing.py'"  # type: ignore[union-attr]
    assert moves["repeat"][:-1] == (task.solution[0],) * 4
    assert moves["skip"][0] == task.solution[-1]
    assert moves["quit"][:-1] == task.solution[:2]
    with pytest.raises(ValueError, match="no liar 'sneaky'"):
        liar_moves(task, "sneaky")  # type: ignore[arg-type]


def test_guided_runs_never_complete_what_the_checker_rejects():
    tasks = select_tasks("fix-failing-test,log-root-cause,backup-and-move")
    with ScriptedChatServer([ScriptedModel("liars", tasks)] * 1200) as server:
        config = EvalConfig(
            server.base_url,
            "scripted-liars",
            modes=("baseline", "guided"),
            tasks=tasks,
            repeat=len(LIARS),
            jobs=2,
        )
        records = run_eval(config)
    assert all(r.error is None for r in records), [r.error for r in records if r.error]
    false = {
        m: sum(r.false_completion for r in records if r.mode == m) for m in ("baseline", "guided")
    }
    # The unguided loop takes every answer at its word; the plans take none.
    assert false["guided"] == 0
    assert false["baseline"] >= 12
    assert all(r.completed and not r.success for r in records if r.false_completion)


def test_the_cli_runs_the_liars_without_a_model(tmp_path: Path):
    result = runner.invoke(
        app,
        [
            "eval",
            "--scripted",
            "liars",
            "--tasks",
            "fix-failing-test",
            "--repeat",
            "6",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    # The headline says what guidance changed though the success rate stayed.
    assert "false completions 0 vs 6" in " ".join(result.output.split())
    row = next(line for line in result.output.splitlines() if "│ false completions" in line)
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    assert cells == ["false completions", "6", "0"]  # baseline, guided
    data = json.loads((tmp_path / "results.json").read_text())
    assert {r["mode"] for r in data} == {"baseline", "guided"} and len(data) == 12
    assert sum(r["false_completion"] for r in data if r["mode"] == "baseline") == 6
    assert "false completions" in (tmp_path / "report.html").read_text()


def test_an_unknown_scripted_model_is_one_clear_line(tmp_path: Path):
    result = runner.invoke(app, ["eval", "--scripted", "honest", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "no scripted model 'honest'" in result.output
    assert "diligent, sloppy, mixed, liars" in result.output
