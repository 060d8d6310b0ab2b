"""Guided runs of Attractor pipelines: routing, context and goal gates (issue 34, part 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from waygraph import Navigator, engine, load_library, render
from waygraph.check import check_plan
from waygraph.engine.run_context import MAX_CONTEXT_KEYS, merge
from waygraph.formats.dot import parse_dot
from waygraph.model import Graph, Plan
from waygraph.verify_types.evidence import MAX_CONTEXT_LINE, context_updates_of

FIXTURE = Path(__file__).parent / "fixtures" / "dot" / "attractor_pipeline.dot"
PASS = {"tests_passed": True}


def attractor(plan: Plan) -> Plan:
    return plan.model_copy(update={"routing": "attractor"})


def step(plan: Plan, run: engine.Run, passed: bool, turn: int, **evidence) -> engine.Result:
    """One tool result at the current node, judged ``passed``."""
    found = engine.Evidence(**evidence) if evidence else None
    return engine.observe(plan, run, lambda verify: passed, turn=turn, evidence=found)


def types(events) -> list[str]:
    return [e["type"] for e in events]


# ---------------------------------------------------------------- ties


def _tied() -> Plan:
    return (
        Graph.builder()
        .task("t")
        .exit("zeta")
        .exit("alpha")
        .edge("start", "t")
        .edge("t", "zeta")
        .edge("t", "alpha")
        .plan("tied")
    )


def test_ties_go_to_file_order_in_waygraph_plans_and_to_the_first_target_in_attractor_ones():
    plan = _tied()
    assert plan.routing == "waygraph"
    run, _ = engine.start(plan, run_id="r", turn=1)
    assert step(plan, run, True, 2).run.current_node == "zeta"
    plan = attractor(plan)
    run, _ = engine.start(plan, run_id="r", turn=1)
    assert step(plan, run, True, 2).run.current_node == "alpha"


def test_a_dot_file_routes_as_attractor_unless_it_says_waygraph():
    text = """digraph p { start [shape=Mdiamond]; t [prompt="Work"]
      zeta [shape=Msquare]; alpha [shape=Msquare]
      start -> t; t -> zeta; t -> alpha }"""
    plan = parse_dot(text)
    assert plan.routing == "attractor"
    run, _ = engine.start(plan, run_id="r", turn=1)
    assert step(plan, run, True, 2).run.current_node == "alpha"
    own = parse_dot(text.replace("digraph p {", "digraph p { routing=waygraph;"))
    assert own.routing == "waygraph"
    run, _ = engine.start(own, run_id="r", turn=1)
    assert step(own, run, True, 2).run.current_node == "zeta"


def test_a_human_gate_keeps_its_choices_in_declaration_order_under_attractor():
    plan = parse_dot("""digraph p { start [shape=Mdiamond]; done [shape=Msquare]
      back [shape=Msquare]; ask [shape=hexagon, label="Ship?"]
      start -> ask; ask -> done [label="Yes"]; ask -> back [label="No"] }""")
    run, events = engine.start(plan, run_id="r", turn=1)
    asked = next(e for e in events if e["type"] == "human_asked")
    assert asked["choices"] == ["Yes", "No"]
    assert engine.hear(plan, run, turn=2, text="No").run.current_node == "back"


def test_routing_round_trips_through_dot_and_json():
    from waygraph.formats.dot import plan_to_dot
    from waygraph.formats.json_library import plan_to_data

    plan = _tied()
    assert "routing=waygraph" in plan_to_dot(plan) and "routing" not in plan_to_data(plan)
    assert parse_dot(plan_to_dot(plan)) == plan
    spec = attractor(plan)
    assert "routing" not in plan_to_dot(spec) and plan_to_data(spec)["routing"] == "attractor"
    assert parse_dot(plan_to_dot(spec)) == spec
    assert Plan.model_validate({"id": "tied", **plan_to_data(spec)}) == spec


def test_check_judges_ties_as_the_engine_breaks_them():
    plan = attractor(_tied())
    (shadowed,) = [p for p in check_plan(plan) if p.code == "shadowed-edge"]
    assert shadowed.edge == "t -> zeta (always)"
    (shadowed,) = [p for p in check_plan(_tied()) if p.code == "shadowed-edge"]
    assert shadowed.edge == "t -> alpha (always)"


# ---------------------------------------------------------------- failures


def _failing(*, fail_edge: bool = True, max_retries: int = 2, **task) -> Plan:
    """start -> t -> done; t's failure goes to fix (with ``fail_edge``); r -> done."""
    builder = Graph.builder().task("t", max_retries=max_retries, **task).task("fix").task("r")
    builder = builder.exit("done").edge("start", "t").edge("t", "done", "on_success")
    if fail_edge:
        builder = builder.edge("t", "fix", "on_fail")
    return builder.edge("fix", "t").edge("r", "done").plan("failing")


