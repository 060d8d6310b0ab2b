"""Handlers that run other stages: parallel fan-out, fan-in and the manager loop (§4.8-4.11)."""

from __future__ import annotations

import threading

from tests.pipeline_helpers import Scripted, ok, plan_of, run, status
from waygraph.pipelines.context import Context, ParallelBranchCompleted, ParallelStarted
from waygraph.pipelines.outcome import Outcome
from waygraph.pipelines.stages import FanInHandler

FAN = """digraph fan {{ start [shape=Mdiamond]; done [shape=Msquare]
    fork [shape=component{fork}]
    api; web; docs
    join [shape=tripleoctagon]
    start -> fork
    fork -> api; fork -> web; fork -> docs
    api -> join; web -> join; docs -> join
    join -> review -> done }}"""


def test_fan_out_runs_every_branch_then_continues_once_at_the_fan_in(tmp_path):
    events: list[object] = []
    backend = Scripted({"api": [ok(score=1)], "web": [ok(score=3)]})
    result = run(FAN.format(fork=""), tmp_path, backend=backend, on_event=events.append)
    assert result.status == "success"
    assert result.path == ("start", "fork", "api", "web", "docs", "join", "review", "done")
    assert sorted(backend.calls) == ["api", "docs", "review", "web"]
    assert [r["id"] for r in result.context["parallel.results"]] == ["api", "web", "docs"]
    # Fan-in: every branch succeeded, so the highest score wins (§4.9).
    assert result.context["parallel.fan_in.best_id"] == "web"
    assert result.context["parallel.fan_in.best_outcome"] == "success"
    assert [e.branch_count for e in events if isinstance(e, ParallelStarted)] == [3]
    done = [e for e in events if isinstance(e, ParallelBranchCompleted)]
    assert sorted(e.branch for e in done) == ["api", "docs", "web"] and all(e.success for e in done)
    assert all((tmp_path / n / "status.json").is_file() for n in ("api", "web", "docs"))


def test_branches_run_concurrently(tmp_path):
    # Each branch waits until all three are inside at once: run one after another,
    # the barrier breaks (after its timeout) and the branches fail.
    barrier = threading.Barrier(3, timeout=30)

    class Meet:
        def run(self, node, prompt, context):
            if node.id in ("api", "web", "docs"):
                barrier.wait()
            return "met"

    result = run(FAN.format(fork=""), tmp_path, backend=Meet())
    assert [r["status"] for r in result.context["parallel.results"]] == ["success"] * 3


def test_branches_get_isolated_contexts_and_do_not_merge_back(tmp_path):
    backend = Scripted({"api": [ok(**{"work.owner": "api"})], "web": [ok(**{"work.owner": "web"})]})
    result = run(FAN.format(fork=""), tmp_path, backend=backend)
    assert "work.owner" not in result.context
    assert "work.owner" not in backend.seen["web"]  # api's update never reached web


def test_max_parallel_one_still_runs_every_branch(tmp_path):
    result = run(FAN.format(fork=", max_parallel=1"), tmp_path)
    assert result.path == ("start", "fork", "api", "web", "docs", "join", "review", "done")


def test_wait_all_with_a_failed_branch_is_partial_and_fan_in_picks_a_success(tmp_path):
    backend = Scripted({"api": [status("fail", failure_reason="api broke")]})
    result = run(FAN.format(fork=""), tmp_path, backend=backend)
    assert result.path == ("start", "fork", "api", "web", "docs", "join", "review", "done")
    assert result.context["parallel.failure_count"] == 1
    assert result.context["parallel.fan_in.best_id"] == "docs"


def test_first_success_fails_only_when_no_branch_succeeds(tmp_path):
    every = {n: [status("fail")] for n in ("api", "web", "docs")}
    dot = FAN.format(fork=', join_policy="first_success"').replace(
        "start -> fork", 'start -> fork\n    fork -> done [condition="outcome=fail"]'
    )
    failed = run(dot, tmp_path / "a", backend=Scripted(every))
    assert failed.path == ("start", "fork", "api", "web", "docs", "done")
    one = run(dot, tmp_path / "b", backend=Scripted({"api": [status("fail")]}))
    assert one.path[-3:] == ("join", "review", "done")


