"""``--no-preflight``: every command that checks the model endpoint first can skip it.

Skipped, an unreachable server is not reported by the preflight: the command
starts and fails later with its own one-line error, never a traceback. The
preflight's own message without the flag is tested in test_cli_preflight.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests import test_cli_preflight
from tests.test_cli_preflight import wg
from tests.test_learning_suggest import BACKUP_GOALS, run_backup
from waygraph.cli import app
from waygraph.store import open_store

pytestmark = pytest.mark.timeout(120)
runner = CliRunner()
#: The fixture of a port nothing listens on.
closed_url = test_cli_preflight.closed_url


def preflight(url: str) -> str:
    """What only the preflight's message says: the request it made."""
    return f"GET {url}/models"


#: Each command, and the start of the line it fails with once it meets the server.
COMMANDS = {
    "plan": (["plan", "a goal", "--model", "m", "--workspace", "."], "error: planning failed"),
    "plan --dry-run": (
        ["plan", "a goal", "--model", "m", "--workspace", ".", "--dry-run"],
        "error: planning failed",
    ),
    "eval": (
        ["eval", "--model", "m", "--out", "results", "--tasks", "fix-failing-test"],
        "error: 2 of 2 runs errored",
    ),
    "eval --compliance": (
        ["eval", "--model", "m", "--out", "results", "--compliance"],
        "error: 9 of 9 fixtures errored",
    ),
    "demo": (["demo", "--store", "sqlite:///runs.db"], "Connection error"),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_without_the_preflight_the_command_fails_later_with_its_own_error(
    command: str, closed_url: str, tmp_path: Path
):
    args, own_error = COMMANDS[command]
    out = wg(*args, "--llm", closed_url, "--no-preflight", cwd=tmp_path)
    assert out.returncode != 0
    assert preflight(closed_url) not in out.stdout + out.stderr
    assert "Traceback" not in out.stdout + out.stderr
    assert own_error in out.stdout + out.stderr
    lines = [line for line in (out.stdout + out.stderr).splitlines() if own_error in line]
    assert len(lines) == 1


def test_the_preflight_still_refuses_a_url_that_is_no_url(tmp_path: Path):
    out = wg("eval", "--model", "m", "--llm", "localhost:1", "--no-preflight", cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.startswith("error: --llm 'localhost:1' is not an http(s) URL")


def test_the_demo_passes_the_flag_to_run_demo(monkeypatch: pytest.MonkeyPatch):
    seen: list[dict[str, Any]] = []

    def fake(**kwargs: Any) -> Any:
        seen.append(kwargs)
        raise SystemExit(0)

    monkeypatch.setattr("waygraph.demo.run_demo", fake)
    runner.invoke(app, ["demo", "--llm", "http://127.0.0.1:1/v1"])
    runner.invoke(app, ["demo", "--llm", "http://127.0.0.1:1/v1", "--no-preflight"])
    assert [kwargs["preflight"] for kwargs in seen] == [True, False]


@pytest.mark.parametrize("skip", [False, True])
def test_library_suggest_names_plans_without_the_preflight(
    skip: bool, closed_url: str, tmp_path: Path
):
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    for n, goal in enumerate(BACKUP_GOALS):
        run_backup(store, n, goal)
    url = store.url
    store.close()
    args = ["library", "suggest", "--store", url, "--llm", closed_url, "--model", "m"]
    result = runner.invoke(app, [*args, *(["--no-preflight"] if skip else [])])
    if skip:
        # The model could not be asked: the plans keep the names the runs gave them.
        assert result.exit_code == 0, result.output
        assert preflight(closed_url) not in result.output
        assert "kept the names from the runs" in result.stderr
    else:
        assert result.exit_code == 2
        assert preflight(closed_url) in result.output