def test_a_fail_edge_is_taken_at_once_under_attractor_and_after_the_retries_under_waygraph():
    plan = _failing()
    run, _ = engine.start(plan, run_id="r", turn=1)
    run, events = step(plan, run, False, 2)
    assert (run.current_node, types(events)[-1]) == ("t", "retry_triggered")
    plan = attractor(plan)
    run, _ = engine.start(plan, run_id="r", turn=1)
    run, events = step(plan, run, False, 2)
    assert run.current_node == "fix"
    assert "retry_triggered" not in types(events)


def _no_fail_edge(**task) -> Plan:
    return _failing(fail_edge=False, max_retries=1, **task)


def test_without_a_fail_edge_the_node_is_retried_then_goes_to_its_retry_target():
    plan = attractor(_no_fail_edge(retry_target="r"))
    run, _ = engine.start(plan, run_id="r", turn=1)
    run, events = step(plan, run, False, 2)
    assert (run.current_node, types(events)[-1]) == ("t", "retry_triggered")
    run, events = step(plan, run, False, 3)
    routed = next(e for e in events if e["type"] == "retry_routed")
    assert (routed["to"], routed["via"], run.current_node) == ("r", "retry_target", "r")


def test_the_fallback_retry_target_counts_when_there_is_no_retry_target():
    plan = attractor(_no_fail_edge(fallback_retry_target="r", retry_target="gone"))
    run, _ = engine.start(plan, run_id="r", turn=1)
    run, _ = step(plan, run, False, 2)
    assert step(plan, run, False, 3).run.current_node == "r"


def test_with_no_route_for_the_failure_the_pipeline_fails_naming_why():
    plan = attractor(_no_fail_edge())
    run, _ = engine.start(plan, run_id="r", turn=1)
    run, _ = step(plan, run, False, 2)
    run, _ = step(plan, run, False, 3)
    assert run.status == "escalated"
    assert run.reason.startswith("the pipeline failed: 't' failed all its 2 attempt(s)")
    # A waygraph plan's exhausted node with no route out stays (and says so), as before.
    plan = _no_fail_edge()
    run, _ = engine.start(plan, run_id="r", turn=1)
    run, _ = step(plan, run, False, 2)
    run, events = step(plan, run, False, 3)
    assert run.status == "running" and types(events)[-1] == "stall"


# ---------------------------------------------------------------- goal gates


def _gated(max_redirects: int | None = None, **gate) -> Plan:
    attrs = {} if max_redirects is None else {"max_goal_gate_redirects": str(max_redirects)}
    return (
        Graph.builder()
        .task("a", goal_gate=True, max_retries=0, **gate)
        .task("b")
        .exit("done")
        .edge("start", "a")
        # Success or failure, the run goes on to b (fresh: "always" counts no attempt).
        .edge("a", "b", "always")
        .edge("b", "done")
        .plan("gated", attrs=attrs or None)
    )


def test_an_unsatisfied_goal_gate_sends_the_run_back_to_its_retry_target():
    plan = _gated(retry_target="a")
    run, _ = engine.start(plan, run_id="r", turn=1)
    run, _ = step(plan, run, False, 2)
    assert run.current_node == "b"
    run, events = step(plan, run, True, 3)
    unsatisfied = next(e for e in events if e["type"] == "goal_gate_unsatisfied")
    assert (unsatisfied["gate"], unsatisfied["to"], run.current_node) == ("a", "a", "a")
    assert run.status == "running" and run.redirects == 1
    run, _ = step(plan, run, True, 4)
    run, _ = step(plan, run, True, 5)
    assert run.status == "completed"


