"""engine.dag.DagRun: an executed run's state is a value; every change makes a new one."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from waygraph.engine import dag
from waygraph.engine.dag import DagIndex, DagRun
from waygraph.model import NodeStatus

INDEX = DagIndex.of_dependencies({"a": (), "b": ("a",), "c": ("b",), "d": ()})


def snapshot(run: DagRun) -> tuple[dict[str, NodeStatus], frozenset[str], str | None]:
    return dict(run.statuses), run.waived, run.stop_reason


@settings(max_examples=200, deadline=None)
@given(moves=st.lists(st.tuples(st.integers(0, 6), st.sampled_from("abcd")), max_size=12))
def test_no_transition_changes_the_run_it_was_given(moves):
    """Random sequences of the engine's transitions: each input run is left exactly as it was."""
    run = DagRun.of(INDEX.order)
    for move, node in moves:
        before = snapshot(run)
        try:
            if move == 0:
                new = dag.start(run, [node])
            elif move in (1, 2):
                new = dag.finish(run, node, ok=move == 1)
            elif move == 3:
                new, _, _ = dag.settle(INDEX, run)
            elif move == 4:
                new = dag.waive(run, node)
            elif move == 5:
                new = dag.stop(run, f"stopped at {node}")
            else:
                new, _ = dag.block(run)
        except ValueError:
            assert snapshot(run) == before  # a refused change leaves it too
            continue
        assert snapshot(run) == before
        run = new


def test_statuses_are_read_only_and_not_shared_with_the_caller():
    given_statuses = {"a": NodeStatus.PENDING}
    run = DagRun(given_statuses)
    given_statuses["a"] = NodeStatus.FAILED
    assert run.statuses["a"] == NodeStatus.PENDING
    with pytest.raises(TypeError):
        run.statuses["a"] = NodeStatus.COMPLETED  # type: ignore[index]
    with pytest.raises(AttributeError):
        run.stop_reason = "x"  # type: ignore[misc]


def test_transitions_refuse_a_node_in_the_wrong_status():
    run = DagRun.of(["a"])
    with pytest.raises(ValueError, match="node 'a' is pending, not running"):
        dag.finish(run, "a", ok=True)
    with pytest.raises(ValueError, match="node 'x' is not in the run, not pending"):
        dag.start(run, ["x"])
    with pytest.raises(ValueError, match="node 'a' is pending, not failed"):
        dag.waive(run, "a")


def test_a_failure_skips_the_dependents_and_a_waiver_frees_them():
    run = dag.finish(dag.start(DagRun.of(INDEX.order), ["a", "d"]), "a", ok=False)
    run, skipped, _ = dag.settle(INDEX, run)
    assert skipped == {"b": "a", "c": "b"}
    assert run.failure_counts() == (1, 1)
    waived = dag.waive(run, "a")
    freed, skipped, unskipped = dag.settle(INDEX, waived)
    assert (skipped, unskipped) == ({}, ["b", "c"])
    assert freed.with_(NodeStatus.PENDING) == ["b", "c"]
    assert dag.can_start(INDEX, "b", freed.statuses, freed.waived)


def test_a_stopped_run_blocks_what_did_not_finish_and_did_not_succeed():
    run = dag.finish(dag.start(DagRun.of(INDEX.order), ["a", "d"]), "a", ok=True)
    stopped = dag.stop(run, "token budget exhausted")
    blocked, nodes = dag.block(stopped)
    assert nodes == ["b", "c", "d"]
    assert blocked.with_(NodeStatus.BLOCKED) == ["b", "c", "d"]
    assert not blocked.succeeded()
    done = DagRun.of(["a"])
    done = dag.finish(dag.start(done, ["a"]), "a", ok=True)
    assert done.succeeded() and dag.block(done) == (done, [])


def test_a_revision_keeps_the_carried_nodes_and_makes_the_rest_pending():
    run = dag.finish(dag.start(DagRun.of(["a", "b"]), ["a", "b"]), "a", ok=True)
    run = dag.waive(dag.finish(run, "b", ok=False), "b")
    revised = dag.revise(run, ["a", "b2", "c"], {"a"})
    assert [(n, s.value) for n, s in revised.statuses.items()] == [
        ("a", "completed"),
        ("b2", "pending"),
        ("c", "pending"),
    ]
    assert revised.waived == frozenset()
