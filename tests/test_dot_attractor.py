"""Attractor pipelines read as their authors wrote them: every Appendix A attribute typed,
Graphviz styling ignored, unknown attributes kept with a warning, every problem reported."""

from __future__ import annotations

import pytest

from waygraph.errors import PlanFormatError
from waygraph.formats.dot import parse_dot, plan_to_dot, read_dot
from waygraph.pipelines.routing import handler_type

SHAPES = """
digraph shapes {
    rankdir=LR; fontname="Helvetica"; bgcolor=white
    goal="Ship the feature"
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    plan  [prompt="Plan: $goal", llm_model="gpt-4.1-mini", reasoning_effort=high,
           fillcolor=lightblue, style=filled]
    ask   [shape=hexagon, label="Approve?", human.default_choice=ship]
    run   [shape=parallelogram, tool_command="make test", timeout="20m"]
    fan   [shape=component, max_parallel=2, join_policy=wait_all]
    join  [shape=tripleoctagon]
    boss  [shape=house, manager.poll_interval=45s, manager.max_cycles=3]
    gate  [shape=diamond]
    start -> plan -> ask
    ask -> run [label="[S] Ship"]
    ask -> plan [label="[R] Redo", color=red]
    run -> fan -> join -> boss -> gate
    gate -> exit [condition="outcome=success"]
}
"""


def test_every_shape_names_its_handler_and_graphviz_styling_is_ignored():
    report = read_dot(SHAPES)
    assert report.errors == () and report.warnings == ()
    plan = report.plan
    assert plan is not None
    got = {nid: (n.type, handler_type(n)) for nid, n in plan.graph.nodes.items()}
    assert got == {
        "start": ("start", "start"),
        "exit": ("exit", "exit"),
        "plan": ("task", "codergen"),
        "ask": ("human", "wait.human"),
        "run": ("task", "tool"),
        "fan": ("task", "parallel"),
        "join": ("task", "parallel.fan_in"),
        "boss": ("task", "stack.manager_loop"),
        "gate": ("decision", "conditional"),
    }
    nodes = plan.graph.nodes
    assert nodes["plan"].action == "Plan: Ship the feature"
    assert nodes["plan"].attrs == {"llm_model": "gpt-4.1-mini", "reasoning_effort": "high"}
    assert nodes["run"].command == "make test" and nodes["run"].timeout == 1200.0
    assert nodes["ask"].attrs == {"human.default_choice": "ship"}
    assert nodes["boss"].attrs == {"manager.poll_interval": "45s", "manager.max_cycles": "3"}
    assert plan.attrs is None  # rankdir, fontname, bgcolor: drawing only
    assert all(e.attrs is None for e in plan.graph.edges if e.from_ == "ask")


@pytest.mark.parametrize(
    ("declared", "kind", "handler"),
    [
        ("wait.human", "human", "wait.human"),
        ("conditional", "decision", "conditional"),
        ("codergen", "task", "codergen"),
        ("tool", "task", "tool"),
        ("parallel", "task", "parallel"),
        ("parallel.fan_in", "task", "parallel.fan_in"),
        ("stack.manager_loop", "task", "stack.manager_loop"),
        ("my_reviewer", "task", "my_reviewer"),
        ("checkpoint", "checkpoint", "checkpoint"),
    ],
)
def test_type_names_a_handler_and_wins_over_the_shape(declared, kind, handler):
    plan = parse_dot(
        f'digraph p {{ s [shape=Mdiamond]; n [shape=box, type="{declared}"]; e [shape=Msquare]; '
        "s -> n -> e }"
    )
    node = plan.graph.nodes["n"]
    assert (node.type, handler_type(node)) == (kind, handler)


def test_the_reserved_ids_are_the_start_and_exit_when_no_shape_says():
    plan = parse_dot("digraph p { start -> work -> end }")
    nodes = plan.graph.nodes
    assert (plan.graph.start, nodes["start"].type, nodes["end"].type) == ("start", "start", "exit")
    # A shape elsewhere decides; the ids are then ordinary nodes.
    plan = parse_dot("digraph p { s [shape=Mdiamond]; x [shape=Msquare]; s -> start -> x }")
    assert plan.graph.nodes["start"].type == "task"