def test_a_goal_gate_with_nowhere_to_go_back_to_fails_the_run():
    plan = _gated()
    run, _ = engine.start(plan, run_id="r", turn=1)
    run, _ = step(plan, run, False, 2)
    run, events = step(plan, run, True, 3)
    assert run.status == "failed" and "plan_failed" in types(events)
    assert "goal gate 'a' did not succeed" in run.reason
    assert render.context(plan, run).startswith("Plan failed: goal gate 'a'")


def test_goal_gate_redirects_are_bounded():
    plan = _gated(max_redirects=1, retry_target="a")
    run, _ = engine.start(plan, run_id="r", turn=1)
    for turn in range(2, 6):
        run, _ = step(plan, run, turn % 2 == 1, turn)  # a fails, b passes
        if run.finished:
            break
    assert run.status == "failed"
    assert "sent back 1 times already" in run.reason


def test_the_graph_retry_target_serves_a_gate_without_its_own():
    plan = _gated().model_copy(update={"attrs": {"retry_target": "a"}})
    run, _ = engine.start(plan, run_id="r", turn=1)
    run, _ = step(plan, run, False, 2)
    assert step(plan, run, True, 3).run.current_node == "a"


# ---------------------------------------------------------------- context


def test_context_updates_are_read_from_a_json_last_line():
    assert context_updates_of('ok\n{"context_updates": {"a": 1}}\n\n') == {"a": 1}
    assert context_updates_of('{"context": {"b": [1]}}') == {"b": [1]}
    assert context_updates_of('{"context_updates": {"a": 1}}\nexit=0\n') == {"a": 1}
    for ignored in (
        '{"context_updates": {"a": 1}}\nmore text',
        '{"context_updates": [1, 2]}',
        '{"context_updates": {"a": 1}',
        "[1, 2]",
        '{"other": {"a": 1}}',
        "",
        "\n\n",
        "[" * 100_000 + "{",
        '{"context": {"a": "' + "x" * MAX_CONTEXT_LINE + '"}}',
    ):
        assert context_updates_of(ignored) is None, ignored[:40]


def test_the_context_is_bounded_and_refusals_are_recorded():
    merged = merge({}, {f"k{i}": i for i in range(MAX_CONTEXT_KEYS + 5)})
    assert len(merged.context) == MAX_CONTEXT_KEYS and len(merged.refused) == 5
    assert "256 keys" in (merged.reason or "")
    big = merge({}, {"a": "x" * 40_000, "b": "y" * 40_000})
    assert big.keys == ["a"] and big.refused == ["b"]
    # Replacing a key gives back what it held.
    assert merge(big.context, {"a": "small", "b": "y" * 40_000}).refused == []
    plan = attractor(_tied())
    run, _ = engine.start(plan, run_id="r", turn=1)
    updates = {f"k{i}": i for i in range(MAX_CONTEXT_KEYS + 1)}
    run, events = step(plan, run, True, 2, context_updates=updates)
    refused = next(e for e in events if e["type"] == "context_refused")
    assert refused["keys"] == [f"k{MAX_CONTEXT_KEYS}"] and "256 keys" in refused["reason"]
    updated = next(e for e in events if e["type"] == "context_updated")
    assert updated["count"] == MAX_CONTEXT_KEYS and len(updated["keys"]) == 20


def test_a_tool_result_merges_its_context_updates_through_the_navigator():
    nav = Navigator(load_library(FIXTURE), store="memory://", strict=True)
    nav.start("s", "implement_feature")
    guidance = nav.turn("s", tool_output='{"context": {"n": 2}}', exit_code=0)
    assert guidance.run["context"]["n"] == 2
    event = next(e for e in guidance.events if e.type == "context_updated")
    assert (event.node, event["keys"]) == ("plan", ["n"])
    # A reply the model wrote sets nothing.
    guidance = nav.turn("s", tool_output='{"context": {"m": 1}}', source="model")
    assert "m" not in guidance.run["context"]


