"""Command gates: checks waygraph runs itself, in the driver, never in the engine.

A ``command`` verification (``{"type": "command", "run": "pytest -q"}``) is
run here, in the workspace, with a time limit; its output and exit code become
``host`` evidence that the gate's ``expect`` judges. Nothing runs unless the
user allowed commands (``Navigator(allow_commands=True)``, ``--allow-commands``):
a plan file is data, and running what it says is the user's decision.

A command that cannot start, times out or prints without end still gives an
answer: exit code 127 (cannot start) or 124 (timed out) with the reason in the
output, the output kept to its first and last :data:`KEEP_CHARS` characters,
and the command's whole tree killed (:mod:`waygraph.sandbox.runner`).

Gates run in a bounded pool of their own: at most :data:`MAX_GATES` at once in
a process (:data:`SLOTS`). A gate that finds every slot taken waits up to
:data:`SLOT_WAIT` seconds; if none frees up it does not run, and its verdict is
*unknown* with that reason (never a fail: nothing was checked), so the agent
reports again. A server's request threads are never spent on the wait (see
``docs/server.md``, "Blocking work").

Example:
    >>> obs = run_command("echo hello", timeout=10)
    >>> obs.exit_code, obs.output.strip(), obs.source
    (0, 'hello', 'host')
"""

from __future__ import annotations

import os
import threading
from typing import Any

from waygraph.sandbox import runner
from waygraph.verify import MAX_VERIFIED_CHARS, Observation

__all__ = [
    "KEEP_CHARS",
    "MAX_GATES",
    "SLOTS",
    "SLOT_WAIT",
    "UNAVAILABLE",
    "GateSlots",
    "run_command",
]

#: Characters kept from each end of a gate's output (what verification reads).
KEEP_CHARS = MAX_VERIFIED_CHARS
#: Exit codes for a gate that did not finish by itself (the shell's conventions).
EXIT_TIMEOUT = runner.EXIT_TIMEOUT
EXIT_CANNOT_START = runner.EXIT_CANNOT_START
#: Command gates that run at once in one process; more wait for a slot.
MAX_GATES = 8
#: Seconds a gate waits for a free slot before it gives up (verdict unknown).
SLOT_WAIT = 10.0
#: The key of an observation's ``data`` that says the gate never ran, and why.
UNAVAILABLE = "unavailable"


class GateSlots:
    """A bounded pool of command-gate slots, shared by every thread of a process.

    Example:
        >>> slots = GateSlots(1, wait=0.0)
        >>> with slots.slot() as got:
        ...     with slots.slot() as second:
        ...         got, second
        (True, False)
    """

    def __init__(self, size: int = MAX_GATES, *, wait: float = SLOT_WAIT) -> None:
        if size < 1:
            raise ValueError(f"a gate pool needs at least one slot (got {size})")
        self.size = size
        self.wait = wait
        self._free = threading.BoundedSemaphore(size)
        self._lock = threading.Lock()
        self._running = 0

    @property
    def running(self) -> int:
        """Gates holding a slot now."""
        return self._running

    def slot(self) -> _Slot:
        """A context manager that holds a slot; it yields False when none freed up in time."""
        return _Slot(self)


class _Slot:
    def __init__(self, slots: GateSlots) -> None:
        self._slots = slots
        self._held = False

    def __enter__(self) -> bool:
        slots = self._slots
        self._held = slots._free.acquire(timeout=max(0.0, slots.wait))
        if self._held:
            with slots._lock:
                slots._running += 1
        return self._held

    def __exit__(self, *exc: object) -> None:
        if self._held:
            with self._slots._lock:
                self._slots._running -= 1
            self._slots._free.release()
            self._held = False


#: The process's gate pool (:func:`run_command` uses it unless given another).
SLOTS = GateSlots()


def run_command(
    command: str,
    *,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = 60.0,
    slots: GateSlots | None = None,
) -> Observation:
    """Run ``command`` with the shell in ``cwd``: its output and exit code as host evidence.

    It first takes a slot of ``slots`` (default :data:`SLOTS`); when none
    frees up within the pool's wait the command is not run, and the
    observation has no exit code and ``data={"unavailable": reason}``, which
    makes the gate's verdict unknown.
    """
    pool = SLOTS if slots is None else slots
    with pool.slot() as got:
        if not got:
            return _not_run(command, pool)
        # The one runner: bounded output, and the command's whole tree (detached
        # children included) killed at the timeout, on Ctrl-C and when it ends.
        result = runner.run(command, cwd=cwd, timeout=timeout, keep=KEEP_CHARS)
    output = result.output
    if result.timed_out:
        output += f"\n[waygraph: `{command}` timed out after {timeout:g}s and was killed]"
    return Observation(
        output=output, exit_code=result.exit_code, source="host", call=command, command=command
    )


def _not_run(command: str, pool: GateSlots) -> Observation:
    reason = (
        f"the check `{command}` was not run: all {pool.size} command-gate slots stayed busy "
        f"for {pool.wait:g} s; report the result again to have it checked"
    )
    data: dict[str, Any] = {UNAVAILABLE: reason}
    return Observation(
        output=f"[waygraph: {reason}]",
        exit_code=None,
        source="host",
        call=command,
        command=command,
        data=data,
    )
