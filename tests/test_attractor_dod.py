"""The specification's Definition of Done (§11.1-§11.11), one test per checkbox, in its order.

Each test is named after its section and quotes its checkbox; where waygraph
does something else by a documented choice (see the docstrings of
:mod:`waygraph.pipelines.runner` and :mod:`waygraph.pipelines.routing`), the
test asserts what waygraph does and says so. The parity matrix (§11.12) and
the smoke test (§11.13) are in ``test_attractor_dod_parity.py``.
"""

from __future__ import annotations

import json

import pytest

from tests.pipeline_helpers import Scripted, ok, plan_of, run, status
from waygraph.errors import PipelineValidationError, PlanFormatError
from waygraph.model import Plan
from waygraph.pipelines.checkpoint import Checkpoint
from waygraph.pipelines.handlers import (
    ExitHandler,
    HandlerRegistry,
    StartHandler,
    default_handlers,
)
from waygraph.pipelines.lint import Diagnostic, validate, validate_or_raise
from waygraph.pipelines.outcome import Outcome
from waygraph.pipelines.routing import select_edge
from waygraph.pipelines.run_folder import load_checkpoint
from waygraph.pipelines.stages import Backoff

TWO = """digraph two { start [shape=Mdiamond]; done [shape=Msquare]
    a [prompt="A"]; b [prompt="B"]
    start -> a -> b -> done }"""


def rules(plan: Plan) -> set[tuple[str, str]]:
    return {(d.rule, d.severity) for d in validate(plan)}


def raw_plan(nodes: dict, edges: list, start: str | None = "s") -> Plan:
    graph = {"nodes": nodes, "edges": edges} | ({"start": start} if start else {})
    return Plan.model_validate({"id": "p", "graph": graph})


# ---------------------------------------------------------------- §11.1 DOT parsing


def test_11_1_supported_subset():
    """Parser accepts the supported DOT subset (digraph with graph/node/edge attribute blocks)."""
    plan = plan_of("""digraph sub { graph [goal="g"]; node [shape=box]; edge [weight=2]
        start [shape=Mdiamond]; done [shape=Msquare]; a [prompt="x"]
        start -> a -> done }""")
    assert plan.id == "sub" and set(plan.graph.nodes) == {"start", "a", "done"}
    assert [(e.from_, e.to, e.weight) for e in plan.graph.edges] == [
        ("start", "a", 2.0),
        ("a", "done", 2.0),
    ]
    with pytest.raises(PlanFormatError):
        plan_of("graph undirected { a -- b }")


def test_11_1_graph_attributes():
    """Graph-level attributes (`goal`, `label`, `model_stylesheet`) are extracted correctly."""
    plan = plan_of("""digraph g { graph [goal="Ship it", label="Release",
        model_stylesheet="* { llm_model: m1; }"]
        start [shape=Mdiamond]; done [shape=Msquare]; start -> done }""")
    assert plan.goal == "Ship it" and plan.name == "Release"
    assert plan.attrs["model_stylesheet"] == "* { llm_model: m1; }"


def test_11_1_multiline_node_attributes():
    """Node attributes are parsed including multi-line attribute blocks."""
    plan = plan_of("""digraph g { start [shape=Mdiamond]; done [shape=Msquare]
        a [
            label="Build",
            prompt="Build the
thing",
            max_retries=3
        ]
        start -> a -> done }""")
    a = plan.graph.nodes["a"]
    assert (a.name, a.action, a.max_retries) == ("Build", "Build the\nthing", 3)


def test_11_1_edge_attributes():
    """Edge attributes (`label`, `condition`, `weight`) are parsed correctly."""
    plan = plan_of("""digraph g { start [shape=Mdiamond]; done [shape=Msquare]
        start -> done [label="Go", condition="outcome=success", weight=7] }""")
    (edge,) = plan.graph.edges
    assert (edge.label, edge.attrs["condition"], edge.weight) == ("Go", "outcome=success", 7.0)