def test_the_graph_goal_is_in_the_context_of_attractor_runs_only():
    plan = load_library(FIXTURE)["implement_feature"]
    run, _ = engine.start(plan, run_id="r", turn=1)
    assert dict(run.context) == {"graph.goal": "Implement and validate a feature"}
    own = plan.model_copy(update={"routing": "waygraph"})
    assert dict(engine.start(own, run_id="r", turn=1).run.context) == {}


def _ok_when(value: bool = True) -> dict:
    return {"type": "compare", "field": "context.ok", "op": "==", "value": value}


def test_a_task_edge_whose_when_reads_the_context_is_taken_only_while_it_holds():
    plan = (
        Graph.builder()
        .task("t")
        .exit("x")
        .exit("y")
        .edge("start", "t")
        .edge("t", "x", "on_success", when=_ok_when())
        .edge("t", "y", "on_success")
        .plan("p")
    )
    run, _ = engine.start(plan, run_id="r", turn=1)
    assert step(plan, run, True, 2).run.current_node == "y"
    assert step(plan, run, True, 2, context_updates={"ok": True}).run.current_node == "x"
    assert check_plan(plan) == [p for p in check_plan(plan) if p.code != "when-ignored"]


def test_the_fixture_gate_waits_until_the_context_says_the_tests_passed():
    plan = load_library(FIXTURE)["implement_feature"]
    run, _ = engine.start(plan, run_id="r", turn=1)
    for turn in (2, 3):
        run, _ = step(plan, run, True, turn)
    assert run.current_node == "validate"
    # Passed, but nothing said the tests passed: no condition holds and the
    # gate's only plain edge is for a failure, so the run waits at the gate.
    waiting, events = step(plan, run, True, 4)
    assert (waiting.current_node, types(events)[-1]) == ("gate", "stall")
    done = step(plan, run, True, 4, context_updates=PASS).run
    assert (done.status, done.current_node) == ("completed", "exit")


def test_a_decision_routes_on_the_context_and_the_outcome_its_condition_names():
    plan = parse_dot("""digraph p { start [shape=Mdiamond]; exit [shape=Msquare]
      out [shape=Msquare]; work [prompt="Run the tests"]; gate [shape=diamond]
      start -> work; work -> gate; work -> gate [condition="outcome=fail"]
      gate -> exit [condition="outcome=success && context.ok=true"]
      gate -> work [condition="outcome=fail", label="Fix"]
      gate -> out [condition="outcome=fail && context.attempts >= 3"] }""")
    run, _ = engine.start(plan, run_id="r", turn=1)
    # A failure the context says nothing about takes the plain "Fix" edge.
    assert step(plan, run, False, 2).run.current_node == "work"
    # A success does not take an outcome=fail edge, however the context reads.
    run2 = step(plan, run, True, 2, context_updates={"attempts": 3, "ok": True}).run
    assert run2.current_node == "exit"
    run3 = step(plan, run, False, 2, context_updates={"attempts": 3, "ok": True}).run
    assert run3.current_node == "out"


def test_a_decision_reads_the_label_a_person_chose():
    plan = (
        Graph.builder()
        .human("ask", prompt="Go?")
        .decision("route")
        .exit("yes")
        .exit("no")
        .edge("start", "ask")
        .edge("ask", "route", label="Go")
        .edge(
            "route",
            "yes",
            when={"type": "compare", "field": "preferred_label", "op": "==", "value": "Go"},
        )
        .edge("route", "no", "on_fail")
        .plan("p")
    )
    run, _ = engine.start(plan, run_id="r", turn=1)
    heard = engine.hear(plan, run, turn=2, text="Go", judge=lambda verify: True).run
    assert (heard.status, heard.current_node) == ("completed", "yes")


# ---------------------------------------------------------------- guidance and check


def test_guidance_shows_the_tool_command_and_the_model_settings():
    plan = parse_dot("""digraph p { start [shape=Mdiamond]; done [shape=Msquare]
      lint [shape=parallelogram, tool_command="ruff check ."]
      code [prompt="Write it", llm_model="claude-opus-4", llm_provider=anthropic,
            reasoning_effort=high]
      start -> lint -> code -> done }""")
    run, _ = engine.start(plan, run_id="r", turn=1)
    text = render.context(plan, run)
    assert "Run: ruff check ." in text
    assert "Its exit status decides: 0 passes, non-zero fails." in text
    assert "On fail (exhausted) → the pipeline fails" in text
    run, _ = step(plan, run, True, 2)
    text = render.context(plan, run)
    assert "Model: claude-opus-4 (anthropic), reasoning effort high" in text
    assert "Context set" not in text  # no condition reads the context


