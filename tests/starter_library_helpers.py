"""Shared helpers of the starter library tests (tests/test_starter_library_*.py): the
shipped library, the established one it must match, real tool output, and a run of a
plan fed one tool result per step as the navigator would.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from waygraph import engine, load_library
from waygraph.model import Plan, Verify
from waygraph.verify import Observation, check

COMPAT_V2 = Path(__file__).parent / "fixtures" / "compat" / "agent-zero-graph-library-v2.json"
ESTABLISHED: dict[str, dict] = json.loads(COMPAT_V2.read_text())["plans"]
LIBRARY = load_library()
PLAN_IDS = list(ESTABLISHED)
SUCCESS = {"on_success", "always"}

# Real test-runner output.
PYTEST_PASS = "..\n2 passed in 0.01s"
PYTEST_FAIL = "F.\nFAILED tests/test_x.py::test_a - assert 1 == 2\n1 failed, 1 passed in 0.02s"

# Real `git status` output.
DIRTY = "On branch main\nChanges not staged for commit:\n\tmodified:   app.py\n"
CLEAN = "On branch main\nnothing to commit, working tree clean\n"


def edges(plan: Plan, source: str, condition: str | None = None) -> list:
    return [
        e for e in plan.graph.out_edges(source) if condition is None or e.condition == condition
    ]


def targets(plan: Plan, source: str, condition: str) -> set[str]:
    return {e.to for e in edges(plan, source, condition) if e.when is None}


#: Commands the bound steps accept (their command_matches): the scenarios
#: drive the plans as a host that reports the command it ran.
RUNNERS = ("python -m pytest -q", "docker build -t app:1 .", "ruff check src")


def command_for(verify: Verify | None) -> str | None:
    """A command ``verify``'s command_matches accepts, or None when it binds none."""
    if verify is None or verify.command_matches is None:
        return None
    pattern = re.compile(verify.command_matches)
    return next(c for c in RUNNERS if pattern.search(c))


def passes(verify: Verify | None, output: str, exit_code: int | None = None) -> bool | None:
    evidence = Observation(output=output, exit_code=exit_code, command=command_for(verify))
    return check(verify, evidence)


def run_plan(plan_id: str, results: list[tuple[str, int | None]]) -> engine.Run:
    """Start ``plan_id`` and feed it one tool result per item, as the navigator would."""
    plan = LIBRARY[plan_id]
    run, _ = engine.start(plan, run_id="r", turn=1)
    for turn, (output, exit_code) in enumerate(results, start=2):
        assert not run.finished, f"{plan_id} finished at {run.current_node} before {output!r}"
        node = plan.graph.nodes[str(run.current_node)]
        command = command_for(node.verify)
        obs = Observation(output=output, exit_code=exit_code, command=command)
        run, _ = engine.observe(plan, run, lambda v, obs=obs: check(v, obs), turn=turn)
    return run
