"""Issue 33, item 1: one command runner that cannot hurt the host.

Each test runs the runner in a child Python process (as ``waygraph plan``
would), attacks it the way the issue reproduced, and checks what the host
sees: its memory, whether anything the command started still writes after
the deadline or after waygraph is killed, and whether the command can read
waygraph's environment.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from waygraph.sandbox import runner
from waygraph.verify.gates import run_command

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the subreaper wrapper is Linux's"
)

#: Runs the runner on argv[1] in the current folder with the timeout argv[2]; prints
#: the exit code, the bytes dropped and this process's peak memory (VmHWM, kB).
CHILD = """
import sys
from waygraph.sandbox import runner
env = {"PATH": "/usr/bin:/bin"}
result = runner.run(sys.argv[1], timeout=float(sys.argv[2]), env=env, keep=100_000)
peak = [l.split()[1] for l in open("/proc/self/status") if l.startswith("VmHWM")][0]
print(result.exit_code, result.dropped, peak)
print(result.output)
"""


def child(command: str, cwd: Path, timeout: float, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, command, str(timeout)],
        cwd=cwd,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        text=True,
    )


def wait_for(path: Path, limit: float = 30.0) -> None:
    deadline = time.monotonic() + limit
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.05)


# What a command leaves behind is found by a marker in its command line, and it
# waits on a FIFO nobody writes: no timer, so the test need not outwait one to
# see that it never wrote. A test waits until no marked process is left (each
# is gone or a zombie), not for a time that a loaded machine could overrun.


@pytest.fixture
def marker(tmp_path: Path) -> str:
    """A name in the command line of every process the test's command starts."""
    os.mkfifo(tmp_path / "never")
    return f"wgtest-{uuid.uuid4().hex}"


def detached(marker: str, redirect: str = "> /dev/null 2>&1") -> str:
    """Starts a process outside the command's process group (setsid, as a daemon
    would), which says it is up, then would write late.txt if it were ever woken."""
    script = "touch up.txt; read x < never; echo late > late.txt"
    return (
        f"(setsid sh -c '{script}' {marker} {redirect} &); until [ -e up.txt ]; do sleep 0.01; done"
    )


