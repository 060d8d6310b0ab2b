"""Attractor lint (specification §7, Definition of Done §11.2 and the parity matrix)."""

from __future__ import annotations

from typing import Any

import pytest

from waygraph.errors import InvalidPlanError, PipelineValidationError, PlanFormatError
from waygraph.model import Plan
from waygraph.pipelines.lint import (
    BUILT_IN_RULES,
    Diagnostic,
    FunctionRule,
    LintRule,
    TypeKnownRule,
    validate,
    validate_or_raise,
    with_lines,
)

SPEC_RULES = [
    "start_node",
    "terminal_node",
    "reachability",
    "edge_target_exists",
    "start_no_incoming",
    "exit_no_outgoing",
    "condition_syntax",
    "stylesheet_syntax",
    "type_known",
    "fidelity_valid",
    "retry_target_exists",
    "goal_gate_has_retry",
    "prompt_on_llm_nodes",
]


def pipeline(
    nodes: dict[str, dict[str, Any]] | None = None,
    edges: list[tuple[str, str] | dict[str, Any]] | None = None,
    **plan: Any,
) -> Plan:
    """start -> work -> exit, or the nodes and edges given (start is 'start')."""
    if nodes is None:
        nodes = {
            "start": {"type": "start"},
            "work": {"action": "Do the work"},
            "exit": {"type": "exit"},
        }
    if edges is None:
        edges = [("start", "work"), ("work", "exit")]
    edge_data = [e if isinstance(e, dict) else {"from": e[0], "to": e[1]} for e in edges]
    graph = {"start": plan.pop("start", "start"), "nodes": nodes, "edges": edge_data}
    return Plan.model_validate({"id": "p", "graph": graph, **plan})


def found(plan: Plan, **kwargs: Any) -> list[tuple[str, str, str | None]]:
    return [(d.rule, d.severity, d.node_id) for d in validate(plan, **kwargs)]


def test_a_well_formed_pipeline_has_no_diagnostics():
    assert validate(pipeline()) == []


def test_the_built_in_rules_are_the_specifications_in_its_order():
    assert [rule.name for rule in BUILT_IN_RULES] == SPEC_RULES
    assert all(isinstance(rule, LintRule) for rule in BUILT_IN_RULES)


# §11.2 "Exactly one start node is required"; parity "missing start node -> error"
def test_a_missing_start_node_is_an_error():
    plan = pipeline(
        {"work": {"action": "x"}, "exit": {"type": "exit"}}, [("work", "exit")], start=""
    )
    assert next(d for d in validate(plan) if d.rule == "start_node").severity == "error"


def test_two_start_nodes_are_an_error():
    nodes = {
        "start": {"type": "start"},
        "begin": {"type": "start"},
        "work": {"action": "x"},
        "exit": {"type": "exit"},
    }
    edges = [("start", "work"), ("begin", "work"), ("work", "exit")]
    assert ("start_node", "error", "begin") in found(pipeline(nodes, edges))


def test_a_start_that_is_not_a_node_is_an_error():
    diagnostics = validate(pipeline(start="nowhere"))
    assert [d.rule for d in diagnostics if d.severity == "error"][:1] == ["start_node"]
    assert "'nowhere'" in diagnostics[0].message


# §11.2 "Exactly one exit node is required"; parity "missing exit node -> error"
def test_a_missing_exit_node_is_an_error():
    plan = pipeline({"start": {"type": "start"}, "work": {"action": "x"}}, [("start", "work")])
    assert found(plan) == [("terminal_node", "error", None)]


def test_two_exit_nodes_are_an_error_as_the_specification_says_exactly_one():
    nodes = {
        "start": {"type": "start"},
        "work": {"action": "x"},
        "exit": {"type": "exit"},
        "end": {"type": "exit"},
    }
    edges = [("start", "work"), ("work", "exit"), ("work", "end")]
    assert found(pipeline(nodes, edges)) == [("terminal_node", "error", "end")]


# §11.2 "All nodes are reachable from start"; parity "orphan node" (reported; §7.2: error)
def test_an_orphan_node_is_reported_as_an_error():
    nodes = {
        "start": {"type": "start"},
        "work": {"action": "x"},
        "orphan": {"action": "y"},
        "exit": {"type": "exit"},
    }
    edges = [("start", "work"), ("work", "exit"), ("orphan", "exit")]
    diagnostics = validate(pipeline(nodes, edges))
    assert [(d.rule, d.severity, d.node_id) for d in diagnostics] == [
        ("reachability", "error", "orphan")
    ]
    assert diagnostics[0].fix


