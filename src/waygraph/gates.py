"""Command gates: checks waygraph runs itself, in the driver, never in the engine.

A ``command`` verification (``{"type": "command", "run": "pytest -q"}``) is
run here, in the workspace, with a time limit; its output and exit code become
``host`` evidence that the gate's ``expect`` judges. Nothing runs unless the
user allowed commands (``Navigator(allow_commands=True)``, ``--allow-commands``):
a plan file is data, and running what it says is the user's decision.

A command that cannot start, times out or prints without end still gives an
answer: exit code 127 (cannot start) or 124 (timed out) with the reason in the
output, the output kept to its first and last :data:`KEEP_CHARS` characters,
and the command's whole process group killed.

Example:
    >>> obs = run_command("echo hello", timeout=10)
    >>> obs.exit_code, obs.output.strip(), obs.source
    (0, 'hello', 'host')
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections import deque
from pathlib import Path

from waygraph.verify import MAX_VERIFIED_CHARS, Observation

__all__ = ["KEEP_CHARS", "run_command"]

#: Characters kept from each end of a gate's output (what verification reads).
KEEP_CHARS = MAX_VERIFIED_CHARS
#: Exit codes for a gate that did not finish by itself (the shell's conventions).
EXIT_TIMEOUT = 124
EXIT_CANNOT_START = 127
_CHUNK = 65536


def run_command(
    command: str, *, cwd: str | os.PathLike[str] | None = None, timeout: float = 60.0
) -> Observation:
    """Run ``command`` with the shell in ``cwd``: its output and exit code as host evidence."""
    try:
        process = subprocess.Popen(
            command,
            shell=True,
            cwd=Path(cwd) if cwd is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            # Its own process group, so a timeout kills the children too.
            start_new_session=True,
        )
    except OSError as exc:
        return _host(command, f"waygraph could not start the command: {exc}", EXIT_CANNOT_START)
    head = bytearray()
    tail: deque[bytes] = deque()
    tail_size = [0]
    reader = threading.Thread(target=_drain, args=(process, head, tail, tail_size), daemon=True)
    reader.start()
    try:
        code: int = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        reader.join(timeout=5)
        output = _decode(head, tail)
        note = f"\n[waygraph: `{command}` timed out after {timeout:g}s and was killed]"
        return _host(command, output + note, EXIT_TIMEOUT)
    # The shell exited; children it left behind still hold the pipe open.
    reader.join(timeout=5)
    if reader.is_alive():
        _kill_group(process)
        reader.join(timeout=5)
    return _host(command, _decode(head, tail), code)


def _drain(
    process: subprocess.Popen[bytes], head: bytearray, tail: deque[bytes], tail_size: list[int]
) -> None:
    """Read the pipe to its end, keeping only the first and last KEEP_CHARS bytes."""
    assert process.stdout is not None
    with process.stdout:
        while chunk := process.stdout.read(_CHUNK):
            room = KEEP_CHARS - len(head)
            if room > 0:
                head.extend(chunk[:room])
                chunk = chunk[room:]
            if not chunk:
                continue
            tail.append(chunk)
            tail_size[0] += len(chunk)
            while tail_size[0] - len(tail[0]) >= KEEP_CHARS:
                tail_size[0] -= len(tail.popleft())


def _decode(head: bytearray, tail: deque[bytes]) -> str:
    rest = b"".join(tail)
    text = head.decode(errors="replace")
    if not rest:
        return text
    if len(rest) > KEEP_CHARS:
        return f"{text}\n[... output cut ...]\n{rest[-KEEP_CHARS:].decode(errors='replace')}"
    return text + rest.decode(errors="replace")


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)


def _host(command: str, output: str, code: int) -> Observation:
    return Observation(output=output, exit_code=code, source="host", call=command, command=command)
