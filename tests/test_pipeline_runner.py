"""The execution loop (specification §3, §11.3-11.5, §11.7 and the execution rows of §11.12)."""

from __future__ import annotations

import json

import pytest

from tests.pipeline_helpers import LINEAR, Scripted, ok, run, status
from waygraph.errors import PermanentError, PipelineValidationError, TransientError
from waygraph.pipelines.context import (
    CheckpointSaved,
    PipelineCompleted,
    PipelineStarted,
    StageCompleted,
    StageRetrying,
    StageStarted,
)
from waygraph.pipelines.stages import Backoff


def test_linear_three_nodes_run_end_to_end_with_run_folder(tmp_path):
    result = run(LINEAR, tmp_path)
    assert result.status == "success"
    assert result.path == ("start", "plan", "build", "done")
    assert result.completed_nodes == ("start", "plan", "build", "done")
    assert result.outcome.notes == "Pipeline completed"
    # §4.5: the simulated response, $goal expanded, the label when there is no prompt.
    assert (tmp_path / "plan" / "prompt.md").read_text() == "Plan: Ship it"
    assert (tmp_path / "build" / "prompt.md").read_text() == "Build it"
    assert (tmp_path / "plan" / "response.md").read_text() == "[Simulated] Response for stage: plan"
    assert json.loads((tmp_path / "build" / "status.json").read_text())["outcome"] == "success"
    assert result.context["last_stage"] == "build"
    assert result.context["graph.goal"] == "Ship it"
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["goal"] == "Ship it" and manifest["run_id"] == result.run_id
    checkpoint = json.loads((tmp_path / "checkpoint.json").read_text())
    assert checkpoint["current_node"] == "done" and checkpoint["status"] == "completed"
    assert result.as_json()["path"] == ["start", "plan", "build", "done"]


BRANCHING = """digraph branch {
    start [shape=Mdiamond]; done [shape=Msquare]
    test; gate [shape=diamond]; fix; ship
    start -> test -> gate
    gate -> ship [condition="outcome=success && context.tests=pass"]
    gate -> fix [condition="context.tests!=pass"]
    fix -> test
    ship -> done }"""


def test_conditional_branching_follows_success_and_fail_paths(tmp_path):
    backend = Scripted({"test": [ok(tests="fail"), ok(tests="pass")]})
    result = run(BRANCHING, tmp_path, backend=backend)
    assert result.path == ("start", "test", "gate", "fix", "test", "gate", "ship", "done")
    assert result.completed_nodes == ("start", "test", "gate", "fix", "ship", "done")


def test_context_updates_are_visible_to_the_next_node(tmp_path):
    backend = Scripted({"plan": [ok(**{"context.design": "two modules"})]})
    run(LINEAR, tmp_path, backend=backend)
    assert backend.seen["build"]["context.design"] == "two modules"
    assert backend.seen["build"]["outcome"] == "success"
    assert backend.seen["build"]["current_node"] == "build"


RETRYING = """digraph retry {
    start [shape=Mdiamond]; done [shape=Msquare]
    flaky [max_retries=2]
    start -> flaky
    flaky -> done [condition="outcome=success"]
    flaky -> done [condition="outcome=partial_success"]
    flaky -> stop [condition="outcome=fail"]
    stop -> done }"""


def test_retry_status_runs_again_with_backoff_then_succeeds(tmp_path):
    slept: list[float] = []
    events: list[object] = []
    backend = Scripted({"flaky": [status("retry"), status("retry"), ok()]})
    result = run(RETRYING, tmp_path, backend=backend, sleep=slept.append, on_event=events.append)
    assert backend.calls == ["flaky", "flaky", "flaky"]
    assert result.path == ("start", "flaky", "done")
    assert slept == [0.2, 0.4]  # §3.6: 200ms, then doubled
    assert [e.attempt for e in events if isinstance(e, StageRetrying)] == [2, 3]


def test_retries_exhausted_fail_or_become_partial_with_allow_partial(tmp_path):
    backend = Scripted({"flaky": [status("retry")]})
    failed = run(RETRYING, tmp_path / "a", backend=backend)
    assert backend.calls.count("flaky") == 3  # max_retries=2: three attempts
    assert failed.path == ("start", "flaky", "stop", "done")
    partial = run(
        RETRYING.replace("flaky [max_retries=2]", "flaky [max_retries=2, allow_partial=true]"),
        tmp_path / "b",
        backend=Scripted({"flaky": [status("retry")]}),
    )
    assert partial.path == ("start", "flaky", "done")
    flaky = json.loads((tmp_path / "b" / "flaky" / "status.json").read_text())
    assert flaky["outcome"] == "partial_success"
    assert flaky["notes"] == "retries exhausted, partial accepted"