def test_11_1_chained_edges():
    """Chained edges (`A -> B -> C`) produce individual edges for each pair."""
    plan = plan_of("""digraph g { start [shape=Mdiamond]; done [shape=Msquare]
        start -> a -> b -> done [label="x"] }""")
    pairs = [(e.from_, e.to, e.label) for e in plan.graph.edges]
    assert pairs == [("start", "a", "x"), ("a", "b", "x"), ("b", "done", "x")]


def test_11_1_default_blocks():
    """Node/edge default blocks (`node [...]`, `edge [...]`) apply to subsequent declarations."""
    plan = plan_of("""digraph g { start [shape=Mdiamond]; done [shape=Msquare]
        early
        node [max_retries=4]; edge [weight=9]
        late; other [max_retries=1]
        start -> early; early -> late -> other -> done }""")
    nodes = plan.graph.nodes
    assert (nodes["early"].max_retries, nodes["late"].max_retries) == (0, 4)
    assert nodes["other"].max_retries == 1  # an explicit attribute beats the default
    weights = {(e.from_, e.to): e.weight for e in plan.graph.edges}
    assert weights[("start", "early")] == 9.0 and weights[("other", "done")] == 9.0


def test_11_1_subgraphs_flattened():
    """Subgraph blocks are flattened (contents kept, wrapper removed)."""
    plan = plan_of("""digraph g { start [shape=Mdiamond]; done [shape=Msquare]
        subgraph cluster_work { label="Work"; node [timeout="60s"]; a; b; a -> b }
        start -> a; b -> done }""")
    assert set(plan.graph.nodes) == {"start", "a", "b", "done"}
    assert ("a", "b") in {(e.from_, e.to) for e in plan.graph.edges}
    assert plan.graph.nodes["a"].timeout == 60.0
    assert "cluster_work" not in plan.graph.nodes


def test_11_1_class_merges_stylesheet():
    """`class` attribute on nodes merges in attributes from the stylesheet."""
    plan = plan_of("""digraph g {
        model_stylesheet=".fast { llm_model: flash; reasoning_effort: low; }"
        start [shape=Mdiamond]; done [shape=Msquare]
        a [class="fast", prompt="x"]; b [prompt="y"]
        start -> a -> b -> done }""")
    assert plan.graph.nodes["a"].attrs["llm_model"] == "flash"
    assert plan.graph.nodes["a"].attrs["reasoning_effort"] == "low"
    assert "llm_model" not in (plan.graph.nodes["b"].attrs or {})


def test_11_1_quoted_and_unquoted_values():
    """Quoted and unquoted attribute values both work."""
    plan = plan_of("""digraph g { start [shape=Mdiamond]; done [shape=Msquare]
        a [max_retries=2, label=Build]; b [max_retries="2", label="Build"]
        start -> a -> b -> done }""")
    a, b = plan.graph.nodes["a"], plan.graph.nodes["b"]
    assert (a.max_retries, a.name) == (b.max_retries, b.name) == (2, "Build")


def test_11_1_comments_stripped():
    """Comments (`//` and `/* */`) are stripped before parsing."""
    plan = plan_of("""digraph g { // a line comment -> ghost
        /* a block comment
           ghost [shape=box] */
        start [shape=Mdiamond]; done [shape=Msquare]
        a [prompt="keep // this and /* this */"]
        start -> a -> done }""")
    assert set(plan.graph.nodes) == {"start", "a", "done"}
    assert plan.graph.nodes["a"].action == "keep // this and /* this */"


# ---------------------------------------------------------------- §11.2 validation


