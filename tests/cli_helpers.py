"""``waygraph`` run in the test's own process: what a subprocess would return, sooner.

A subprocess pays Python's start-up and waygraph's imports again (about half a
second of CPU each, ~200 of them in the suite). Tests of what a command does run it
here; the tests of the entry point itself (tests/test_cli_run.py, test_cli_markup.py,
test_cli_startup.py and others) keep real subprocesses.
"""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path

from typer.testing import CliRunner


def wg(
    *args: str,
    stdin: str | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``waygraph ARGS`` in this process, 200 columns wide, without OPENAI_BASE_URL.

    An exception the command does not handle is raised here: run for real it
    would be a traceback, which no test may take for an answer.

    Example::

        out = wg("sessions", "list", "--store", "memory://", "--json")
        assert out.returncode == 0
    """
    from waygraph.cli import app

    environ: dict[str, str | None] = {"COLUMNS": "200", "OPENAI_BASE_URL": None, **(env or {})}
    where = contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext()
    with where:
        result = CliRunner().invoke(app, list(args), input=stdin, env=environ, prog_name="waygraph")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return subprocess.CompletedProcess(
        ["waygraph", *args], result.exit_code, result.stdout, result.stderr
    )
