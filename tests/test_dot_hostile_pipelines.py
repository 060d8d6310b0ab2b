"""Hostile Attractor pipelines get what hostile plans get (issue 34): bounded reading, errors
naming the file, line and attribute, no command run without ``allow_commands``, and an endless
loop stopped at the step bound with the path so far.

Nothing here asserts a time: each bound is checked by what it refuses or what it reads."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from waygraph.cli import app
from waygraph.errors import PlanFormatError, PlanSyntaxError
from waygraph.formats._dot_statements import MAX_SUBGRAPH_DEPTH
from waygraph.formats.dot import MAX_DOT_CHARS, parse_dot, read_dot
from waygraph.formats.json_library import FILE_BUDGETS
from waygraph.pipelines.context import Context
from waygraph.pipelines.handlers import NEEDS_ALLOW_COMMANDS
from waygraph.pipelines.interviewers import AutoApproveInterviewer
from waygraph.pipelines.routing import outgoing
from waygraph.pipelines.runner import MAX_STEPS, load_pipeline, run_pipeline
from waygraph.pipelines.stylesheet import MAX_STYLESHEET_CHARS
from waygraph.predicates import MAX_CONDITION_CHARS

ENDS = "start [shape=Mdiamond]; exit [shape=Msquare]"


def quiet_run(source, logs: Path, **options):
    options.setdefault("sleep", lambda seconds: None)
    options.setdefault("interviewer", AutoApproveInterviewer())
    return run_pipeline(source, logs=logs, **options)


# ---------------------------------------------------------------- size


def test_a_ten_megabyte_file_is_refused_naming_the_file(tmp_path):
    assert MAX_DOT_CHARS == FILE_BUDGETS["dot"] == 1024 * 1024
    path = tmp_path / "huge.dot"
    node = 'n [prompt="' + "x" * 1000 + '"]\n'
    path.write_text(
        f"digraph huge {{ {ENDS}\n" + node * (10 * 1024) + "start -> n -> exit }\n",
        encoding="utf-8",
    )
    assert path.stat().st_size > 10_000_000  # 10 MB
    with pytest.raises(PlanSyntaxError, match="larger than 1 MiB") as caught:
        load_pipeline(path)
    assert caught.value.file == str(path)
    report = read_dot(path.read_text(encoding="utf-8"), file=str(path))
    assert report.plan is None and [e.file for e in report.errors] == [str(path)]


def _many_edges(nodes: int, edges: int, seed: int) -> tuple[str, list[tuple[str, str]]]:
    """A pipeline of ``nodes`` task nodes and ``edges`` random edges between them, written
    as chains of 100 hops (compact: a file this large must stay under the 1 MiB budget)."""
    rnd = random.Random(seed)
    chains, pairs = [], []
    for _ in range(edges // 100):
        hops = [f"n{rnd.randrange(nodes)}" for _ in range(101)]
        chains.append("->".join(hops))
        pairs += list(itertools.pairwise(hops))
    head = f"digraph wide {{\n{ENDS}\nstart -> n0\nn{nodes - 1} -> exit\n"
    return head + "\n".join(chains) + "\n}\n", pairs


def test_a_pipeline_of_a_hundred_thousand_edges_is_read_whole(tmp_path):
    text, pairs = _many_edges(1000, 100_000, seed=34)
    assert len(text) <= MAX_DOT_CHARS and len(pairs) == 100_000
    report = read_dot(text, file="wide.dot")
    assert report.errors == ()
    plan = report.plan
    assert plan is not None
    assert len(plan.graph.nodes) == 1002  # the thousand, start and exit
    got = [(e.from_, e.to) for e in plan.graph.edges]
    assert got == [("start", "n0"), ("n999", "exit"), *pairs]
    assert report.edge_lines[-1] == 4 + 1000  # the last chain's line
    # `waygraph check` reads it through the same path, lint included, and answers.
    path = tmp_path / "wide.dot"
    path.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(app, ["check", str(path), "--json"])
    found = json.loads(result.stdout)
    assert result.exit_code == 0 and found["errors"] == 0
    codes = {p["code"] for p in found["problems"]}
    assert "load-error" not in codes and "shadowed-edge" in codes  # repeated edges, warned


def test_ten_thousand_nested_subgraphs_are_a_syntax_error_on_their_line():
    text = "digraph deep {\n" + "subgraph {\n" * 10_000 + "a" + "}" * 10_000 + "}"
    report = read_dot(text, file="deep.dot")  # no RecursionError: the reader keeps a stack
    assert report.plan is None
    (error,) = report.errors
    assert isinstance(error, PlanSyntaxError)
    assert error.file == "deep.dot" and error.line == MAX_SUBGRAPH_DEPTH + 2
    assert f"nested more than {MAX_SUBGRAPH_DEPTH} deep" in str(error)


# ---------------------------------------------------------------- attributes


def test_a_stylesheet_over_its_bound_is_refused_naming_the_attribute():
    sheet = "* { llm_model: m; } " * (MAX_STYLESHEET_CHARS // 20 + 10)
    assert len(sheet) > 100_000
    text = f'digraph s {{\n{ENDS}\nmodel_stylesheet="{sheet}"\nstart -> exit\n}}\n'
    report = read_dot(text, file="style.dot")
    assert report.plan is None
    assert [(e.file, e.line, e.field) for e in report.errors] == [
        ("style.dot", 3, "model_stylesheet")
    ]


def test_five_thousand_bad_attributes_are_each_reported():
    count = 5000
    body = "\n".join(f"n{i} [max_retries=lots]" for i in range(count))
    text = f"digraph bad {{\n{ENDS}\n{body}\nstart -> exit\n}}\n"
    report = read_dot(text, file="bad.dot")
    assert report.plan is None
    assert len(report.errors) == count
    assert {(e.file, e.field) for e in report.errors} == {("bad.dot", "max_retries")}
    assert sorted(e.line for e in report.errors) == list(range(3, 3 + count))
    with pytest.raises(PlanFormatError, match=f"and {count - 1} more problems"):
        parse_dot(text, file="bad.dot")


def test_a_hundred_kilobyte_condition_is_refused_naming_the_edge_attribute():
    condition = " && ".join(["outcome=success"] * 6000)
    assert len(condition) > 100_000 > MAX_CONDITION_CHARS
    text = f'digraph c {{\n{ENDS}\nwork\nstart -> work\nwork -> exit [condition="{condition}"]\n}}'
    report = read_dot(text, file="cond.dot")
    assert report.plan is None
    assert [(e.file, e.line, e.field) for e in report.errors] == [("cond.dot", 5, "condition")]


# ---------------------------------------------------------------- running


def test_a_tool_command_in_a_file_does_not_run_without_allow_commands(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "tool.dot"
    path.write_text(
        f"digraph tool {{ {ENDS}\n"
        f'  run [shape=parallelogram, tool_command="touch {marker}"]\n'
        "  start -> run -> exit }\n",
        encoding="utf-8",
    )
    result = quiet_run(path, tmp_path / "run", workspace=tmp_path)
    assert not marker.exists()
    assert result.status == "fail" and result.path == ("start", "run")
    assert result.outcome.failure_reason == NEEDS_ALLOW_COMMANDS
    assert "--allow-commands" in NEEDS_ALLOW_COMMANDS


LOOP = f"""digraph loop {{ {ENDS}
  work [prompt="Try again"]
  check [prompt="Check it"]
  start -> work -> check
  check -> work [condition="outcome=success"]
  check -> exit [condition="outcome=fail"]
}}"""


@pytest.mark.parametrize("bound", [50, None])
def test_an_endless_loop_stops_at_the_step_bound_with_the_path_so_far(tmp_path, bound):
    options = {} if bound is None else {"max_steps": bound}
    result = quiet_run(LOOP, tmp_path, save_checkpoint=lambda checkpoint: None, **options)
    steps = bound or MAX_STEPS
    assert result.status == "fail"
    assert result.path == ("start", *(("work", "check") * steps))[:steps]
    assert result.outcome.failure_reason.startswith(f"step bound reached: {steps} node executions")
    assert "(path so far: " in result.outcome.failure_reason
    assert result.outcome.failure_reason.endswith(" -> ".join(result.path[-20:]) + ")")


# ---------------------------------------------------------------- what the bench found


def test_a_snapshot_copies_what_can_change_and_shares_only_what_cannot():
    nested = {"list": [1, 2], "inner": {"a": "b"}}
    context = Context({"text": "t", "count": 3, "nested": nested})
    snap = context.snapshot()
    snap["nested"]["list"].append(3)
    snap["nested"]["inner"]["a"] = "changed"
    assert context.get("nested") == {"list": [1, 2], "inner": {"a": "b"}}
    clone = context.clone()
    clone.get("nested")["list"].append(4)
    assert context.get("nested")["list"] == [1, 2]
    assert snap["text"] == "t" and snap["count"] == 3


def test_each_fan_out_of_a_long_pipeline_meets_at_its_own_fan_in(tmp_path):
    segments = []
    for k in range(30):
        segments.append(
            f"f{k} [shape=component]; j{k} [shape=tripleoctagon]\n"
            f"f{k} -> a{k} -> j{k}; f{k} -> b{k} -> j{k}; j{k} -> f{k + 1}\n"
        )
    text = f"digraph fans {{ {ENDS}\nstart -> f0\n" + "".join(segments) + "f30 -> exit }"
    result = quiet_run(text, tmp_path, validate=False)
    assert result.status == "success"
    expected = ["start"]
    for k in range(30):
        expected += [f"f{k}", f"a{k}", f"b{k}", f"j{k}"]
    assert list(result.path) == [*expected, "f30", "exit"]


def test_out_edges_are_in_file_order_and_follow_a_copy_with_new_edges():
    plan = parse_dot(
        f"digraph w {{ {ENDS}\n start -> a [weight=1]; start -> b [weight=5]; start -> exit\n"
        " a -> exit; b -> exit }"
    )
    graph = plan.graph
    assert [e.to for e in outgoing(graph, "start")] == ["a", "b", "exit"]
    assert [e.to for e in outgoing(graph, "a")] == ["exit"]
    fewer = graph.model_copy(update={"edges": graph.edges[1:]})
    assert [e.to for e in outgoing(fewer, "start")] == ["b", "exit"]
    assert [e.to for e in outgoing(graph, "start")] == ["a", "b", "exit"]
    assert outgoing(graph, "nowhere") == ()
