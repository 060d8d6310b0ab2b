"""`waygraph check` for event-driven state machines and generated plans.

Every code is reported on a bad input and not on its fix, all problems at
once (the runtime validator raises the first of the same), in the CLI too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from waygraph.check import CODES, check_generated_plan, check_state_machine
from waygraph.cli import app
from waygraph.errors import StateMachineError
from waygraph.events.statemachine import validate_state_machine

END = {"state_name": "end", "is_terminal": True}


def machine(**states: dict[str, Any]) -> dict[str, Any]:
    """A valid two-state machine (start -> end), with ``states`` added or replaced."""
    base = {"start": {"state_name": "start", "default_next": "end"}, "end": END}
    base.update(states)
    return {k: v for k, v in base.items() if v is not None}


STATE_CASES = [
    pytest.param("empty-state-machine", {}, id="empty-state-machine"),
    pytest.param("bad-state", machine(start={"state_name": 3}), id="bad-state"),
    pytest.param(
        "state-name-mismatch",
        machine(start={"state_name": "begin", "default_next": "end"}),
        id="state-name-mismatch",
    ),
    pytest.param(
        "unknown-state", machine(start={"state_name": "start", "default_next": "ned"}), id="unknown"
    ),
    pytest.param(
        "terminal-state-moves",
        machine(end={**END, "default_next": "start"}),
        id="terminal-state-moves",
    ),
    pytest.param(
        "state-without-exit",
        machine(
            start={"state_name": "start", "default_next": "stuck"},
            stuck={"state_name": "stuck"},
        ),
        id="state-without-exit",
    ),
    pytest.param(
        "default-next-hides-transitions",
        machine(
            start={
                "state_name": "start",
                "default_next": "end",
                "transitions": [{"on_event": "x.done", "to_state": "end"}],
            }
        ),
        id="default-next-hides-transitions",
    ),
    pytest.param(
        "no-terminal-state",
        {"start": {"state_name": "start", "default_next": "start"}},
        id="no-terminal-state",
    ),
    pytest.param(
        "idle-loop",
        machine(
            start={"state_name": "start", "default_next": "a"},
            a={"state_name": "a", "default_next": "b"},
            b={"state_name": "b", "default_next": "a"},
        ),
        id="idle-loop",
    ),
    pytest.param(
        "unreachable-state",
        machine(lost={"state_name": "lost", "default_next": "end"}),
        id="unreachable-state",
    ),
]

STEP = {"action": "t", "parameters": {}, "dependencies": []}
PLAN_CASES = [
    pytest.param("not-object", ["a list"], id="not-object"),
    pytest.param("missing-goal", {"steps": [{"id": "a", **STEP}]}, id="missing-goal"),
    pytest.param("missing-steps", {"goal": "g"}, id="missing-steps"),
    pytest.param(
        "missing-field", {"goal": "g", "steps": [{"id": "a", "parameters": {}}]}, id="missing"
    ),
    pytest.param(
        "bad-field",
        {"goal": "g", "steps": [{"id": "a", "action": "t", "parameters": "x"}]},
        id="bad-field",
    ),
    pytest.param("empty-plan", {"goal": "g", "steps": []}, id="empty-plan"),
    pytest.param(
        "duplicate-step",
        {"goal": "g", "steps": [{"id": "a", **STEP}, {"id": "a", **STEP}]},
        id="duplicate-step",
    ),
    pytest.param(
        "unknown-dependency",
        {"goal": "g", "steps": [{"id": "a", **STEP, "dependencies": ["z"]}]},
        id="unknown-dependency",
    ),
    pytest.param(
        "cycle",
        {
            "goal": "g",
            "steps": [
                {"id": "a", **STEP, "dependencies": ["b"]},
                {"id": "b", **STEP, "dependencies": ["a"]},
            ],
        },
        id="cycle",
    ),
]
#: Every code these tests cover (tests/test_check_codes.py counts them as covered).
COVERED = {case.values[0] for case in STATE_CASES + PLAN_CASES}


@pytest.mark.parametrize(("code", "states"), STATE_CASES)
def test_each_state_machine_code(code: str, states: Any):
    found = check_state_machine(states, name="m")
    assert code in {p.code for p in found}, [str(p) for p in found]
    assert all(p.level == CODES[p.code][0] == "error" for p in found)
    with pytest.raises(StateMachineError):
        validate_state_machine(states, name="m")
    assert check_state_machine(machine(), name="m") == []


@pytest.mark.parametrize(("code", "data"), PLAN_CASES)
def test_each_generated_plan_code(code: str, data: Any):
    found = check_generated_plan(data)
    assert code in {p.code for p in found}, [str(p) for p in found]
    assert all(p.code in CODES for p in found)
    assert check_generated_plan({"goal": "g", "steps": [{"id": "a", **STEP}]}) == []


def test_every_problem_is_reported_not_only_the_first():
    states = {
        "start": {"state_name": "start", "default_next": "nowhere"},
        "other": {"state_name": "renamed", "default_next": "gone"},
    }
    codes = [p.code for p in check_state_machine(states, name="m")]
    assert codes == ["unknown-state", "state-name-mismatch", "unknown-state", "no-terminal-state"]
    found = check_state_machine(states, name="m")
    assert found[0].node == "start" and found[0].field == "default_next"
    assert "(got 'nowhere')" in found[0].message
    with pytest.raises(StateMachineError, match="unknown target state 'nowhere'"):
        validate_state_machine(states, name="m")


def test_waygraph_check_reads_state_machines_and_generated_plans(tmp_path: Path):
    (tmp_path / "research.json").write_text(
        json.dumps({"state_machine": machine(start={"state_name": "start", "default_next": "x"})})
    )
    (tmp_path / "plan.yaml").write_text(
        "goal: ship it\nsteps:\n  - {id: a, action: t, parameters: {}, dependencies: [b]}\n"
    )
    (tmp_path / "ok.json").write_text(json.dumps(machine()))
    result = CliRunner().invoke(app, ["check", str(tmp_path), "--json"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    codes = sorted(p["code"] for p in report["problems"])
    assert codes == ["unknown-dependency", "unknown-state"]
    assert report["plans"] == 3
    by_code = {p["code"]: p for p in report["problems"]}
    assert by_code["unknown-state"]["node"] == "start"
    assert by_code["unknown-state"]["file"].endswith("research.json")


def test_waygraph_draw_draws_state_machines_and_generated_plans(tmp_path: Path):
    sm = tmp_path / "research.json"
    sm.write_text(json.dumps({"state_machine": machine()}))
    result = CliRunner().invoke(app, ["draw", str(sm), "--format", "mermaid"])
    assert result.exit_code == 0, result.output
    assert "start" in result.output and "end" in result.output
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "goal: ship it\nsteps:\n"
        "  - {id: build, action: make, parameters: {}}\n"
        "  - {id: upload, action: scp, parameters: {}, dependencies: [build]}\n"
    )
    svg = CliRunner().invoke(app, ["draw", str(plan), "--format", "svg"])
    assert svg.exit_code == 0, svg.output
    assert 'data-node="build"' in svg.output and 'data-node="upload"' in svg.output
    broken = tmp_path / "broken.json"
    broken.write_text(
        json.dumps({"goal": "g", "steps": [{"id": "a", **STEP, "dependencies": ["a"]}]})
    )
    failed = CliRunner().invoke(app, ["draw", str(broken)])
    assert failed.exit_code == 2 and "cycle" in failed.output and "Traceback" not in failed.output