def test_attractor_attributes_are_typed():
    plan = parse_dot(
        """digraph p {
        graph [goal="g", retry_target=plan, default_max_retries=2, max_goal_gate_redirects=4,
               default_fidelity=compact, model_stylesheet=""]
        start [shape=Mdiamond]; done [shape=Msquare]
        plan [goal_gate=true, retry_target=plan, fallback_retry_target=start,
              allow_partial=yes, auto_status=true, timeout=250ms, fidelity="summary:high",
              thread_id=loop-a, class="code,critical"]
        other [max_retries=0]
        start -> plan -> other -> done [loop_restart=false, fidelity=full]
    }"""
    )
    node = plan.graph.nodes["plan"]
    assert node.goal_gate and node.allow_partial and node.max_retries == 2
    assert (node.retry_target, node.fallback_retry_target, node.timeout) == ("plan", "start", 0.25)
    assert node.attrs == {
        "auto_status": "true",
        "fidelity": "summary:high",
        "thread_id": "loop-a",
        "class": "code,critical",
    }
    assert plan.graph.nodes["other"].max_retries == 0
    assert plan.attrs == {
        "retry_target": "plan",
        "max_goal_gate_redirects": "4",
        "default_fidelity": "compact",
        "model_stylesheet": "",
    }
    assert plan.graph.edges[-1].attrs == {"loop_restart": "false", "fidelity": "full"}


def test_every_bad_attribute_is_reported_with_its_line_and_name():
    report = read_dot(
        """digraph p {
        start [shape=Mdiamond]
        a [goal_gate=maybe]
        b [timeout=soon, max_retries=many]
        a -> b [weight=heavy, loop_restart=perhaps]
        max_goal_gate_redirects=lots
    }""",
        file="p.dot",
    )
    assert report.plan is None
    found = sorted((e.line, e.node or e.edge or "", e.field) for e in report.errors)
    assert found == [
        (3, "a", "goal_gate"),
        (4, "b", "max_retries"),
        (4, "b", "timeout"),
        (5, "a -> b", "loop_restart"),
        (5, "a -> b", "weight"),
        (6, "", "max_goal_gate_redirects"),
    ]
    assert all(str(e).startswith("p.dot:") for e in report.errors)
    with pytest.raises(PlanFormatError, match=r"and 5 more problems: waygraph check lists all"):
        parse_dot(
            "digraph p { start [shape=Mdiamond]\n a [goal_gate=maybe]\n b [timeout=soon, "
            "max_retries=many]\n a -> b [weight=heavy, loop_restart=perhaps]\n "
            "max_goal_gate_redirects=lots }"
        )


def test_unknown_attributes_are_kept_with_a_warning_naming_them():
    report = read_dot(
        "digraph p { start [shape=Mdiamond, reviewer=alice]; e [shape=star]; start -> e "
        "[priority=high]; owner=team }"
    )
    plan = report.plan
    assert plan is not None
    assert plan.graph.nodes["start"].attrs == {"reviewer": "alice"}
    assert plan.graph.nodes["e"].attrs == {"shape": "star"}
    assert plan.graph.edges[0].attrs == {"priority": "high"}
    assert plan.attrs == {"owner": "team"}
    named = {(w.node or w.edge or "graph", w.field) for w in report.warnings}
    assert named == {
        ("start", "reviewer"),
        ("e", "shape"),
        ("start -> e", "priority"),
        ("graph", "owner"),
    }
    assert "codergen" in next(str(w) for w in report.warnings if w.field == "shape")


def test_goal_is_expanded_in_prompts_and_its_absence_is_a_warning():
    plan = parse_dot(
        'digraph p { goal="add login"; s [shape=Mdiamond]; h [shape=hexagon, '
        'prompt="Ship $goal?"]; s -> h -> w; w [prompt="Do $goal, then $goal"] }'
    )
    assert plan.graph.nodes["w"].action == "Do add login, then add login"
    assert plan.graph.nodes["h"].prompt == "Ship add login?"
    report = read_dot('digraph p { s [shape=Mdiamond]; s -> w; w [prompt="Do $goal"] }')
    assert report.plan is not None and report.plan.graph.nodes["w"].action == "Do $goal"
    assert [(w.node, w.field) for w in report.warnings] == [("w", "prompt")]


