"""The pure engine: the seeds' acceptance scenarios and properties of DESIGN.md's rules."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.strategies import graph_plans, outcomes
from waygraph import engine, load_library, render
from waygraph.model import Graph, Plan
from waygraph.verify import Observation, check, judge_for

COMPAT = Path(__file__).parent / "fixtures" / "compat"
GRAPH_LIB = load_library(COMPAT / "agent-zero-graph-library-v2.json", validate=False)
LINEAR_LIB = load_library(COMPAT / "agent-zero-linear-library-v1.json", validate=False)


def judge_output(output: str, exit_code: int | None = None):
    obs = Observation(output=output, exit_code=exit_code)
    return lambda verify: check(verify, obs)


PASS = judge_output("ok")
EMPTY = judge_output("")


def feed(plan: Plan, run: engine.Run, judges, first_turn: int = 2):
    for i, judge in enumerate(judges):
        run, _ = engine.observe(plan, run, judge, turn=first_turn + i)
    return run


# ------------------------------------------------------------------ linear plans


def test_linear_step_advances_on_any_output():
    plan = LINEAR_LIB["bugfix_workflow"]
    run, events = engine.start(plan, run_id="r", turn=1)
    assert run.mode == "linear" and run.current_node == "step_1"
    run, events = engine.observe(plan, run, judge_output("Traceback: boom"), turn=2)
    assert run.current_node == "step_2"
    assert [e["type"] for e in events] == ["node_verified", "edge_followed", "node_entered"]
    record = engine.to_record(plan, run)
    assert record["current_step"] == 1 and record["total_steps"] == 5
    assert record["steps_completed"] == [0]


def test_linear_block_keeps_the_step_across_three_failures():
    plan = LINEAR_LIB["bugfix_workflow"]  # step 4 "Test the fix": block, not contains "error"
    run, _ = engine.start(plan, run_id="r", turn=1)
    run = feed(plan, run, [PASS, PASS, PASS])
    assert run.current_node == "step_4"
    for turn in range(3):
        run, events = engine.observe(plan, run, judge_output("Error: still broken"), turn=10 + turn)
        assert run.current_node == "step_4"
        assert events[-1]["type"] == "retry_triggered"
    assert run.status == "running"
    assert run.visited["step_4"] == {"outcome": "fail", "attempts": 4}
    text = render.context(plan, run)
    # Document 000's words for a blocked step: "Step X failed verification".
    assert "Step 4 failed verification" in text and "blocked" in text
    assert "Step 4/5: Test the fix << CURRENT (attempt 4)" in text
    assert "Execute Step 4 now. Do not skip ahead." in text
    run, _ = engine.observe(plan, run, judge_output("all fixed"), turn=20)
    assert run.current_node == "step_5"


def _linear(on_fail: str, required: bool = True) -> Plan:
    return Plan.model_validate(
        {
            "id": "lin",
            "steps": [
                {"name": "one", "verify": {"type": "output_contains", "value": "ok"}},
                {
                    "name": "two",
                    "verify": {"type": "output_contains", "value": "ok"},
                    "on_fail": on_fail,
                    "required": required,
                },
                {"name": "three"},
            ],
        }
    )


@pytest.mark.parametrize(
    ("on_fail", "required", "node", "status", "outcome"),
    [
        ("warn", True, "step_2", "running", "fail"),
        ("block", True, "step_2", "running", "fail"),
        ("skip", True, "step_3", "running", "fail"),
        ("warn", False, "step_3", "running", "fail"),
        ("abort", True, "aborted", "aborted", "fail"),
    ],
)
def test_linear_on_fail_actions(on_fail, required, node, status, outcome):
    plan = _linear(on_fail, required)
    run, _ = engine.start(plan, run_id="r", turn=1)
    run = feed(plan, run, [PASS, judge_output("nope")])
    assert run.current_node == node
    assert run.status == status
    assert run.visited["step_2"]["outcome"] == outcome
    if status == "aborted":
        assert run.events[-1]["type"] == "plan_aborted"
        # Document 000's message names the step whose failure aborted the plan.
        assert render.context(plan, run).startswith("Plan aborted due to step two failure")


def test_linear_plan_runs_to_completion_like_the_seed():
    plan = LINEAR_LIB["git_feature_branch"]
    run, _ = engine.start(plan, run_id="r", turn=1)
    outputs = {
        "step_1": "On branch main",
        "step_2": "Switched to a new branch 'feature'",
        "step_3": "edited",
        "step_4": "1 file changed, 2 insertions",
        "step_5": "ok",
        "step_6": "ok",
    }
    turn = 2
    while run.status == "running":
        node = plan.graph.nodes[run.current_node]
        out = outputs.get(node.id, "ok")
        if node.verify and node.verify.type == "output_contains":
            out = f"{out} {node.verify.value}"
        if node.verify and node.verify.type == "manual":
            # "Make changes" is a manual check: a person confirms it, no tool result does.
            run, _ = engine.observe(plan, run, judge_output(out), turn=turn)
            assert run.current_node == node.id and run.awaiting == "user"
            said = Observation(output="yes, the changes are made", source="human")
            run, _ = engine.hear(plan, run, turn=turn, text=said.output, judge=judge_for(said))
        else:
            run, _ = engine.observe(plan, run, judge_output(out), turn=turn)
        turn += 1
        assert turn < 50
    assert run.status == "completed"
    record = engine.to_record(plan, run)
    assert record["current_step"] == record["total_steps"] == len(record["steps_completed"])


# ------------------------------------------------------------------ graph plans


def test_graph_plan_activates_in_graph_mode():
    plan = GRAPH_LIB["bugfix_workflow"]
    run, events = engine.start(plan, run_id="r", turn=1, triggers=["fix bug"])
    assert run.mode == "graph"
    assert run.current_node == "reproduce"
    assert events[0] == {
        "type": "plan_activated",
        "turn": 1,
        "node": "start",
        "plan_id": "bugfix_workflow",
        "plan": "bugfix_workflow",
        "triggers": ["fix bug"],
    }


def test_reproduce_empty_output_goes_to_gather_context_and_back_then_escalates():
    plan = GRAPH_LIB["bugfix_workflow"]
    run, _ = engine.start(plan, run_id="r", turn=1)
    run, _ = engine.observe(plan, run, EMPTY, turn=2)
    assert run.current_node == "gather_context"
    run, _ = engine.observe(plan, run, PASS, turn=3)
    assert run.current_node == "reproduce"
    run, _ = engine.observe(plan, run, EMPTY, turn=4)
    assert run.status == "escalated"
    assert run.current_node == "escalate_stuck"
    assert [n for n in run.path if n in ("reproduce", "gather_context")] == [
        "reproduce",
        "gather_context",
        "reproduce",
        "gather_context",
    ]


def _to_fix(plan: Plan) -> engine.Run:
    run, _ = engine.start(plan, run_id="r", turn=1)
    run = feed(plan, run, [PASS, PASS])  # reproduce, isolate
    assert run.current_node == "fix"
    return run


def test_fix_failing_verification_retries_then_escalates_with_pace_level():
    plan = GRAPH_LIB["bugfix_workflow"]
    run = _to_fix(plan)
    verified = 0
    turn = 10
    while run.status == "running":
        run, events = engine.observe(plan, run, EMPTY, turn=turn)
        verified += sum(1 for e in events if e["type"] == "node_verified")
        turn += 1
    assert verified == 3  # 1 + max_retries
    assert run.status == "escalated"
    assert run.pace_level == "contingent"
    assert run.reason == "Fix attempts exhausted without passing tests"
    text = render.context(plan, run)
    assert text.startswith("Plan escalated: Fix attempts exhausted without passing tests")
    record = engine.to_record(plan, run)
    assert len(record["report"]) == 5 and record["report"][-1]["type"] == "plan_escalated"


def test_fix_test_loop_runs_fix_at_most_one_plus_max_retries_times():
    plan = GRAPH_LIB["bugfix_workflow"]
    run = _to_fix(plan)
    fix_runs = 0
    turn = 10
    while run.status == "running":
        judge = PASS if run.current_node == "fix" else judge_output("1 error")
        if run.current_node == "fix":
            fix_runs += 1
        run, _ = engine.observe(plan, run, judge, turn=turn)
        turn += 1
    assert fix_runs == 3
    assert run.status == "escalated" and run.current_node == "escalate_stuck"
    assert run.visited["fix"]["attempts"] == 3


def test_every_node_to_exit_leaves_all_visited_success():
    plan = GRAPH_LIB["bugfix_workflow"]
    run, _ = engine.start(plan, run_id="r", turn=1)
    run = feed(plan, run, [PASS] * 5)
    assert run.status == "completed"
    assert run.current_node == "done"
    assert all(v["outcome"] == "success" for v in run.visited.values())
    assert set(run.visited) == {"reproduce", "isolate", "fix", "test", "verify_no_regression"}
    assert render.context(plan, run).startswith("Plan completed:")


def test_staleness_expires_after_the_plans_limit():
    plan = GRAPH_LIB["bugfix_workflow"]  # stale_after_turns 15
    run, _ = engine.start(plan, run_id="r", turn=1)
    for turn in range(2, 17):
        run, events = engine.advance(plan, run, turn=turn)
        assert run.status == "running" and not events
    run, events = engine.advance(plan, run, turn=17)
    assert run.status == "expired"
    assert events[0]["type"] == "plan_expired"
    assert render.context(plan, run).startswith("Plan expired:")


def test_a_transition_resets_staleness():
    plan = GRAPH_LIB["bugfix_workflow"]
    run, _ = engine.start(plan, run_id="r", turn=1)
    for turn in range(2, 12):
        run, _ = engine.advance(plan, run, turn=turn)
    assert run.turns_since_transition == 10
    run, _ = engine.advance(plan, run, turn=12, judge=PASS)
    assert run.turns_since_transition == 0


def test_event_log_is_typed_ordered_and_trimmed_at_50():
    plan = LINEAR_LIB["bugfix_workflow"]
    run, _ = engine.start(plan, run_id="r", turn=1)
    run = feed(plan, run, [PASS, PASS, PASS])
    for turn in range(100):
        run, _ = engine.observe(plan, run, judge_output("error"), turn=10 + turn)
    assert len(run.events) == engine.MAX_EVENTS
    assert all(e["type"] in engine.EVENT_TYPES for e in run.events)
    turns = [e["turn"] for e in run.events]
    assert turns == sorted(turns)
    assert run.events[-1]["turn"] == 109


def test_record_exposes_supervisor_fields():
    plan = GRAPH_LIB["bugfix_workflow"]
    run, _ = engine.start(plan, run_id="r1", turn=1, session_id="s")
    run = feed(plan, run, [PASS])
    record = engine.to_record(plan, run)
    for key in (
        "run_id plan_id plan_name mode status current_node visited path total_nodes "
        "completed_nodes started_turn turns_since_transition stale_after_turns pace_level "
        "reason events current_step total_steps steps_completed steps_failed "
        "turns_since_progress"
    ).split():
        assert key in record, key
    assert record["plan_id"] == "bugfix_workflow" and record["plan_name"] == "Bug Fix Workflow"
    assert record["current_node"] == "isolate"
    # Document 003: current_step is the number of nodes completed (reproduce).
    assert record["current_step"] == 1 and record["steps_completed"] == [0]
    assert record["total_steps"] == record["total_nodes"] == 6


def test_cycle_of_pure_successes_ends_at_max_transitions():
    graph = (
        Graph.builder()
        .task("a")
        .task("b")
        .edge("start", "a")
        .edge("a", "b", "on_success")
        .edge("b", "a", "on_success")
        .build()
    )
    plan = Plan(id="loop", graph=graph, max_transitions=7)
    run, _ = engine.start(plan, run_id="r", turn=1)
    turn = 2
    while run.status == "running":
        run, _ = engine.observe(plan, run, PASS, turn=turn)
        turn += 1
        assert turn < 20
    assert run.status == "escalated"
    assert "max_transitions (7)" in run.reason


def test_same_observation_id_is_counted_once():
    plan = GRAPH_LIB["bugfix_workflow"]
    run, _ = engine.start(plan, run_id="r", turn=1)
    run, _ = engine.observe(plan, run, PASS, turn=2, observation_id="call-1")
    again, events = engine.observe(plan, run, PASS, turn=3, observation_id="call-1")
    assert events == [] and again is run


def test_inputs_are_never_modified():
    plan = GRAPH_LIB["bugfix_workflow"]
    run, _ = engine.start(plan, run_id="r", turn=1)
    before = copy.deepcopy(engine.to_record(plan, run))
    engine.observe(plan, run, EMPTY, turn=2)
    engine.advance(plan, run, turn=2)
    engine.rewind(plan, run, turn=2)
    assert engine.to_record(plan, run) == before


def test_a_run_is_an_immutable_value():
    plan = GRAPH_LIB["bugfix_workflow"]
    run, _ = engine.start(plan, run_id="r", turn=1)
    tried = engine.Evidence(tool="shell", call="python repro.py", output="")
    run, _ = engine.observe(plan, run, EMPTY, turn=2, evidence=tried)  # "tried" is kept
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.status = "completed"  # type: ignore[misc]
    with pytest.raises(TypeError):
        run.visited["reproduce"] = {}  # type: ignore[index]
    with pytest.raises(TypeError):
        run.visited["reproduce"]["attempts"] = 9  # type: ignore[index]
    with pytest.raises(TypeError):
        run.events[-1]["type"] = "plan_completed"  # type: ignore[index]
    with pytest.raises(AttributeError):
        run.path.append("test")  # type: ignore[attr-defined]
    assert isinstance(run.visited["reproduce"]["tried"], tuple)
    # Changing one outside the engine is dataclasses.replace: a new value.
    other = dataclasses.replace(run, status="aborted")
    assert other.status == "aborted" and run.status == "running"


def test_a_draft_has_the_runs_fields_in_the_runs_order():
    # Freezing a draft changes its class to Run, which needs the same slots.
    from waygraph.engine.state import Draft

    assert [f.name for f in dataclasses.fields(Draft)] == [
        f.name for f in dataclasses.fields(engine.Run)
    ]


@settings(max_examples=60, deadline=None)
@given(
    plan=graph_plans(),
    script=st.lists(st.sampled_from(["pass", "fail", "unknown", "claim", "idle"]), max_size=12),
)
def test_no_engine_call_changes_the_run_it_was_given(plan: Plan, script: list[str]):
    judges = {"pass": lambda v: True, "fail": lambda v: False, "unknown": lambda v: None}
    run, _ = engine.start(plan, run_id="r", turn=1)
    for turn, step in enumerate(script, start=2):
        before = copy.deepcopy(engine.to_record(plan, run))
        if step == "claim":
            new, _ = engine.claim(plan, run, turn=turn, text="done", final=True)
        elif step == "idle":
            new, _ = engine.advance(plan, run, turn=turn)
        else:
            new, _ = engine.advance(plan, run, turn=turn, judge=judges[step])
        engine.rewind(plan, run, turn=turn)
        engine.abort(plan, run, turn=turn, reason="check")
        assert engine.to_record(plan, run) == before
        run = new


def test_decision_routes_on_when_edges_and_falls_back():
    plan = (
        Graph.builder()
        .task("status", verify={"type": "any_output"})
        .decision("dirty", description="Is the tree clean?")
        .task("stash")
        .task("branch")
        .edge("start", "status")
        .edge("status", "dirty", "on_success")
        .edge("dirty", "branch", "always", when={"type": "output_contains", "value": "clean"})
        .edge("dirty", "stash", "always")
        .edge("stash", "branch", "on_success")
        .exit("done")
        .edge("branch", "done", "on_success")
        .plan("p")
    )
    run, _ = engine.start(plan, run_id="r", turn=1)
    clean, _ = engine.observe(plan, run, judge_output("working tree clean"), turn=2)
    assert clean.current_node == "branch"
    dirty, _ = engine.observe(plan, run, judge_output("modified: a.py"), turn=2)
    assert dirty.current_node == "stash"


def test_checkpoint_and_rewind():
    plan = (
        Graph.builder()
        .task("backup")
        .checkpoint("saved")
        .task("change", max_retries=0, verify={"type": "any_output"})
        .escalate("stuck", reason="change failed")
        .exit("done")
        .edge("start", "backup")
        .edge("backup", "saved", "on_success")
        .edge("saved", "change")
        .edge("change", "done", "on_success")
        .edge("change", "stuck", "on_fail")
        .plan("p")
    )
    run, events = engine.start(plan, run_id="r", turn=1)
    run, events = engine.observe(plan, run, PASS, turn=2)
    assert "checkpoint_saved" in [e["type"] for e in events]
    run, _ = engine.observe(plan, run, EMPTY, turn=3)
    assert run.status == "escalated"
    run, events = engine.rewind(plan, run, turn=4)
    assert run.status == "running" and run.current_node == "change"
    assert events[0]["type"] == "rewound"
    assert run.visited["change"] == {"outcome": "pending", "attempts": 1}


def test_start_naming_a_task_is_an_implicit_start():
    plan = Plan.model_validate(
        {
            "id": "p",
            "graph": {
                "start": "a",
                "nodes": {"a": {"type": "task"}, "done": {"type": "exit"}},
                "edges": [{"from": "a", "to": "done", "condition": "on_success"}],
            },
        }
    )
    run, _ = engine.start(plan, run_id="r", turn=1)
    assert run.current_node == "a"
    run, _ = engine.observe(plan, run, PASS, turn=2)
    assert run.status == "completed"


def test_record_round_trip():
    plan = GRAPH_LIB["bugfix_workflow"]
    run, _ = engine.start(plan, run_id="r", turn=1)
    run = feed(plan, run, [EMPTY, PASS, PASS])
    again = engine.from_record(engine.to_record(plan, run))
    assert engine.to_record(plan, again) == engine.to_record(plan, run)


# ------------------------------------------------------------------ properties


def _judge_for(passes: bool, letter: str):
    obs = Observation(output=letter if passes else "")
    return lambda verify: (
        check(verify, obs) if verify is not None and verify.type == "output_contains" else passes
    )


@settings(max_examples=300, deadline=None)
@given(plan=graph_plans(), results=st.lists(outcomes, max_size=80))
def test_attempts_never_exceed_one_plus_max_retries(plan, results):
    run, _ = engine.start(plan, run_id="r", turn=0)
    for turn, (passes, letter) in enumerate(results, start=1):
        run, _ = engine.advance(plan, run, turn=turn, judge=_judge_for(passes, letter))
        for node_id, state in run.visited.items():
            node = plan.graph.nodes[node_id]
            if node.type == "task" and node.max_retries is not None:
                assert state["attempts"] <= 1 + node.max_retries


@settings(max_examples=300, deadline=None)
@given(plan=graph_plans(), results=st.lists(outcomes, min_size=1, max_size=20), data=st.data())
def test_every_run_ends_within_a_bounded_number_of_turns(plan, results, data):
    bound = (plan.max_transitions + 1) * (plan.stale_after_turns + 1) + 1
    run, _ = engine.start(plan, run_id="r", turn=0)
    turn = 0
    while run.status == "running":
        turn += 1
        assert turn <= bound, "run did not end"
        passes, letter = results[turn % len(results)]
        with_result = data.draw(st.booleans())
        judge = _judge_for(passes, letter) if with_result else None
        run, _ = engine.advance(plan, run, turn=turn, judge=judge)
    assert run.status in ("completed", "escalated", "expired", "aborted")


@settings(max_examples=150, deadline=None)
@given(plan=graph_plans(), results=st.lists(outcomes, max_size=30))
def test_record_round_trips_for_any_run(plan, results):
    run, _ = engine.start(plan, run_id="r", turn=0)
    for turn, (passes, letter) in enumerate(results, start=1):
        run, _ = engine.advance(plan, run, turn=turn, judge=_judge_for(passes, letter))
    record = engine.to_record(plan, run)
    assert engine.to_record(plan, engine.from_record(record)) == record


def test_context_counts_attempts_left_in_words():
    plan = (
        Graph.builder()
        .task("build", action="make", verify={"type": "exit_code_zero"}, max_retries=2)
        .exit("done")
        .chain("start", "build", "done")
        .plan("ci")
    )
    run, _ = engine.start(plan, run_id="r", turn=1)
    assert "(2 attempts left)" in render.context(plan, run)
    run = feed(plan, run, [judge_output("error", 1)])
    assert "(1 attempt left)" in render.context(plan, run)


@settings(max_examples=60, deadline=None)
@given(plan=graph_plans())
def test_the_model_is_told_the_edge_the_engine_takes(plan: Plan):
    # One edge choice (engine.first_edge) behind the engine, render and check:
    # for every task, the "On success →" line names where success leads.
    for node in plan.graph.nodes.values():
        if node.type != "task":
            continue
        edge = engine.pick_edge(plan, node.id, engine.SUCCESS_EDGES)
        run = engine.Run(run_id="r", plan_id=plan.id, plan_name=plan.id, current_node=node.id)
        text = render.context(plan, run) or ""
        lines = [
            line.strip() for line in text.splitlines() if line.strip().startswith("On success")
        ]
        if edge is None:
            assert lines == [], lines
            continue
        assert lines, text
        # render names an exit "finish (id)" and an escalation by its reason.
        assert lines[0] == f"On success → {render._target(plan, edge.to)}", lines[0]


def test_a_task_with_a_when_on_its_first_success_edge_is_described_as_it_runs():
    plan = (
        Graph.builder()
        .task("a", verify={"type": "any_output"})
        .task("b")
        .task("c")
        .exit("done")
        .edge("start", "a")
        .edge("a", "b", "on_success", when={"type": "output_contains", "value": "b"})
        .edge("a", "c", "on_success")
        .edge("b", "done", "on_success")
        .edge("c", "done", "on_success")
        .plan("two_success_edges")
    )
    run, _ = engine.start(plan, run_id="r", turn=1)
    told = [line.strip() for line in render.context(plan, run).splitlines() if "On success" in line]
    after, _ = engine.observe(plan, run, judge_output("neither"), turn=2)
    assert told == [f"On success → {after.current_node}"]


def test_a_run_built_by_hand_is_read_only_too():
    run = engine.Run(
        run_id="r",
        plan_id="p",
        plan_name="P",
        path=["start", "a"],
        visited={"a": {"outcome": "pending", "attempts": 1}},
        events=[{"type": "plan_activated", "turn": 1, "node": "start"}],
        notice={"kind": "claim", "node": "a"},
    )
    assert run.path == ("start", "a")
    with pytest.raises(TypeError):
        run.visited["a"]["attempts"] = 2  # type: ignore[index]
    with pytest.raises(TypeError):
        run.events[0]["type"] = "x"  # type: ignore[index]
    with pytest.raises(TypeError):
        run.notice["kind"] = "x"  # type: ignore[index]
    changed = dataclasses.replace(run, completed=["a"])
    assert changed.completed == ("a",)
