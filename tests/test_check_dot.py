"""``waygraph check`` on DOT pipelines: every problem of a file in one pass, each with its line
and attribute, and warnings for what is kept as written."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from waygraph.cli import app

BAD = """digraph p {
  rankdir=LR
  start [shape=Mdiamond]
  a [goal_gate=maybe, reviewer=bob]
  b [timeout=soon]
  start -> a -> b [weight=x]
}
"""


def check(*args: str | Path) -> tuple[int, dict]:
    result = CliRunner().invoke(app, ["check", *map(str, args), "--json"])
    return result.exit_code, json.loads(result.stdout)


def test_every_problem_of_a_dot_file_is_reported_at_once(tmp_path):
    path = tmp_path / "bad.dot"
    path.write_text(BAD, encoding="utf-8")
    code, out = check(path)
    assert code == 1
    rows = [(p["level"], p["code"], p["node"] or p["edge"], p["field"]) for p in out["problems"]]
    assert ("error", "load-error", "a", "goal_gate") in rows
    assert ("error", "load-error", "b", "timeout") in rows
    assert ("error", "load-error", "start -> a", "weight") in rows
    assert ("error", "load-error", "a -> b", "weight") in rows
    assert ("warning", "dot-attribute", "a", "reviewer") in rows
    messages = {p["field"]: p["message"] for p in out["problems"]}
    assert messages["goal_gate"].startswith("line 4:")
    assert messages["timeout"].startswith("line 5:")
    assert not any("rankdir" in p["message"] for p in out["problems"])


def test_a_pipeline_with_only_warnings_loads_and_is_checked(tmp_path):
    path = tmp_path / "ok.dot"
    path.write_text(
        'digraph ok { goal="g"; start [shape=Mdiamond]; w [prompt="do $goal", owner=me]; '
        "done [shape=Msquare]; start -> w -> done }",
        encoding="utf-8",
    )
    code, out = check(path)
    assert out["plans"] == 1
    assert [p["code"] for p in out["problems"] if p["level"] == "error"] == []
    assert any(p["code"] == "dot-attribute" and p["field"] == "owner" for p in out["problems"])
    assert code == 0


def test_a_finding_both_checkers_make_is_listed_once(tmp_path):
    path = tmp_path / "p.dot"
    path.write_text(
        "digraph p { start [shape=Mdiamond]; done [shape=Msquare]; work [prompt=x]\n"
        "lost [prompt=y]\nstart -> work -> done }",
        encoding="utf-8",
    )
    code, out = check(path)
    about_lost = [(p["code"], p["level"]) for p in out["problems"] if p["node"] == "lost"]
    assert about_lost == [("reachability", "error")]  # not waygraph's "unreachable" too
    assert code == 1


def test_a_node_reached_only_by_a_retry_target_is_reachable(tmp_path):
    path = tmp_path / "p.dot"
    path.write_text(
        "digraph p { start [shape=Mdiamond]; done [shape=Msquare]\n"
        "work [prompt=x, retry_target=recover]; recover [prompt=r]\n"
        "gate [prompt=g, goal_gate=true]; again [prompt=a]; retry_target=again\n"
        "start -> work -> gate -> done; recover -> done; again -> done }",
        encoding="utf-8",
    )
    code, out = check(path)
    assert [p["code"] for p in out["problems"] if p["level"] == "error"] == []
    assert not any(p["node"] in ("recover", "again") for p in out["problems"])
    assert code == 0
