"""Command gates: checks waygraph runs itself, in the driver, never in the engine.

A ``command`` verification (``{"type": "command", "run": "pytest -q"}``) is
run here, in the workspace, with a time limit; its output and exit code become
``host`` evidence that the gate's ``expect`` judges. Nothing runs unless the
user allowed commands (``Navigator(allow_commands=True)``, ``--allow-commands``):
a plan file is data, and running what it says is the user's decision.

A command that cannot start, times out or prints without end still gives an
answer: exit code 127 (cannot start) or 124 (timed out) with the reason in the
output, the output kept to its first and last :data:`KEEP_CHARS` characters,
and the command's whole tree killed (:mod:`waygraph.runner`).

Example:
    >>> obs = run_command("echo hello", timeout=10)
    >>> obs.exit_code, obs.output.strip(), obs.source
    (0, 'hello', 'host')
"""

from __future__ import annotations

import os

from waygraph import runner
from waygraph.verify import MAX_VERIFIED_CHARS, Observation

__all__ = ["KEEP_CHARS", "run_command"]

#: Characters kept from each end of a gate's output (what verification reads).
KEEP_CHARS = MAX_VERIFIED_CHARS
#: Exit codes for a gate that did not finish by itself (the shell's conventions).
EXIT_TIMEOUT = runner.EXIT_TIMEOUT
EXIT_CANNOT_START = runner.EXIT_CANNOT_START


def run_command(
    command: str, *, cwd: str | os.PathLike[str] | None = None, timeout: float = 60.0
) -> Observation:
    """Run ``command`` with the shell in ``cwd``: its output and exit code as host evidence."""
    # The one runner: bounded output, and the command's whole tree (detached
    # children included) killed at the timeout, on Ctrl-C and when it ends.
    result = runner.run(command, cwd=cwd, timeout=timeout, keep=KEEP_CHARS)
    output = result.output
    if result.timed_out:
        output += f"\n[waygraph: `{command}` timed out after {timeout:g}s and was killed]"
    return Observation(
        output=output, exit_code=result.exit_code, source="host", call=command, command=command
    )
