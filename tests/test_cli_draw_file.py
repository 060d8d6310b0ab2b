"""``waygraph draw FILE`` draws the plan of a plan file named instead of a library plan id."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from waygraph.cli import app

PIPELINE = (
    'digraph hello { goal="Say hi"; start [shape=Mdiamond]; done [shape=Msquare]\n'
    'greet [prompt="Greet for: $goal"]; start -> greet -> done }\n'
)


def test_a_dot_pipeline_is_drawn_from_its_file(tmp_path):
    path = tmp_path / "hello.dot"
    path.write_text(PIPELINE, encoding="utf-8")
    result = CliRunner().invoke(app, ["draw", str(path), "--format", "dot"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("digraph hello {")
    assert "greet" in result.stdout


def test_a_file_of_several_plans_asks_which(tmp_path):
    graph = {
        "start": "s",
        "nodes": {"s": {"type": "start"}, "e": {"type": "exit"}},
        "edges": [{"from": "s", "to": "e"}],
    }
    library = {"plans": {"one": {"graph": graph}, "two": {"graph": graph}}}
    path = tmp_path / "plans.json"
    path.write_text(json.dumps(library), encoding="utf-8")
    result = CliRunner().invoke(app, ["draw", str(path)])
    assert result.exit_code != 0
    assert "holds 2 plans (one, two); name one: -l" in " ".join(result.output.split())