def test_11_2_exactly_one_start():
    """Exactly one start node (shape=Mdiamond or id matching `start`/`Start`) is required."""
    for implicit in ("start", "Start"):
        plan = plan_of(f"digraph g {{ {implicit}; done [shape=Msquare]; {implicit} -> done }}")
        assert plan.graph.start == implicit and not rules(plan)
    with pytest.raises(PlanFormatError, match="no start node"):
        plan_of("digraph g { a; done [shape=Msquare]; a -> done }")
    with pytest.raises(PlanFormatError, match="several start nodes"):
        plan_of("""digraph g { s1 [shape=Mdiamond]; s2 [shape=Mdiamond]
            done [shape=Msquare]; s1 -> done; s2 -> done }""")
    # A plan built otherwise (JSON, YAML) is caught by lint.
    assert ("start_node", "error") in rules(raw_plan({"e": {"type": "exit"}}, [], start=None))


def test_11_2_exactly_one_exit():
    """Exactly one exit node (shape=Msquare or id matching `exit`/`end`) is required."""
    for implicit in ("exit", "end"):
        plan = plan_of(f"digraph g {{ start [shape=Mdiamond]; {implicit}; start -> {implicit} }}")
        assert plan.graph.nodes[implicit].type == "exit" and not rules(plan)
    missing = plan_of("digraph g { start [shape=Mdiamond]; a [prompt=x]; start -> a }")
    assert ("terminal_node", "error") in rules(missing)
    two = plan_of("""digraph g { start [shape=Mdiamond]; d1 [shape=Msquare]; d2 [shape=Msquare]
        start -> d1; start -> d2 }""")
    assert ("terminal_node", "error") in rules(two)


def test_11_2_start_has_no_incoming_edges():
    """Start node has no incoming edges."""
    plan = plan_of("""digraph g { start [shape=Mdiamond]; done [shape=Msquare]; a [prompt=x]
        start -> a -> done; a -> start }""")
    (found,) = [d for d in validate(plan) if d.rule == "start_no_incoming"]
    assert (found.severity, found.node_id, found.edge) == ("error", "start", ("a", "start"))


def test_11_2_exit_has_no_outgoing_edges():
    """Exit node has no outgoing edges."""
    plan = plan_of("""digraph g { start [shape=Mdiamond]; done [shape=Msquare]; a [prompt=x]
        start -> a -> done; done -> a }""")
    (found,) = [d for d in validate(plan) if d.rule == "exit_no_outgoing"]
    assert (found.severity, found.node_id, found.edge) == ("error", "done", ("done", "a"))


def test_11_2_all_nodes_reachable():
    """All nodes are reachable from start (no orphans).

    waygraph reports an orphan as an error (§7.2 lists ``reachability`` as an error).
    """
    plan = plan_of("""digraph g { start [shape=Mdiamond]; done [shape=Msquare]
        orphan [prompt=x]; start -> done; orphan -> done }""")
    (found,) = [d for d in validate(plan) if d.rule == "reachability"]
    assert (found.severity, found.node_id) == ("error", "orphan")


def test_11_2_edges_reference_valid_nodes():
    """All edges reference valid node IDs.

    A DOT edge declares the nodes it names (as Graphviz does); a plan built
    otherwise can name a node that does not exist, and lint catches it.
    """
    plan = raw_plan(
        {"s": {"type": "start"}, "e": {"type": "exit"}},
        [{"from": "s", "to": "e"}, {"from": "s", "to": "ghost"}],
    )
    (found,) = [d for d in validate(plan) if d.rule == "edge_target_exists"]
    assert (found.severity, found.edge) == ("error", ("s", "ghost"))


def test_11_2_codergen_nodes_need_a_prompt():
    """Codergen nodes (shape=box) have non-empty `prompt` attribute (warning if missing)."""
    plan = plan_of("""digraph g { start [shape=Mdiamond]; done [shape=Msquare]
        bare [shape=box]; told [shape=box, prompt="Do it"]
        start -> bare -> told -> done }""")
    found = [(d.node_id, d.severity) for d in validate(plan) if d.rule == "prompt_on_llm_nodes"]
    assert found == [("bare", "warning")]