def test_a_node_behind_another_orphan_is_unreachable_too():
    nodes = {
        "start": {"type": "start"},
        "a": {"action": "x"},
        "b": {"action": "y"},
        "exit": {"type": "exit"},
    }
    edges = [("start", "exit"), ("a", "b"), ("b", "exit")]
    assert [n for r, _, n in found(pipeline(nodes, edges)) if r == "reachability"] == ["a", "b"]


# §11.2 "All edges reference valid node IDs"
def test_an_edge_to_a_missing_node_is_an_error_naming_the_edge():
    plan = pipeline(edges=[("start", "work"), ("work", "exit"), ("work", "exi")])
    diagnostic = next(d for d in validate(plan) if d.rule == "edge_target_exists")
    assert (diagnostic.severity, diagnostic.edge, diagnostic.field) == (
        "error",
        ("work", "exi"),
        "to",
    )
    assert "'exi' is not a node" in diagnostic.message


# §11.2 "Start node has no incoming edges"
def test_an_edge_into_the_start_node_is_an_error():
    plan = pipeline(edges=[("start", "work"), ("work", "start"), ("work", "exit")])
    diagnostic = next(d for d in validate(plan) if d.rule == "start_no_incoming")
    assert (diagnostic.severity, diagnostic.edge) == ("error", ("work", "start"))


# §11.2 "Exit node has no outgoing edges"
def test_an_edge_out_of_the_exit_node_is_an_error():
    plan = pipeline(edges=[("start", "work"), ("work", "exit"), ("exit", "work")])
    diagnostic = next(d for d in validate(plan) if d.rule == "exit_no_outgoing")
    assert (diagnostic.severity, diagnostic.edge, diagnostic.node_id) == (
        "error",
        ("exit", "work"),
        "exit",
    )


# §11.2 "Condition expressions on edges parse without errors"
def test_a_condition_that_does_not_parse_is_an_error_and_a_good_one_is_not():
    edges = [
        ("start", "work"),
        {"from": "work", "to": "exit", "attrs": {"condition": "outcome=success"}},
        {"from": "work", "to": "work", "attrs": {"condition": "outcome=>fail"}},
    ]
    diagnostics = [d for d in validate(pipeline(edges=edges)) if d.rule == "condition_syntax"]
    assert [(d.severity, d.edge, d.field) for d in diagnostics] == [
        ("error", ("work", "work"), "condition")
    ]
    assert "outcome=>fail" in diagnostics[0].message


def test_a_stylesheet_that_does_not_parse_is_an_error_saying_where():
    plan = pipeline(attrs={"model_stylesheet": "* { llm_model gpt; }"})
    (diagnostic,) = validate(plan)
    assert (diagnostic.rule, diagnostic.severity, diagnostic.field) == (
        "stylesheet_syntax",
        "error",
        "model_stylesheet",
    )
    assert "rule 1, character 14" in diagnostic.message


def test_a_stylesheet_that_parses_is_fine():
    assert validate(pipeline(attrs={"model_stylesheet": "* { llm_model: gpt; }"})) == []


def test_an_unknown_handler_type_is_a_warning_unless_a_runner_knows_it():
    nodes = {
        "start": {"type": "start"},
        "work": {"action": "x", "handler": "deploy"},
        "exit": {"type": "exit"},
    }
    plan = pipeline(nodes)
    assert found(plan) == [("type_known", "warning", "work")]
    assert found(plan, known_types=["deploy"]) == []
    assert TypeKnownRule(frozenset({"deploy"})).apply(plan) == []


@pytest.mark.parametrize(
    "handler",
    [
        "codergen",
        "wait.human",
        "conditional",
        "tool",
        "parallel",
        "parallel.fan_in",
        "stack.manager_loop",
    ],
)
def test_every_built_in_handler_type_is_known(handler: str):
    nodes = {
        "start": {"type": "start"},
        "work": {"action": "x", "handler": handler},
        "exit": {"type": "exit"},
    }
    assert [d for d in validate(pipeline(nodes)) if d.rule == "type_known"] == []


