"""The specification's Definition of Done, §11.11-§11.13: the transforms checkboxes, the
cross-feature parity matrix (a test per row, in its order) and the integration
smoke test against the shipped scripted chat server.

The checkboxes of §11.1-§11.10 are in ``test_attractor_dod.py`` and
``test_attractor_dod_handlers.py``.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.pipeline_helpers import Scripted, ok, plan_of, run, status
from waygraph.errors import PlanFormatError
from waygraph.model import Edge, Graph, Plan
from waygraph.navigator import Navigator
from waygraph.pipelines.checkpoint import Checkpoint
from waygraph.pipelines.context import Context
from waygraph.pipelines.handlers import default_handlers
from waygraph.pipelines.interviewers import QueueInterviewer
from waygraph.pipelines.lint import validate
from waygraph.pipelines.outcome import Outcome
from waygraph.pipelines.routing import handler_type, select_edge
from waygraph.pipelines.run_folder import load_checkpoint
from waygraph.pipelines.transforms import (
    Transform,
    VariableExpansionTransform,
    prepare_pipeline,
    with_nodes,
)
from waygraph.server import create_app

TWO = """digraph two { start [shape=Mdiamond]; done [shape=Msquare]
    a [prompt="A"]; b [prompt="B"]
    start -> a -> b -> done }"""
SPEC = Path(__file__).parent / "fixtures" / "attractor" / "spec"


def spec_plan(name: str) -> Plan:
    return plan_of((SPEC / name).read_text(encoding="utf-8"))


def errors(plan: Plan) -> dict[str, str | None]:
    return {d.rule: d.node_id for d in validate(plan) if d.severity == "error"}


# ---------------------------------------------------------------- §11.11 transforms


class Shout:
    """A custom transform: every prompt in capitals."""

    def apply(self, plan: Plan) -> Plan:
        nodes = {
            k: n.model_copy(update={"action": (n.action or "").upper() or None})
            for k, n in plan.graph.nodes.items()
        }
        return with_nodes(plan, nodes)


class Mark:
    """A custom transform: appends its mark to every prompt."""

    def __init__(self, mark: str) -> None:
        self.mark = mark

    def apply(self, plan: Plan) -> Plan:
        nodes = {
            k: n.model_copy(update={"action": f"{n.action}{self.mark}"}) if n.action else n
            for k, n in plan.graph.nodes.items()
        }
        return with_nodes(plan, nodes)


def test_11_11_transforms_between_parse_and_validate(tmp_path):
    """AST transforms can modify the Graph between parsing and validation."""

    class Wire:
        """Connects a node the file left unreachable, so lint accepts the plan."""

        def apply(self, plan: Plan) -> Plan:
            wire = Edge.model_validate({"from": "start", "to": "orphan"})
            g = plan.graph
            graph = Graph(start=g.start, nodes=g.nodes, edges=(*g.edges, wire))
            return plan.model_copy(update={"graph": graph})

    dot = """digraph w { start [shape=Mdiamond]; done [shape=Msquare]
        orphan [prompt=o]; start -> done; orphan -> done }"""
    assert "reachability" in {d.rule for d in prepare_pipeline(plan_of(dot))[1]}
    assert "reachability" not in {d.rule for d in prepare_pipeline(plan_of(dot), [Wire()])[1]}
    result = run(dot, tmp_path, transforms=[Wire()])
    assert result.status == "success"


def test_11_11_transform_interface():
    """Transform interface: `transform(graph) -> graph`.

    waygraph's transform is ``apply(plan) -> plan`` (§9.1's interface under
    waygraph's name for the graph it carries), returning a new plan.
    """
    plan = plan_of(TWO)
    shouted = Shout().apply(plan)
    assert isinstance(Shout(), Transform) and isinstance(shouted, Plan)
    assert shouted.graph.nodes["a"].action == "A" and plan.graph.nodes["a"].action == "A"
    lower = plan_of(TWO.replace('prompt="A"', 'prompt="quiet"'))
    assert Shout().apply(lower).graph.nodes["a"].action == "QUIET"
    assert lower.graph.nodes["a"].action == "quiet"  # the input plan is left as it was


def test_11_11_variable_expansion():
    """Built-in variable expansion transform replaces `$goal` in prompts."""
    plan = Plan.model_validate(
        {"id": "p", "goal": "ship v2", "graph": {"nodes": {"a": {"action": "Do $goal now"}}}}
    )
    assert VariableExpansionTransform().apply(plan).graph.nodes["a"].action == "Do ship v2 now"
    read = plan_of("""digraph g { goal="the goal"; start [shape=Mdiamond]; done [shape=Msquare]
        a [prompt="For: $goal"]; start -> a -> done }""")
    assert read.graph.nodes["a"].action == "For: the goal"


def test_11_11_custom_transforms_in_order(tmp_path):
    """Custom transforms can be registered and run in order."""
    plan = plan_of(TWO.replace('prompt="A"', 'prompt="a"'))
    first = prepare_pipeline(plan, [Shout(), Mark("!")])[0]
    then = prepare_pipeline(plan, [Mark("!"), Shout()])[0]
    assert (first.graph.nodes["a"].action, then.graph.nodes["a"].action) == ("A!", "A!")
    marks = prepare_pipeline(plan, [Mark("1"), Mark("2")])[0]
    assert marks.graph.nodes["a"].action == "a12"
    backend = Scripted()
    run(plan, tmp_path, backend=backend, transforms=[Mark("1"), Mark("2")])
    assert backend.prompts["a"] == "a12"


GATED_RUN = """digraph served { start [shape=Mdiamond]; done [shape=Msquare]
    ok [shape=hexagon, label="Ship it?"]; ship [prompt=s]; hold [prompt=h]
    start -> ok; ok -> hold [label="[H] Hold"]; ok -> ship [label="[S] Ship"]
    ship -> done; hold -> done }"""


def test_11_11_http_server_mode(tmp_path):
    """HTTP server mode (if implemented): POST /run starts pipeline, GET /status checks state,
    POST /answer submits human input.

    waygraph's HTTP API does not start runs (``waygraph run --store`` or
    ``run_pipeline(store=...)`` does); it lists them and their state under
    ``GET /api/sessions/<run>`` and takes a human gate's answer at ``POST
    /api/sessions/<run>/answer``, which the waiting run picks up.
    """
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    ended: list = []
    worker = threading.Thread(
        target=lambda: ended.append(run(GATED_RUN, tmp_path / "logs", store=store, run_id="web")),
    )
    worker.start()
    with (
        Navigator(store=store, strict=True) as nav,
        TestClient(create_app(nav), base_url="http://127.0.0.1") as client,
    ):
        waiting = None
        for _ in range(600):  # until the run has asked its question
            reply = client.get("/api/sessions/web")
            if reply.status_code == 200 and (waiting := reply.json().get("waiting")):
                break
            time.sleep(0.05)
        assert waiting is not None and waiting["node"] == "ok"
        assert waiting["choices"] == ["[H] Hold", "[S] Ship"]
        listed = client.get("/api/sessions").json()["sessions"]
        assert [(r["key"], r["kind"], r["status"]) for r in listed] == [
            ("web", "pipeline", "paused")
        ]
        answered = client.post("/api/sessions/web/answer", json={"answer": "ship", "by": "ann"})
        assert answered.status_code == 200 and answered.json()["error"] is None
        worker.join(timeout=120)
        state = client.get("/api/sessions/web").json()["run"]
        assert (state["status"], state["path"]) == ("completed", ["start", "ok", "ship", "done"])
    [result] = ended
    assert result.path == ("start", "ok", "ship", "done") and result.status == "success"


# ---------------------------------------------------------------- §11.12 parity matrix


def test_parity_parse_linear():
    """Parse a simple linear pipeline (start -> A -> B -> done)."""
    plan = plan_of("""digraph p { start [shape=Mdiamond]; done [shape=Msquare]
        A [prompt=a]; B [prompt=b]; start -> A -> B -> done }""")
    assert plan.graph.start == "start" and set(plan.graph.nodes) == {"start", "A", "B", "done"}
    edges = [(e.from_, e.to) for e in plan.graph.edges]
    assert edges == [("start", "A"), ("A", "B"), ("B", "done")]
    assert not validate(plan)


def test_parity_parse_graph_attributes():
    """Parse a pipeline with graph-level attributes (goal, label)."""
    plan = plan_of("""digraph p { graph [goal="Run tests and report", label="Simple"]
        start [shape=Mdiamond]; done [shape=Msquare]; start -> done }""")
    assert (plan.goal, plan.name) == ("Run tests and report", "Simple")
    assert spec_plan("2.13-simple-linear.dot").goal == "Run tests and report"


def test_parity_parse_multiline_node_attributes():
    """Parse multi-line node attributes."""
    gate = spec_plan("2.13-human-gate.dot").graph.nodes["review_gate"]
    assert (gate.name, handler_type(gate)) == ("Review Changes", "wait.human")


def test_parity_validate_missing_start():
    """Validate: missing start node -> error.

    The DOT reader refuses such a file; lint reports a plan built otherwise.
    """
    with pytest.raises(PlanFormatError, match="no start node"):
        plan_of("digraph p { a [prompt=a]; done [shape=Msquare]; a -> done }")
    plan = Plan.model_validate({"id": "p", "graph": {"nodes": {"e": {"type": "exit"}}}})
    assert "start_node" in errors(plan)


def test_parity_validate_missing_exit():
    """Validate: missing exit node -> error."""
    plan = plan_of("digraph p { start [shape=Mdiamond]; a [prompt=a]; start -> a }")
    assert "terminal_node" in errors(plan)


def test_parity_validate_orphan():
    """Validate: orphan node -> warning.

    waygraph reports an unreachable node as an error (§7.2's ``reachability``
    rule is an error; the matrix's "warning" disagrees with it): it is found,
    and a run refuses the plan.
    """
    plan = plan_of("""digraph p { start [shape=Mdiamond]; done [shape=Msquare]
        lost [prompt=l]; start -> done }""")
    assert errors(plan) == {"reachability": "lost"}


def test_parity_execute_linear(tmp_path):
    """Execute a linear 3-node pipeline end-to-end."""
    backend = Scripted()
    result = run(spec_plan("2.13-simple-linear.dot"), tmp_path, backend=backend)
    assert result.status == "success"
    assert result.path == ("start", "run_tests", "report", "exit")
    assert backend.calls == ["run_tests", "report"]


BRANCH = """digraph b { start [shape=Mdiamond]; done [shape=Msquare]
    work [prompt=w]; celebrate [prompt=c]; repair [prompt=r]
    start -> work
    work -> celebrate [condition="outcome=success"]
    work -> repair [condition="outcome=fail"]
    celebrate -> done; repair -> done }"""


def test_parity_execute_conditional_branching(tmp_path):
    """Execute with conditional branching (success/fail paths)."""
    good = run(BRANCH, tmp_path / "good", backend=Scripted())
    bad = run(BRANCH, tmp_path / "bad", backend=Scripted({"work": [status("fail")]}))
    assert good.path == ("start", "work", "celebrate", "done")
    assert bad.path == ("start", "work", "repair", "done")
    gate = Scripted({"validate": [ok(), ok()]})
    branching = run(spec_plan("2.13-branching.dot"), tmp_path / "spec", backend=gate)
    assert branching.path == ("start", "plan", "implement", "validate", "gate", "exit")


def test_parity_execute_retry_on_failure(tmp_path):
    """Execute with retry on failure (max_retries=2).

    The retried failures are RETRY outcomes and transient errors; a FAIL
    outcome is routed, not retried (§3.5, §3.7; see ``test_11_5_retried_on_retry``).
    """
    dot = """digraph r { start [shape=Mdiamond]; done [shape=Msquare]
        flaky [prompt=f, max_retries=2]; start -> flaky -> done }"""
    backend = Scripted({"flaky": [status("retry"), TimeoutError("slow"), ok()]})
    result = run(dot, tmp_path / "a", backend=backend)
    assert result.status == "success" and backend.calls == ["flaky"] * 3
    never = Scripted({"flaky": [status("retry")]})
    gave_up = run(dot, tmp_path / "b", backend=never)
    assert never.calls == ["flaky"] * 3 and gave_up.status == "fail"


GATE = """digraph g {{ start [shape=Mdiamond]; done [shape=Msquare]
    build [prompt=b, goal_gate=true{extra}]; test [prompt=t, goal_gate=true]
    start -> build; build -> test [condition="outcome=success"]
    build -> test [condition="outcome=fail"]; test -> done }}"""


def test_parity_goal_gate_blocks_exit(tmp_path):
    """Goal gate blocks exit when unsatisfied."""
    blocked = run(
        GATE.format(extra=""), tmp_path / "a", backend=Scripted({"build": [status("fail")]})
    )
    assert blocked.status == "fail" and "done" not in blocked.path
    again = Scripted({"build": [status("fail"), ok()]})
    redirected = run(GATE.format(extra=", retry_target=build"), tmp_path / "b", backend=again)
    assert redirected.path == ("start", "build", "test", "build", "test", "done")


def test_parity_goal_gate_allows_exit(tmp_path):
    """Goal gate allows exit when all satisfied."""
    backend = Scripted({"build": [status("partial_success")]})
    result = run(GATE.format(extra=""), tmp_path, backend=backend)
    assert result.status == "success" and result.path == ("start", "build", "test", "done")


def test_parity_wait_human_routes_on_selection(tmp_path):
    """Wait.human presents choices and routes on selection."""
    plan = spec_plan("2.13-human-gate.dot")
    answers = QueueInterviewer(["F", "approve"])
    result = run(plan, tmp_path, interviewer=answers)
    assert result.path == ("start", "review_gate", "fixes", "review_gate", "ship_it", "exit")
    assert result.context["human.gate.label"] == "[A] Approve"


CHOOSE = """digraph c { start [shape=Mdiamond]; done [shape=Msquare]
    n [prompt=n]; start -> n
    n -> heavy [weight=10]; n -> cond [condition="context.go=yes", weight=0]
    n -> light [weight=1]; n -> zulu; n -> alpha
    heavy -> done; cond -> done; light -> done; zulu -> done; alpha -> done }"""


def test_parity_condition_beats_weight():
    """Edge selection: condition match wins over weight."""
    graph = plan_of(CHOOSE).graph
    assert select_edge(graph, "n", Outcome(status="success"), {"go": "yes"}).to == "cond"


def test_parity_weight_breaks_ties():
    """Edge selection: weight breaks ties for unconditional edges."""
    graph = plan_of(CHOOSE).graph
    assert select_edge(graph, "n", Outcome(status="success"), {"go": "no"}).to == "heavy"


def test_parity_lexical_tiebreak():
    """Edge selection: lexical tiebreak as final fallback."""
    graph = plan_of(CHOOSE.replace("weight=10", "weight=0").replace("weight=1]", "weight=0]")).graph
    assert select_edge(graph, "n", Outcome(status="success"), {}).to == "alpha"


def test_parity_context_visible_to_next(tmp_path):
    """Context updates from one node are visible to the next."""
    dot = """digraph c { start [shape=Mdiamond]; done [shape=Msquare]
        a [prompt=a]; b [prompt=b]; start -> a -> b -> done }"""
    backend = Scripted({"a": [ok(**{"plan.files": "hello.py"})]})
    run(dot, tmp_path, backend=backend)
    assert backend.seen["b"]["plan.files"] == "hello.py"


def test_parity_checkpoint_resume_same_result(tmp_path):
    """Checkpoint save and resume produces same result."""
    dot = """digraph chain { start [shape=Mdiamond]; done [shape=Msquare]
        a [prompt=a]; b [prompt=b]; c [prompt=c]; start -> a -> b -> c -> done }"""
    script = {"a": [ok(x="1")], "b": [ok(y="2")], "c": [ok(z="3")]}
    saved: list[Checkpoint] = []
    whole = run(dot, tmp_path / "whole", backend=Scripted(script), save_checkpoint=saved.append)
    after_b = next(c for c in saved if c.current_node == "b")
    rest = Scripted(script)
    resumed = run(dot, tmp_path / "resumed", backend=rest, resume=after_b)
    assert rest.calls == ["c"]
    assert (resumed.status, resumed.path, resumed.completed_nodes) == (
        whole.status,
        whole.path,
        whole.completed_nodes,
    )
    assert {k: resumed.context[k] for k in "xyz"} == {k: whole.context[k] for k in "xyz"}


def test_parity_stylesheet_by_shape(tmp_path):
    """Stylesheet applies model override to nodes by shape."""
    dot = """digraph s { model_stylesheet="box { llm_model: big; } diamond { llm_model: small; }"
        start [shape=Mdiamond]; done [shape=Msquare]
        a [prompt=a]; d [shape=diamond]; start -> a -> d -> done }"""
    models: dict[str, str] = {}

    class Record:
        def run(self, node, prompt, context):
            models[node.id] = node.attrs["llm_model"]
            return "ok"

    run(dot, tmp_path, backend=Record())
    plan = plan_of(dot)
    assert models == {"a": "big"} and plan.graph.nodes["d"].attrs["llm_model"] == "small"
    assert "llm_model" not in (plan.graph.nodes["start"].attrs or {})


def test_parity_goal_expansion(tmp_path):
    """Prompt variable expansion ($goal) works."""
    dot = """digraph g { goal="Ship v2"; start [shape=Mdiamond]; done [shape=Msquare]
        a [prompt="Plan for: $goal"]; start -> a -> done }"""
    backend = Scripted()
    run(dot, tmp_path, backend=backend)
    assert backend.prompts["a"] == "Plan for: Ship v2"
    assert (tmp_path / "a" / "prompt.md").read_text() == "Plan for: Ship v2"


def test_parity_parallel_fan_out_fan_in(tmp_path):
    """Parallel fan-out and fan-in complete correctly."""
    dot = """digraph f { start [shape=Mdiamond]; done [shape=Msquare]
        fork [shape=component]; x [prompt=x]; y [prompt=y]
        join [shape=tripleoctagon]; start -> fork; fork -> x; fork -> y
        x -> join; y -> join; join -> done }"""
    backend = Scripted({"x": [ok(score=1)], "y": [ok(score=2)]})
    result = run(dot, tmp_path, backend=backend)
    assert result.status == "success" and result.path == ("start", "fork", "x", "y", "join", "done")
    assert result.context["parallel.success_count"] == 2
    assert result.context["parallel.fan_in.best_id"] == "y"


def test_parity_custom_handler(tmp_path):
    """Custom handler registration and execution works."""
    ran: list[str] = []

    class Notify:
        def execute(self, node, context, plan, logs_root):
            ran.append(node.id)
            return Outcome(status="success", preferred_label="Loud")

    registry = default_handlers()
    registry.register("notify", Notify())
    dot = """digraph n { start [shape=Mdiamond]; done [shape=Msquare]
        tell [type="notify"]; loud [prompt=l]; quiet [prompt=q]; start -> tell
        tell -> quiet; tell -> loud [label="Loud"]; loud -> done; quiet -> done }"""
    result = run(dot, tmp_path, handlers=registry)
    assert ran == ["tell"] and result.path == ("start", "tell", "loud", "done")


def test_parity_ten_plus_nodes(tmp_path):
    """Pipeline with 10+ nodes completes without errors."""
    steps = [f"s{i:02}" for i in range(12)]
    body = "; ".join(f'{s} [prompt="step {s}"]' for s in steps)
    dot = f"""digraph big {{ start [shape=Mdiamond]; done [shape=Msquare]; {body}
        start -> {" -> ".join(steps)} -> done }}"""
    result = run(dot, tmp_path, backend=Scripted())
    assert result.status == "success" and len(result.path) == 14
    assert result.completed_nodes == ("start", *steps, "done")
    assert all((tmp_path / s / "status.json").is_file() for s in steps)


# ---------------------------------------------------------------- §11.13 smoke test


def test_11_13_smoke(tmp_path):
    """Integration smoke test: the specification's pipeline, verbatim, with its codergen stages
    answered by an LLM over HTTP (the shipped scripted chat server, through waygraph's agent)."""
    pytest.importorskip("openai")
    from waygraph.pipelines.backends import AgentBackend
    from waygraph.testing import ScriptedChatServer

    graph = spec_plan("11.13-smoke-test.dot")
    assert graph.goal == "Create a hello world Python script"
    assert len(graph.graph.nodes) == 5 and len(graph.graph.edges) == 6
    assert not [d for d in validate(graph) if d.severity == "error"]
    replies = ["Plan: hello.py.", "print('hello world')", "Looks correct."]
    logs = tmp_path / "logs"
    with ScriptedChatServer(replies) as server:
        backend = AgentBackend(server.base_url, "scripted-model", tmp_path / "work", api_key="t")
        outcome = run(graph, logs, backend=backend, context=Context().snapshot())
    assert outcome.status == "success" and "implement" in outcome.completed_nodes
    for stage in ("plan", "implement", "review"):
        assert {p.name for p in (logs / stage).iterdir()} >= {
            "prompt.md",
            "response.md",
            "status.json",
        }
    assert (logs / "implement" / "response.md").read_text() == "print('hello world')"
    assert len(server.requests) == 3
    checkpoint = load_checkpoint(logs)
    assert checkpoint.node_outcomes["implement"].succeeded  # the goal gate is satisfied
    assert checkpoint.current_node == "done"
    assert {"plan", "implement", "review"} <= set(checkpoint.completed_nodes)