def test_11_2_conditions_parse():
    """Condition expressions on edges parse without errors.

    The DOT reader refuses a bad condition with where and why; lint's
    ``condition_syntax`` catches one in a plan built otherwise.
    """
    with pytest.raises(PlanFormatError, match="condition"):
        plan_of("""digraph g { start [shape=Mdiamond]; done [shape=Msquare]
            start -> done [condition="outcome>>x"] }""")
    plan = raw_plan(
        {"s": {"type": "start"}, "e": {"type": "exit"}},
        [{"from": "s", "to": "e", "attrs": {"condition": "outcome>>x"}}],
    )
    assert ("condition_syntax", "error") in rules(plan)
    good = plan_of("""digraph g { start [shape=Mdiamond]; done [shape=Msquare]
        start -> done [condition="outcome=success && context.x!=y"] }""")
    assert not rules(good)


def test_11_2_validate_or_raise():
    """`validate_or_raise()` throws on error-severity violations."""
    bad = plan_of("""digraph g { start [shape=Mdiamond]; done [shape=Msquare]
        orphan [prompt=x]; start -> done }""")
    with pytest.raises(PipelineValidationError) as raised:
        validate_or_raise(bad)
    assert "reachability" in {d.rule for d in raised.value.diagnostics}
    warned = plan_of("""digraph g { start [shape=Mdiamond]; done [shape=Msquare]
        bare [shape=box]; start -> bare -> done }""")
    assert [d.rule for d in validate_or_raise(warned)] == ["prompt_on_llm_nodes"]


def test_11_2_lint_results_are_complete():
    """Lint results include rule name, severity (error/warning), node/edge ID, and message."""
    plan = plan_of("""digraph g { start [shape=Mdiamond]; done [shape=Msquare]; a [prompt=x]
        start -> a -> done; a -> start }""")
    (found,) = validate(plan)
    assert isinstance(found, Diagnostic)
    assert (found.rule, found.severity, found.node_id, found.edge) == (
        "start_no_incoming",
        "error",
        "start",
        ("a", "start"),
    )
    assert found.message and "start_no_incoming" in str(found)


# ---------------------------------------------------------------- §11.3 execution engine


def test_11_3_starts_at_the_start_node(tmp_path):
    """Engine resolves the start node and begins execution there."""
    plan = plan_of("""digraph g { a [prompt=x]; begin [shape=Mdiamond]; done [shape=Msquare]
        a -> done; begin -> a }""")
    result = run(plan, tmp_path)
    assert result.path == ("begin", "a", "done")


def test_11_3_handler_by_shape(tmp_path):
    """Each node's handler is resolved via shape-to-handler-type mapping."""
    seen: list[tuple[str, str]] = []

    class Spy:
        def __init__(self, name: str) -> None:
            self.name = name

        def execute(self, node, context, plan, logs_root):
            seen.append((node.id, self.name))
            return Outcome(status="success")

    shapes = {"box": "codergen", "hexagon": "wait.human", "diamond": "conditional"}
    shapes |= {"parallelogram": "tool", "component": "parallel"}
    shapes |= {"tripleoctagon": "parallel.fan_in", "house": "stack.manager_loop"}
    for shape, name in shapes.items():
        plan = plan_of(f"""digraph g {{ start [shape=Mdiamond]; done [shape=Msquare]
            n [shape={shape}, prompt="p", tool_command="true"]; start -> n -> done }}""")
        registry = HandlerRegistry({name: Spy(name)}, default=Spy("default"))
        assert registry.resolve(plan.graph.nodes["n"]).name == name, shape
    registry = default_handlers()
    plan = plan_of("""digraph g { start [shape=Mdiamond]; done [shape=Msquare]
        start -> done }""")
    assert isinstance(registry.resolve(plan.graph.nodes["start"]), StartHandler)
    assert isinstance(registry.resolve(plan.graph.nodes["done"]), ExitHandler)


