"""Document 002's PlanContext and resume, in the shapes the document writes them.

The document's ``PlanContext`` is a dataclass built from its fields
(``plan_id``, ``goal_event``, ``goal_data``, ``response_event``, ``status``,
``state_machine``, ``current_state``, ``results``, ``user_id``,
``tenant_id``), with no planner name and no goal envelope; its ``resume``
takes ``input_data``.
"""

from __future__ import annotations

import uuid

import pytest

from tests.bus_contract import async_test, eventually
from tests.design_examples.test_planner_model import World, state_machine
from waygraph.errors import InputError, PlanStateError
from waygraph.events import Envelope, InProcessBus, PlanContext, Planner, Topic


def document_plan(**extra: object) -> PlanContext:
    """The plan as document 002's dataclass fields build it."""
    return PlanContext(
        plan_id="plan-1",
        goal_event="research.goal",
        goal_data={"topic": "graphs"},
        response_event="research.done",
        status="pending",
        state_machine=state_machine,
        current_state="start",
        results={},
        user_id="user-1",
        tenant_id="tenant-1",
        **extra,
    )


def test_a_plan_context_builds_from_the_documents_fields() -> None:
    plan = document_plan()
    assert (plan.plan_id, plan.status, plan.current_state) == ("plan-1", "pending", "start")
    assert plan.planner == ""  # not attached to a planner yet
    goal = plan.goal_envelope  # rebuilt from goal_event, goal_data and the rest
    assert (goal.type, goal.data, goal.response_event) == (
        "research.goal",
        {"topic": "graphs"},
        "research.done",
    )
    assert (goal.user_id, goal.tenant_id, goal.id) == ("user-1", "tenant-1", "goal-plan-1")


@async_test(30)
async def test_a_plan_built_so_outside_a_handler_is_attached_then_runs() -> None:
    planner = Planner("research-planner", bus=InProcessBus(), store="memory://")
    plan = document_plan()
    with pytest.raises(PlanStateError, match=r"attach\(planner.context\)"):
        await plan.save()
    await plan.attach(planner.context).save()
    assert plan.planner == "research-planner"
    await plan.execute_next()
    assert (plan.status, plan.current_state) == ("running", "searching")
    again = await PlanContext.restore("plan-1", planner.context)
    assert again.goal_data == {"topic": "graphs"} and again.awaiting is not None


@async_test(30)
async def test_a_plan_built_in_a_goal_handler_runs_to_its_response_event() -> None:
    bus = InProcessBus()
    world = World(bus, {"graphs": ["completed"]})
    planner = Planner("research-planner", bus=bus, store="memory://", recovery_interval=None)
    answers: list[Envelope] = []

    @planner.on_goal("research.goal")
    async def start(goal, context):  # type: ignore[no-untyped-def]
        # The document's fields, as its dataclass takes them.
        plan = PlanContext(
            plan_id=str(uuid.uuid4()),
            goal_event=goal.event_type,
            goal_data=goal.data,
            response_event=goal.response_event,
            status="pending",
            state_machine=state_machine,
            current_state="start",
            results={},
            user_id="user-1",
            tenant_id="tenant-1",
        )
        await plan.save()
        await plan.execute_next()

    @planner.on_transition()
    async def step(transition, context):  # type: ignore[no-untyped-def]
        plan = transition.plan
        await plan.execute_next(transition.event)
        if plan.is_complete():
            await plan.finalize({"state": plan.current_state})

    async def answered(event: Envelope) -> None:
        answers.append(event)

    await bus.subscribe(Topic.ACTION_RESULTS, "research.done", answered)
    async with planner:
        await world.start()
        await bus.request("research.goal", {"topic": "graphs"}, "research.done")
        await eventually(lambda: bool(answers), timeout=10, what="the answer")
        plan = await PlanContext.restore(answers[0].data["plan_id"], planner.context)
    assert answers[0].data["result"] == {"state": "done"}
    assert plan.planner == "research-planner" and plan.status == "completed"
    assert [r.type for r in world.requests] == ["web.search.requested", "content.analyze.requested"]


@async_test(30)
async def test_resume_takes_the_documents_input_data() -> None:
    planner = Planner("p", bus=InProcessBus(), store="memory://")
    plan = document_plan().attach(planner.context)
    await plan.execute_next()
    await plan.pause(reason="user_input_required")
    with pytest.raises(InputError, match="not both"):
        await plan.resume({"a": 1}, input_data={"a": 2})
    assert plan.status == "paused"
    assert await plan.resume(input_data={"topic": "graph theory"})
    assert plan.status == "running"
    assert plan.results["user_input"] == {"topic": "graph theory"}
