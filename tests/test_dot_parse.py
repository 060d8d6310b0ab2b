"""The DOT format: parsing the Attractor subset, from the fixture files, through the
library loader and statement by statement.
"""

from __future__ import annotations

import doctest
import shutil
from pathlib import Path

import pytest

import waygraph
from tests.dot_helpers import DOT_FILES, FIXTURES, parse
from waygraph.errors import PlanFormatError
from waygraph.formats import dot
from waygraph.formats.dot import parse_dot, plan_to_dot
from waygraph.model import Plan, Verify
from waygraph.predicates import parse_condition


def fixture(name: str) -> Plan:
    path = FIXTURES / "dot" / name
    return parse_dot(path.read_text(encoding="utf-8"), file=str(path))


# ---------------------------------------------------------------- the fixture files


def test_hand_written_plan():
    plan = fixture("release_checks.dot")
    assert (plan.id, plan.name, plan.goal) == (
        "release_checks",
        "Release checks",
        "Tag a release whose tests pass",
    )
    assert plan.domains == ("release", "git_ops")
    assert plan.triggers == ("cut a release", "tag a release", "ship version")
    assert (plan.trigger_threshold, plan.stale_after_turns) == (1, 12)
    nodes = plan.graph.nodes
    assert {k: n.type for k, n in nodes.items()} == {
        "start": "start",
        "stuck": "escalate",
        "done": "exit",
        "saved": "checkpoint",
        "test": "task",
        "fix": "task",
        "tag": "task",
    }
    # node [...] defaults reach the nodes after them only
    assert nodes["test"].tool == "code_execution_tool"
    assert nodes["stuck"].tool is None and nodes["saved"].tool is None
    assert nodes["test"].verify == Verify(type="regex", value=r"\d+ passed")
    assert nodes["test"].max_retries == 2 and nodes["tag"].max_retries == 0
    assert (nodes["stuck"].reason, nodes["stuck"].pace_level) == (
        "tests keep failing",
        "contingent",
    )
    edges = [(e.from_, e.to, e.condition, e.label) for e in plan.graph.edges]
    assert edges[:3] == [
        ("start", "test", "always", None),
        ("test", "saved", "on_success", None),
        ("saved", "tag", "on_success", None),
    ]
    assert edges[-1] == ("tag", "stuck", "on_fail", "tag refused")


def test_attractor_pipeline():
    plan = fixture("attractor_pipeline.dot")
    assert (plan.id, plan.name, plan.goal) == (
        "implement_feature",
        "Implement feature",
        "Implement and validate a feature",
    )
    nodes = plan.graph.nodes
    assert plan.graph.start == "start"
    assert nodes["implement"].action == "Write the code"
    # default_max_retry reaches task nodes that do not set max_retries
    assert [nodes[n].max_retries for n in ("plan", "implement", "validate", "gate")] == [1, 3, 1, 0]
    assert nodes["gate"].type == "decision" and nodes["exit"].type == "exit"
    chain = [(e.from_, e.to, e.condition) for e in plan.graph.edges[:4]]
    assert chain == [
        ("start", "plan", "always"),
        ("plan", "implement", "always"),
        ("implement", "validate", "always"),
        ("validate", "gate", "always"),
    ]
    success, fail, give_up = plan.graph.edges[4:]
    assert (success.condition, success.weight) == ("on_success", 2)
    assert success.when == Verify(type="compare", field="context.tests_passed", op="==", value=True)
    assert (fail.condition, fail.when, fail.label) == ("on_fail", None, "Fix")
    assert give_up.condition == "on_fail"
    assert give_up.when == parse_condition("context.attempts >= 3")


def test_event_driven_plan_without_triggers():
    plan = fixture("triage_events.dot")
    assert plan.triggers == () and plan.name == "Ticket triage"
    assert plan.graph.start == "received" and plan.max_transitions == 20
    by_target = {e.to: e for e in plan.graph.edges if e.from_ == "route"}
    assert by_target["urgent"].when == parse_condition(
        "data.kind == 'outage' || data.tags contains 'urgent'"
    )
    assert by_target["done"].when == Verify(type="truthy", field="data.duplicate")
    assert [e.on_event for e in plan.graph.edges if e.on_event] == [
        "ticket.classified",
        "page.acknowledged",
    ]


