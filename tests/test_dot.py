"""The DOT format: parsing the Attractor subset, refusing the rest, and round trips."""

from __future__ import annotations

import doctest
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import waygraph
from waygraph.errors import PlanFormatError, PlanSyntaxError, WaygraphError
from waygraph.formats import dot
from waygraph.formats.dot import parse_dot, plan_to_dot
from waygraph.ids import id_problem
from waygraph.model import NODE_TYPES, Graph, Plan, Verify
from waygraph.predicates import parse_condition

from .strategies import graph_plans
from .test_predicates import condition_trees, field_paths

FIXTURES = Path(__file__).parent / "fixtures"
DOT_FILES = sorted((FIXTURES / "dot").glob("*.dot"))
COMPAT_PLANS = [
    plan
    for path in sorted((FIXTURES / "compat").glob("*.json"))
    for plan in waygraph.load_library(path, validate=False)
]


def parse(text: str, file: str | None = "plan.dot") -> Plan:
    return parse_dot(text, file=file)


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


# ---------------------------------------------------------------- refusals

BAD = [
    # (text, error class, line, fragments of the message)
    ("graph p { a -- b }", PlanSyntaxError, 1, ["undirected 'graph'"]),
    ("digraph p {\n a -- b }", PlanSyntaxError, 2, ["'--'", "use '->'"]),
    ("strict digraph p { }", PlanSyntaxError, 1, ["'strict'"]),
    ("digraph p {\n subgraph c a }", PlanSyntaxError, 2, ["'{' to open the subgraph"]),
    ("digraph p {\n { a b } -> c }", PlanSyntaxError, 2, ["edges from subgraphs"]),
    ("digraph p {\n a -> { b } }", PlanSyntaxError, 2, ["subgraphs"]),
    ("digraph p {\n a:n -> b }", PlanSyntaxError, 2, ["ports", "'a:port'"]),
    ("digraph p {\n a -> b:s }", PlanSyntaxError, 2, ["ports"]),
    ("digraph p {\n a [label=<<b>x</b>>] }", PlanSyntaxError, 2, ["HTML"]),
    ('digraph p {\n a [label="x" + "y"] }', PlanSyntaxError, 2, ["'+'"]),
    ('digraph p {\n a [label="open] }', PlanSyntaxError, 2, ["not closed"]),
    ("digraph p {\n /* open", PlanSyntaxError, 2, ["'/*'"]),
    ("digraph p {\n a\n", PlanSyntaxError, 3, ["never closed"]),
    ("digraph p { a } digraph q { b }", PlanSyntaxError, 1, ["one plan"]),
    ("digraph p {\n 2abc }", PlanSyntaxError, 2, ["cannot start with a digit"]),
    ("digraph p {\n a [label] }", PlanSyntaxError, 2, ["needs a value"]),
    ("digraph p {\n a [label=] }", PlanSyntaxError, 2, ["expected a value for 'label'"]),
    ("digraph p {\n node a }", PlanSyntaxError, 2, ["expected '[' after 'node'"]),
    ("digraph p {\n a -> node }", PlanSyntaxError, 2, ["expected a node id"]),
    ("digraph p {\n a @ b }", PlanSyntaxError, 2, ["unexpected character '@'"]),
    ("  \n // nothing\n", PlanSyntaxError, None, ["empty"]),
    ("p { }", PlanSyntaxError, 1, ["expected 'digraph"]),
    ("digraph p {\n a\n b }", PlanFormatError, 1, ["no start node"]),
    (
        "digraph p {\n a [shape=Mdiamond]\n b [shape=Mdiamond] }",
        PlanFormatError,
        3,
        [
            "several start nodes (a, b)",
        ],
    ),
    (
        "digraph p {\n s [shape=Mdiamond]\n t [max_retries=two] }",
        PlanFormatError,
        3,
        [
            "field 'max_retries'",
            "whole number",
            "'two'",
        ],
    ),
    (
        "digraph p {\n s [shape=Mdiamond]\n t [max_retries=-1] }",
        PlanFormatError,
        3,
        [
            "node 't', field 'max_retries'",
        ],
    ),
    (
        "digraph p {\n s [shape=Mdiamond]\n t [status=paused] }",
        PlanFormatError,
        3,
        [
            "field 'status'",
        ],
    ),
    (
        'digraph p {\n s [shape=Mdiamond]\n t [verify="{\\"type\\": \\"nope\\"}"] }',
        PlanFormatError,
        3,
        ["node 't', field 'verify.type'", "unknown verify type"],
    ),
    (
        'digraph p {\n s [shape=Mdiamond]\n t [verify="{oops"] }',
        PlanFormatError,
        3,
        [
            "field 'verify'",
            "invalid JSON",
        ],
    ),
    ('digraph p {\n s [shape=Mdiamond]\n t [meta="[1]"] }', PlanFormatError, 3, ["JSON object"]),
    (
        "digraph p {\n s [shape=Mdiamond]\n t [prompt=a, action=b] }",
        PlanFormatError,
        3,
        [
            "both prompt and action",
        ],
    ),
    (
        "digraph p {\n s [shape=Mdiamond]\n t [required=maybe] }",
        PlanFormatError,
        3,
        [
            "true or false",
        ],
    ),
    (
        "digraph p {\n s [shape=Mdiamond]\n s -> t\n [condition=sometimes] }",
        PlanFormatError,
        4,
        [
            "edge s -> t, field 'condition'",
            "unknown edge condition 'sometimes'",
        ],
    ),
    (
        'digraph p {\n s [shape=Mdiamond]\n s -> t [when="data.x >"] }',
        PlanFormatError,
        3,
        [
            "field 'when'",
            "column 9",
        ],
    ),
    (
        'digraph p {\n s [shape=Mdiamond]\n s -> t [condition="outcome=partial"] }',
        PlanFormatError,
        3,
        ["outcome clause"],
    ),
    (
        'digraph p {\n s [shape=Mdiamond]\n s -> t [condition="outcome=success || x"] }',
        PlanFormatError,
        3,
        ["outcome clause"],
    ),
    (
        'digraph p {\n s [shape=Mdiamond]\n s -> t [condition="outcome=fail && on_fail"] }',
        PlanFormatError,
        3,
        ["outcome twice"],
    ),
    (
        'digraph p {\n s [shape=Mdiamond]\n s -> t [condition="a &&  && b"] }',
        PlanFormatError,
        3,
        ["empty clause"],
    ),
    (
        'digraph p {\n s [shape=Mdiamond]\n s -> t [condition="on_fail && a", when=b] }',
        PlanFormatError,
        3,
        ["'when' is set too"],
    ),
    (
        "digraph p {\n s [shape=Mdiamond]\n s -> t [weight=heavy] }",
        PlanFormatError,
        3,
        [
            "must be a number",
        ],
    ),
    (
        "digraph p {\n s [shape=Mdiamond]\n stale_after_turns=0 }",
        PlanFormatError,
        3,
        [
            "field 'stale_after_turns'",
        ],
    ),
    (
        "digraph p {\n s [shape=Mdiamond]\n match_mode=fuzzy }",
        PlanFormatError,
        3,
        [
            "field 'match_mode'",
            "'fuzzy'",
        ],
    ),
    (
        "digraph p {\n default_max_retry=1\n default_max_retries=2 }",
        PlanFormatError,
        3,
        [
            "disagree",
        ],
    ),
    ('digraph p {\n triggers="[1, 2]" }', PlanFormatError, 2, ["list of strings"]),
    ('digraph p {\n id="" }', PlanFormatError, 2, ["plan id is empty"]),
]