def test_transient_errors_are_retried_and_others_fail_at_once(tmp_path):
    backend = Scripted({"flaky": [TransientError("rate limited"), ConnectionError("reset"), ok()]})
    assert run(RETRYING, tmp_path / "a", backend=backend).path == ("start", "flaky", "done")
    assert backend.calls.count("flaky") == 3
    broken = Scripted({"flaky": [PermanentError("bad key")]})
    result = run(RETRYING, tmp_path / "b", backend=broken)
    assert broken.calls.count("flaky") == 1
    assert result.path == ("start", "flaky", "stop", "done")
    assert (
        "bad key"
        in json.loads((tmp_path / "b" / "flaky" / "status.json").read_text())["failure_reason"]
    )


def test_backoff_delays_are_capped_and_jittered_within_bounds():
    backoff = Backoff(initial_delay=1, factor=10, max_delay=50, jitter=False)
    assert [backoff.delay_for_attempt(n) for n in (1, 2, 3)] == [1, 10, 50]
    jittered = Backoff(initial_delay=1, factor=1, jitter=True)
    assert all(0.5 <= jittered.delay_for_attempt(1) <= 1.5 for _ in range(50))


FAILING = """digraph failing {{ graph [{graph}]
    start [shape=Mdiamond]; done [shape=Msquare]
    prep; work [{work}]; recover; fallback
    start -> prep -> work
    work -> done
    prep -> recover [condition="context.never=yes"]
    prep -> fallback [condition="context.never=yes"]
    {edges}
    recover -> done; fallback -> done }}"""


@pytest.mark.parametrize(
    ("work", "edges", "path"),
    [
        ("", 'work -> recover [condition="outcome=fail"]', ("recover", "done")),
        ("retry_target=recover, fallback_retry_target=fallback", "", ("recover", "done")),
        ("fallback_retry_target=fallback", "", ("fallback", "done")),
    ],
)
def test_fail_routes_by_fail_edge_then_retry_target_then_fallback(tmp_path, work, edges, path):
    dot = FAILING.format(graph="", work=work, edges=edges)
    backend = Scripted({"work": [status("fail", failure_reason="broke")]})
    result = run(dot, tmp_path, backend=backend)
    assert result.path == ("start", "prep", "work", *path)
    assert result.status == "success"


def test_fail_without_a_route_ends_the_run_failed_even_with_an_unconditional_edge(tmp_path):
    dot = FAILING.format(graph="", work="", edges="")
    backend = Scripted({"work": [status("fail", failure_reason="tests broke")]})
    result = run(dot, tmp_path, backend=backend)
    assert result.status == "fail"
    assert result.path == ("start", "prep", "work")
    assert result.outcome.failure_reason == "tests broke"
    assert json.loads((tmp_path / "checkpoint.json").read_text())["status"] == "failed"


def test_reaching_the_exit_is_success_whatever_the_last_outcome(tmp_path):
    dot = FAILING.format(graph="", work="", edges='work -> done [condition="outcome=fail"]')
    result = run(dot, tmp_path, backend=Scripted({"work": [status("fail")]}))
    assert result.status == "success" and result.path[-1] == "done"


GATED = """digraph gated {{ graph [{graph}]
    start [shape=Mdiamond]; done [shape=Msquare]
    implement [goal_gate=true, {gate}]; review
    start -> implement
    implement -> review [condition="outcome=success"]
    implement -> review [condition="outcome=fail"]
    review -> done }}"""


def test_goal_gate_allows_exit_when_satisfied(tmp_path):
    result = run(GATED.format(graph="", gate="retry_target=implement"), tmp_path)
    assert result.status == "success"
    assert result.path == ("start", "implement", "review", "done")


def test_goal_gate_blocks_exit_and_sends_the_run_to_its_retry_target(tmp_path):
    backend = Scripted({"implement": [status("fail"), ok()]})
    result = run(GATED.format(graph="", gate="retry_target=implement"), tmp_path, backend=backend)
    assert result.status == "success"
    assert result.path == ("start", "implement", "review", "implement", "review", "done")


