"""engine.events over EventRun: an event plan's state is a value; every transition makes a new one.

A hypothesis test applies random sequences of transitions and events and
checks each input run is left exactly as it was and the invariants hold;
then one unit test per transition pins its effects (record events, messages).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from itertools import count
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from waygraph.engine import events as engine
from waygraph.engine.event_run import (
    MAX_PROCESSED_IDS,
    EventPlan,
    EventRun,
    Moved,
    derived_id,
)
from waygraph.errors import PlanFormatError, PlanStateError, StateMachineError
from waygraph.events import StateAction, validate_state_machine
from waygraph.model import FINISHED, RunStatus

MACHINE = validate_state_machine(
    {
        "start": {"state_name": "start", "default_next": "search"},
        "search": {
            "state_name": "search",
            "action": {"event_type": "search.requested", "data": {"q": "{goal_data.topic}"}},
            "transitions": [
                {"on_event": "search.completed", "to_state": "review", "condition": "data.n > 0"},
                {"on_event": "search.failed", "to_state": "failed"},
            ],
            "default_next": "empty",
        },
        "review": {
            "state_name": "review",
            "action": {"event_type": "review.requested", "data": {"hits": "{results.search.n}"}},
            "transitions": [{"on_event": "review.completed", "to_state": "done"}],
        },
        "empty": {"state_name": "empty", "is_terminal": True},
        "done": {"state_name": "done", "is_terminal": True},
        "failed": {"state_name": "failed", "is_terminal": True},
    },
    name="search",
)
PLAN = EventPlan(
    plan_id="p1",
    machine=MACHINE,
    source="test/planner",
    planner="test",
    goal_event="search.goal",
    goal_id="g1",
    goal_data={"topic": "graphs"},
    correlation_id="goal-c",
    session_id="s1",
)


@dataclass
class Event:
    """An incoming event, as the engine reads one (an Envelope has these)."""

    type: str
    correlation_id: str | None
    data: dict[str, Any] = field(default_factory=dict)
    id: str = "e1"
    source: str = "test/worker"
    subject: str | None = None


def ids() -> Any:
    counter = count(1)
    return lambda: f"id{next(counter)}"


def snapshot(run: EventRun) -> dict[str, Any]:
    """Everything the run holds, deep-copied: an input must compare equal after."""
    values = {name: getattr(run, name) for name in EventRun.__slots__}  # type: ignore[attr-defined]
    plain = {k: dict(v) if isinstance(v, Mapping) else v for k, v in values.items()}
    return copy.deepcopy(plain)


def check_invariants(run: EventRun, moved: Moved) -> None:
    assert run.current_state in MACHINE
    assert len(run.processed_event_ids) <= MAX_PROCESSED_IDS
    assert len(set(run.correlation_ids)) == len(run.correlation_ids)
    if run.awaiting is not None:
        assert run.awaiting["correlation_id"] in run.correlation_ids
        assert run.status not in FINISHED
    if run.status in FINISHED:
        assert run.results["final"] == run.result
    if run.status == RunStatus.PAUSED:
        assert run.pause_reason is not None
    elif run.status == RunStatus.RUNNING:
        assert run.pause_reason is None
    for entered in (e["state"] for e in moved.events if e["type"] == "state_entered"):
        assert run.path[-1] == entered or entered in run.path
    for message in moved.messages:
        assert message.envelope["source"] == PLAN.source
        assert message.envelope["id"]


EVENTS = st.builds(
    Event,
    type=st.sampled_from(
        ["search.completed", "search.failed", "review.completed", "other.completed"]
    ),
    correlation_id=st.sampled_from(["awaited", "goal-c", "stale", None]),
    data=st.fixed_dictionaries({"n": st.integers(-1, 3)}),
    id=st.sampled_from(["e1", "e2", "e3"]),
)
MOVES = st.one_of(
    st.tuples(st.just("advance"), st.sampled_from([None, "hold"])),
    st.tuples(st.just("accept"), EVENTS),
    st.tuples(st.just("pause"), st.just("wait")),
    st.tuples(st.just("resume"), st.one_of(st.none(), EVENTS)),
    st.tuples(st.just("finish"), st.sampled_from([None, "completed", "failed"])),
    st.tuples(st.just("dispatch"), st.just("search.requested")),
    st.tuples(st.just("start_after"), st.none()),
)


def apply(run: EventRun, move: tuple[str, Any], new_id: Any) -> Moved | None:
    name, arg = move
    if name == "advance":
        return engine.advance(PLAN, run, new_id, pause=arg)
    if name == "accept":
        if arg.correlation_id == "awaited" and run.awaiting is not None:
            arg = replace(arg, correlation_id=run.awaiting["correlation_id"])
        return engine.accept(PLAN, run, arg, new_id)
    if name == "pause":
        return engine.pause(PLAN, run, arg, new_id)
    if name == "resume":
        return engine.resume(PLAN, run, new_id, {"ok": True}, arg)
    if name == "finish":
        return engine.finish(PLAN, run, {"from": dict(run.results)}, status=arg)
    if name == "dispatch":
        return engine.dispatch(PLAN, run, MACHINE["search"].action, new_id)  # type: ignore[arg-type]
    return engine.start_after_dependencies(PLAN, run, new_id)


@settings(max_examples=300, deadline=None)
@given(
    status=st.sampled_from([RunStatus.RUNNING, RunStatus.PENDING]),
    moves=st.lists(MOVES, max_size=14),
)
def test_no_transition_changes_the_run_it_was_given(status, moves):
    """Random sequences of transitions and events: each input run is left exactly as it was."""
    run = EventRun(current_state=MACHINE.start, status=status)
    new_id = ids()
    for move in moves:
        before = snapshot(run)
        try:
            moved = apply(run, move, new_id)
        except (PlanFormatError, PlanStateError):
            # A template with no value, a request from a run not running: the
            # driver fails the plan or raises; the run given is untouched.
            assert snapshot(run) == before
            continue
        assert snapshot(run) == before
        if moved is None:
            continue
        check_invariants(moved.run, moved)
        run = moved.run


def test_the_run_is_frozen_and_holds_copies_of_what_it_was_given():
    results = {"search": {"n": 1}}
    path = ["start", "search"]
    run = EventRun(current_state="search", path=path, results=results)  # type: ignore[arg-type]
    results["other"] = 1
    path.append("x")
    assert dict(run.results) == {"search": {"n": 1}} and run.path == ("start", "search")
    with pytest.raises(TypeError):
        run.results["x"] = 1  # type: ignore[index]
    with pytest.raises(AttributeError):
        run.status = RunStatus.FAILED  # type: ignore[misc]


def test_advance_enters_the_start_state_and_sends_its_request():
    run = EventRun(current_state="start")
    moved = engine.advance(PLAN, run, ids())
    assert moved is not None
    new = moved.run
    assert (new.current_state, new.path, new.started) == ("search", ("search",), True)
    assert new.awaiting == {
        "state": "search",
        "event_type": "search.requested",
        "response_event": "search.completed",
        "correlation_id": "id1",
        "request_id": "id2",
    }
    assert new.correlation_ids == ("id1",)
    assert [e["type"] for e in moved.events] == ["state_entered", "request_sent"]
    [request] = moved.messages
    assert request.topic == "action-requests"
    assert request.envelope == {
        "id": "id2",
        "source": "test/planner",
        "type": "search.requested",
        "data": {"q": "graphs"},
        "correlation_id": "id1",
        "response_event": "search.completed",
        "response_topic": "action-results",
        "session_id": "s1",
        "tenant_id": None,
        "user_id": None,
        "goal_id": "g1",
        "plan_id": "p1",
        "parent_event_id": "g1",
        "traceparent": None,
    }
    # Without an event, a later call follows the state's default_next.
    later = engine.advance(PLAN, new, ids())
    assert later is not None and later.run.current_state == "empty"
    assert engine.advance(PLAN, later.run, ids()) is None  # a terminal state stays


def test_advance_does_not_move_finished_paused_or_waiting_runs():
    for status in (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.PAUSED):
        assert engine.advance(PLAN, EventRun("start", status=status), ids()) is None
    waiting = replace(PLAN, depends_on=("other",))
    assert engine.advance(waiting, EventRun("start", status=RunStatus.PENDING), ids()) is None
    pending = engine.advance(PLAN, EventRun("start", status=RunStatus.PENDING), ids())
    assert pending is not None and pending.run.status == RunStatus.RUNNING


def test_advance_with_pause_holds_the_state_without_its_request():
    moved = engine.advance(PLAN, EventRun("start"), ids(), pause="approve")
    assert moved is not None
    assert (moved.run.status, moved.run.pause_reason) == (RunStatus.PAUSED, "approve")
    assert moved.run.awaiting is None
    assert [e["type"] for e in moved.events] == ["state_entered", "plan_paused"]
    [notice] = moved.messages
    assert (notice.topic, notice.envelope["type"]) == ("notification-events", "plan.paused")
    assert notice.envelope["data"] == {"plan_id": "p1", "state": "search", "reason": "approve"}


def started() -> EventRun:
    moved = engine.advance(PLAN, EventRun("start"), ids())
    assert moved is not None
    return moved.run


def test_accept_keeps_the_data_and_enters_the_next_state():
    run = started()
    answer = Event("search.completed", "id1", {"n": 2}, id="a1")
    assert engine.accepts(PLAN, run, answer) == "review"
    moved = engine.accept(PLAN, run, answer, ids())
    assert moved is not None
    new = moved.run
    assert new.results == {"search": {"n": 2}} and new.processed_event_ids == ("a1",)
    assert new.current_state == "review" and new.path == ("search", "review")
    assert moved.events[0] == {
        "type": "event_applied",
        "event_id": "a1",
        "event_type": "search.completed",
        "from": "search",
        "to": "review",
    }
    [request] = moved.messages
    assert request.envelope["data"] == {"hits": 2}
    assert request.envelope["parent_event_id"] == "a1"
    # A state without default_next waits for an event.
    assert engine.advance(PLAN, new, ids()) is None
    # The same event again, a stale answer, or an event nothing accepts: no move.
    assert engine.accept(PLAN, new, answer, ids()) is None
    assert engine.accept(PLAN, run, replace(answer, correlation_id="stale"), ids()) is None
    assert engine.accept(PLAN, run, replace(answer, type="other.completed"), ids()) is None


def test_accept_routes_by_condition_and_falls_back_to_default_next():
    run = started()
    moved = engine.accept(PLAN, run, Event("search.completed", "goal-c", {"n": 0}), ids())
    assert moved is not None and moved.run.current_state == "empty"
    assert moved.messages == ()


def test_the_processed_ids_are_bounded():
    run = replace(started(), processed_event_ids=tuple(f"old{i}" for i in range(MAX_PROCESSED_IDS)))
    moved = engine.accept(PLAN, run, Event("search.failed", "id1", id="newest"), ids())
    assert moved is not None
    assert len(moved.run.processed_event_ids) == MAX_PROCESSED_IDS
    assert moved.run.processed_event_ids[-1] == "newest"
    assert "old0" not in moved.run.processed_event_ids


def test_pause_and_resume_send_the_request_again_with_a_new_correlation_id():
    run = started()
    paused = engine.pause(PLAN, run, "wait", ids())
    assert paused is not None and paused.run.status == RunStatus.PAUSED
    assert engine.pause(PLAN, paused.run, "again", ids()) is None
    # A paused run takes no events.
    assert (
        engine.accept(PLAN, paused.run, Event("search.completed", "id1", {"n": 1}), ids()) is None
    )
    new_id = iter(["c2", "r2"]).__next__
    resumed = engine.resume(PLAN, paused.run, new_id, {"ok": 1}, Event("approve", None, id="ap"))
    assert resumed is not None
    new = resumed.run
    assert new.status == RunStatus.RUNNING and new.pause_reason is None
    assert new.results["user_input"] == new.results["resume_input"] == {"ok": 1}
    assert new.awaiting is not None and new.awaiting["correlation_id"] == "c2"
    assert new.correlation_ids == ("id1", "c2") and new.processed_event_ids == ("ap",)
    assert [e["type"] for e in resumed.events] == ["plan_resumed", "request_sent"]
    assert engine.resume(PLAN, new, ids()) is None


def test_start_after_dependencies_starts_a_pending_run():
    waiting = replace(PLAN, depends_on=("a", "b"))
    assert engine.dependencies_met({"a": "completed", "b": "completed"})
    assert not engine.dependencies_met({"a": "completed", "b": "running"})
    assert engine.dependency_failure({"a": "completed", "b": "failed"}) == {
        "error": "dependency 'b' failed",
        "dependencies": {"a": "completed", "b": "failed"},
    }
    moved = engine.start_after_dependencies(waiting, EventRun("start", RunStatus.PENDING), ids())
    assert moved is not None
    assert moved.events[0] == {"type": "dependencies_met", "depends_on": ["a", "b"]}
    assert moved.run.status == RunStatus.RUNNING and moved.run.current_state == "search"
    assert engine.start_after_dependencies(waiting, moved.run, ids()) is None


def test_finish_answers_the_goal_and_announces_the_status():
    run = started()
    result = {"summary": "x"}
    moved = engine.finish(PLAN, run, result, error={"type": "E", "message": "m"}, status="failed")
    assert moved is not None
    new = moved.run
    assert new.status == RunStatus.FAILED and new.awaiting is None
    assert new.result == result and new.result is not result  # a copy
    assert new.results["final"] is new.result and new.error == {"type": "E", "message": "m"}
    assert moved.events == ({"type": "plan_failed", "state": "search"},)
    answer, done = moved.messages
    assert (answer.topic, answer.envelope["type"]) == ("action-results", "search.goal.completed")
    assert answer.envelope["id"] == derived_id("p1", "response")
    assert answer.envelope["data"] == {
        "plan_id": "p1",
        "status": "failed",
        "result": result,
        "error": {"type": "E", "message": "m"},
    }
    assert answer.envelope["correlation_id"] == "goal-c"
    assert (done.topic, done.envelope["type"]) == ("plan-events", "plan.failed")
    assert done.envelope["id"] == derived_id("p1", "plan.failed")
    assert engine.finish(PLAN, new, None) is None


def test_finish_on_a_state_named_failed_fails_and_a_parent_correlation_fills_in():
    run = EventRun("failed", started=True)
    moved = engine.finish(replace(PLAN, correlation_id=None), run, parent_correlation="parent-c")
    assert moved is not None and moved.run.status == RunStatus.FAILED
    assert moved.messages[0].envelope["correlation_id"] == "parent-c"


def test_a_template_without_a_value_raises_and_changes_nothing():
    plan = replace(PLAN, goal_data={})
    run = EventRun("start")
    with pytest.raises(PlanFormatError, match=r"goal_data\.topic"):
        engine.advance(plan, run, ids())
    assert run == EventRun("start")


def test_a_dispatch_names_the_current_state_and_keeps_one_correlation_id_each():
    run = started()
    action = StateAction(event_type="extra.requested")
    moved = engine.dispatch(PLAN, run, action, iter(["id1", "r9"]).__next__)
    assert moved.run.correlation_ids == ("id1",)  # a known id is not listed twice
    assert moved.events[0]["state"] == "search"
    finished = engine.finish(PLAN, run)
    assert finished is not None
    with pytest.raises(PlanStateError, match="is completed; it sends no requests"):
        engine.dispatch(PLAN, finished.run, action, ids())


def test_follow_defaults_refuses_an_endless_chain():
    class Loop:
        start = "a"
        name = "loop"

        def __getitem__(self, state: str) -> Any:
            return type("S", (), {"action": None, "is_terminal": False, "default_next": "a"})()

    with pytest.raises(StateMachineError, match="more than 50 states"):
        engine.follow_defaults(Loop(), "a")  # type: ignore[arg-type]


def test_a_stored_machine_that_no_longer_validates_still_lets_its_plan_finish():
    """Finishing and pausing read no state: a plan whose stored machine a newer
    validator refuses can still be paused and answer its goal (as before the engine)."""
    import asyncio

    from waygraph.events import InProcessBus, PlanContext, Planner, StateConfig

    async def main() -> tuple[bool, str, bool]:
        planner = Planner("old", bus=InProcessBus(), store="memory://")
        goal = planner.context.bus.envelope("search.goal", {"topic": "x"}, correlation_id="c")
        plan = await PlanContext.create_from_goal(
            goal, state_machine=MACHINE.states, context=planner.context
        )
        # A key that differs from its state_name: validate_state_machine refuses it.
        plan.state_machine["done"] = StateConfig(state_name="renamed", is_terminal=True)
        await plan.save()
        stored = await PlanContext.restore(plan.plan_id, planner.context)
        with pytest.raises(StateMachineError):
            stored.machine  # noqa: B018
        paused = await stored.pause("check")
        finished = await stored.finalize({"ok": True}, status="failed")
        assert stored.is_complete()
        return paused, stored.status, finished

    paused, status, finished = asyncio.run(main())
    assert (paused, status, finished) == (True, "failed", True)
