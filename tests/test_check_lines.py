"""Issue 37, item 2: ``waygraph check`` reports every problem of a JSON or YAML file at
the line of the field itself, and "did you mean" wherever a name is looked up."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from waygraph.cli import app
from waygraph.errors import PlanFormatError, PlanNotFoundError
from waygraph.formats.json_library import plans_from_data, read_plans
from waygraph.formats.positions import Positions
from waygraph.library import load_library
from waygraph.suggest import did_you_mean, suggestions

runner = CliRunner()

# Three mistakes: a misspelt node field (line 12), a misspelt edge condition
# (line 18), and, in a plan that loads, an edge to a misspelt node (line 31).
YAML = """\
plans:
  fix:
    triggers: [fix the bug]
    trigger_threshold: 1
    graph:
      start: start
      nodes:
        start: {type: start}
        test:
          action: run the tests
          verify: {type: exit_code_zero}
          on_failure: done
        done: {type: exit}
      edges:
        - {from: start, to: test}
        - from: test
          to: done
          condition: on_sucess
  other:
    triggers: [run the tests]
    trigger_threshold: 1
    graph:
      start: start
      nodes:
        start: {type: start}
        test: {action: run the tests, verify: {type: exit_code_zero}}
        done: {type: exit}
      edges:
        - {from: start, to: test}
        - {from: test, to: done, condition: on_success}
        - {from: test, to: tset, condition: on_fail}
"""


def check_json(path: Path) -> dict:
    result = runner.invoke(app, ["check", "--json", str(path)])
    assert result.exit_code == 1, result.output
    return json.loads(result.stdout)


def errors_at(report: dict) -> list[tuple[int, str, str]]:
    return sorted(
        (p["line"], p["field"], p["message"]) for p in report["problems"] if p["level"] == "error"
    )


def test_a_yaml_file_with_three_errors_reports_all_three_at_their_lines(tmp_path: Path):
    path = tmp_path / "plans.yaml"
    path.write_text(YAML)
    found = errors_at(check_json(path))
    assert [(line, field) for line, field, _ in found] == [
        (12, "on_failure"),
        (18, "condition"),
        (31, "to"),
    ]
    assert "did you mean 'on_fail'?" in found[0][2]
    assert "did you mean 'on_success'?" in found[1][2]
    assert "did you mean 'test'?" in found[2][2]
    columns = [p["column"] for p in check_json(path)["problems"] if p["level"] == "error"]
    assert columns[0] == 11  # `on_failure:` starts at column 11


def test_a_json_file_with_three_errors_reports_all_three_at_their_lines(tmp_path: Path):
    data = yaml.safe_load(YAML)
    path = tmp_path / "plans.json"
    text = json.dumps(data, indent=2)
    path.write_text(text)
    lines = text.splitlines()

    def line_of(needle: str, after: int = 0) -> int:
        return next(i + 1 for i, x in enumerate(lines) if i >= after and needle in x)

    expected = [
        (line_of('"on_failure"'), "on_failure"),
        (line_of('"on_sucess"'), "condition"),
        (line_of('"tset"'), "to"),
    ]
    assert [(line, field) for line, field, _ in errors_at(check_json(path))] == expected


def test_the_table_shows_the_file_line_and_column(tmp_path: Path):
    from waygraph.check import Problem
    from waygraph.cli.check_cmds import _where

    problem = Problem("load-error", "error", "x", file="p.yaml", plan="fix", node="test")
    placed = dataclasses.replace(problem, field="on_failure", line=12, column=11)
    assert _where(problem) == "p.yaml:fix/test"
    assert _where(placed) == "p.yaml:12:11 fix/test field on_failure"
    path = tmp_path / "plans.yaml"
    path.write_text(YAML)
    assert "3 errors" in runner.invoke(app, ["check", str(path)]).stdout


def test_every_bad_step_of_a_linear_plan_is_reported_at_its_line():
    text = (
        "plans:\n  p:\n    steps:\n      - {name: A, on_failure: skip}\n"
        "      - name: B\n        verify: {type: exit_code_zer}\n"
    )
    _meta, plans, errors = read_plans(yaml.safe_load(text), text=text, fmt="yaml")
    assert plans == []
    assert [(e.field, e.line) for e in errors] == [("on_failure", 4), ("verify.type", 6)]
    assert "did you mean 'on_fail'?" in errors[0].reason
    assert "did you mean 'exit_code_zero'" in errors[1].reason


def test_loading_still_raises_the_first_problem_with_its_fields_line():
    text = '{"plans": {"p": {\n"triggers": ["a"],\n"trigers": ["b"],\n"steps": [{"name": "A"}]}}}'
    with pytest.raises(PlanFormatError) as caught:
        plans_from_data(json.loads(text), text=text, fmt="json")
    assert caught.value.line == 3
    assert caught.value.field == "trigers"
    assert "did you mean 'triggers'" in caught.value.reason


@pytest.mark.parametrize(
    ("wrong", "candidates", "meant"),
    [
        ("on_failure", ["on_fail", "required", "action", "verify"], ["on_fail"]),
        ("tset", ["start", "test", "done"], ["test"]),
        ("bugfx", ["bugfix_workflow", "git_merge_pr", "refactor_safe"], ["bugfix_workflow"]),
        ("on_sucess", ["on_success", "on_fail", "always"], ["on_success"]),
        ("qqq", ["start", "test"], []),
    ],
)
def test_suggestions(wrong: str, candidates: list[str], meant: list[str]):
    assert suggestions(wrong, candidates) == meant
    assert (did_you_mean(wrong, candidates) != "") == bool(meant)


def test_a_mistyped_verify_type_and_node_type_get_a_suggestion():
    data = {
        "plans": {
            "p": {
                "graph": {
                    "start": "start",
                    "nodes": {"start": {"type": "start"}, "t": {"type": "tsk"}},
                    "edges": [{"from": "start", "to": "t", "when": {"type": "output_contain"}}],
                }
            }
        }
    }
    _, _, errors = read_plans(data)
    reasons = " ".join(e.reason for e in errors)
    assert "did you mean 'task'?" in reasons
    assert "did you mean 'output_contains'" in reasons


def test_library_lookup_and_cli_play_suggest_the_plan_meant():
    with pytest.raises(PlanNotFoundError, match="did you mean 'bugfix_workflow'"):
        load_library()["bugfx"]
    result = runner.invoke(app, ["play", "bugfx"], input="")
    assert result.exit_code != 0
    assert "did you mean bugfix_workflow?" in result.output


def test_positions_of_json_and_yaml_keys_and_items():
    text = '{"a": [1,\n  {"b": 2}]}'
    assert Positions(text, "json").find(("a", 1, "b")) == (2, 4)
    assert Positions(text, "json").find(("a", 1, "zz")) == (2, 3)
    assert Positions("a:\n  - x\n  - y: 1\n", "yaml").find(("a", 1, "y")) == (3, 5)
    assert Positions("{broken", "json").find(("a",)) is None