def test_goal_gate_unsatisfied_without_target_fails(tmp_path):
    backend = Scripted({"implement": [status("fail")]})
    result = run(GATED.format(graph="", gate="label=Impl"), tmp_path, backend=backend)
    assert result.status == "fail"
    assert "implement" in result.outcome.failure_reason
    assert result.path == ("start", "implement", "review")


def test_goal_gate_redirects_are_bounded(tmp_path):
    dot = GATED.format(graph="max_goal_gate_redirects=3", gate="retry_target=implement")
    backend = Scripted({"implement": [status("fail")]})
    result = run(dot, tmp_path, backend=backend)
    assert result.status == "fail"
    assert backend.calls.count("implement") == 4  # the first visit, then three redirects
    assert "3 redirects" in result.outcome.failure_reason


def test_graph_level_retry_target_serves_a_gate_without_its_own(tmp_path):
    dot = GATED.format(graph="retry_target=implement", gate="label=Impl")
    backend = Scripted({"implement": [status("fail"), ok()]})
    assert run(dot, tmp_path, backend=backend).status == "success"
    assert backend.calls.count("implement") == 2


SELECTION = """digraph select {{
    start [shape=Mdiamond]; done [shape=Msquare]
    a; b; c; pick
    start -> pick
    {edges}
    a -> done; b -> done; c -> done
    a -> b [condition="context.never=yes"]; a -> c [condition="context.never=yes"] }}"""


@pytest.mark.parametrize(
    ("edges", "taken"),
    [
        # A matching condition wins over any weight.
        ('pick -> a [weight=10]; pick -> b [condition="outcome=success"]', "b"),
        # Among unconditional edges the highest weight wins.
        ("pick -> a [weight=1]; pick -> c [weight=5]; pick -> b", "c"),
        # Equal weights: the lexically first target.
        ("pick -> c; pick -> b; pick -> a", "a"),
        # A preferred label beats weight among unconditional edges.
        ('pick -> a [weight=9]; pick -> c [label="Go C"]', "c"),
    ],
)
def test_edge_selection_priority(tmp_path, edges, taken):
    backend = Scripted({"pick": [status("success", preferred_label="go c")]})
    result = run(SELECTION.format(edges=edges), tmp_path, backend=backend)
    assert result.path == ("start", "pick", taken, "done")


def test_a_pipeline_of_more_than_ten_nodes_completes(tmp_path):
    steps = [f"s{i:02d}" for i in range(12)]
    dot = (
        "digraph big { start [shape=Mdiamond]; done [shape=Msquare]; "
        + " -> ".join(["start", *steps, "done"])
        + " }"
    )
    result = run(dot, tmp_path)
    assert result.status == "success"
    assert result.path == ("start", *steps, "done")
    assert all((tmp_path / s / "status.json").is_file() for s in steps)


def test_an_endless_loop_stops_at_the_step_bound_naming_the_path(tmp_path):
    dot = """digraph loop { start [shape=Mdiamond]; done [shape=Msquare]
        start -> a -> b -> a; b -> done [condition="context.never=yes"] }"""
    result = run(dot, tmp_path, max_steps=25)
    assert result.status == "fail"
    assert len(result.path) == 25
    assert result.path[:5] == ("start", "a", "b", "a", "b")
    assert "step bound" in result.outcome.failure_reason
    assert "a -> b" in result.outcome.failure_reason


def test_loop_restart_starts_over_with_a_fresh_context(tmp_path):
    dot = """digraph restart { start [shape=Mdiamond]; done [shape=Msquare]
        start -> work -> check
        check -> work [condition="context.round=1", loop_restart=true]
        check -> done [condition="context.round=2"] }"""
    backend = Scripted({"work": [ok(round="1", first="yes"), ok(round="2")]})
    result = run(dot, tmp_path, backend=backend)
    assert result.path == ("start", "work", "check", "work", "check", "done")
    assert "first" not in result.context  # the first round's context is gone
    assert "loop restart at work" in json.loads((tmp_path / "checkpoint.json").read_text())["logs"]


