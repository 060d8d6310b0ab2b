"""Issue 33, item 6: ``waygraph planner`` and ``worker`` wait for their services at start.

They used to exit with code 2 at once when NATS or PostgreSQL was not up
yet. Now they try again on a bounded schedule (``--wait SECONDS``, default
60), say so on a line per try, start as soon as the service answers, and
after the wait give up with one line and exit code 2.
"""

from __future__ import annotations

import os
import selectors
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_events_nats import PrivateNatsServer
from waygraph.cli import event_cmds
from waygraph.events import startup
from waygraph.events.startup import retry_delays

WORKER_MODULE = """
from waygraph.events import Worker

worker = Worker("echo")


@worker.on_task("echo.requested")
async def echo(task, context):
    return {"echo": task.data}
"""

PLANNER_MODULE = """
from waygraph.events import Planner

planner = Planner("p")


@planner.on_goal("x.goal")
async def start(goal, context):
    pass
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def waygraph(*args: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "waygraph", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env={**os.environ, "WAYGRAPH_DATABASE_URL": "memory://"},
    )


#: Text read from a process's stderr after the line a read_until call wanted.
_LEFT: dict[int, str] = {}


def read_until(process: subprocess.Popen[str], wanted: str, timeout: float = 60.0) -> list[str]:
    """The stderr lines of ``process`` up to the first one containing ``wanted``.

    Reads the pipe's file descriptor itself: ``readline`` on the text stream
    would take several lines into its buffer at once, and ``select`` on the
    descriptor would then wait for lines already read (the worker's last two
    lines often arrive together).
    """
    assert process.stderr is not None
    fd = process.stderr.fileno()
    lines: list[str] = []
    pending = _LEFT.pop(process.pid, "")
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        while True:
            while "\n" in pending:
                line, pending = pending.split("\n", 1)
                lines.append(line)
                if wanted in line:
                    _LEFT[process.pid] = pending
                    return lines
            if time.monotonic() >= deadline:
                break
            if not selector.select(timeout=0.5):
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            pending += chunk.decode("utf-8", errors="replace")
    raise AssertionError(f"no line with {wanted!r}; got {lines + ([pending] if pending else [])}")


# ------------------------------------------------------------------ schedule


def test_the_pauses_double_up_to_five_seconds_and_add_up_to_the_wait() -> None:
    pauses = list(retry_delays(60.0))
    assert pauses[:6] == [0.25, 0.5, 1.0, 2.0, 4.0, 5.0]
    assert max(pauses) == 5.0
    assert sum(pauses) == pytest.approx(60.0)
    assert list(retry_delays(0)) == []  # --wait 0: one try, as before
    assert sum(retry_delays(0.1)) == pytest.approx(0.1)


def test_the_cli_default_is_the_documented_one() -> None:
    assert event_cmds.DEFAULT_WAIT == startup.DEFAULT_WAIT == 60.0
    assert "--wait SECONDS" in (Path(__file__).parent.parent / "docs" / "cli.md").read_text(
        encoding="utf-8"
    )


# ------------------------------------------------------------ giving up


def test_a_worker_without_nats_tries_again_then_gives_up_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "echo_worker.py").write_text(WORKER_MODULE)
    url = f"nats://127.0.0.1:{free_port()}"  # nothing listens there
    result = subprocess.run(
        [sys.executable, "-m", "waygraph", "worker", "echo_worker.py", "--bus", url, "--wait", "2"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    tries = [line for line in lines if line.startswith(f"worker: waiting for the bus at {url}")]
    assert len(tries) >= 2 and all("trying again in" in line for line in tries)
    assert lines[-1].startswith(f"error: cannot connect to NATS at {url}")
    assert "gave up after" in lines[-1] and "(--wait)" in lines[-1]
    assert len(lines) == len(tries) + 1


def test_wait_zero_tries_once(tmp_path: Path) -> None:
    (tmp_path / "echo_worker.py").write_text(WORKER_MODULE)
    url = f"nats://127.0.0.1:{free_port()}"
    result = subprocess.run(
        [sys.executable, "-m", "waygraph", "worker", "echo_worker.py", "--bus", url, "--wait", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"error: cannot connect to NATS at {url}")


def test_a_planner_without_postgresql_tries_again_then_gives_up(tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    (tmp_path / "p.py").write_text(PLANNER_MODULE)
    store = f"postgresql://postgres@127.0.0.1:{free_port()}/nothing"
    result = subprocess.run(
        [
            sys.executable,
            *"-m waygraph planner p.py --bus memory:// --wait 1.5".split(),
            "--store",
            store,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert all(line.startswith("planner: waiting for the store at ") for line in lines[:-1])
    assert len(lines) >= 3
    assert lines[-1].startswith("error: ") and "Connection refused" in lines[-1]
    assert "gave up after" in lines[-1]


def test_a_broken_module_is_refused_before_any_waiting(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("x = 1\n")
    url = f"nats://127.0.0.1:{free_port()}"
    result = subprocess.run(
        [sys.executable, "-m", "waygraph", "worker", "broken.py", "--bus", url, "--wait", "600"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert "defines no Worker" in line


# ------------------------------------------------------------ coming up


def test_a_worker_started_before_nats_runs_once_nats_is_up(tmp_path: Path) -> None:
    (tmp_path / "echo_worker.py").write_text(WORKER_MODULE)
    server = PrivateNatsServer(tmp_path / "nats")
    worker = waygraph(
        "worker", "echo_worker.py", "--bus", server.url, "--wait", "120", cwd=tmp_path
    )
    try:
        waiting = read_until(worker, "waiting for the bus")
        assert worker.poll() is None
        server.start()
        lines = read_until(worker, "running; Ctrl-C to stop")
        assert any(line == f"worker: the bus at {server.url} is up" for line in lines)
        assert "Traceback" not in "\n".join(waiting + lines)
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(30) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)
        server.stop(signal.SIGKILL)


def test_ctrl_c_while_waiting_stops_at_once(tmp_path: Path) -> None:
    (tmp_path / "echo_worker.py").write_text(WORKER_MODULE)
    url = f"nats://127.0.0.1:{free_port()}"
    worker = waygraph("worker", "echo_worker.py", "--bus", url, "--wait", "600", cwd=tmp_path)
    try:
        read_until(worker, "waiting for the bus")
        worker.send_signal(signal.SIGINT)
        # Not after the 600 s wait: the signal ends the wait (the bound is generous).
        assert worker.wait(30) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)
