"""``waygraph check`` on a plan that does not load still runs the plan's other checks
(issue 37, item 2): one pass shows a misspelt field and an edge to a missing
node of the same plan, not the first kind only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from waygraph import load_library
from waygraph.check._files import read_plan_file
from waygraph.cli import app
from waygraph.errors import PlanFormatError

runner = CliRunner()

# Load errors on lines 8, 11 and 14; an edge to a missing node on line 16,
# which only the checks of the whole graph find.
PLAN = """\
id: release
triggers: [cut a release]
trigger_threshold: 1
graph:
  start: start
  nodes:
    start: {type: start}
    build: {type: task, acton: Run the build, verify: {type: exit_code_zero}}
    done: {type: exit}
    stuck: {type: escalate, reason: the build keeps failing}
    lint: {type: task, action: Run the linter, verify: {type: exit_code_zro}}
  edges:
    - {from: start, to: build}
    - {from: build, to: done, condition: on_succes}
    - {from: build, to: stuck, condition: on_exhaust}
    - {from: build, to: lint, condition: on_fail}
    - {from: lint, to: nowhere}
"""


def _problems(tmp_path: Path, text: str) -> list[dict]:
    path = tmp_path / "release.yaml"
    path.write_text(text)
    result = runner.invoke(app, ["check", "--json", str(path)])
    assert result.exit_code == 1, result.output
    return json.loads(result.stdout)["problems"]


def test_the_graph_checks_run_on_a_plan_with_load_errors(tmp_path: Path):
    found = [(p["line"], p["code"], p["field"]) for p in _problems(tmp_path, PLAN)]
    assert found == [
        (8, "load-error", "acton"),
        (11, "load-error", "verify.type"),
        (14, "load-error", "condition"),
        (17, "unknown-node", "to"),
    ]


def test_what_follows_from_a_load_error_is_not_reported_again(tmp_path: Path):
    # build has no action once its misspelt field is left out, and its edge to
    # done no condition: neither is a second problem, and no warning is guessed
    # from a plan read without its broken fields.
    problems = _problems(tmp_path, PLAN)
    assert not [p for p in problems if p["node"] == "build" and p["code"] != "load-error"]
    assert [p["level"] for p in problems] == ["error"] * 4


def test_the_partial_plan_is_only_for_checking(tmp_path: Path):
    path = tmp_path / "release.yaml"
    path.write_text(PLAN)
    found = read_plan_file(path)
    assert found.plans == []  # nothing with a load error is loaded
    assert [p.id for p in found.partial] == ["release"]
    assert "acton" not in found.partial[0].graph.nodes["build"].model_dump()


def test_a_field_whose_removal_breaks_its_parent_takes_the_parent(tmp_path: Path):
    text = PLAN.replace("acton", "action").replace("on_succes", "on_success")
    found = [(p["code"], p["node"], p["field"]) for p in _problems(tmp_path, text)]
    assert found == [("load-error", "lint", "verify.type"), ("unknown-node", None, "to")]


def test_a_plan_that_loads_is_checked_once(tmp_path: Path):
    path = tmp_path / "plans.yaml"
    path.write_text(
        PLAN.replace("acton", "action").replace("zro", "zero").replace("succes", "success")
    )
    errors = [
        (p["line"], p["code"])
        for p in _problems(tmp_path, path.read_text())
        if p["level"] == "error"
    ]
    assert errors == [(17, "unknown-node")]  # as found in the partial plan, at the same line


def test_load_library_raises_a_check_error_at_its_line(tmp_path: Path):
    path = tmp_path / "release.yaml"
    path.write_text(
        PLAN.replace("acton", "action").replace("zro", "zero").replace("succes", "success")
    )
    with pytest.raises(PlanFormatError) as raised:
        load_library(path)
    assert raised.value.line == 17
    assert str(raised.value).startswith(f"{path}:17: plan 'release'")


def test_a_deeply_nested_plan_with_a_load_error_is_reported_not_raised(tmp_path: Path):
    deep = '{"a":' * 900 + "1" + "}" * 900
    text = (
        '{"id": "deep", "triggers": ["x"], "graph": {"start": "s", "nodes": {'
        '"s": {"type": "start", "bogus": 1}, "t": {"type": "task", "action": "a", "meta": '
        + deep
        + '}}, "edges": []}}'
    )
    path = tmp_path / "deep.json"
    path.write_text(text)
    result = runner.invoke(app, ["check", "--json", str(path)])
    assert result.exit_code == 1, result.output
    assert "bogus" in result.stdout