@pytest.mark.parametrize(("text", "kind", "line", "fragments"), BAD, ids=lambda x: None)
def test_refusals_name_the_file_line_and_place(text, kind, line, fragments):
    with pytest.raises(kind) as info:
        parse(text, file="bad.dot")
    err = info.value
    assert err.file == "bad.dot" and err.line == line
    message = str(err)
    assert message.startswith("bad.dot" if line is None else f"bad.dot:{line}:")
    for fragment in fragments:
        assert fragment in message


def test_non_text_is_refused():
    with pytest.raises(PlanSyntaxError, match="must be a str"):
        parse_dot(b"digraph p {}")  # type: ignore[arg-type]


# ---------------------------------------------------------------- writing and round trips


@pytest.mark.parametrize("plan", COMPAT_PLANS, ids=lambda p: f"{p.id}-{int(p.linear)}")
def test_compat_plans_round_trip(plan):
    text = plan_to_dot(plan)
    assert parse_dot(text) == plan
    assert parse_dot(text).linear is plan.linear


def test_output_reads_well():
    plan = COMPAT_PLANS[0]
    lines = plan_to_dot(plan).splitlines()
    assert lines[0] == f"digraph {plan.id} {{" and lines[-1] == "}"
    body = [line.strip() for line in lines[1:-1]]
    blank = [i for i, line in enumerate(body) if not line]
    attrs, nodes, edges = body[: blank[0]], body[blank[0] + 1 : blank[1]], body[blank[1] + 1 :]
    assert all("=" in a and "[" not in a.split("=")[0] for a in attrs)
    assert len(nodes) == len(plan.graph.nodes) and len(edges) == len(plan.graph.edges)
    assert all(" -> " not in n for n in nodes) and all(" -> " in e for e in edges)
    assert nodes[0].startswith("start [shape=Mdiamond")


