"""`show`, `play` and `draw` take a plan file where they take a plan id (issue 37)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from waygraph.cli import app

runner = CliRunner()
PLAN = """\
id: release
triggers: [cut a release]
trigger_threshold: 1
graph:
  start: start
  nodes:
    start: {type: start}
    build: {type: task, action: Run the build, verify: {type: exit_code_zero}}
    done: {type: exit}
  edges:
    - {from: start, to: build}
    - {from: build, to: done, condition: on_success}
"""


def _file(tmp_path: Path) -> str:
    path = tmp_path / "release.yaml"
    path.write_text(PLAN, encoding="utf-8")
    return str(path)


def test_show_draw_and_play_take_a_plan_file(tmp_path: Path):
    path = _file(tmp_path)
    shown = runner.invoke(app, ["show", path, "--json"])
    assert shown.exit_code == 0, shown.output
    assert '"id": "release"' in shown.stdout
    drawn = runner.invoke(app, ["draw", path, "--format", "mermaid"])
    assert drawn.exit_code == 0 and drawn.stdout.startswith("flowchart"), drawn.output
    played = runner.invoke(app, ["play", path], input="q\n")
    assert "no plan" not in played.output and "Run the build" in played.output, played.output


def test_a_file_of_several_plans_says_to_name_one(tmp_path: Path):
    import yaml

    one = yaml.safe_load(PLAN)
    path = tmp_path / "two.yaml"
    two = {"release": one, "deploy": {**one, "id": "deploy"}}
    path.write_text(yaml.safe_dump({"plans": two}), encoding="utf-8")
    shown = runner.invoke(app, ["show", str(path)])
    assert shown.exit_code == 2
    assert "holds 2 plans (deploy, release); name one: -l" in shown.output