@pytest.mark.parametrize("path", DOT_FILES, ids=lambda p: p.name)
def test_fixture_files_round_trip(path):
    plan = parse_dot(path.read_text(encoding="utf-8"), file=str(path))
    assert parse_dot(plan_to_dot(plan)) == plan


# ---------------------------------------------------------------- loading through the library


def test_load_library_reads_dot_and_gv_files(tmp_path):
    shutil.copy(FIXTURES / "dot" / "triage_events.dot", tmp_path / "triage.dot")
    (tmp_path / "other.gv").write_text(
        "digraph { s [shape=Mdiamond]; s -> e; e [shape=Msquare] }", encoding="utf-8"
    )
    lib = waygraph.load_library(tmp_path)
    assert lib.ids() == ["other", "triage_events"]  # a nameless digraph takes the file stem
    assert lib.sources["triage_events"].endswith("triage.dot")
    assert waygraph.load_library(tmp_path / "other.gv")["other"].graph.start == "s"


def test_load_library_reads_the_fixture_folder():
    lib = waygraph.load_library(FIXTURES / "dot")
    assert sorted(lib.ids()) == ["implement_feature", "release_checks", "triage_events"]


def test_load_library_reports_the_file_and_line(tmp_path):
    bad = tmp_path / "bad.dot"
    bad.write_text("digraph bad {\n  s [shape=Mdiamond]\n  s -> t [weight=heavy]\n}\n")
    with pytest.raises(PlanFormatError) as info:
        waygraph.load_library(bad)
    assert str(info.value).startswith(f"{bad}:3: plan 'bad', edge s -> t, field 'weight'")


# ---------------------------------------------------------------- the subset


def test_syntax_details():
    plan = parse(
        r"""
        /* block
           comment */ digraph "My plan" {
          graph [label="Named", goal="g"]; description = "line one\nsays \"hi\" \\ ok"
          # hash comment
          "node" [shape=Mdiamond label=Start; tool="t"]  // keyword as a quoted id
          "node" -> 2 -> "with space" [weight=-1.5];
          2 [shape=DIAMOND]
          "with space" [label="con\
tinued", prompt="keep \l as written"]
        }
        """
    )
    assert (plan.id, plan.name, plan.goal) == ("My plan", "Named", "g")
    assert plan.description == 'line one\nsays "hi" \\ ok'
    nodes = plan.graph.nodes
    assert list(nodes) == ["node", "2", "with space"]
    assert (nodes["node"].type, nodes["node"].name, nodes["node"].tool) == ("start", "Start", "t")
    assert nodes["2"].type == "decision"
    assert nodes["with space"].name == "continued"
    assert nodes["with space"].action == r"keep \l as written"
    assert [(e.from_, e.to, e.weight) for e in plan.graph.edges] == [
        ("node", "2", -1.5),
        ("2", "with space", -1.5),
    ]


def test_later_statements_update_a_node_and_defaults_apply_forward():
    plan = parse(
        """digraph p {
          s [shape=Mdiamond]
          edge [condition=on_success]
          s -> a
          a [label=A]
          a [description=later]
          edge [condition=on_fail, label=back]
          a -> s
        }"""
    )
    a = plan.graph.nodes["a"]
    assert (a.type, a.name, a.description) == ("task", "A", "later")
    assert [(e.condition, e.label) for e in plan.graph.edges] == [
        ("on_success", None),
        ("on_fail", "back"),
    ]


def test_type_attribute_overrides_the_shape_and_all_node_fields_load():
    plan = parse(
        """digraph p {
          begin [type=start, shape=box]
          w [shape=hexagon, type=task, action=do, tool=shell, tool_hint=ls,
             description=d, join=all, on_fail=skip, required=false,
             max_retries=none, meta="{\\"owner\\": \\"ops\\"}",
             verify="data.ready && data.count > 2"]
          out [shape=Msquare, status=aborted]
          esc [shape=octagon, reason=r, pace_level=emergency]
          begin -> w
        }"""
    )
    nodes = plan.graph.nodes
    assert plan.graph.start == "begin" and nodes["begin"].type == "start"
    w = nodes["w"]
    assert (w.type, w.action, w.tool, w.tool_hint, w.description, w.join) == (
        "task",
        "do",
        "shell",
        "ls",
        "d",
        "all",
    )
    assert (w.on_fail, w.required, w.max_retries, w.meta) == ("skip", False, None, {"owner": "ops"})
    assert w.verify == parse_condition("data.ready && data.count > 2")
    assert nodes["out"].status == "aborted"
    assert (nodes["esc"].reason, nodes["esc"].pace_level) == ("r", "emergency")