@pytest.mark.parametrize(
    ("text", "condition", "when"),
    [
        ("outcome=success", "on_success", None),
        ("outcome=partial_success", "on_success", None),
        ("outcome!=success", "on_fail", None),
        ("outcome=fail && context.tests_passed=false", "on_fail", "context.tests_passed"),
        ("preferred_label=[A] Approve", "always", "preferred_label"),
        ("context.flag", "always", "context.flag"),
        ("outcome=skipped", "always", "outcome"),
    ],
)
def test_conditions_keep_the_specification_text_and_read_for_guided_runs(text, condition, when):
    plan = parse_dot(f'digraph p {{ s [shape=Mdiamond]; s -> a; a -> b [condition="{text}"] }}')
    edge = plan.graph.edges[1]
    assert edge.attrs == {"condition": text}
    assert edge.condition == condition
    assert (edge.when.field if edge.when else None) == when


def test_an_empty_condition_is_unconditional():
    plan = parse_dot('digraph p { s [shape=Mdiamond]; s -> a [condition=""] }')
    edge = plan.graph.edges[0]
    assert (edge.condition, edge.when, edge.attrs) == ("always", None, None)


def test_pipelines_write_back_to_equal_plans():
    plan = parse_dot(SHAPES)
    again = parse_dot(plan_to_dot(plan))
    assert again == plan
    custom = parse_dot(
        "digraph p { s [shape=Mdiamond]; n [type=my_reviewer, shape=box, goal_gate=true, "
        'retry_target=s, timeout=90]; x [shape=star]; s -> n -> x [condition="outcome=fail '
        '&& context.k=v", thread_id=t1] }'
    )
    assert parse_dot(plan_to_dot(custom)) == custom


def test_the_model_stylesheet_sets_what_nodes_leave_unset():
    # The specification's §8.6 example, with a shape rule and an explicit override.
    plan = parse_dot(
        """digraph Pipeline {
        graph [
            goal="Implement feature X",
            model_stylesheet="
                * { llm_model: claude-sonnet-4-5; llm_provider: anthropic; }
                box { reasoning_effort: medium; }
                .code { llm_model: claude-opus-4-6; llm_provider: anthropic; }
                #critical_review { llm_model: gpt-5.2; llm_provider: openai;
                                   reasoning_effort: high; }
            "
        ]
        start [shape=Mdiamond]
        exit  [shape=Msquare]
        plan            [label="Plan", class="planning"]
        implement       [label="Implement", class="code", llm_provider=local]
        critical_review [label="Critical Review", class="code"]
        start -> plan -> implement -> critical_review -> exit
    }"""
    )
    model = {nid: (n.attrs or {}).get("llm_model") for nid, n in plan.graph.nodes.items()}
    assert model["plan"] == "claude-sonnet-4-5"
    assert model["implement"] == "claude-opus-4-6"
    assert model["critical_review"] == "gpt-5.2"
    nodes = plan.graph.nodes
    assert nodes["implement"].attrs["llm_provider"] == "local"  # explicit wins
    assert nodes["plan"].attrs["reasoning_effort"] == "medium"  # by shape
    assert nodes["critical_review"].attrs["reasoning_effort"] == "high"  # by id
    assert nodes["start"].attrs == {"llm_model": "claude-sonnet-4-5", "llm_provider": "anthropic"}


def test_a_bad_stylesheet_is_an_error_on_its_line():
    report = read_dot('digraph p {\n s [shape=Mdiamond]\n model_stylesheet="* { llm_model }"\n}')
    assert [(e.line, e.field) for e in report.errors] == [(3, "model_stylesheet")]


def test_a_number_with_a_point_is_still_a_graph_or_node_id():
    # Dotted names are attribute names; 0.0 and 1.5 are ids DOT allows (the writer
    # leaves them bare, so refusing them broke the round trip).
    plan = parse_dot("digraph 0.0 { s [shape=Mdiamond]; s -> 1.5 }")
    assert plan.id == "0.0" and "1.5" in plan.graph.nodes
    assert parse_dot(plan_to_dot(plan)) == plan
