"""A PlanContext changes only through an engine transition and a store commit (issue 38).

Assigning a field used to change the object and never reach the store (in
memory ``completed done {'x': 1}``, stored ``running work {}``); now it
raises :class:`~waygraph.errors.ReadOnlyFieldError` naming the method that
makes the change, and neither the object nor the stored record moves.
"""

from __future__ import annotations

import pytest

from tests.bus_contract import async_test
from waygraph.errors import ReadOnlyFieldError
from waygraph.events import InProcessBus, PlanContext, Planner, StateConfig

SM = {
    "start": {"state_name": "start", "default_next": "work"},
    "work": {
        "state_name": "work",
        "action": {"event_type": "job.requested"},
        "transitions": [{"on_event": "job.done", "to_state": "done"}],
    },
    "done": {"state_name": "done", "is_terminal": True},
}

#: Each field a program might assign, a value, and what the error must tell it to call.
ASSIGNMENTS = [
    (
        "status",
        "completed",
        ["plan.execute_next(", "plan.finalize(", "plan.pause(", "plan.resume("],
    ),
    ("current_state", "done", ["plan.execute_next(event)"]),
    ("path", ["start", "done"], ["plan.execute_next("]),
    ("started", False, ["plan.execute_next("]),
    ("awaiting", None, ["plan.execute_next(", "plan.dispatch(action)"]),
    ("correlation_ids", [], ["plan.dispatch(action)"]),
    ("processed_event_ids", [], ["plan.execute_next(event)"]),
    ("results", {"x": 1}, ["plan.execute_next(event)", "plan.results[key] = value", "plan.save()"]),
    ("result", {"x": 1}, ["plan.finalize(result)"]),
    ("error", {"type": "X"}, ["plan.finalize(result, status='failed'"]),
    ("pause_reason", "why", ["plan.pause(reason)"]),
    ("outbox", [], ["plan.publish_pending()"]),
    ("planner", "other", ["plan.attach(planner.context)"]),
    ("goal_data", {"n": 3}, ["PlanContext.create_from_goal("]),
    ("state_machine", {}, ["PlanContext.create_from_goal("]),
    ("depends_on", ["p0"], ["PlanContext.create_from_goal("]),
    ("updated_at", 0.0, ["every commit stamps it"]),
]


async def started_plan() -> tuple[Planner, PlanContext]:
    bus = InProcessBus()
    planner = Planner("ro", bus=bus, store="memory://")
    goal = bus.envelope("job.goal", {"n": 2}, correlation_id="c1")
    plan = await PlanContext.create_from_goal(goal, state_machine=SM, context=planner.context)
    await plan.execute_next()
    return planner, plan


@pytest.mark.parametrize(("field", "value", "ways"), ASSIGNMENTS, ids=[a[0] for a in ASSIGNMENTS])
@async_test()
async def test_assigning_a_field_raises_naming_the_way_and_changes_nothing(
    field: str, value: object, ways: list[str]
) -> None:
    planner, plan = await started_plan()
    before = plan.model_dump()
    stored = planner.store.get(plan.plan_id)
    assert stored is not None
    with pytest.raises(ReadOnlyFieldError) as raised:
        setattr(plan, field, value)
    message = str(raised.value)
    assert message.startswith(f"PlanContext.{field} is read-only: ")
    for way in ways:
        assert way in message, (field, way, message)
    # An AttributeError too, as assigning a read-only attribute is in Python.
    assert isinstance(raised.value, AttributeError)
    assert plan.model_dump() == before
    after = planner.store.get(plan.plan_id)
    assert after is not None
    assert (after.version, after.data) == (stored.version, stored.data)
    with pytest.raises(ReadOnlyFieldError):
        delattr(plan, field)


@async_test()
async def test_the_issues_example_no_longer_leaves_memory_and_store_apart() -> None:
    planner, plan = await started_plan()
    with pytest.raises(ReadOnlyFieldError, match=r"plan\.finalize"):
        plan.status = "completed"  # type: ignore[assignment]
    with pytest.raises(ReadOnlyFieldError, match=r"plan\.execute_next"):
        plan.current_state = "done"
    with pytest.raises(ReadOnlyFieldError, match=r"plan\.save"):
        plan.results = {"x": 1}
    stored = await PlanContext.restore(plan.plan_id, planner.context)
    assert (plan.status, plan.current_state, plan.results) == ("running", "work", {})
    assert (stored.status, stored.current_state, stored.results) == ("running", "work", {})
    # The ways the messages name do reach the store.
    answer = planner.bus.envelope(
        "job.done", {"x": 1}, correlation_id=plan.awaiting["correlation_id"]
    )
    assert await plan.execute_next(answer) is True
    assert await plan.finalize({"x": 1}) is True
    stored = await PlanContext.restore(plan.plan_id, planner.context)
    assert (plan.status, plan.current_state) == (stored.status, stored.current_state)
    assert (stored.status, stored.current_state, stored.result) == ("completed", "done", {"x": 1})


@async_test()
async def test_a_result_kept_by_hand_reaches_the_store_through_save() -> None:
    planner, plan = await started_plan()
    plan.results["notes"] = {"seen": 3}
    await plan.save()
    stored = await PlanContext.restore(plan.plan_id, planner.context)
    assert stored.results["notes"] == {"seen": 3} and stored.version == plan.version


def test_document_002s_constructor_and_private_state_still_work() -> None:
    plan = PlanContext(
        plan_id="p1",
        goal_event="job.goal",
        status="pending",
        state_machine={"done": StateConfig(state_name="done", is_terminal=True)},
        current_state="done",
    )
    assert plan.status == "pending" and plan.is_complete()
    changed = plan.model_copy(update={"status": "running"})
    assert (plan.status, changed.status) == ("pending", "running")
