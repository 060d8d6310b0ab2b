"""``waygraph init``: a starter plan that checks clean, validates and points at the schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from waygraph.cli import app
from waygraph.formats.schema import library_schema
from waygraph.library import load_library
from waygraph.navigator import Navigator

runner = CliRunner()
MODELINE = "# yaml-language-server: $schema="


def invoke(*args: str | Path):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_init_writes_a_plan_that_checks_clean_and_points_at_the_schema(in_tmp: Path):
    result = invoke("init")
    assert result.exit_code == 0, result.output
    plan = in_tmp / "plans" / "starter.yaml"
    first = plan.read_text().splitlines()[0]
    assert first == MODELINE + "../.waygraph/library.schema.json"
    # The line resolves, from the plan's folder, to the schema waygraph schema prints.
    target = plan.parent / first.removeprefix(MODELINE)
    assert json.loads(target.read_text()) == library_schema()
    checked = invoke("check", "plans", "--strict", "--json")
    assert checked.exit_code == 0, checked.output
    report = json.loads(checked.output)
    assert (report["errors"], report["warnings"], report["plans"]) == (0, 0, 1)


def test_the_starter_plan_validates_against_the_schema():
    jsonschema = pytest.importorskip("jsonschema")
    assert invoke("init").exit_code == 0
    data = yaml.safe_load(Path("plans/starter.yaml").read_text())
    jsonschema.Draft202012Validator(library_schema()).validate(data)


def test_the_starter_plan_guides_a_run_round_its_test_loop():
    assert invoke("init").exit_code == 0
    nav = Navigator(load_library("plans"), store="memory://")
    guidance = nav.turn("s", user_message="please do the starter task")
    assert guidance.run is not None
    assert (guidance.run["plan_id"], guidance.run["current_node"]) == ("starter", "make_change")
    guidance = nav.turn("s", tool_output="edited app.py")
    assert guidance.run["current_node"] == "run_tests"
    guidance = nav.turn("s", tool_output="1 failed", exit_code=1)
    assert guidance.run["current_node"] == "make_change"  # failing tests send it back
    nav.turn("s", tool_output="edited app.py again")
    guidance = nav.turn("s", tool_output="5 passed", exit_code=0)
    assert guidance.run["status"] == "completed"


def test_init_refuses_to_overwrite_unless_forced():
    plan = Path("plans/starter.yaml")
    plan.parent.mkdir()
    plan.write_text("id: mine\nsteps: [{name: keep me}]\n")
    result = invoke("init")
    assert result.exit_code == 2
    assert "exists; pass --force" in result.output
    assert plan.read_text() == "id: mine\nsteps: [{name: keep me}]\n"
    assert invoke("init", "--force").exit_code == 0
    assert plan.read_text().startswith(MODELINE)


def test_init_takes_a_path_and_a_schema_reference(in_tmp: Path):
    url = "https://waygraph.dev/schema/library/v2.json"
    result = invoke("init", "flows/deploy-app.yml", "--schema", url)
    assert result.exit_code == 0, result.output
    text = (in_tmp / "flows" / "deploy-app.yml").read_text()
    assert text.splitlines()[0] == MODELINE + url
    assert not (in_tmp / ".waygraph").exists()  # a schema named, none written
    assert [p.id for p in load_library(in_tmp / "flows")] == ["deploy_app"]


def test_init_writes_yaml_only():
    result = invoke("init", "plans/starter.json")
    assert result.exit_code != 0
    assert "writes YAML" in result.output
    assert not Path("plans").exists()
