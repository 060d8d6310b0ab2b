"""Document 004's success criteria in the eval's planned mode.

Plan validity, step atomicity, revision effectiveness, completion and
dependency accuracy are recorded per planned run, summed per mode, and
shown in the report for the planned mode only (``—`` for the others).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from rich.console import Console

from waygraph.eval.metrics import Share, plan_criteria, summarize_modes
from waygraph.eval.report import render_html, terminal_table
from waygraph.eval.runner import EvalConfig, Record, run_eval
from waygraph.eval.scripted import ScriptedModel
from waygraph.eval.suite import select_tasks
from waygraph.planning import Plan
from waygraph.testing import ScriptedChatServer

pytestmark = [pytest.mark.timeout(120), pytest.mark.xdist_group("eval_models")]


def shell(step_id: str, command: str, deps: list[str]) -> dict[str, Any]:
    return {
        "id": step_id,
        "action": "shell",
        "parameters": {"command": command},
        "dependencies": deps,
    }


def write(step_id: str, path: str, deps: list[str]) -> dict[str, Any]:
    return {
        "id": step_id,
        "action": "write_file",
        "parameters": {"path": path, "content": "x"},
        "dependencies": deps,
    }


# ---------------------------------------------------------------- one plan


def test_a_step_joining_commands_is_not_atomic_a_pipeline_is() -> None:
    plan = Plan(
        goal="g",
        steps=[
            shell("a", "grep -n error app.log | tail -n 5", []),
            shell("b", "cd src && pytest", []),
            shell("c", "python -c 'import a; a.run()'", []),  # the ; is quoted
            shell("d", "make\npytest", []),
            write("e", "x.py", []),
        ],
    )
    assert plan_criteria(plan)["atomic_steps"] == 3  # a, c, e


def test_dependencies_must_order_writes_and_the_commands_that_may_read_them() -> None:
    plan = Plan(
        goal="g",
        steps=[
            write("fix", "app.py", []),
            shell("test", "pytest", []),  # may read app.py: must follow fix
            shell("lint", "ruff check", ["fix"]),  # sufficient
            write("again", "app.py", ["test"]),  # lacks fix (same path) and lint (a reader)
            shell("show", "cat $lint", ["lint", "again"]),  # the reference is listed
        ],
    )
    found = plan_criteria(plan)
    assert found == {"plan_steps": 5, "atomic_steps": 5, "dependency_sufficient_steps": 3}


def test_a_chain_is_sufficient_and_no_plan_measures_nothing() -> None:
    plan = Plan(
        goal="g",
        steps=[shell("a", "ls", []), write("b", "f", ["a"]), shell("c", "pytest", ["b"])],
    )
    assert plan_criteria(plan)["dependency_sufficient_steps"] == 3
    assert plan_criteria(None) == {}


# ---------------------------------------------------------------- summaries and report


def planned(repeat: int, **fields: Any) -> Record:
    values: dict[str, Any] = {
        "success": True,
        "completed": True,
        "plan_valid": True,
        "plan_steps": 4,
        "atomic_steps": 4,
        "dependency_sufficient_steps": 4,
        "revisions": 0,
    }
    values.update(fields)
    return Record(task="t", mode="planned", repeat=repeat, **values)


def criteria_records() -> list[Record]:
    return [
        Record(task="t", mode="baseline", repeat=1, success=True),
        planned(1),
        planned(2, plan_valid=False, atomic_steps=2, revisions=1),
        planned(3, success=False, completed=False, dependency_sufficient_steps=3, revisions=2),
        # The model server failed before a plan: nothing measured.
        Record(task="t", mode="planned", repeat=4, success=False, error="down"),
    ]


def test_the_criteria_are_summed_over_the_planned_runs_that_recorded_them() -> None:
    baseline, summary = summarize_modes(criteria_records())
    assert summary.plan_validity == Share(2, 3)
    assert summary.step_atomicity == Share(10, 12)
    assert summary.revision_effectiveness == Share(1, 2)  # revised runs that succeeded
    assert summary.plan_completion == Share(2, 3)
    assert summary.dependency_accuracy == Share(2, 3)
    assert baseline.plan_validity is None and baseline.dependency_accuracy is None


def test_the_report_shows_the_criteria_for_the_planned_mode_only() -> None:
    screen = Console(width=140, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    screen.print(terminal_table(criteria_records()))
    text = screen.export_text()
    row = next(line for line in text.splitlines() if "plan validity" in line)
    assert "—" in row and "67% (2/3)" in row
    assert "revision effectiveness" in text and "50% (1/2)" in text
    page = render_html(criteria_records(), model="m")
    assert "dependency accuracy" in page and "83% (10/12)" in page


def test_without_planned_runs_the_report_has_no_criteria_rows() -> None:
    screen = Console(width=140, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    screen.print(terminal_table([Record(task="t", mode="guided", repeat=1, success=True)]))
    assert "plan validity" not in screen.export_text()


def test_results_written_before_the_criteria_still_load() -> None:
    old = {"task": "t", "mode": "planned", "repeat": 1, "success": True, "tool_calls": 3}
    record = Record.model_validate(json.loads(json.dumps(old)))
    assert record.plan_valid is None and record.revisions is None
    assert summarize_modes([record])[0].plan_validity is None


# ---------------------------------------------------------------- the planned mode


def run_planned(policy: Any) -> Record:
    with ScriptedChatServer([policy] * 40) as server:
        [record] = run_eval(
            EvalConfig(
                server.base_url,
                "scripted",
                modes=("planned",),
                tasks=select_tasks("log-root-cause"),
            )
        )
    return record


def test_a_diligent_models_plan_is_valid_at_once_and_fully_measured() -> None:
    record = run_planned(ScriptedModel("diligent"))
    assert record.success and record.plan_valid is True and record.revisions == 0
    assert record.plan_steps is not None and record.plan_steps > 1
    assert record.atomic_steps is not None and record.atomic_steps >= 1
    assert record.dependency_sufficient_steps == record.plan_steps  # a chain


class FirstPlanInvalid:
    """The diligent model, except that its first plan calls a tool that does not exist."""

    def __init__(self) -> None:
        self.model = ScriptedModel("diligent")

    def __call__(self, request: dict[str, Any]) -> Any:
        messages = request.get("messages") or []
        first = next((m for m in messages if m.get("role") == "user"), {})
        repairing = any(m.get("role") == "assistant" for m in messages)
        if str(first.get("content", "")).startswith("Goal: ") and not repairing:
            step = {"id": "s1", "action": "no_such_tool", "parameters": {}, "dependencies": []}
            return json.dumps({"goal": "g", "steps": [step]})
        return self.model(request)


def test_a_plan_that_needed_a_repair_round_is_not_valid_first_time() -> None:
    record = run_planned(FirstPlanInvalid())
    assert record.success and record.plan_valid is False
    assert record.dependency_sufficient_steps == record.plan_steps