def _everything_plan() -> Plan:
    tricky = 'quote " back\\ nl\n tab\t cr\r é 😀 {json} [x] // not a comment'
    return (
        Graph.builder("begin")
        .task(
            "node",
            name=tricky,
            action="a",
            tool="t",
            tool_hint="h",
            description="",
            verify={"type": "all", "checks": [{"type": "regex", "value": r"\d", "flags": "i"}]},
            max_retries=None,
            join="all",
            on_fail="skip",
            required=False,
            meta={"k": [1, None, {"x": 1.5}]},
        )
        .decision("with space", verify={"type": "truthy", "field": "data.ok"})
        .checkpoint("7")
        .escalate("graph", reason="r", pace_level="p")
        .exit("end", status="aborted")
        .node("second_start", "start")
        .edge("begin", "node")
        .edge("node", "with space", "on_success", weight=2.5, label="")
        .edge("with space", "7", when={"type": "compare", "field": "a", "op": "in", "value": [1]})
        .edge(
            "with space",
            "graph",
            when={"type": "all", "checks": [{"type": "truthy", "field": "a"}]},
        )
        .edge("with space", "end", when={"type": "output_contains", "value": "x"}, on_event="e.v")
        .edge("7", "end", "on_retry", weight=-1e-7)
        .edge("node", "graph", "on_exhaust", weight=1e20)
        .plan(
            # Ids are text without control characters (issue 13); quotes and
            # backslashes still need escaping in DOT.
            'plan with "odd" \\ id',
            name="n",
            description="d",
            goal="g",
            domains=("a,b", "c"),
            triggers=(" padded", "x"),
            trigger_threshold=0,
            stale_after_turns=1,
            match_mode="phrase",
            max_transitions=1,
            meta={},
            linear=True,
        )
    )


def test_every_field_round_trips():
    plan = _everything_plan()
    text = plan_to_dot(plan)
    assert parse_dot(text) == plan
    assert 'start="begin"' not in text and "start=begin" in text  # two start nodes: named


def test_builder_plan_round_trips():
    plan = (
        Graph.builder()
        .task("build", action="Run make", verify={"type": "exit_code_zero"}, max_retries=1)
        .exit("done")
        .escalate("stuck", reason="build keeps failing")
        .edge("start", "build")
        .edge("build", "done", "on_success")
        .edge("build", "stuck", "on_exhaust")
        .plan("ci", triggers=("run ci",), trigger_threshold=1)
    )
    assert parse_dot(plan_to_dot(plan)) == plan


def test_writing_refuses_what_dot_cannot_hold():
    dangling = Graph.builder().edge("start", "ghost").plan("p")
    with pytest.raises(PlanFormatError, match="ghost"):
        plan_to_dot(dangling)
    with pytest.raises(ValueError, match="must not be empty"):
        Graph.builder().plan("")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph_plans())
def test_random_graph_plans_round_trip(plan):
    assert parse_dot(plan_to_dot(plan)) == plan


_texts = st.text(max_size=10)
#: Valid ids (issues 13 and 33): text without control or format characters or
#: lone surrogates (id_problem also refuses a few still unassigned code points).
_ids = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cf", "Cs")), min_size=1, max_size=8
).filter(lambda s: id_problem(s) is None)
_verifies = st.one_of(
    condition_trees,
    st.builds(lambda v: Verify(type="output_contains", value=v), _texts),
    st.just(Verify(type="any_output")),
    st.builds(lambda t: Verify(type="all", checks=(t,)), condition_trees),
)


