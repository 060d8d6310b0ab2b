"""``waygraph play`` as a person uses it: real subprocesses, one of them on a terminal."""

from __future__ import annotations

import os
import pty
import select
import shlex
import subprocess
import sys
import time
from pathlib import Path

from tests.test_cli_run import wg
from waygraph.describe import describe_event

HELLO = (
    '{"plans": {"hello": {"triggers": ["say hello"], "trigger_threshold": 1, "steps": '
    '[{"name": "Greet", "verify": {"type": "output_contains", "value": "hello"}}]}}}'
)


def test_play_tells_events_in_the_dashboards_words(tmp_path: Path):
    lib = tmp_path / "hello.json"
    lib.write_text(HELLO)
    out = wg("play", "hello", "--library", str(lib), stdin="nope\nhello there\n")
    assert out.returncode == 0, out.stderr
    # The one description the dashboard's timeline uses, not raw event names.
    for event in (
        {"type": "plan_activated", "plan_id": "hello"},
        {"type": "node_verified", "node": "step_1", "outcome": "fail", "check": "output_contains"},
        {"type": "retry_triggered", "node": "step_1", "attempt": 2},
        {"type": "edge_followed", "node": "step_1", "to": "done", "condition": "on_success"},
        {"type": "plan_completed", "node": "done"},
    ):
        assert describe_event(event) in out.stdout, event
    assert "✗ Verification failed at step_1" in out.stdout
    assert "✓ Verification passed at step_1" in out.stdout
    for raw in ("plan_completed", "node_verified", "edge_followed", "retry_triggered"):
        assert raw not in out.stdout
    assert "Run completed; path: start → step_1 → done" in out.stdout


def test_quit_says_the_run_is_left_in_progress_and_how_to_come_back(tmp_path: Path):
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    out = wg("play", "bugfix_workflow", "--store", store, stdin="Traceback: boom\n:quit\n")
    assert out.returncode == 0, out.stderr
    assert "Run running" not in out.stdout
    assert "left in progress at isolate (session 'play')" in out.stdout
    said = [line.split(":", 1) for line in out.stdout.splitlines()]
    lines = {s[0]: s[1].strip() for s in said if s[0] in ("Resume it", "Inspect it")}
    # The printed commands work as printed.
    inspect = shlex.split(lines["Inspect it"])
    assert inspect[:4] == ["waygraph", "sessions", "show", "play"]
    shown = wg(*inspect[1:], "--json")
    assert shown.returncode == 0, shown.stderr
    assert '"current_node": "isolate"' in shown.stdout
    resume = shlex.split(lines["Resume it"])
    assert resume[:3] == ["waygraph", "play", "--resume"]
    again = wg(*resume[1:], stdin="!echo the cause\n:quit\n")
    assert again.returncode == 0, again.stderr
    assert "Verification passed at isolate" in again.stdout
    assert "left in progress at fix" in again.stdout


def test_quit_on_a_memory_store_says_the_run_ends_with_the_command():
    out = wg("play", "bugfix_workflow", "--store", "memory://", stdin=":quit\n")
    assert out.returncode == 0, out.stderr
    assert "left in progress at reproduce" in out.stdout
    assert "memory://, so the run ends with this command" in out.stdout
    assert "--store sqlite:///" in out.stdout and "Resume it" not in out.stdout


def test_resume_without_a_running_run_is_one_clear_line(tmp_path: Path):
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    out = wg("play", "--resume", "--session", "nobody", "--store", store)
    assert out.returncode == 2
    assert "no running run in session 'nobody'" in out.stderr
    assert "Traceback" not in out.stderr


def test_an_unknown_plan_id_gets_did_you_mean():
    out = wg("play", "bugfix_wrkflow", stdin=":quit\n")
    assert out.returncode == 2
    assert "no plan 'bugfix_wrkflow' in the library; did you mean bugfix_workflow?" in out.stderr
    assert "Traceback" not in out.stderr


def _read_until(fd: int, done, seen: list[str]) -> str:
    # A guard against a hung child, not a speed check.
    end = time.monotonic() + 60
    while not done(seen[0]):
        ready, _, _ = select.select([fd], [], [], max(0.0, end - time.monotonic()))
        assert ready, f"the terminal went quiet; it showed {seen[0][-800:]!r}"
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the child closed the terminal
            break
        seen[0] += chunk.decode("utf-8", "replace")
    return seen[0]


def test_up_arrow_recalls_the_last_line_on_a_terminal():
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm", "COLUMNS": "120"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "waygraph", "play", "bugfix_workflow", "--store", "memory://"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        close_fds=True,
    )
    os.close(slave)
    seen = [""]
    try:
        prompts = lambda n: lambda text: text.count("tool output> ") >= n  # noqa: E731
        _read_until(master, prompts(1), seen)
        os.write(master, b":state\r")
        _read_until(master, prompts(2), seen)
        os.write(master, b"\x1b[A\r")  # up arrow, Enter: the same :state again
        _read_until(master, prompts(3), seen)
        os.write(master, b":quit\r")
        text = _read_until(master, lambda text: "left in progress" in text, seen)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)
        os.close(master)
    assert text.count('"current_node": "reproduce"') == 2
    # The arrow never reached the plan as a tool output.
    assert "^[[A" not in text and "Verification" not in text