def test_11_3_handler_call_signature(tmp_path):
    """Handler is called with (node, context, graph, logs_root) and returns an Outcome."""
    calls: list[tuple] = []

    class Custom:
        def execute(self, node, context, plan, logs_root):
            calls.append((node.id, context.get("graph.goal"), plan.id, logs_root))
            return Outcome(status="success", context_updates={"custom.ran": node.id})

    dot = """digraph sig { goal="G"; start [shape=Mdiamond]; done [shape=Msquare]
        c [type="custom"]; start -> c -> done }"""
    result = run(dot, tmp_path, handlers={"custom": Custom()})
    assert calls == [("c", "G", "sig", tmp_path)]
    assert result.context["custom.ran"] == "c"


def test_11_3_status_json_written(tmp_path):
    """Outcome is written to `{logs_root}/{node_id}/status.json`."""
    backend = Scripted({"a": [status("partial_success", notes="mostly")]})
    run(TWO, tmp_path, backend=backend)
    written = json.loads((tmp_path / "a" / "status.json").read_text())
    assert written["outcome"] == "partial_success" and written["notes"] == "mostly"
    assert json.loads((tmp_path / "b" / "status.json").read_text())["outcome"] == "success"


def test_11_3_five_step_edge_selection():
    """Edge selection follows the 5-step priority: condition match -> preferred label ->
    suggested IDs -> weight -> lexical."""
    graph = plan_of("""digraph g { start [shape=Mdiamond]; done [shape=Msquare]
        n [prompt=x]; start -> n
        n -> c [condition="outcome=success", weight=0]
        n -> p [label="Pick me", weight=1]; n -> s [weight=2]
        n -> w [weight=5]; n -> b [weight=3]; n -> a [weight=3]
        a -> done; b -> done; c -> done; p -> done; s -> done; w -> done }""").graph

    def to(outcome: Outcome) -> str:
        return select_edge(graph, "n", outcome, {}).to

    assert to(Outcome(status="success", preferred_label="Pick me")) == "c"  # 1. condition
    assert to(Outcome(status="partial_success", preferred_label="pick ME")) == "p"  # 2. label
    assert to(Outcome(status="partial_success", suggested_next_ids=("s",))) == "s"  # 3. ids
    assert to(Outcome(status="partial_success")) == "w"  # 4. weight
    lexical = plan_of("""digraph g { start [shape=Mdiamond]; done [shape=Msquare]
        start -> zed; start -> alpha; start -> mid; zed -> done; alpha -> done; mid -> done }""")
    assert select_edge(lexical.graph, "start", Outcome(status="success"), {}).to == "alpha"  # 5.


def test_11_3_execution_loop(tmp_path):
    """Engine loops: execute node -> select edge -> advance to next node -> repeat."""
    dot = """digraph loop { start [shape=Mdiamond]; done [shape=Msquare]
        work [prompt=w]; check [shape=diamond]
        start -> work -> check
        check -> work [condition="context.round!=3"]
        check -> done [condition="context.round=3"] }"""
    backend = Scripted({"work": [ok(round="1"), ok(round="2"), ok(round="3")]})
    result = run(dot, tmp_path, backend=backend)
    assert result.path == ("start", "work", "check", "work", "check", "work", "check", "done")


def test_11_3_terminal_node_stops(tmp_path):
    """Terminal node (shape=Msquare) stops execution."""
    dot = """digraph g { start [shape=Mdiamond]; done [shape=Msquare]; a [prompt=a]
        start -> a -> done }"""
    backend = Scripted()
    result = run(dot, tmp_path, backend=backend)
    assert result.path[-1] == "done" and backend.calls == ["a"]
    assert load_checkpoint(tmp_path).next_node is None