@st.composite
def rich_plans(draw: st.DrawFn) -> Plan:
    """Small plans that use every field, with awkward ids and text."""
    ids = draw(st.lists(st.one_of(field_paths, _ids), min_size=1, max_size=5, unique=True))
    optional = st.none() | _texts
    nodes: dict[str, dict[str, Any]] = {}
    for node_id in ids:
        node: dict[str, Any] = {
            "type": draw(st.sampled_from(NODE_TYPES)),
            "name": draw(_texts),
            "description": draw(optional),
            "action": draw(optional),
            "tool": draw(optional),
            "max_retries": draw(st.none() | st.integers(0, 5)),
            "join": draw(st.sampled_from(["any", "all"])),
            "required": draw(st.none() | st.booleans()),
            "meta": draw(st.none() | st.dictionaries(_texts, _texts, max_size=2)),
        }
        if draw(st.booleans()):
            node["verify"] = draw(_verifies)
        nodes[node_id] = node
    edges = []
    for _ in range(draw(st.integers(0, 6))):
        edge: dict[str, Any] = {
            "from": draw(st.sampled_from(ids)),
            "to": draw(st.sampled_from(ids)),
            "condition": draw(st.sampled_from(["on_success", "on_fail", "on_retry", "always"])),
            "weight": draw(st.sampled_from([0, 1, -2, 0.5, 1e-9, 3.25e18])),
            "label": draw(optional),
            "on_event": draw(optional),
        }
        if draw(st.booleans()):
            edge["when"] = draw(_verifies)
        edges.append(edge)
    return Plan.model_validate(
        {
            "id": draw(_ids),
            "name": draw(_texts),
            "goal": draw(optional),
            "triggers": draw(st.lists(_texts, max_size=3)),
            "domains": draw(st.lists(_texts, max_size=2)),
            "trigger_threshold": draw(st.integers(0, 3)),
            "match_mode": draw(st.sampled_from([None, "phrase", "substring"])),
            "linear": draw(st.booleans()),
            "graph": {"start": draw(st.sampled_from([*ids, ""])), "nodes": nodes, "edges": edges},
        }
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rich_plans())
def test_rich_random_plans_round_trip(plan):
    assert parse_dot(plan_to_dot(plan)) == plan


# ---------------------------------------------------------------- hostile input


def _only_plan_errors(text: str) -> None:
    try:
        parse_dot(text, file="fuzz.dot")
    except WaygraphError as exc:
        assert isinstance(exc, PlanFormatError)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_random_text_only_raises_plan_format_error(text):
    _only_plan_errors(text)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_only_raise_plan_format_error(data):
    _only_plan_errors(data.decode("utf-8", errors="replace"))
    _only_plan_errors("digraph p { " + data.decode("latin-1") + " }")


_SOURCES = [p.read_text(encoding="utf-8") for p in DOT_FILES] + [
    plan_to_dot(_everything_plan()),
    plan_to_dot(COMPAT_PLANS[0]),
]
_SNIPPETS = [
    '"',
    "[",
    "]",
    "{",
    "}",
    "->",
    "--",
    ";",
    "=",
    ",",
    ":",
    "/*",
    "//",
    "\\",
    "<",
    "subgraph",
    "node",
    "condition=",
    "outcome=",
    "&&",
    '{"type":',
    "\n",
    "digraph",
]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(_SOURCES), st.randoms(use_true_random=False))
def test_mutated_dot_files_only_raise_plan_format_error(source, rnd: random.Random):
    text = source
    for _ in range(rnd.randint(1, 4)):
        at = rnd.randrange(len(text) + 1)
        span = rnd.randint(0, 12)
        choice = rnd.random()
        if choice < 0.4:
            text = text[:at] + text[at + span :]
        elif choice < 0.8:
            text = text[:at] + rnd.choice(_SNIPPETS) + text[at:]
        else:
            text = text[:at] + text[at : at + span] * 2 + text[at + span :]
    _only_plan_errors(text)


def test_deep_json_and_huge_input_are_refused_quickly():
    deep = '"' + "[" * 100_000 + '"'
    with pytest.raises(PlanFormatError, match=r"nested too deeply|invalid JSON"):
        parse(f"digraph p {{ s [shape=Mdiamond, meta={deep}] }}")
    with pytest.raises(PlanSyntaxError, match="larger than"):
        parse_dot(" " * (dot.MAX_DOT_CHARS + 1))


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
