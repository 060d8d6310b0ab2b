"""The eval report's token figures: per run, per model call and per prompt, per mode and task.

Runs that made no model call (planned mode) and results written before the
prompt tokens were recorded have no such figure: the report says "—", never 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from waygraph.eval.metrics import summarize_modes, task_tokens
from waygraph.eval.report import render_html, terminal_table, token_table
from waygraph.eval.runner import Record


def run(task: str, mode: str, repeat: int, tokens: int, calls: int, prompt: int = 0) -> Record:
    return Record(
        task=task,
        mode=mode,
        repeat=repeat,
        success=True,
        tokens=tokens,
        model_calls=calls,
        prompt_tokens=prompt,
        completion_tokens=tokens - prompt if prompt else 0,
    )


def records() -> list[Record]:
    return [
        run("a", "baseline", 1, 1000, 4, 900),
        run("a", "baseline", 2, 3000, 6, 2800),
        run("b", "baseline", 1, 0, 0),  # broke before its first call
        run("a", "guided", 1, 4000, 8, 3600),
        run("b", "guided", 1, 2000, 2, 1800),
        run("a", "planned", 1, 5000, 0),  # the planner's calls are not counted
    ]


def text(table: object) -> str:
    screen = Console(width=160, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    screen.print(table)
    return screen.export_text()


def test_tokens_per_run_per_call_and_per_prompt_for_each_mode():
    base, guided, planned = summarize_modes(records())
    assert base.mean_tokens == pytest.approx(4000 / 3)  # per run, as before
    # Over the runs that made calls: their tokens over their calls.
    assert base.mean_tokens_per_call == pytest.approx(4000 / 10)
    assert base.mean_prompt_tokens_per_call == pytest.approx(3700 / 10)
    assert guided.mean_tokens_per_call == pytest.approx(6000 / 10)
    assert guided.mean_prompt_tokens_per_call == pytest.approx(5400 / 10)
    assert planned.mean_tokens == 5000
    assert planned.mean_tokens_per_call is None and planned.mean_prompt_tokens_per_call is None


def test_tokens_per_run_for_each_task_and_mode():
    assert task_tokens(records()) == {
        "a": {"baseline": 2000.0, "guided": 4000.0, "planned": 5000.0},
        "b": {"baseline": None, "guided": 2000.0},
    }


def test_the_terminal_tables_show_the_figures_and_a_dash_where_unknown():
    summary = text(terminal_table(records()))
    assert "mean tokens" in summary and "success rate" in summary  # the rows kept
    per_call = next(line for line in summary.splitlines() if "tokens / model call" in line)
    assert "400" in per_call and "600" in per_call and "—" in per_call
    prompt = next(line for line in summary.splitlines() if "prompt tokens / model call" in line)
    assert "370" in prompt and "540" in prompt and "—" in prompt
    tokens = text(token_table(records())).splitlines()
    assert tokens[0].strip() == "tokens per run"
    row_a = next(line for line in tokens if line.strip("│ ").startswith("a "))
    assert [cell.strip() for cell in row_a.strip("│").split("│")] == [
        "a",
        "2,000",
        "4,000",
        "5,000",
    ]
    row_b = next(line for line in tokens if line.strip("│ ").startswith("b "))
    assert [cell.strip() for cell in row_b.strip("│").split("│")] == ["b", "—", "2,000", "—"]


def test_the_html_report_has_the_rows_and_the_task_table():
    page = render_html(records(), model="m")
    assert "<td>tokens / model call</td><td>400</td><td>600</td><td>—</td>" in page
    assert "<td>prompt tokens / model call</td><td>370</td><td>540</td><td>—</td>" in page
    assert "<h2>Tokens per run, per task</h2>" in page
    assert "<tr><td>a</td><td>2,000</td><td>4,000</td><td>5,000</td></tr>" in page
    assert "<tr><td>b</td><td>—</td><td>2,000</td><td>—</td></tr>" in page


def test_results_written_before_the_prompt_tokens_still_load_and_report(tmp_path: Path):
    old = [
        {"task": "a", "mode": "guided", "repeat": 1, "success": True, "tokens": 900},
        {"task": "a", "mode": "guided", "repeat": 2, "success": False, "tokens": 300},
    ]
    old[0]["model_calls"] = 3
    path = tmp_path / "results.json"
    path.write_text(json.dumps(old), encoding="utf-8")
    loaded = [Record.model_validate(row) for row in json.loads(path.read_text())]
    assert [(r.prompt_tokens, r.completion_tokens) for r in loaded] == [(0, 0), (0, 0)]
    (guided,) = summarize_modes(loaded)
    assert guided.mean_tokens == 600
    assert guided.mean_tokens_per_call == 300  # the run without model_calls is left out
    assert guided.mean_prompt_tokens_per_call is None
    prompt = next(
        line
        for line in text(terminal_table(loaded)).splitlines()
        if "prompt tokens / model call" in line
    )
    assert prompt.rstrip(" │").endswith("—")
    assert "<td>prompt tokens / model call</td><td>—</td>" in render_html(loaded, model="m")
