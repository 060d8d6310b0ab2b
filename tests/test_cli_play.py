"""``waygraph play`` as a person uses it: real subprocesses, one of them on a terminal."""

from __future__ import annotations

import fcntl
import os
import platform
import pty
import select
import shlex
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_helpers import wg
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


APPROVE = (
    '{"plans": {"approve": {"graph": {"start": "start", "nodes": {"start": {"type": "start"}, '
    '"ask": {"type": "human", "prompt": "Ship it?"}, "done": {"type": "exit"}, '
    '"stop": {"type": "exit", "status": "aborted"}}, "edges": [{"from": "start", "to": "ask"}, '
    '{"from": "ask", "to": "done", "label": "[Y] Yes"}, '
    '{"from": "ask", "to": "stop", "label": "[N] No"}]}}}}'
)


def test_only_the_users_words_answer_a_human_node(tmp_path: Path):
    lib = tmp_path / "approve.json"
    lib.write_text(APPROVE)
    out = wg(
        "play", "approve", "--library", str(lib), stdin="Yes\n:say Yes\n:user maybe\n:user y\n"
    )
    assert out.returncode == 0, out.stderr
    # The tool's "Yes" and the model's "Yes" move nothing; the user's "maybe" is
    # refused with the choices, the user's "y" picks "[Y] Yes".
    assert "'maybe' is not one of the choices: answer '[Y] Yes' or '[N] No'" in out.stdout
    assert "Plan completed at done" in out.stdout
    assert out.stdout.index("'maybe' is not one") < out.stdout.index("Plan completed")


def test_a_malformed_exit_line_sends_nothing(tmp_path: Path):
    lib = tmp_path / "hello.json"
    lib.write_text(HELLO)
    out = wg("play", "hello", "--library", str(lib), stdin=":exit x\nhello\n")
    assert out.returncode == 0, out.stderr
    assert "usage: :exit N output text (nothing was sent to the plan)" in out.stdout
    # The plan saw only "hello": no empty result failed the step first.
    assert "Verification failed" not in out.stdout and "Plan completed at done" in out.stdout


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
    # Starting over says what became of the run left in progress.
    anew = wg("play", "bugfix_workflow", "--store", store, stdin=":quit\n")
    assert "left in progress in session 'play' was aborted (--resume" in anew.stdout


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


#: System call numbers of a process waiting for input (read, poll, select, pselect6, ppoll).
_READ_WAITS = {
    "x86_64": {"0", "7", "23", "270", "271"},
    "aarch64": {"63", "72", "73"},
}


class Terminal:
    """``waygraph play bugfix_workflow`` on a pseudo-terminal, as a person at a keyboard sees it."""

    def __init__(self) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "waygraph", "play", "bugfix_workflow", "--store", "memory://"],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env={**os.environ, "TERM": "xterm", "COLUMNS": "120"},
            close_fds=True,
            # Its own session with the pty as controlling terminal, so Ctrl-C is SIGINT.
            start_new_session=True,
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
        )
        os.close(slave)
        self.text = ""

    def wait_for(self, done) -> None:
        # A guard against a hung child, not a speed check.
        end = time.monotonic() + 60
        while not done(self.text):
            left = end - time.monotonic()
            ready, _, _ = select.select([self.master], [], [], max(0.0, left))
            assert ready, f"the terminal went quiet; it showed {self.text[-800:]!r}"
            try:
                chunk = os.read(self.master, 4096)
            except OSError:  # the child closed the terminal
                break
            self.text += chunk.decode("utf-8", "replace")

    def type_at_prompt(self, n: int, keys: bytes) -> None:
        """Type ``keys`` once the ``n``-th prompt is shown and play waits for a key."""
        self.wait_for(lambda text: text.count("tool output> ") >= n)
        self.wait_until_reading()
        os.write(self.master, keys)

    def wait_until_reading(self) -> None:
        """Wait until play sleeps waiting for the terminal, as it does when a person types.

        readline shows the prompt before it waits; a Ctrl-C between the two is
        only noticed at the next key (CPython's readline loop), a window no
        hand can hit but a test under load can.
        """
        waits = _READ_WAITS.get(platform.machine())
        path = Path(f"/proc/{self.proc.pid}/syscall")
        if waits is None or not path.exists():
            return
        end = time.monotonic() + 60
        while time.monotonic() < end:
            try:
                number = path.read_text().split()[0]
            except (OSError, IndexError):
                return  # not readable here: type at once, as before
            if number in waits:
                return
            time.sleep(0.01)

    def wait_for_a_command(self) -> None:
        """Wait until play runs a shell command (a child process of its own)."""
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        end = time.monotonic() + 60
        while not children.read_text().split():
            assert time.monotonic() < end, "play never started the command"
            time.sleep(0.05)

    def farewell(self) -> str:
        """Everything shown, once play has said how it left the run."""
        self.wait_for(lambda text: "left in progress" in text)
        return self.text

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)
        os.close(self.master)


@pytest.fixture
def term() -> Iterator[Terminal]:
    terminal = Terminal()
    yield terminal
    terminal.kill()


def test_up_arrow_recalls_the_last_line_on_a_terminal(term: Terminal):
    term.type_at_prompt(1, b":state\r")
    term.type_at_prompt(2, b"\x1b[A\r")  # up arrow, Enter: the same :state again
    term.type_at_prompt(3, b":quit\r")
    text = term.farewell()
    assert text.count('"current_node": "reproduce"') == 2
    # The arrow never reached the plan as a tool output.
    assert "^[[A" not in text and "Verification" not in text


def test_ctrl_c_at_the_prompt_leaves_like_quit(term: Terminal):
    term.type_at_prompt(1, b"\x03")
    text = term.farewell()
    assert "Traceback" not in text and "KeyboardInterrupt" not in text
    assert "left in progress at reproduce" in text


def test_ctrl_c_stops_a_command_and_sends_nothing(term: Terminal):
    term.type_at_prompt(1, b"!sleep 30\r")
    term.wait_for_a_command()
    os.write(term.master, b"\x03")
    term.type_at_prompt(2, b":quit\r")
    text = term.farewell()
    assert "Interrupted; nothing was sent to the plan." in text
    assert "Traceback" not in text and "Verification" not in text