GATES = """digraph gates {{ start [shape=Mdiamond]; done [shape=Msquare]
    g1 [goal_gate=true, prompt=x]; g2 [goal_gate=true, prompt=y]; plain [prompt=z]
    start -> g1 -> g2 -> plain -> done
    g1 -> g2 [condition="outcome=fail"]; g2 -> plain [condition="outcome=fail"] }}"""


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ({}, "success"),
        ({"g1": [status("partial_success")]}, "success"),
        ({"plain": [status("fail")]}, "fail"),  # not a gate, but a FAIL nowhere to go
        ({"g2": [status("fail")]}, "fail"),
    ],
)
def test_11_3_pipeline_outcome_from_goal_gates(tmp_path, script, expected):
    """Pipeline outcome is "success" if all goal_gate nodes reached `SUCCESS` or
    `PARTIAL_SUCCESS`, "fail" otherwise."""
    result = run(GATES.format(), tmp_path, backend=Scripted(script))
    assert result.status == expected


# ---------------------------------------------------------------- §11.4 goal gates

GATED = """digraph gated {{ start [shape=Mdiamond]; done [shape=Msquare]
    implement [goal_gate=true, prompt=x{gate}]; review [prompt=r]
    start -> implement
    implement -> review [condition="outcome=success"]
    implement -> review [condition="outcome=fail"]
    review -> done }}"""


def test_11_4_goal_gates_tracked(tmp_path):
    """Nodes with `goal_gate=true` are tracked throughout execution."""
    backend = Scripted({"implement": [status("fail")]})
    run(GATED.format(gate=""), tmp_path, backend=backend)
    checkpoint = load_checkpoint(tmp_path)
    assert checkpoint.node_outcomes["implement"].status == "fail"
    assert checkpoint.node_outcomes["review"].status == "success"


def test_11_4_exit_checks_every_gate(tmp_path):
    """Before allowing exit via a terminal node, the engine checks all goal gate nodes have
    status `SUCCESS` or `PARTIAL_SUCCESS`."""
    passed = run(GATED.format(gate=""), tmp_path / "a", backend=Scripted())
    assert passed.status == "success" and passed.path[-1] == "done"
    partial = Scripted({"implement": [status("partial_success")]})
    assert run(GATED.format(gate=""), tmp_path / "b", backend=partial).path[-1] == "done"
    failed = run(GATED.format(gate=""), tmp_path / "c", backend=Scripted({"implement": ["x"]}))
    assert failed.status == "success"  # text is a SUCCESS: the gate is met
    blocked = Scripted({"implement": [status("fail")]})
    result = run(GATED.format(gate=""), tmp_path / "d", backend=blocked)
    assert "done" not in result.path and result.status == "fail"


def test_11_4_unsatisfied_gate_goes_to_retry_target(tmp_path):
    """If any goal gate node has not succeeded, the engine routes to `retry_target`
    (if configured) instead of exiting."""
    backend = Scripted({"implement": [status("fail"), ok()]})
    result = run(GATED.format(gate=", retry_target=implement"), tmp_path, backend=backend)
    assert result.path == ("start", "implement", "review", "implement", "review", "done")
    assert result.status == "success"


def test_11_4_unsatisfied_gate_without_target_fails(tmp_path):
    """If no retry_target and goal gates unsatisfied, pipeline outcome is "fail"."""
    backend = Scripted({"implement": [status("fail")]})
    result = run(GATED.format(gate=""), tmp_path, backend=backend)
    assert result.status == "fail" and "implement" in result.outcome.failure_reason


# ---------------------------------------------------------------- §11.5 retry logic

RETRIED = """digraph r {{ start [shape=Mdiamond]; done [shape=Msquare]
    flaky [prompt=x, max_retries={n}]; failed [prompt=f]
    start -> flaky -> done; flaky -> failed [condition="outcome=fail"]; failed -> done }}"""