def test_graph_attributes():
    plan = parse(
        """digraph file_name {
          id=real_id; name="The name"; label="ignored caption"
          triggers="[\\"a, b\\", \\"c\\"]"; domains="x,  y ,"
          trigger_threshold=3; stale_after_turns=4; match_mode=substring
          max_transitions=7; linear=true; meta="{\\"v\\": 1}"
          default_max_retries=none
          s [shape=Mdiamond]; t; c [shape=cylinder]
          start=t
        }"""
    )
    assert (plan.id, plan.name) == ("real_id", "The name")
    assert plan.triggers == ("a, b", "c") and plan.domains == ("x", "y")
    assert (plan.trigger_threshold, plan.stale_after_turns, plan.max_transitions) == (3, 4, 7)
    assert (plan.match_mode, plan.linear, plan.meta) == ("substring", True, {"v": 1})
    assert plan.graph.start == "t"
    assert plan.graph.nodes["t"].max_retries is None  # the default reaches tasks only
    assert plan.graph.nodes["c"].max_retries == 0


@pytest.mark.parametrize(
    ("condition", "expected", "when"),
    [
        ("on_retry", "on_retry", None),
        ("always", "always", None),
        ("outcome=success", "on_success", None),
        ("outcome = fail", "on_fail", None),
        ('outcome="success"', "on_success", None),
        ("outcome==retry", "on_retry", None),
        ("outcome!=success", "on_fail", None),
        ("outcome=fail && context.attempts >= 3", "on_fail", "context.attempts >= 3"),
        ("context.stage=review", "always", "context.stage == 'review'"),
        ("context.stage!=review && outcome=success", "on_success", "context.stage != 'review'"),
        ('context.label="a && b"', "always", "context.label == 'a && b'"),
        ("context.n=2 && context.ok=true", "always", "context.n == 2 && context.ok == true"),
        ("on_exhaust && (a || b)", "on_exhaust", "a || b"),
        ("data.x == 'y&&z'", "always", "data.x == 'y&&z'"),
    ],
)
def test_edge_conditions(condition, expected, when):
    quoted = condition.replace("\\", "\\\\").replace('"', '\\"')
    plan = parse(f'digraph p {{ s [shape=Mdiamond]; s -> t [condition="{quoted}"] }}')
    edge = plan.graph.edges[0]
    assert edge.condition == expected
    assert edge.when == (None if when is None else parse_condition(when))


def test_edge_when_accepts_a_json_tree_and_on_event():
    plan = parse(
        """digraph p { s [shape=Mdiamond]
          s -> t [when="{\\"type\\": \\"output_contains\\", \\"value\\": \\"ok\\"}", on_event=go]
        }"""
    )
    edge = plan.graph.edges[0]
    assert edge.when == Verify(type="output_contains", value="ok") and edge.on_event == "go"


def test_plan_id_falls_back_to_the_file_stem():
    assert parse("digraph { s [shape=Mdiamond] }", file="/x/deploy.gv").id == "deploy"
    with pytest.raises(PlanFormatError, match="no id"):
        parse("digraph { s [shape=Mdiamond] }", file=None)


def test_module_examples():
    result = doctest.testmod(dot)
    assert result.attempted > 0 and result.failed == 0


def test_the_example_in_the_docs_loads():
    docs = (Path(__file__).parent.parent / "docs" / "dot.md").read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0] for b in docs.split("```dot\n")[1:]]
    examples = [b for b in blocks if b.lstrip().startswith(("digraph", "//"))]
    assert examples
    for text in examples:
        plan = parse_dot(text)
        assert parse_dot(plan_to_dot(plan)) == plan