def marked(marker: str) -> list[int]:
    """The processes still running whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:  # ended while we looked
            continue
    return found


def all_gone(marker: str, limit: float = 30.0) -> None:
    deadline = time.monotonic() + limit
    while left := marked(marker):
        assert time.monotonic() < deadline, f"still running after {limit} s: {left}"
        time.sleep(0.02)


def test_the_buffer_keeps_head_and_tail_and_counts_the_middle():
    buf = runner.BoundedBuffer(keep=4)
    for chunk in (b"ab", b"cdef", b"ghijklmnop", b"q"):
        buf.add(chunk)
    assert buf.text() == "abcd\n[... 9 bytes dropped ...]\nnopq"
    assert buf.dropped == 9
    short = runner.BoundedBuffer(keep=4)
    short.add(b"abcdefgh")
    assert (short.text(), short.dropped) == ("abcdefgh", 0)


@pytest.mark.timeout(180)
def test_300_mb_of_output_keeps_the_host_under_200_mb(tmp_path: Path):
    process = child("yes 0123456789abcdef | head -c 300000000", tmp_path, 150)
    out, _ = process.communicate(timeout=170)
    code, dropped, peak_kb = out.split("\n", 1)[0].split()
    assert code == "0"
    assert int(dropped) == 300_000_000 - 200_000
    assert int(peak_kb) < 200 * 1024


@pytest.mark.timeout(60)
@pytest.mark.parametrize("redirect", ["", "> /dev/null 2>&1"])
def test_a_detached_child_dies_at_the_deadline(tmp_path: Path, redirect: str, marker: str):
    # With the child holding the pipe (no redirect) reading stops at the deadline too.
    command = f"{detached(marker, redirect)}; read x < never"
    out, _ = child(command, tmp_path, 2).communicate(timeout=50)
    assert out.split()[0] == str(runner.EXIT_TIMEOUT)
    assert (tmp_path / "up.txt").exists()
    all_gone(marker)
    assert not (tmp_path / "late.txt").exists()


@pytest.mark.timeout(60)
def test_what_a_command_leaves_behind_dies_when_it_ends(tmp_path: Path, marker: str):
    command = f"{detached(marker)}; echo done"
    out, _ = child(command, tmp_path, 30).communicate(timeout=50)
    assert out.split()[0] == "0" and "done" in out
    all_gone(marker)
    assert not (tmp_path / "late.txt").exists()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM])
def test_killing_waygraph_kills_its_running_command(tmp_path: Path, how: int, marker: str):
    command = f"{detached(marker)}; touch started.txt; read x < never; echo marker > marker.txt"
    process = child(command, tmp_path, 40)
    wait_for(tmp_path / "started.txt")
    process.send_signal(how)
    process.communicate(timeout=30)
    all_gone(marker)  # the command itself and what it left behind
    assert not (tmp_path / "marker.txt").exists()
    assert not (tmp_path / "late.txt").exists()


SNOOP = r"""
tr '\0' '\n' < /proc/$PPID/environ
up=$(awk '/^PPid/{print $2}' /proc/$PPID/status)
tr '\0' '\n' < /proc/$up/environ; head -c 4096 /proc/$up/mem | tr -dc 'A-Z0-9-'
"""


@pytest.mark.timeout(60)
def test_a_command_cannot_read_waygraphs_environment(tmp_path: Path):
    # Root here: only a user namespace of its own keeps CAP_SYS_PTRACE from the command.
    out, _ = child(SNOOP, tmp_path, 30, OPENAI_API_KEY="sk-SECRET-4471").communicate(timeout=50)
    assert "SECRET-4471" not in out
    assert "Permission denied" in out


def test_bad_commands_are_answered_not_raised(tmp_path: Path):
    assert runner.run("echo a\0b", timeout=5).exit_code == runner.EXIT_CANNOT_START
    missing = runner.run("true", cwd=tmp_path / "missing", timeout=5)
    assert missing.exit_code == runner.EXIT_CANNOT_START and "missing" in missing.output


@pytest.mark.timeout(60)
def test_a_gate_kills_the_command_and_all_its_children(tmp_path: Path, marker: str):
    # docs/guided.md: "the command and all its children are killed", setsid ones too.
    obs = run_command(f"{detached(marker)}; read x < never", cwd=tmp_path, timeout=2)
    assert obs.exit_code == runner.EXIT_TIMEOUT and "timed out" in obs.output
    assert (tmp_path / "up.txt").exists()
    all_gone(marker)
    assert not (tmp_path / "late.txt").exists()


@pytest.mark.timeout(60)
def test_every_other_caller_goes_through_the_runner(tmp_path: Path, marker: str):
    from waygraph.cli.play_cmds import _tool_result
    from waygraph.demo import Workspace
    from waygraph.eval.workspace import run_python

    # play's `!command` held all output; now it is bounded.
    played = _tool_result("!yes 0123456789 | head -c 5000000", tmp_path)
    assert played is not None and "bytes dropped" in played[0] and played[1] == 0
    # The demo's tool and eval's checks leave nothing running behind them.
    assert Workspace(tmp_path).run(f"{detached(marker)}; echo ok").exit_code == 0
    all_gone(marker)
    (tmp_path / "up.txt").unlink()
    code = f"import subprocess; subprocess.run({detached(marker)!r}, shell=True); print('ok')"
    assert run_python(tmp_path, "-c", code) == (True, "ok\n")
    all_gone(marker)
    assert not (tmp_path / "late.txt").exists()


def test_the_demos_commands_get_no_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from waygraph.demo import Workspace

    monkeypatch.setenv("OPENAI_API_KEY", "sk-DEMO-SECRET-9")
    result = Workspace(tmp_path).run("env; echo done")
    assert result.exit_code == 0 and "done" in result.output
    assert "DEMO-SECRET" not in result.output


def test_waygraph_is_as_dumpable_after_its_commands_as_before():
    import ctypes

    libc = ctypes.CDLL(None)
    assert libc.prctl(3, 0, 0, 0, 0) == 1  # PR_GET_DUMPABLE
    assert runner.run("echo hi", timeout=10).exit_code == 0
    assert libc.prctl(3, 0, 0, 0, 0) == 1
    libc.prctl(4, 0, 0, 0, 0)  # a process that was not dumpable stays so
    try:
        assert runner.run("echo hi", timeout=10).exit_code == 0
        assert libc.prctl(3, 0, 0, 0, 0) == 0
    finally:
        libc.prctl(4, 1, 0, 0, 0)
