"""The one command runner: every command waygraph runs goes through :func:`run`.

Command gates, the planning agent's ``shell`` tool, ``waygraph eval``, the
demo's tools and ``waygraph play``'s ``!command`` all run here, so they share
the same guarantees:

- **Bounded output.** Output is read through a :class:`BoundedBuffer`: the
  first and last ``keep`` bytes are kept, the middle is dropped and counted
  (``[... N bytes dropped ...]``), so memory does not grow with output.
- **Nothing outlives its deadline.** On Linux the command runs under a small
  wrapper process (:mod:`waygraph.sandbox._reaper`) that is a child subreaper
  (``PR_SET_CHILD_SUBREAPER``): every process the command starts, detached
  (``setsid``) ones included, stays its descendant. At the deadline, when
  ``stop`` is set, on Ctrl-C, when the command itself ends, and when waygraph
  dies (``PR_SET_PDEATHSIG``), the wrapper kills every descendant it has and
  reaps them before it exits. waygraph stops reading at the deadline even
  when a child still holds the pipe.
- **waygraph is not readable by its commands.** The wrapper is started with
  the caller's (scrubbed) environment and is not dumpable; while commands run,
  waygraph itself is not dumpable either, and the command runs in a user
  namespace of its own where the kernel allows one, so even a root command
  lacks the capability to read ``/proc/<waygraph>/environ`` or ``mem``.

Elsewhere (macOS, BSD) the command runs in a session of its own and its
process group is killed; docs/reliability.md lists what each platform gets.

Example:
    >>> result = run("echo hello", timeout=10)
    >>> result.exit_code, result.output.strip()
    (0, 'hello')
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from waygraph.sandbox import _reaper

__all__ = [
    "EXIT_CANNOT_START",
    "EXIT_STOPPED",
    "EXIT_TIMEOUT",
    "BoundedBuffer",
    "CommandResult",
    "run",
]

#: Exit codes for a command that did not finish by itself (the shell's conventions).
EXIT_TIMEOUT = 124
EXIT_CANNOT_START = _reaper.EXIT_CANNOT_START
EXIT_STOPPED = _reaper.EXIT_STOPPED
#: Seconds between looks at a ``stop`` event while a command runs.
STOP_POLL = 0.1
#: Seconds the wrapper gets to kill and reap the tree before it is killed itself.
REAP_GRACE = 10.0
_CHUNK = 65536
_LINUX = sys.platform.startswith("linux")


class BoundedBuffer:
    """The first and last ``keep`` bytes of a stream, and how many bytes fell between.

    Example:
        >>> buf = BoundedBuffer(keep=3)
        >>> buf.add(b"abcdefghij")
        >>> buf.text(), buf.dropped
        ('abc\\n[... 4 bytes dropped ...]\\nhij', 4)
    """

    def __init__(self, keep: int) -> None:
        self.keep = max(keep, 0)
        self.head = bytearray()
        self._tail: deque[bytes] = deque()
        self._tail_size = 0
        #: Bytes read and thrown away (never more than ``keep`` are held in the tail).
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        """Take ``chunk``: fill the head, then the tail, dropping the tail's oldest bytes."""
        room = self.keep - len(self.head)
        if room > 0:
            self.head.extend(chunk[:room])
            chunk = chunk[room:]
        if not chunk:
            return
        self._tail.append(chunk)
        self._tail_size += len(chunk)
        # Whole chunks first, then a cut of the oldest, so the tail never holds more than keep.
        while self._tail_size - len(self._tail[0]) >= self.keep:
            self._drop(len(self._tail.popleft()))
        excess = self._tail_size - self.keep
        if excess > 0:
            self._tail[0] = self._tail[0][excess:]
            self._drop(excess)

    def _drop(self, size: int) -> None:
        self._tail_size -= size
        self.dropped += size

    def text(self) -> str:
        """Head and tail as text (bad bytes replaced), the dropped middle marked and counted."""
        head = self.head.decode(errors="replace")
        tail = b"".join(self._tail).decode(errors="replace")
        if self.dropped:
            return f"{head}\n[... {self.dropped} bytes dropped ...]\n{tail}"
        return head + tail


@dataclass(frozen=True)
class CommandResult:
    """How a command ended: its bounded ``output`` (stdout and stderr in the order
    written), its ``exit_code`` (124 timed out, 130 stopped, 127 could not start),
    and whether it ``timed_out`` or was ``stopped``."""

    output: str
    exit_code: int
    timed_out: bool = False
    stopped: bool = False
    dropped: int = 0


