"""Attractor transforms (specification §9.1–9.3, Definition of Done §11.10 and §11.11)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from waygraph.errors import InputError
from waygraph.formats.dot import parse_dot, read_dot
from waygraph.model import Node, Plan
from waygraph.pipelines.lint import Diagnostic, FunctionRule, validate, with_lines
from waygraph.pipelines.stylesheet import parse_stylesheet
from waygraph.pipelines.transforms import (
    BUILT_IN_TRANSFORMS,
    StylesheetTransform,
    Transform,
    VariableExpansionTransform,
    expand_goal,
    node_classes,
    node_shape,
    prepare_pipeline,
    with_nodes,
)


def pipeline(nodes: dict[str, dict[str, Any]] | None = None, **plan: Any) -> Plan:
    """start -> each given node in order -> exit."""
    middle = nodes if nodes is not None else {"work": {"action": "Do the work"}}
    order = ["start", *middle, "exit"]
    all_nodes = {"start": {"type": "start"}, **middle, "exit": {"type": "exit"}}
    edges = [{"from": a, "to": b} for a, b in itertools.pairwise(order)]
    return Plan.model_validate(
        {"id": "p", "graph": {"start": "start", "nodes": all_nodes, "edges": edges}, **plan}
    )


def styled(stylesheet: str, nodes: dict[str, dict[str, Any]]) -> dict[str, dict[str, str]]:
    plan = pipeline(nodes, attrs={"model_stylesheet": stylesheet})
    out = StylesheetTransform().apply(plan)
    return {nid: dict(out.graph.nodes[nid].attrs or {}) for nid in nodes}


# ------------------------------------------------------------- $goal (§9.2)


# §11.11 "Built-in variable expansion transform replaces $goal in prompts";
# parity "Prompt variable expansion ($goal) works"
def test_goal_is_expanded_in_every_prompt():
    plan = pipeline(
        {
            "plan": {"action": "Plan how to $goal"},
            "ask": {"type": "human", "prompt": "Approve $goal? ($goal)"},
            "plain": {"action": "No variable"},
        },
        goal="ship v2",
    )
    nodes = VariableExpansionTransform().apply(plan).graph.nodes
    assert nodes["plan"].action == "Plan how to ship v2"
    assert nodes["ask"].prompt == "Approve ship v2? (ship v2)"
    assert nodes["plain"] is plan.graph.nodes["plain"]


def test_without_a_goal_the_plan_is_returned_as_it_is():
    plan = pipeline({"work": {"action": "Do $goal"}})
    assert VariableExpansionTransform().apply(plan) is plan


def test_expand_goal_is_the_function_the_dot_reader_uses():
    from waygraph.formats import dot

    assert expand_goal is dot.expand_goal
    assert expand_goal("a $goal b", "X") == "a X b"
    assert expand_goal("a $goal b", None) == "a $goal b"


# ------------------------------------------------------------- stylesheet (§8)


# §11.10 "Stylesheet is parsed from the graph's model_stylesheet attribute"
def test_the_specifications_example_styles_its_nodes():
    sheet = (
        "* { llm_model: claude-sonnet-4-5; llm_provider: anthropic; }\n"
        ".code { llm_model: claude-opus-4-6; llm_provider: anthropic; }\n"
        "#critical_review { llm_model: gpt-5.2; llm_provider: openai; reasoning_effort: high; }"
    )
    attrs = styled(
        sheet,
        {
            "plan": {"name": "Plan", "attrs": {"class": "planning"}},
            "implement": {"name": "Implement", "attrs": {"class": "code"}},
            "critical_review": {"name": "Critical Review", "attrs": {"class": "code"}},
        },
    )
    assert attrs["plan"]["llm_model"] == "claude-sonnet-4-5"
    assert attrs["implement"]["llm_model"] == "claude-opus-4-6"
    assert attrs["critical_review"] == {
        "class": "code",
        "llm_model": "gpt-5.2",
        "llm_provider": "openai",
        "reasoning_effort": "high",
    }


# §11.10 "Selectors by shape name work"; parity "Stylesheet applies model override by shape"
def test_shape_selectors_see_the_shape_of_the_nodes_type_handler_or_attrs():
    attrs = styled(
        "box { llm_model: opus; } hexagon { llm_model: none; } "
        "parallelogram { llm_model: tool; } Circle { llm_model: round; }",
        {
            "work": {"action": "x"},
            "ask": {"type": "human", "prompt": "ok?"},
            "run": {"handler": "tool", "command": "make"},
            "drawn": {"action": "y", "attrs": {"shape": "circle"}},
        },
    )
    assert attrs["work"] == {"llm_model": "opus"}
    assert attrs["ask"] == {"llm_model": "none"}
    assert attrs["run"] == {"llm_model": "tool"}
    assert attrs["drawn"] == {"shape": "circle", "llm_model": "round"}


def test_start_and_exit_have_their_attractor_shapes():
    assert node_shape(Node(id="s", type="start")) == "Mdiamond"
    assert node_shape(Node(id="e", type="exit")) == "Msquare"
    assert node_shape(Node(id="d", type="decision")) == "diamond"


# §11.10 "Selectors by class name work"; §2.12 comma-separated classes
def test_class_selectors_match_any_of_a_nodes_comma_separated_classes():
    attrs = styled(
        ".fast { llm_model: flash; } .critical { reasoning_effort: high; }",
        {"review": {"action": "x", "attrs": {"class": "fast, critical"}}},
    )
    assert attrs["review"]["llm_model"] == "flash"
    assert attrs["review"]["reasoning_effort"] == "high"
    assert node_classes(Node(id="n", attrs={"class": " a,,b "})) == ["a", "b"]


# §11.10 "Selectors by node ID work" and "Specificity order"
def test_the_id_selector_beats_class_shape_and_universal():
    attrs = styled(
        "#review { reasoning_effort: high; } .code { reasoning_effort: medium; } "
        "box { reasoning_effort: low; } * { reasoning_effort: none; }",
        {
            "review": {"action": "x", "attrs": {"class": "code"}},
            "impl": {"action": "x", "attrs": {"class": "code"}},
            "other": {"action": "x"},
        },
    )
    assert attrs["review"]["reasoning_effort"] == "high"
    assert attrs["impl"]["reasoning_effort"] == "medium"
    assert attrs["other"]["reasoning_effort"] == "low"


# §11.10 "Stylesheet properties are overridden by explicit node attributes"
def test_explicit_node_attributes_are_never_overridden():
    attrs = styled(
        "#work { llm_model: styled; llm_provider: styled; }",
        {"work": {"action": "x", "attrs": {"llm_model": "explicit"}}},
    )
    assert attrs["work"] == {"llm_model": "explicit", "llm_provider": "styled"}


def test_a_given_stylesheet_replaces_the_plans_own():
    plan = pipeline(attrs={"model_stylesheet": "* { llm_model: plan; }"})
    out = StylesheetTransform(parse_stylesheet("* { llm_model: runner; }")).apply(plan)
    assert out.graph.nodes["work"].attrs == {"llm_model": "runner"}


def test_no_stylesheet_or_one_that_does_not_parse_changes_nothing():
    assert StylesheetTransform().apply(pipeline()) == pipeline()
    broken = pipeline(attrs={"model_stylesheet": "* { llm_model }"})
    assert StylesheetTransform().apply(broken) is broken
    _, diagnostics = prepare_pipeline(broken)
    assert [d.rule for d in diagnostics] == ["stylesheet_syntax"]


def test_styling_twice_changes_nothing_more():
    plan = pipeline(attrs={"model_stylesheet": "* { llm_model: m; }"})
    once = StylesheetTransform().apply(plan)
    assert StylesheetTransform().apply(once) is once


# ------------------------------------------------------------- the pipeline (§9.1, §9.3)


def test_transforms_do_not_change_their_input():
    plan = pipeline(
        {"work": {"action": "Do $goal", "attrs": {"class": "c"}}},
        goal="it",
        attrs={"model_stylesheet": ".c { llm_model: m; }"},
    )
    before = plan.model_dump()
    prepared, _ = prepare_pipeline(plan)
    assert plan.model_dump() == before
    assert prepared.graph.nodes["work"].action == "Do it"
    assert prepared.graph.nodes["work"].attrs == {"class": "c", "llm_model": "m"}


def test_a_transformed_graph_indexes_its_own_edges():
    plan = pipeline({"work": {"action": "Do $goal"}}, goal="it")
    assert plan.graph.out_edges("start")  # the original caches its adjacency
    prepared, _ = prepare_pipeline(plan)
    assert [e.to for e in prepared.graph.out_edges("start")] == ["work"]
    assert prepared.graph.nodes["work"].action == "Do it"


# §11.11 "AST transforms can modify the Graph between parsing and validation"
def test_a_custom_transform_changes_the_plan_before_lint_sees_it():
    class DropOrphans:
        def apply(self, plan: Plan) -> Plan:
            linked = {e.to for e in plan.graph.edges} | {plan.graph.start}
            return with_nodes(plan, {k: v for k, v in plan.graph.nodes.items() if k in linked})

    plan = pipeline()
    orphaned = with_nodes(plan, {**plan.graph.nodes, "lost": Node(id="lost", action="x")})
    assert [d.rule for d in validate(orphaned)] == ["reachability"]
    prepared, diagnostics = prepare_pipeline(orphaned, [DropOrphans()])
    assert "lost" not in prepared.graph.nodes
    assert diagnostics == []


# §11.11 "Custom transforms can be registered and run in order" (after the built-ins)
def test_custom_transforms_run_after_the_built_ins_in_the_order_given():
    seen: list[str] = []

    class Record:
        def __init__(self, name: str) -> None:
            self.name = name

        def apply(self, plan: Plan) -> Plan:
            seen.append(f"{self.name}:{plan.graph.nodes['work'].action}")
            return plan.model_copy(update={"name": plan.name + self.name})

    plan = pipeline({"work": {"action": "Do $goal"}}, goal="it")
    prepared, _ = prepare_pipeline(plan, [Record("a"), Record("b")])
    assert seen == ["a:Do it", "b:Do it"]
    assert prepared.name == "ab"


def test_prepare_pipeline_passes_rules_and_handler_types_to_lint():
    plan = pipeline({"work": {"action": "x", "handler": "deploy"}})
    _, diagnostics = prepare_pipeline(plan)
    assert [d.rule for d in diagnostics] == ["type_known"]
    extra = FunctionRule("no_goal", lambda p: [Diagnostic("no_goal", "info", "no goal")])
    _, diagnostics = prepare_pipeline(plan, extra_rules=[extra], known_types=["deploy"])
    assert [d.rule for d in diagnostics] == ["no_goal"]


def test_a_transform_that_returns_no_plan_is_refused_by_name():
    class Broken:
        def apply(self, plan: Plan) -> Plan:
            return None  # type: ignore[return-value]

    with pytest.raises(InputError, match="transform Broken returned NoneType, not a Plan"):
        prepare_pipeline(pipeline(), [Broken()])


def test_the_built_ins_are_transforms_expansion_first():
    assert all(isinstance(t, Transform) for t in BUILT_IN_TRANSFORMS)
    assert [type(t) for t in BUILT_IN_TRANSFORMS] == [
        VariableExpansionTransform,
        StylesheetTransform,
    ]


# ------------------------------------------------------------- from DOT text

SPEC_DOT = """digraph Pipeline {
    graph [
        goal="Implement feature X",
        model_stylesheet="
            * { llm_model: claude-sonnet-4-5; llm_provider: anthropic; }
            .code { llm_model: claude-opus-4-6; llm_provider: anthropic; }
            #critical_review { llm_model: gpt-5.2; llm_provider: openai; reasoning_effort: high; }
        "
    ]

    start [shape=Mdiamond]
    exit  [shape=Msquare]

    plan            [label="Plan", class="planning", prompt="Plan: $goal"]
    implement       [label="Implement", class="code", llm_model="pinned"]
    critical_review [label="Critical Review", class="code"]

    start -> plan -> implement -> critical_review -> exit
}
"""


def test_a_read_dot_pipeline_is_styled_expanded_and_clean():
    plan = parse_dot(SPEC_DOT)
    prepared, diagnostics = prepare_pipeline(plan)
    nodes = prepared.graph.nodes
    assert diagnostics == []
    assert nodes["plan"].action == "Plan: Implement feature X"
    assert nodes["plan"].attrs is not None
    assert nodes["plan"].attrs["llm_model"] == "claude-sonnet-4-5"
    assert nodes["implement"].attrs is not None
    assert nodes["implement"].attrs["llm_model"] == "pinned"
    review = nodes["critical_review"].attrs or {}
    assert (review["llm_model"], review["reasoning_effort"]) == ("gpt-5.2", "high")
    # The reader already applied both; preparing again changes nothing.
    assert prepared == plan


def test_dot_lint_findings_carry_the_line_of_their_node_or_edge():
    text = (
        "digraph P {\n"
        "  start [shape=Mdiamond]\n"
        '  work [prompt="x"]\n'
        '  lost [prompt="y"]\n'
        "  start -> work\n"
        "  work -> start\n"
        "}\n"
    )
    report = read_dot(text)
    assert report.plan is not None
    found = with_lines(validate(report.plan), report.plan, report.node_lines, report.edge_lines)
    assert [(d.rule, d.line) for d in found] == [
        ("terminal_node", None),
        ("reachability", 4),
        ("start_no_incoming", 6),
    ]
