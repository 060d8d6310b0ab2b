"""An interrupted eval keeps what it did: each finished run is in results.json at once, and
Ctrl-C cancels the runs not started, writes the report of those that finished and exits 130
(issue 35: an 18-minute eval interrupted left nothing)."""

from __future__ import annotations

import json
import threading

import pytest
import typer
from typer.testing import CliRunner

import waygraph.cli._preflight as preflight
import waygraph.cli.eval_cmds as eval_cmds
import waygraph.eval.runner as runner
from waygraph.cli import app
from waygraph.eval.runner import EvalConfig, Record, run_eval
from waygraph.eval.suite import select_tasks


class FakeRuns:
    """Stands in for one real run: remembers it started, and interrupts when told to."""

    def __init__(self, interrupt_at: int | None = None) -> None:
        self.started: list[tuple[str, str, int]] = []
        self.lock = threading.Lock()
        self.interrupt_at = interrupt_at

    def __call__(self, task, mode, repeat, settings, library):
        with self.lock:
            self.started.append((task.id, mode, repeat))
            count = len(self.started)
        if count == self.interrupt_at:
            raise KeyboardInterrupt
        return Record(task=task.id, mode=mode, repeat=repeat, success=True)


def test_ctrl_c_cancels_the_runs_not_started(monkeypatch):
    fake = FakeRuns()
    monkeypatch.setattr(runner, "_one_run", fake)
    tasks = select_tasks(None)[:3]
    config = EvalConfig(base_url="http://127.0.0.1:9", model="m", tasks=tasks, repeat=2, jobs=1)

    def interrupt(record: Record) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_eval(config, on_record=interrupt)
    # 3 tasks x 2 modes x 2 repeats = 12 runs: at most the first and the one a worker
    # had already taken started; the rest were cancelled, not awaited.
    assert 1 <= len(fake.started) <= 2 < 12


def test_the_cli_writes_each_run_as_it_finishes_and_exits_130_on_ctrl_c(tmp_path, monkeypatch):
    fake = FakeRuns(interrupt_at=3)
    written: list[int] = []
    write = runner.write_records

    def counting_write(records, path):
        written.append(len(records))
        write(records, path)

    monkeypatch.setattr(runner, "write_records", counting_write)
    monkeypatch.setattr(runner, "_one_run", fake)
    monkeypatch.setattr(preflight, "check_endpoint", lambda *args, **kwargs: None)

    def abandon(code: int) -> None:
        raise typer.Exit(code)

    monkeypatch.setattr(eval_cmds, "_abandon", abandon)
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "--llm",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--jobs",
            "1",
            "--repeat",
            "3",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 130, result.output
    records = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert len(records) == 2  # the two runs that finished before the interrupt
    assert written[:2] == [1, 2]  # written as each run finished, before the interrupt
    assert (tmp_path / "report.html").is_file()
    assert "interrupted: 2 of" in " ".join(result.output.split())
    assert not (tmp_path / "results.json.partial").exists()
