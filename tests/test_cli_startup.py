"""The ``waygraph`` command starts without importing what only some commands need.

Every test that runs the CLI as a subprocess pays its start-up, and so does a
person typing ``waygraph --help``. These tests guard what start-up imports,
not how long it takes (timings are noisy on a shared machine): the graph
model, the navigator, the planning package, pydantic and asyncio load only
inside the commands that use them.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Modules a light command must not import (each one costs tens of milliseconds).
HEAVY = (
    "asyncio",
    "pydantic",
    "waygraph.model",
    "waygraph.navigator",
    "waygraph.planning",
    "waygraph.store",
    "waygraph.events",
    "urllib.request",
)

# Runs the command in a fresh interpreter, then prints which HEAVY modules it loaded.
PROBE = """
import json, sys
heavy = json.loads(sys.argv[2])
sys.argv = ["waygraph", *json.loads(sys.argv[1])]
from waygraph.cli import main
try:
    main()
except SystemExit:
    pass
sys.stdout.write("\\nLOADED " + json.dumps([m for m in heavy if m in sys.modules]))
"""


def loaded_by(*args: str) -> list[str]:
    """The HEAVY modules ``waygraph ARGS`` imports, run in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(list(args)), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    last = done.stdout.rsplit("\nLOADED ", 1)
    assert len(last) == 2, done.stdout + done.stderr
    loaded: list[str] = json.loads(last[1])
    return loaded


def test_importing_the_cli_loads_no_heavy_module():
    code = (
        "import json, sys; import waygraph, waygraph.cli; "
        f"print(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(done.stdout) == []


@pytest.mark.parametrize("args", [["--help"], ["--version"]], ids=" ".join)
def test_help_and_version_load_no_heavy_module(args: list[str]):
    assert loaded_by(*args) == []


@pytest.mark.parametrize(
    "args", [["plan", "--help"], ["events", "--help"], ["sessions", "--help"]], ids=" ".join
)
def test_a_commands_help_loads_none_of_waygraphs_heavy_modules(args: list[str]):
    # typer itself converts a command's option values with pydantic (typer._adapters),
    # so pydantic loads once a command parses its options; waygraph's own must not.
    assert [m for m in loaded_by(*args) if m != "pydantic"] == []


def test_the_probe_sees_a_command_that_does_load_them():
    # Guards the guard: `show` reads the plan library, which needs the model.
    assert "waygraph.model" in loaded_by("show", "--json")


def test_the_mode_option_offers_exactly_the_planning_modes():
    # --mode is spelled in the CLI so that building it imports no planning code.
    from waygraph.cli.plan_cmds import Mode
    from waygraph.planning import ExecutionMode

    assert [m.value for m in Mode] == [m.value for m in ExecutionMode]
