"""The library commands (check, show, draw, convert, schema).

Each command runs at least once as a real subprocess (``python -m waygraph``);
finer cases use typer's CliRunner in-process.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest
import yaml
from typer.testing import CliRunner

from waygraph.cli import app
from waygraph.draw import GRAPHVIZ_MISSING, to_mermaid
from waygraph.formats.dot import plan_to_dot
from waygraph.formats.json_library import plan_to_data
from waygraph.library import load_library

COMPAT_DIR = Path(__file__).parent / "fixtures" / "compat"
GRAPH_LIB = COMPAT_DIR / "agent-zero-graph-library-v2.json"
LINEAR_LIB = COMPAT_DIR / "agent-zero-linear-library-v1.json"
COMPAT = [GRAPH_LIB, LINEAR_LIB]
SUMMARY = re.compile(r"^(\d+) errors?, (\d+) warnings? in (\d+) plans?$", re.MULTILINE)

runner = CliRunner()


def wg(*args: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None):
    """Run ``python -m waygraph`` with wide tables, so rows are never wrapped."""
    return subprocess.run(
        [sys.executable, "-m", "waygraph", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "250", **(env or {})},
        cwd=cwd,
    )


def invoke(*args: str | Path):
    return runner.invoke(app, [str(a) for a in args])


def assert_plans_equal(left: Path, right: Path) -> None:
    """Both files hold the same plans (as models), whatever their order and format."""
    a, b = load_library(left, validate=False), load_library(right, validate=False)
    assert sorted(a.ids()) == sorted(b.ids())
    for plan in a:
        assert b[plan.id] == plan, plan.id


# ---------------------------------------------------------------- check


def test_check_compat_files_exit_0_and_list_their_warnings():
    data = json.loads(wg("check", *COMPAT, "--json").stdout)
    out = wg("check", *COMPAT)
    assert out.returncode == 0, out.stderr
    summary = SUMMARY.search(out.stdout)
    assert summary, out.stdout
    assert summary.groups() == ("0", str(data["warnings"]), "20")
    assert data["errors"] == 0 and data["warnings"] >= 1
    for problem in data["problems"]:
        assert problem["level"] == "warning"
        # Every warning is a table row with its code and location.
        row = next(line for line in out.stdout.splitlines() if problem["code"] in line)
        assert "warning" in row and f"{problem['plan']}/{problem['node']}" in row


def test_check_reports_a_broken_file_and_checks_the_others(tmp_path: Path):
    broken = tmp_path / "broken.json"
    broken.write_text('{"plans": {\n  "p": {"steps": [}\n}')
    out = wg("check", broken, GRAPH_LIB, cwd=tmp_path)
    assert out.returncode == 1
    assert "Traceback" not in out.stdout + out.stderr
    row = next(line for line in out.stdout.splitlines() if "load-error" in line)
    assert "error" in row and "broken.json" in row and "line 2: invalid JSON" in row
    # The good library after it was still loaded and checked.
    assert SUMMARY.search(out.stdout).groups()[0::2] == ("1", "10")


def test_check_json_structure(tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "plans:\n  p:\n    graph:\n      start: s\n      nodes:\n        s: {type: strt}\n"
    )
    out = wg("check", bad, LINEAR_LIB, "--json")
    assert out.returncode == 1
    data = json.loads(out.stdout)
    assert set(data) == {"problems", "errors", "warnings", "plans"}
    assert data["plans"] == 10
    assert data["errors"] == sum(p["level"] == "error" for p in data["problems"]) == 1
    assert data["warnings"] == len(data["problems"]) - 1
    first = data["problems"][0]
    assert {"code", "level", "message", "file", "plan", "node", "edge", "field"} <= set(first)
    assert first["code"] == "load-error" and first["level"] == "error"
    assert first["file"] == str(bad)
    assert (first["plan"], first["node"], first["field"]) == ("p", "s", "type")
    assert "unknown node type" in first["message"] and "'strt'" in first["message"]


def test_check_folder_loads_each_file_and_finds_duplicate_ids(tmp_path: Path):
    (tmp_path / "a.json").write_text(GRAPH_LIB.read_text())
    (tmp_path / "b.yaml").write_text(
        "plans:\n  bugfix_workflow:\n    triggers: [x]\n    steps: [{name: A}]\n"
    )
    (tmp_path / "c.json").write_text("not json")
    (tmp_path / ".hidden.json").write_text("not json either")
    result = invoke("check", tmp_path, "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    by_code = {p["code"]: p for p in data["problems"] if p["level"] == "error"}
    assert set(by_code) == {"duplicate-plan", "load-error"}
    assert by_code["duplicate-plan"]["file"] == str(tmp_path / "b.yaml")
    assert by_code["duplicate-plan"]["plan"] == "bugfix_workflow"
    assert str(tmp_path / "a.json") in by_code["duplicate-plan"]["message"]
    assert by_code["load-error"]["file"] == str(tmp_path / "c.json")
    assert data["plans"] == 10


def test_check_strict_fails_on_warnings_and_reports_missing_paths(tmp_path: Path):
    assert invoke("check", LINEAR_LIB).exit_code == 0
    assert invoke("check", LINEAR_LIB, "--strict").exit_code == 1
    missing = invoke("check", tmp_path / "nope.json", "--json")
    assert missing.exit_code == 1
    problem = json.loads(missing.stdout)["problems"][0]
    assert problem["code"] == "load-error" and "no such file" in problem["message"]
    empty = invoke("check", tmp_path, "--json")
    assert empty.exit_code == 0
    assert [p["code"] for p in json.loads(empty.stdout)["problems"]] == ["no-plans"]


def test_check_without_paths_uses_library_option_then_shipped_plans():
    result = invoke("check", "--library", GRAPH_LIB, "--json")
    assert json.loads(result.stdout)["plans"] == 10
    shipped = wg("check")
    assert shipped.returncode == 0, shipped.stdout + shipped.stderr
    assert SUMMARY.search(shipped.stdout).group(1) == "0"


# ---------------------------------------------------------------- show


def test_show_lists_plans_as_a_table_and_json():
    out = wg("show", "--library", GRAPH_LIB)
    assert out.returncode == 0, out.stderr
    assert "10 plans in" in out.stdout
    row = next(line for line in out.stdout.splitlines() if "bugfix_workflow" in line)
    cells = [c.strip() for c in row.split("│")[1:-1]]
    assert cells[0:3] == ["bugfix_workflow", "Bug Fix Workflow", "bugfix"]
    assert cells[4:7] == ["9", "11", "graph"]
    assert cells[7] == GRAPH_LIB.name
    data = json.loads(wg("show", "--library", LINEAR_LIB, "--json").stdout)
    first = data["plans"][0]
    assert set(first) == {
        "id",
        "name",
        "domains",
        "triggers",
        "trigger_threshold",
        "nodes",
        "edges",
        "linear",
        "source",
    }
    assert first["id"] == "git_feature_branch" and first["linear"] is True
    assert first["nodes"] == 7 and first["edges"] == 6
    assert first["source"] == str(LINEAR_LIB)
    assert len(data["plans"]) == 10


def test_show_one_plan_in_detail():
    out = wg("show", "bugfix_workflow", "--library", GRAPH_LIB)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert re.search(r"^id\s+bugfix_workflow\s*$", out.stdout, re.MULTILINE)
    assert re.search(r"^trigger_threshold\s+1\s*$", out.stdout, re.MULTILINE)
    assert re.search(r"^mode\s+graph\s*$", out.stdout, re.MULTILINE)
    fix = next(line for line in lines if line.startswith("│ fix "))
    assert [c.strip() for c in fix.split("│")[1:6]] == [
        "fix",
        "task",
        "Implement the fix",
        "any output",
        "2",
    ]
    exhaust = next(line for line in lines if "on_exhaust" in line)
    assert [c.strip() for c in exhaust.split("│")[1:4]] == ["fix", "escalate_stuck", "on_exhaust"]


def test_show_one_plan_as_json_is_its_library_data():
    result = invoke("show", "git_merge_pr", "--library", LINEAR_LIB, "--json")
    assert result.exit_code == 0
    plan = load_library(LINEAR_LIB)["git_merge_pr"]
    data = json.loads(result.stdout)
    assert data == {"id": "git_merge_pr", **plan_to_data(plan)}
    assert next(iter(data)) == "id" and "steps" in data


def test_show_unknown_plan_suggests_similar_ids():
    out = wg("show", "bugfix", "--library", GRAPH_LIB)
    assert out.returncode == 2
    assert out.stdout == ""
    assert (
        out.stderr.strip()
        == "error: no plan 'bugfix' in the library; did you mean bugfix_workflow?"
    )
    far = invoke("show", "zzz", "--library", GRAPH_LIB)
    assert far.exit_code == 2
    assert "plans: bugfix_workflow, git_feature_branch" in far.stderr


# ---------------------------------------------------------------- draw


def fake_dot_dir(tmp_path: Path) -> Path:
    """A folder with a fake Graphviz ``dot`` that echoes its format and keeps its input."""
    folder = tmp_path / "bin"
    folder.mkdir()
    program = folder / "dot"
    program.write_text(f'#!/bin/sh\ncat > "{tmp_path}/input.dot"\nprintf "<svg %s/>" "$1"\n')
    program.chmod(program.stat().st_mode | stat.S_IEXEC)
    return folder


def test_draw_mermaid_and_dot():
    plan = load_library(GRAPH_LIB)["bugfix_workflow"]
    out = wg("draw", "bugfix_workflow", "--library", GRAPH_LIB)
    assert out.returncode == 0, out.stderr
    assert out.stdout == to_mermaid(plan)
    assert out.stdout.startswith("flowchart TD\n")
    assert '    n_fix -.->|"on_exhaust"| n_escalate_stuck' in out.stdout.splitlines()
    dot = invoke("draw", "bugfix_workflow", "--format", "dot", "--library", GRAPH_LIB)
    assert dot.exit_code == 0 and dot.stdout == plan_to_dot(plan)


def test_draw_to_a_file_infers_the_format(tmp_path: Path):
    result = invoke("draw", "git_merge_pr", "-l", LINEAR_LIB, "-o", tmp_path / "plan.dot")
    assert result.exit_code == 0
    assert result.stdout == ""
    assert f"wrote {tmp_path / 'plan.dot'}" in result.stderr
    assert (tmp_path / "plan.dot").read_text().startswith("digraph git_merge_pr {")


def test_draw_with_a_run_state(tmp_path: Path):
    state = tmp_path / "run.json"
    state.write_text(
        json.dumps(
            {
                "status": "running",
                "current_node": "fix",
                "visited": {"fix": {"outcome": "pending", "attempts": 2}},
                "path": ["start", "reproduce", "isolate", "fix"],
            }
        )
    )
    result = invoke("draw", "bugfix_workflow", "-l", GRAPH_LIB, "--state", state)
    assert result.exit_code == 0
    assert '    n_fix["fix<br/>Implement the fix<br/>attempt 2/3"]' in result.stdout
    assert "    class n_fix current" in result.stdout
    state.write_text("[1, 2]")
    bad = invoke("draw", "bugfix_workflow", "-l", GRAPH_LIB, "--state", state)
    assert bad.exit_code == 2 and "must be a JSON object" in bad.stderr


def test_draw_png_without_graphviz_exits_1_with_the_fix(tmp_path: Path):
    out = wg("draw", "bugfix_workflow", "-f", "png", "-l", GRAPH_LIB, env={"PATH": str(tmp_path)})
    assert out.returncode == 1
    assert out.stderr.strip() == f"error: {GRAPHVIZ_MISSING}"
    assert "Traceback" not in out.stderr and out.stdout == ""


def test_draw_svg_without_graphviz_uses_the_native_layout(tmp_path: Path):
    state = tmp_path / "run.json"
    state.write_text(json.dumps({"current_node": "fix", "visited": {}, "path": ["start"]}))
    out = wg(
        "draw",
        "bugfix_workflow",
        "-l",
        GRAPH_LIB,
        "--state",
        state,
        "-o",
        tmp_path / "p.svg",
        env={"PATH": str(tmp_path)},
    )
    assert out.returncode == 0, out.stderr
    assert "drawn with waygraph's own layout" in out.stderr
    svg = (tmp_path / "p.svg").read_text()
    root = ElementTree.fromstring(svg)
    assert root.tag.endswith("svg")
    plan = load_library(GRAPH_LIB)["bugfix_workflow"]
    assert all(node_id in svg for node_id in plan.graph.nodes)


def test_draw_svg_and_png_through_graphviz(tmp_path: Path):
    path = f"{fake_dot_dir(tmp_path)}{os.pathsep}{os.environ['PATH']}"
    out = wg("draw", "bugfix_workflow", "-f", "svg", "-l", GRAPH_LIB, env={"PATH": path})
    assert out.returncode == 0, out.stderr
    assert out.stdout == "<svg -Tsvg/>\n"  # text output ends its last line
    plan = load_library(GRAPH_LIB)["bugfix_workflow"]
    assert (tmp_path / "input.dot").read_text() == plan_to_dot(plan)
    png = wg(
        "draw", "bugfix_workflow", "-l", GRAPH_LIB, "-o", tmp_path / "p.png", env={"PATH": path}
    )
    assert png.returncode == 0, png.stderr
    assert (tmp_path / "p.png").read_bytes() == b"<svg -Tpng/>"


# ---------------------------------------------------------------- convert


@pytest.mark.parametrize("source", COMPAT, ids=lambda p: p.name)
def test_convert_json_yaml_json_round_trip(tmp_path: Path, source: Path):
    out = wg("convert", source, "--to", "yaml", "-o", tmp_path / "lib.yaml")
    assert out.returncode == 0, out.stderr
    back = wg("convert", tmp_path / "lib.yaml", "--to", "json")
    assert back.returncode == 0, back.stderr
    (tmp_path / "back.json").write_text(back.stdout)
    assert_plans_equal(source, tmp_path / "back.json")
    original = json.loads(source.read_text())
    written = json.loads(back.stdout)
    assert list(written["plans"]) == list(original["plans"])
    assert written["_meta"] == {**original["_meta"], "generator": "waygraph"}


@pytest.mark.parametrize("source", COMPAT, ids=lambda p: p.name)
def test_convert_json_dot_json_round_trip(tmp_path: Path, source: Path):
    out = wg("convert", source, "--to", "dot", "-o", tmp_path / "dots")
    assert out.returncode == 0, out.stderr
    assert out.stderr.strip() == f"wrote 10 DOT files to {tmp_path / 'dots'}"
    names = sorted(p.name for p in (tmp_path / "dots").iterdir())
    assert names == sorted(f"{pid}.dot" for pid in json.loads(source.read_text())["plans"])
    result = invoke("convert", tmp_path / "dots", "--to", "json", "-o", tmp_path / "back.json")
    assert result.exit_code == 0
    assert_plans_equal(source, tmp_path / "back.json")


def test_convert_one_plan_dot_file_writes_the_library_shape(tmp_path: Path):
    plan = load_library(GRAPH_LIB)["bugfix_workflow"]
    (tmp_path / "bugfix.dot").write_text(plan_to_dot(plan))
    for fmt in ("json", "yaml"):
        result = invoke("convert", tmp_path / "bugfix.dot", "--to", fmt)
        assert result.exit_code == 0
        data = json.loads(result.stdout) if fmt == "json" else yaml.safe_load(result.stdout)
        assert data == {
            "_meta": {"version": "2.0", "generator": "waygraph"},
            "plans": {"bugfix_workflow": plan_to_data(plan)},
        }


def test_convert_to_dot_needs_a_folder_or_one_plan(tmp_path: Path):
    several = invoke("convert", GRAPH_LIB, "--to", "dot")
    assert several.exit_code == 2
    assert "the library has 10 plans and a DOT file holds one" in several.stderr
    assert "-o FOLDER" in several.stderr and "--plan ID" in several.stderr
    one = invoke("convert", GRAPH_LIB, "--to", "dot", "--plan", "bugfix_workflow")
    assert one.exit_code == 0
    assert one.stdout == plan_to_dot(load_library(GRAPH_LIB)["bugfix_workflow"])
    (tmp_path / "file.txt").write_text("")
    onto_file = invoke("convert", GRAPH_LIB, "--to", "dot", "-o", tmp_path / "file.txt")
    assert onto_file.exit_code == 2 and "-o FOLDER" in onto_file.stderr


def test_convert_infers_the_format_and_filters_plans(tmp_path: Path):
    result = invoke("convert", GRAPH_LIB, "--plan", "refactor_safe", "-o", tmp_path / "r.yml")
    assert result.exit_code == 0
    assert load_library(tmp_path / "r.yml").ids() == ["refactor_safe"]
    unknown = invoke("convert", GRAPH_LIB)
    assert unknown.exit_code == 2 and "--to json|yaml|dot" in unknown.stderr
    typo = invoke("convert", GRAPH_LIB, "--to", "json", "--plan", "refactor")
    assert typo.exit_code == 2 and "did you mean refactor_safe?" in typo.stderr


# ---------------------------------------------------------------- schema


def test_schema_prints_and_writes_the_json_schema(tmp_path: Path):
    from waygraph.formats.schema import library_schema

    out = wg("schema")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == library_schema()
    assert json.loads(out.stdout)["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    result = invoke("schema", "-o", tmp_path / "schema.json")
    assert result.exit_code == 0
    assert json.loads((tmp_path / "schema.json").read_text()) == library_schema()


# ---------------------------------------------------------------- docs


def test_cli_reference_documents_the_library_commands():
    text = (Path(__file__).parent.parent / "docs" / "cli.md").read_text()
    documented = re.findall(r"^### `waygraph (\w+)", text, re.MULTILINE)
    assert documented[:5] == ["check", "show", "draw", "convert", "schema"]
    # Sub-apps (`sessions`, `events`) are documented as commands too.
    registered = {c.name or c.callback.__name__ for c in app.registered_commands}
    registered |= {g.name for g in app.registered_groups}
    assert set(documented) <= registered
    assert GRAPHVIZ_MISSING in text