def test_fidelity_values_outside_the_modes_are_warnings_wherever_they_are():
    nodes = {
        "start": {"type": "start"},
        "work": {"action": "x", "attrs": {"fidelity": "summary:huge"}},
        "exit": {"type": "exit"},
    }
    edges = [
        {"from": "start", "to": "work", "attrs": {"fidelity": "compact"}},
        {"from": "work", "to": "exit", "attrs": {"fidelity": "most"}},
    ]
    plan = pipeline(nodes, edges, attrs={"default_fidelity": "fuller"})
    diagnostics = validate(plan)
    assert [(d.rule, d.severity, d.node_id, d.edge, d.field) for d in diagnostics] == [
        ("fidelity_valid", "warning", None, None, "default_fidelity"),
        ("fidelity_valid", "warning", "work", None, "fidelity"),
        ("fidelity_valid", "warning", None, ("work", "exit"), "fidelity"),
    ]


@pytest.mark.parametrize(
    "mode", ["full", "truncate", "compact", "summary:low", "summary:medium", "summary:high"]
)
def test_each_fidelity_mode_is_valid(mode: str):
    assert validate(pipeline(attrs={"default_fidelity": mode})) == []


def test_retry_targets_that_are_not_nodes_are_warnings():
    nodes = {
        "start": {"type": "start"},
        "work": {"action": "x", "retry_target": "wrok", "fallback_retry_target": "start"},
        "exit": {"type": "exit"},
    }
    plan = pipeline(nodes, attrs={"fallback_retry_target": "gone"})
    diagnostics = [d for d in validate(plan) if d.rule == "retry_target_exists"]
    assert [(d.severity, d.node_id, d.field) for d in diagnostics] == [
        ("warning", None, "fallback_retry_target"),
        ("warning", "work", "retry_target"),
    ]


def test_a_goal_gate_without_a_retry_target_is_a_warning():
    nodes = {
        "start": {"type": "start"},
        "work": {"action": "x", "goal_gate": True},
        "exit": {"type": "exit"},
    }
    assert found(pipeline(nodes)) == [("goal_gate_has_retry", "warning", "work")]


def test_a_goal_gate_is_satisfied_by_its_own_or_the_graphs_retry_target():
    gate = {"action": "x", "goal_gate": True}
    own = {"start": {"type": "start"}, "work": {**gate, "retry_target": "work"}}
    own["exit"] = {"type": "exit"}
    assert validate(pipeline(own)) == []
    graph_level = {"start": {"type": "start"}, "work": gate, "exit": {"type": "exit"}}
    assert validate(pipeline(graph_level, attrs={"retry_target": "work"})) == []


# §11.2 "Codergen nodes have non-empty prompt attribute (warning if missing)"
def test_an_llm_stage_without_prompt_or_label_is_a_warning():
    nodes = {
        "start": {"type": "start"},
        "work": {},
        "labelled": {"name": "Review the code"},
        "exit": {"type": "exit"},
    }
    edges = [("start", "work"), ("work", "labelled"), ("labelled", "exit")]
    assert found(pipeline(nodes, edges)) == [("prompt_on_llm_nodes", "warning", "work")]


def test_nodes_of_other_handlers_need_no_prompt():
    nodes = {
        "start": {"type": "start"},
        "run": {"handler": "tool", "command": "make test"},
        "exit": {"type": "exit"},
    }
    assert validate(pipeline(nodes, [("start", "run"), ("run", "exit")])) == []


# §11.2 "validate_or_raise() throws on error-severity violations"
def test_validate_or_raise_raises_with_every_diagnostic_on_an_error():
    plan = pipeline(edges=[("start", "work"), ("work", "exit"), ("work", "gone")])
    with pytest.raises(PipelineValidationError) as caught:
        validate_or_raise(plan)
    err = caught.value
    assert [d.rule for d in err.diagnostics] == ["edge_target_exists"]
    assert "1 lint error" in str(err) and "edge_target_exists" in str(err)
    assert isinstance(err, PlanFormatError) and isinstance(err, ValueError)
    assert not isinstance(err, InvalidPlanError)
    assert err.located(file="p.dot").diagnostics == err.diagnostics


def test_validate_or_raise_returns_warnings_without_raising():
    nodes = {"start": {"type": "start"}, "work": {}, "exit": {"type": "exit"}}
    assert [d.rule for d in validate_or_raise(pipeline(nodes))] == ["prompt_on_llm_nodes"]


# §11.2 "Lint results include rule name, severity, node/edge ID, and message"; §7.4 custom rules
def test_custom_rules_run_after_the_built_in_ones():
    class NeedsGoal:
        name = "goal_set"

        def apply(self, plan: Plan) -> list[Diagnostic]:
            return [] if plan.goal else [Diagnostic(self.name, "info", "the graph has no goal")]

    plan = pipeline({"start": {"type": "start"}, "work": {}, "exit": {"type": "exit"}})
    ends_with = FunctionRule(
        "count", lambda p: [Diagnostic("count", "info", str(len(p.graph.nodes)))]
    )
    rules = [d.rule for d in validate(plan, [NeedsGoal(), ends_with])]
    assert rules == ["prompt_on_llm_nodes", "goal_set", "count"]
    assert validate(pipeline(goal="ship"), [NeedsGoal()]) == []


