"""A run stored by the code before PlanRun became a façade over a frozen value still resumes.

``fixtures/planning_runs/interrupted_after_two_revisions.json`` is the record
and events of a run written by that code (a skip_and_continue revision, a
replan that replaced a failed step, then killed while ``b`` ran), with what
resuming it gave then; the resume here must give the same.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from waygraph.planning import Plan, PlanningAgent, PlanningPattern
from waygraph.planning._journal import load_run
from waygraph.store import open_store

pytestmark = pytest.mark.timeout(60)

FIXTURE = (
    Path(__file__).parent / "fixtures" / "planning_runs" / "interrupted_after_two_revisions.json"
)


def stored() -> tuple[Any, dict[str, Any]]:
    """A memory store holding the captured run as it was written."""
    fixture = json.loads(FIXTURE.read_text())
    store = open_store("memory://")
    store.commit(
        fixture["run_id"],
        fixture["record"],
        0,
        fixture["events"],
        kind=fixture["kind"],
        session=fixture["session"],
        status=fixture["status"],
        plan=fixture["plan"],
        make_current=True,
    )
    return store, fixture


def agent(store: Any, calls: list[str]) -> PlanningAgent:
    async def ok(tag: str) -> dict[str, Any]:
        calls.append(tag)
        return {"tag": tag}

    async def bad(tag: str) -> None:
        calls.append(tag)
        raise RuntimeError(f"{tag} broke")

    async def slow(x: Any) -> str:
        calls.append("slow")
        return f"slow after {x['tag']}"

    async def join(x: Any, y: Any) -> str:
        calls.append("join")
        return f"{x} + {y['tag']}"

    def decide(step_id: str, **_: Any) -> Any:
        raise AssertionError(f"no revision is needed after the resume ({step_id})")

    return PlanningAgent(
        None,
        tools=[ok, bad, slow, join],
        store=store,
        pattern=PlanningPattern(execution_mode="parallel", max_parallel=4),
        on_revision_needed=decide,
    )


def test_the_captured_record_reads_as_it_did():
    store, fixture = stored()
    saved = load_run(store, fixture["run_id"])
    assert saved.interrupted() == ["b"]
    assert saved.describe() == "running, 3 of 6 steps completed; interrupted: b; to run: b, c"
    assert Plan.model_validate(saved.state["plan"]).step_ids == ["a", "w", "f2", "g", "b", "c"]


def test_a_run_stored_by_the_earlier_code_resumes_as_it_did_then():
    store, fixture = stored()
    expected = fixture["resumed"]
    calls: list[str] = []
    result = asyncio.run(agent(store, calls).resume(fixture["run_id"]))
    assert sorted(calls) == expected["calls"]  # a, f2 and g were committed: not called again
    assert result.success is expected["success"]
    assert result.final_output == expected["final_output"]
    assert result.revision_count == expected["revision_count"]
    state = result.execution_state
    assert state is not None
    assert {k: str(v) for k, v in state.statuses.items()} == expected["statuses"]
    assert {
        k: {"status": str(r.status), "output": r.output, "error": r.error}
        for k, r in result.step_results.items()
    } == expected["step_results"]
    assert [s.id for s in result.plan.steps] == expected["initial_plan"]
    assert [s.id for s in result.final_plan.steps] == expected["final_plan"]
    assert [[str(r.trigger), str(r.strategy), r.applied] for r in state.revisions] == expected[
        "revisions"
    ]
    assert [e.data["type"] for e in store.events(fixture["run_id"])] == expected["events"]
    record = store.get(fixture["run_id"])
    assert record.status == "completed" and record.data["path"][-2:] == ["b", "c"]


def test_the_fixture_holds_both_revisions_and_the_replaced_step():
    # The captured run's second revision replaced f by f2 through on_revision_needed.
    _, fixture = stored()
    checkpoints = [e for e in fixture["events"] if e["type"] == "run_checkpoint"]
    last = checkpoints[-1]["state"]
    assert [r["strategy"] for r in last["revisions"]] == ["skip_and_continue", "replan_remaining"]
    assert last["initial_plan"] is not None and sorted(last["replaced"]) == ["b", "c", "f", "g"]