def test_escalate_ends_the_run_failed_with_its_reason(tmp_path):
    dot = """digraph esc { start [shape=Mdiamond]; done [shape=Msquare]
        help [shape=octagon, label="Needs a human: credentials missing"]
        start -> help [condition="context.stuck=yes"]
        start -> done [condition="context.stuck!=yes"] }"""
    result = run(dot, tmp_path, context={"stuck": "yes"})
    assert result.status == "fail"
    assert result.outcome.failure_reason == "Needs a human: credentials missing"
    assert result.path == ("start", "help")


def test_events_tell_the_run_in_order(tmp_path):
    events: list[object] = []
    run(LINEAR, tmp_path, on_event=events.append)
    kinds = [type(e).__name__ for e in events]
    assert kinds[0] == "PipelineStarted" and kinds[-1] == "PipelineCompleted"
    started = [e.name for e in events if isinstance(e, StageStarted)]
    assert started == ["start", "plan", "build", "done"]
    assert [e.name for e in events if isinstance(e, StageCompleted)] == started
    assert len([e for e in events if isinstance(e, CheckpointSaved)]) == 4
    first = events[0]
    assert isinstance(first, PipelineStarted) and first.name == "linear"
    assert isinstance(events[-1], PipelineCompleted)


def test_a_pipeline_with_lint_errors_is_refused(tmp_path):
    with pytest.raises(PipelineValidationError):
        run("digraph bad { start [shape=Mdiamond]; start -> work }", tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_handler_exceptions_become_fail_outcomes(tmp_path):
    backend = Scripted({"plan": [RuntimeError("model server exploded")]})
    result = run(LINEAR, tmp_path, backend=backend)
    assert result.status == "fail"
    assert result.outcome.failure_reason == "RuntimeError: model server exploded"


def test_when_no_condition_holds_the_heaviest_conditional_edge_is_taken(tmp_path):
    # As every public port does: a gate routing on output it never got still goes on.
    dot = """digraph g { start [shape=Mdiamond]; done [shape=Msquare]
        gate [shape=diamond]; fix
        start -> gate
        gate -> fix [condition="context.tool.last_line=fail", weight=5]
        gate -> done [condition="context.tool.last_line=pass", weight=1]
        fix -> done }"""
    assert run(dot, tmp_path).path == ("start", "gate", "fix", "done")


def test_a_plan_built_in_code_gets_the_transforms_and_yours(tmp_path):
    from waygraph.model import Plan

    plan = Plan.model_validate(
        {
            "id": "coded",
            "goal": "ship",
            "attrs": {"model_stylesheet": "* { llm_model: tiny; }"},
            "graph": {
                "start": "start",
                "nodes": {
                    "start": {"type": "start"},
                    "work": {"action": "Work on $goal"},
                    "done": {"type": "exit"},
                },
                "edges": [{"from": "start", "to": "work"}, {"from": "work", "to": "done"}],
            },
        }
    )

    class Shout:
        def apply(self, plan):
            node = plan.graph.nodes["work"]
            nodes = {
                **plan.graph.nodes,
                "work": node.model_copy(update={"action": node.action + "!"}),
            }
            return plan.model_copy(update={"graph": plan.graph.model_copy(update={"nodes": nodes})})

    models: list[str] = []

    class Model(Scripted):
        def run(self, node, prompt, context):
            models.append((node.attrs or {}).get("llm_model", ""))
            return super().run(node, prompt, context)

    backend = Model()
    run(plan, tmp_path, backend=backend, transforms=[Shout()])
    assert backend.prompts["work"] == "Work on ship!"
    assert models == ["tiny"]


def test_a_failing_stage_is_reported_once_and_each_retry_once(tmp_path):
    from waygraph.pipelines.context import StageFailed

    events: list[object] = []
    backend = Scripted({"flaky": [TransientError("busy"), RuntimeError("broken")]})
    run(RETRYING, tmp_path, backend=backend, on_event=events.append)
    failed = [(e.name, e.will_retry) for e in events if isinstance(e, StageFailed)]
    assert failed == [("flaky", True), ("flaky", False)]


@pytest.mark.parametrize("node_id", ["../up", "a/b", "checkpoint.json", ".hidden", "é x"])
def test_stage_folders_stay_inside_the_run_folder_whatever_the_node_id(tmp_path, node_id):
    from waygraph.pipelines.run_folder import stage_dir, stage_name

    folder = stage_dir(tmp_path / "run", node_id)
    assert folder.parent == tmp_path / "run"
    assert stage_name(node_id) != stage_name(node_id + "_")
    assert not (tmp_path / "run" / "checkpoint.json").is_dir()