def run(
    command: str | Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 60.0,
    stop: threading.Event | None = None,
    keep: int = 4000,
) -> CommandResult:
    """Run ``command`` (a shell line, or an argv) and return its :class:`CommandResult`.

    ``env`` is the whole environment the command gets (None: this process's);
    ``keep`` bytes of output are kept from each end. Ctrl-C (KeyboardInterrupt)
    kills the command's whole tree before it is raised on.

    Example:
        >>> run("echo 0123456789", keep=3, timeout=10).output
        '012\\n[... 5 bytes dropped ...]\\n89\\n'
    """
    argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
    wrapped = _LINUX and os.path.exists(f"/proc/{os.getpid()}/stat")
    if wrapped:
        # -I -S: the wrapper imports nothing from the workspace, or the site.
        prefix = [sys.executable, "-I", "-S", os.path.abspath(_reaper.__file__)]
        argv = [*prefix, "--parent", str(os.getpid()), "--", *argv]
    buffer = BoundedBuffer(keep)
    with _undumpable():
        try:
            process = subprocess.Popen(
                argv,
                cwd=cwd,
                env=dict(env) if env is not None else None,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                # Its own session: a terminal's Ctrl-C reaches waygraph, which then
                # ends the tree itself, and killpg reaches all of it elsewhere.
                start_new_session=True,
            )
        except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the command
            return CommandResult(f"waygraph could not start the command: {exc}", EXIT_CANNOT_START)
        try:
            ended = _read(process, buffer, time.monotonic() + timeout, stop)
        except BaseException:
            _end(process, wrapped)
            raise
        if ended != "exit":
            _end(process, wrapped)
            code = EXIT_TIMEOUT if ended == "timeout" else EXIT_STOPPED
            return CommandResult(
                buffer.text(), code, ended == "timeout", ended == "stop", buffer.dropped
            )
    return CommandResult(buffer.text(), process.returncode, dropped=buffer.dropped)


def _read(
    process: subprocess.Popen[bytes],
    buffer: BoundedBuffer,
    deadline: float,
    stop: threading.Event | None,
) -> str:
    """Read until the pipe closes and the process exits ("exit"), the deadline, or stop."""
    assert process.stdout is not None
    fd = process.stdout.fileno()
    with selectors.DefaultSelector() as selector, process.stdout:
        selector.register(fd, selectors.EVENT_READ)
        open_pipe = True
        while True:
            if stop is not None and stop.is_set():
                return "stop"
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            wait = left if stop is None else min(left, STOP_POLL)
            if not open_pipe:
                # The pipe closed: the tree is gone or going; wait for the wrapper.
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=wait)
                    return "exit"
                continue
            if selector.select(wait):
                chunk = os.read(fd, _CHUNK)
                if chunk:
                    buffer.add(chunk)
                else:
                    open_pipe = False


def _end(process: subprocess.Popen[bytes], wrapped: bool) -> None:
    """End the command's tree: ask the wrapper (it kills and reaps all), then force."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if wrapped:
            process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=REAP_GRACE)
                return
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=REAP_GRACE)


_dumpable_lock = threading.Lock()
_running = 0
_was_dumpable = 1
_PR_GET_DUMPABLE = 3


@contextlib.contextmanager
def _undumpable() -> Iterator[None]:
    """This process not dumpable while any command runs: its /proc files (environ, mem)
    are then closed to other processes of its user that lack CAP_SYS_PTRACE. Afterwards
    it is as dumpable as it was (a process that was not stays not)."""
    global _running, _was_dumpable
    libc = _libc()
    with _dumpable_lock:
        _running += 1
        if _running == 1 and libc is not None:
            _was_dumpable = libc.prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0)
            libc.prctl(_reaper.PR_SET_DUMPABLE, 0, 0, 0, 0)
    try:
        yield
    finally:
        with _dumpable_lock:
            _running -= 1
            if _running == 0 and libc is not None and _was_dumpable == 1:
                libc.prctl(_reaper.PR_SET_DUMPABLE, 1, 0, 0, 0)


def _libc() -> ctypes.CDLL | None:
    if not _LINUX:
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:  # pragma: no cover - a Linux without a C library to call
        return None