def test_fan_in_without_results_fails_and_ranks_by_outcome_then_score(tmp_path):
    plan = plan_of(FAN.format(fork=""))
    node = plan.graph.nodes["join"]
    assert FanInHandler().execute(node, Context(), plan, tmp_path).status == "fail"
    results = [
        {"id": "b", "status": "partial_success", "score": 9},
        {"id": "c", "status": "success", "score": 1},
        {"id": "a", "status": "success", "score": 1},
    ]
    chosen = FanInHandler().execute(node, Context({"parallel.results": results}), plan, tmp_path)
    assert chosen.context_updates["parallel.fan_in.best_id"] == "a"


CHILD = """digraph child { start [shape=Mdiamond]; done [shape=Msquare]
    sprint; start -> sprint -> done }"""
MANAGER = """digraph manager {{ graph [stack.child_dotfile="child.dot"]
    start [shape=Mdiamond]; done [shape=Msquare]
    boss [shape=house{boss}]
    start -> boss
    boss -> done [condition="outcome=success"]
    boss -> gave_up [condition="outcome=fail"]
    gave_up -> done }}"""


def test_manager_loop_runs_the_child_pipeline_and_observes_its_end(tmp_path):
    (tmp_path / "child.dot").write_text(CHILD)
    (tmp_path / "manager.dot").write_text(MANAGER.format(boss=""))
    backend = Scripted()
    result = run(tmp_path / "manager.dot", tmp_path / "logs", backend=backend)
    assert result.path == ("start", "boss", "done")
    assert result.context["stack.child.status"] == "completed"
    assert result.context["stack.child.outcome"] == "success"
    assert backend.calls == ["sprint"]  # the child's stage ran through the same handlers
    assert (tmp_path / "logs" / "boss" / "child" / "sprint" / "prompt.md").is_file()


def test_manager_loop_fails_when_the_child_fails(tmp_path):
    (tmp_path / "child.dot").write_text(CHILD)
    (tmp_path / "manager.dot").write_text(MANAGER.format(boss=""))
    backend = Scripted({"sprint": [status("fail", failure_reason="red")]})
    result = run(tmp_path / "manager.dot", tmp_path / "logs", backend=backend)
    assert result.path == ("start", "boss", "gave_up", "done")
    assert result.context["stack.child.status"] == "failed"


def test_manager_loop_without_a_child_waits_for_its_stop_condition_or_max_cycles(tmp_path):
    slept: list[float] = []
    boss = (
        ", stack.child_autostart=false, manager.max_cycles=3, manager.poll_interval=2s"
        ', manager.stop_condition="context.ready=yes"'
    )
    (tmp_path / "manager.dot").write_text(MANAGER.format(boss=boss))
    waited = run(tmp_path / "manager.dot", tmp_path / "a", sleep=slept.append)
    assert waited.path == ("start", "boss", "gave_up", "done")
    assert slept == [2.0, 2.0, 2.0]
    ready = run(tmp_path / "manager.dot", tmp_path / "b", context={"ready": "yes"})
    assert ready.path == ("start", "boss", "done")


def test_handlers_may_return_any_outcome_from_threads(tmp_path):
    class Odd:
        def run(self, node, prompt, context):
            return Outcome(status="partial_success") if node.id == "web" else "fine"

    result = run(FAN.format(fork=""), tmp_path, backend=Odd())
    statuses = {r["id"]: r["status"] for r in result.context["parallel.results"]}
    assert statuses == {"api": "success", "web": "partial_success", "docs": "success"}


def test_branches_converging_on_a_plain_node_run_it_once_after_the_fan_out(tmp_path):
    dot = """digraph meet { start [shape=Mdiamond]; done [shape=Msquare]
        fork [shape=component]; a; b; merge
        start -> fork; fork -> a; fork -> b; a -> merge; b -> merge; merge -> done }"""
    backend = Scripted()
    result = run(dot, tmp_path, backend=backend)
    assert result.path == ("start", "fork", "a", "b", "merge", "done")
    assert backend.calls.count("merge") == 1


def test_a_fan_in_with_a_prompt_asks_the_backend_which_branch_is_best(tmp_path):
    dot = FAN.format(fork="").replace(
        "join [shape=tripleoctagon]", 'join [shape=tripleoctagon, prompt="Pick the best"]'
    )
    backend = Scripted({"join": ["Candidate web looks best."]})
    result = run(dot, tmp_path, backend=backend)
    assert result.context["parallel.fan_in.best_id"] == "web"
    assert backend.prompts["join"].startswith("Pick the best\n\nCandidates (JSON):")
    assert '"id": "docs"' in backend.prompts["join"]