def test_guidance_names_the_context_keys_when_conditions_read_them():
    plan = load_library(FIXTURE)["implement_feature"]
    run, _ = engine.start(plan, run_id="r", turn=1)
    text = render.context(plan, run)
    assert "Context set: graph.goal." in text and '{"context_updates": ' in text


def test_check_warns_when_only_the_context_leads_to_the_exit():
    plan = load_library(FIXTURE)["implement_feature"]
    found = [p for p in check_plan(plan) if p.code == "context-only-exit"]
    assert [(p.level, p.edge) for p in found] == [("warning", "gate -> exit (on_success)")]
    assert "context_updates" in found[0].message
    assert not [p for p in check_plan(plan) if p.level == "error"]


# ---------------------------------------------------------------- the fixture


def test_the_fixture_pipeline_reaches_its_exit_in_a_guided_run():
    nav = Navigator(load_library(FIXTURE), store="memory://", strict=True)
    guidance = nav.start("s", "implement_feature")
    assert guidance.run["current_node"] == "plan"
    outputs = ["planned", "written", '5 passed\n{"context_updates": {"tests_passed": true}}']
    for i, output in enumerate(outputs):
        guidance = nav.turn("s", tool_output=output, exit_code=0, observation_id=f"o{i}")
    assert (guidance.run["status"], guidance.run["current_node"]) == ("completed", "exit")
    assert guidance.run["context"]["tests_passed"] is True
    assert guidance.run["path"][-2:] == ["gate", "exit"]


# ---------------------------------------------------------------- stores


def _store_urls(tmp_path: Path) -> list[str]:
    return [f"sqlite:///{tmp_path / 'wg.db'}", f"file://{tmp_path / 'files'}"]


def _drive_then_reload(first: Navigator, second: Navigator, session: str) -> dict:
    first.start(session, "implement_feature")
    first.turn(session, tool_output="planned", exit_code=0, observation_id="o1")
    first.turn(session, tool_output=json.dumps({"context": PASS}), exit_code=0, observation_id="o2")
    # The second navigator reads the run back: the gate routes on what the first stored.
    return second.turn(session, tool_output="5 passed", exit_code=0, observation_id="o3").run


@pytest.mark.parametrize("backend", ["memory", "sqlite", "file"])
def test_the_context_round_trips_through_every_store(backend: str, tmp_path: Path):
    library = load_library(FIXTURE)
    if backend == "memory":
        first = Navigator(library, store="memory://", strict=True)
        second = Navigator(library, store=first.store, strict=True)
    else:
        url = dict(zip(["sqlite", "file"], _store_urls(tmp_path), strict=True))[backend]
        first = Navigator(library, store=url, strict=True)
        second = Navigator(library, store=url, strict=True)
    record = _drive_then_reload(first, second, "s")
    assert (record["status"], record["context"]["tests_passed"]) == ("completed", True)
    assert second.state("s")["context"]["graph.goal"] == "Implement and validate a feature"


@pytest.mark.services
def test_the_context_round_trips_through_postgres(postgres_url: str):
    library = load_library(FIXTURE)
    first = Navigator(library, store=postgres_url, strict=True)
    second = Navigator(library, store=postgres_url, strict=True)
    session = f"ctx-{id(first)}"
    record = _drive_then_reload(first, second, session)
    assert (record["status"], record["context"]["tests_passed"]) == ("completed", True)


def test_records_written_before_the_context_load_with_none():
    plan = load_library(FIXTURE)["implement_feature"]
    run, _ = engine.start(plan, run_id="r", turn=1)
    record = engine.to_record(plan, run)
    assert record["context"] == {"graph.goal": "Implement and validate a feature"}
    assert engine.from_record(json.loads(json.dumps(record))).context == run.context
    del record["context"], record["redirects"]
    old = engine.from_record(record)
    assert dict(old.context) == {} and old.redirects == 0
