"""Event-plan records written before the PlanContext façade (issue 38) still load and move on.

``tests/fixtures/event_records/records.json`` holds plans as the code at the
commit it names stored them (running with a request out, completed, paused,
pending on another plan, a child, failed), captured by ``make_event_records.py``
in the same folder. Each is put into a fresh store as it was and restored;
the running and paused ones are moved on and written back in the same format.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.bus_contract import async_test
from waygraph.events import Envelope, InProcessBus, PlanContext, Planner, TransitionContext
from waygraph.events._shared_values import unpack
from waygraph.store import Write

FIXTURE = Path(__file__).parent / "fixtures" / "event_records" / "records.json"
RECORDS: list[dict[str, Any]] = json.loads(FIXTURE.read_text(encoding="utf-8"))["records"]
#: The plan fields a record holds besides the run-record ones the store indexes.
RUN_RECORD_KEYS = {"kind", "plan", "current_node", "path", "visited"}
#: The core run-record keys event records gained with the typed RunRecord (issue 38 item 2).
ADDED_KEYS = {"run_id", "total_nodes", "completed_nodes"}


def by_status(status: str) -> dict[str, Any]:
    return next(r for r in RECORDS if r["status"] == status and not r["data"]["depends_on"])


def loaded() -> tuple[Planner, InProcessBus]:
    """A planner over a store holding every fixture record as it was stored."""
    bus = InProcessBus()
    planner = Planner("capture", bus=bus, store="memory://")
    planner.store.commit_all(
        [
            Write(
                r["key"],
                r["data"],
                0,
                r["events"],
                kind=r["kind"],
                session=r["session"],
                status=r["status"],
                plan=r["plan"],
                correlation_ids=r["correlation_ids"],
            )
            for r in RECORDS
        ]
    )
    return planner, bus


@async_test()
async def test_every_stored_plan_restores_with_the_fields_it_was_stored_with() -> None:
    planner, _ = loaded()
    for stored in RECORDS:
        plan = await PlanContext.restore(stored["key"], planner.context)
        fields = unpack(stored["data"])
        assert plan.model_dump(mode="json") == {
            name: fields[name] for name in PlanContext.model_fields
        }, stored["key"]
        assert plan.status == stored["status"]
        # The plan whose goal carried a correlation id is found by it.
        found = await PlanContext.restore_by_correlation(fields["correlation_id"], planner.context)
        assert found is not None and found.plan_id == stored["key"]


@async_test()
async def test_a_stored_running_plan_takes_the_answer_it_awaits_and_answers_its_goal() -> None:
    planner, bus = loaded()
    stored = by_status("running")
    answers: list[Envelope] = []

    async def collect(event: Envelope) -> None:
        answers.append(event)

    await bus.subscribe("action-results", "job.goal.done", collect)
    plan = await PlanContext.restore(stored["key"], planner.context)
    assert plan.current_state == "work" and plan.awaiting is not None
    answer = bus.envelope("job.done", {"ok": True}, correlation_id=plan.awaiting["correlation_id"])
    assert plan.accepts(answer) == "done"
    await Planner.advance(TransitionContext(event=answer, plan=plan))
    assert plan.status == "completed" and plan.current_state == "done"
    assert [a.data["status"] for a in answers] == ["completed"]
    assert answers[0].correlation_id == stored["data"]["correlation_id"]
    # Written back in the same format: the same keys, the run-record fields beside the plan's.
    record = planner.store.get(stored["key"])
    assert record is not None and record.version == 2
    assert set(record.data) - {"shared"} == (set(stored["data"]) - {"shared"}) | ADDED_KEYS
    assert set(record.data) >= RUN_RECORD_KEYS
    assert record.data["visited"] == {
        "work": {"outcome": "success"},
        "done": {"outcome": "success"},
    }


@async_test()
async def test_a_stored_paused_plan_resumes_and_sends_its_request_again() -> None:
    planner, _ = loaded()
    stored = by_status("paused")
    plan = await PlanContext.restore(stored["key"], planner.context)
    assert plan.pause_reason == "budget_approval_required"
    before = plan.awaiting["correlation_id"]
    assert await plan.resume(input_data={"approved_amount": 10}) is True
    again = await PlanContext.restore(stored["key"], planner.context)
    assert again.status == "running" and again.results["user_input"] == {"approved_amount": 10}
    assert again.awaiting["correlation_id"] != before


@async_test()
async def test_a_stored_plan_saved_again_is_stored_as_it_was() -> None:
    planner, _ = loaded()
    for stored in RECORDS:
        plan = await PlanContext.restore(stored["key"], planner.context)
        await plan.save()
        record = planner.store.get(stored["key"])
        assert record is not None
        assert record.data["run_id"] == stored["key"]
        same = {k: v for k, v in record.data.items() if k not in {"updated_at", *ADDED_KEYS}}
        assert same == {k: v for k, v in stored["data"].items() if k != "updated_at"}, stored["key"]