def test_a_diagnostic_reads_as_one_line_with_everything_it_knows():
    diagnostic = Diagnostic(
        "condition_syntax",
        "error",
        "bad",
        edge=("a", "b"),
        fix="fix it",
        line=4,
        field="condition",
    )
    assert str(diagnostic) == (
        "error [condition_syntax] line 4, edge a -> b, field 'condition': bad (fix: fix it)"
    )


def test_with_lines_fills_edge_then_node_lines():
    plan = pipeline(edges=[("start", "work"), ("work", "exit"), ("work", "gone")])
    diagnostics = [*validate(plan), Diagnostic("x", "info", "m", node_id="work")]
    located = with_lines(diagnostics, plan, {"work": 2}, (5, 6, 7))
    assert [d.line for d in located] == [7, 2]
    assert with_lines([Diagnostic("x", "info", "m", line=1)], plan, {}) == [
        Diagnostic("x", "info", "m", line=1)
    ]


def test_validate_does_not_change_the_plan():
    plan = pipeline(edges=[("start", "work"), ("work", "exit"), ("exit", "work")])
    before = plan.model_dump()
    validate(plan)
    assert plan.model_dump() == before


# ------------------------------------------------------------- waygraph check FILE.dot

LINTED_DOT = """digraph p {
  start [shape=Mdiamond]
  work [prompt="Do it", fidelity=everything]
  lost [prompt="Never run"]
  start -> work
  work -> start [condition="outcome=fail"]
}
"""


def test_waygraph_check_reports_the_lint_of_a_dot_file_by_rule_severity_and_line(tmp_path):
    import json

    from typer.testing import CliRunner

    from waygraph.cli import app

    path = tmp_path / "p.dot"
    path.write_text(LINTED_DOT, encoding="utf-8")
    result = CliRunner().invoke(app, ["check", str(path), "--json"])
    assert result.exit_code == 1
    problems = json.loads(result.stdout)["problems"]
    lint = {p["code"]: p for p in problems if p["code"] in SPEC_RULES}
    assert {code: p["level"] for code, p in lint.items()} == {
        "terminal_node": "error",
        "reachability": "error",
        "start_no_incoming": "error",
        "fidelity_valid": "warning",
    }
    assert lint["reachability"]["node"] == "lost"
    assert lint["reachability"]["message"].startswith("line 4: ")
    assert lint["start_no_incoming"]["edge"] == "work -> start"
    assert lint["start_no_incoming"]["message"].startswith("line 6: ")
    assert "fix:" in lint["terminal_node"]["message"]

    shown = CliRunner().invoke(app, ["check", str(path)])
    assert "reachability" in shown.stdout and "terminal_node" in shown.stdout


# ------------------------------------------------------------- from DOT text (§11.2)


def dot_rules(text: str) -> list[tuple[str, str, str | None]]:
    from waygraph.formats.dot import parse_dot

    return found(parse_dot(text))


def test_start_and_exit_by_id_are_recognised_without_shapes():
    assert dot_rules('digraph Q { start; a [prompt="x"]; end; start -> a -> end }') == []
    assert dot_rules('digraph Q { Start; a [prompt="x"]; exit; Start -> a -> exit }') == []


def test_a_dot_pipeline_without_an_exit_is_an_error():
    text = 'digraph Q { s [shape=Mdiamond]; a [prompt="x"]; s -> a }'
    assert dot_rules(text) == [("terminal_node", "error", None)]


def test_a_dot_pipeline_with_two_exits_is_an_error():
    text = (
        'digraph Q { s [shape=Mdiamond]; a [prompt="x"]; e1 [shape=Msquare]; '
        "e2 [shape=Msquare]; s -> a -> e1; a -> e2 }"
    )
    assert dot_rules(text) == [("terminal_node", "error", "e2")]


def test_a_dot_pipeline_without_a_start_is_refused_by_the_reader_before_lint():
    from waygraph.formats.dot import parse_dot

    with pytest.raises(PlanFormatError, match="no start node"):
        parse_dot('digraph Q { a [prompt="x"]; e [shape=Msquare]; a -> e }')