def test_11_5_retried_on_retry(tmp_path):
    """Nodes with `max_retries > 0` are retried on RETRY or FAIL outcomes.

    waygraph retries a RETRY outcome and a transient error (§3.6); a FAIL
    outcome is not retried but routed (§3.5, §3.7: a fail edge, else the
    retry target), as documented in :mod:`waygraph.pipelines.runner`.
    """
    backend = Scripted({"flaky": [status("retry"), status("retry"), ok()]})
    result = run(RETRIED.format(n=2), tmp_path / "a", backend=backend)
    assert backend.calls.count("flaky") == 3 and result.path == ("start", "flaky", "done")
    transient = Scripted({"flaky": [ConnectionError("reset"), ok()]})
    assert run(RETRIED.format(n=2), tmp_path / "b", backend=transient).status == "success"
    assert transient.calls.count("flaky") == 2
    failing = Scripted({"flaky": [status("fail"), ok()]})
    routed = run(RETRIED.format(n=2), tmp_path / "c", backend=failing)
    assert failing.calls.count("flaky") == 1 and routed.path == ("start", "flaky", "failed", "done")


def test_11_5_retry_count_respects_limit(tmp_path):
    """Retry count is tracked per-node and respects the configured limit."""
    saved: list[Checkpoint] = []
    backend = Scripted({"flaky": [status("retry")]})
    result = run(RETRIED.format(n=3), tmp_path, backend=backend, save_checkpoint=saved.append)
    assert backend.calls.count("flaky") == 4  # the first attempt and three retries
    assert result.path == ("start", "flaky", "failed", "done")
    after_flaky = next(c for c in saved if c.current_node == "flaky")
    assert after_flaky.node_retries == {"flaky": 3}


@pytest.mark.parametrize(
    ("backoff", "expected"),
    [
        (Backoff(initial_delay=0.5, factor=1.0, jitter=False), [0.5, 0.5, 0.5]),  # constant
        (Backoff(initial_delay=0.2, factor=2.0, jitter=False), [0.2, 0.4, 0.8]),  # exponential
        (Backoff(initial_delay=2.0, factor=3.0, max_delay=5, jitter=False), [2.0, 5.0, 5.0]),
    ],
)
def test_11_5_backoff_between_retries(tmp_path, backoff, expected):
    """Backoff between retries works (constant, linear, or exponential as configured).

    waygraph's backoff is ``initial_delay * factor**(attempt-1)``, capped: a
    factor of 1 is the specification's ``linear`` preset (a fixed delay, §3.6).
    """
    waits: list[float] = []
    backend = Scripted({"flaky": [status("retry")] * 3 + [ok()]})
    run(RETRIED.format(n=3), tmp_path, backend=backend, backoff=backoff, sleep=waits.append)
    assert waits == pytest.approx(expected)


def test_11_5_jitter(tmp_path):
    """Jitter is applied to backoff delays when configured."""
    waits: list[float] = []
    backend = Scripted({"flaky": [status("retry")] * 8 + [ok()]})
    backoff = Backoff(initial_delay=1.0, factor=1.0, jitter=True)
    run(RETRIED.format(n=8), tmp_path, backend=backend, backoff=backoff, sleep=waits.append)
    assert len(waits) == 8 and all(0.5 <= w <= 1.5 for w in waits)
    assert len(set(waits)) > 1  # jittered delays differ (a continuous draw)


def test_11_5_exhausted_outcome_routes(tmp_path):
    """After retry exhaustion, the node's final outcome is used for edge selection."""
    backend = Scripted({"flaky": [status("retry")]})
    result = run(RETRIED.format(n=1), tmp_path, backend=backend)
    assert result.path == ("start", "flaky", "failed", "done")
    assert json.loads((tmp_path / "flaky" / "status.json").read_text())["outcome"] == "fail"
    partial = """digraph r { start [shape=Mdiamond]; done [shape=Msquare]
        flaky [prompt=x, max_retries=1, allow_partial=true]; other [prompt=o]
        start -> flaky; flaky -> done [condition="outcome=partial_success"]
        flaky -> other [condition="outcome=fail"]; other -> done }"""
    allowed = run(partial, tmp_path / "p", backend=Scripted({"flaky": [status("retry")]}))
    assert allowed.path == ("start", "flaky", "done")
