"""An executed run is one frozen value: transitions return a new one; PlanRun only reads it.

Issue 38 item 3: ``PlanRun`` is a façade over a ``RunState`` changed only by
``waygraph.planning._run_state``'s transitions (over ``engine.dag``) and taken
with ``PlanRun.commit``; assigning one of its fields raises, saying so.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from waygraph.engine.dag import DagIndex
from waygraph.errors import ReadOnlyFieldError
from waygraph.planning import Plan, PlanningAgent, PlanningPattern, StepResult, StepStatus
from waygraph.planning import _run_state as transitions
from waygraph.planning._executor import PlanRun
from waygraph.planning._run_state import RunState
from waygraph.planning._runtime import Meter, RunCallbacks, RunSetup

pytestmark = pytest.mark.timeout(30)


def plan() -> Plan:
    return Plan(
        goal="g",
        steps=[
            {"id": "a", "action": "t"},
            {"id": "b", "action": "t", "dependencies": ["a"]},
            {"id": "c", "action": "t", "dependencies": ["b"]},
        ],
    )


def fresh() -> RunState:
    return RunState.of(plan(), "g", started_at=None)


def done(step_id: str, output: Any = 1) -> StepResult:
    return StepResult(step_id=step_id, status=StepStatus.COMPLETED, output=output)


def failed(step_id: str) -> StepResult:
    return StepResult(step_id=step_id, status=StepStatus.FAILED, error="broke")


def a_run() -> PlanRun:
    def t() -> int:
        return 1

    agent = PlanningAgent(None, tools=[t], store=False)
    setup = RunSetup(agent._planner, None, RunCallbacks(), Meter(), calls={})  # type: ignore[arg-type]
    return PlanRun.of(plan(), "g", setup)


# ------------------------------------------------------------------ the façade


@pytest.mark.parametrize(
    "field", ["status", "results", "plan", "goal", "state", "journal", "revisions", "outputs"]
)
def test_assigning_a_planrun_field_raises_and_names_the_way_to_change_it(field: str):
    run = a_run()
    before = run.state
    with pytest.raises(ReadOnlyFieldError) as caught:
        setattr(run, field, None)
    message = str(caught.value)
    assert message.startswith(f"PlanRun.{field} is read-only: ")
    assert "PlanRun.commit(new_state)" in message
    assert "PlanningAgent.request_revision(reason)" in message
    assert run.state is before  # nothing changed


def test_the_read_only_error_is_an_attribute_error_and_a_waygraph_error():
    from waygraph.errors import WaygraphError

    run = a_run()
    with pytest.raises(AttributeError):
        run.status = {}  # type: ignore[misc]
    with pytest.raises(WaygraphError):
        del run.plan


def test_a_planrun_reads_its_fields_from_the_state_it_committed():
    run = a_run()
    later = transitions.finish(transitions.start(run.state, "a"), done("a", {"n": 1}))
    run.commit(later)
    assert run.state is later
    assert run.status["a"] == StepStatus.COMPLETED and run.results["a"].output == {"n": 1}
    assert run.snapshot().statuses["a"] == StepStatus.COMPLETED


def test_the_state_itself_cannot_be_changed_in_place():
    state = fresh()
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.plan = plan()  # type: ignore[misc]
    with pytest.raises(TypeError):
        state.results["a"] = done("a")  # type: ignore[index]
    with pytest.raises(TypeError):
        state.status["a"] = StepStatus.COMPLETED  # type: ignore[index]


# ------------------------------------------------------------------ transitions


def test_a_transition_leaves_the_state_it_was_given_unchanged():
    before = fresh()
    running = transitions.start(before, "a")
    after = transitions.finish(running, done("a", "out"))
    assert before.status["a"] == StepStatus.PENDING and dict(before.results) == {}
    assert running.status["a"] == StepStatus.RUNNING and dict(running.outputs) == {}
    assert after.status["a"] == StepStatus.COMPLETED and after.outputs["a"] == "out"


def test_every_transition_leaves_its_input_as_it_was():
    base = transitions.finish(transitions.start(fresh(), "a"), failed("a"))
    copy = dataclasses.replace(base)
    snapshot = (
        dict(base.status),
        dict(base.results),
        dict(base.outputs),
        dict(base.replaced),
        base.revisions,
        base.revision_attempts,
    )
    index = DagIndex.of_dependencies({s.id: s.dependencies for s in base.plan.steps})
    settled, skipped = transitions.settle(base, index)
    assert skipped == {"b": "a", "c": "b"} and settled.status["c"] == StepStatus.SKIPPED
    waived = transitions.waive(base, "a")
    assert waived.waived == frozenset({"a"}) and waived.results["a"].status == StepStatus.SKIPPED
    stopped = transitions.block(transitions.stop(base, "why"), now=None)
    assert stopped.results["b"].error == "not run: why"
    new = Plan(goal="g", steps=[{"id": "a2", "action": "t"}])
    revised = transitions.revise(base, new, set())
    assert revised.plan is new and revised.replaced["a"].status == StepStatus.REVISED
    assert transitions.count_attempt(base).revision_attempts == 1
    assert transitions.flag_budget(base).budget_flagged
    assert (
        dict(base.status),
        dict(base.results),
        dict(base.outputs),
        dict(base.replaced),
        base.revisions,
        base.revision_attempts,
    ) == snapshot
    assert base == copy


def test_a_mismatched_output_is_kept_aside_until_accepted():
    result = StepResult(step_id="a", status=StepStatus.FAILED, output="close", error="mismatch")
    failed_check = transitions.finish(transitions.start(fresh(), "a"), result, mismatched=True)
    accepted = transitions.accept(failed_check, "a")
    assert "a" not in failed_check.outputs and failed_check.mismatched["a"] == "close"
    assert accepted.outputs["a"] == "close" and "a" not in accepted.mismatched
    assert accepted.results["a"].status == StepStatus.COMPLETED


def test_a_run_through_the_agent_ends_as_its_frozen_state_says():
    seen: list[RunState] = []

    def t() -> int:
        return 1

    def complete(**_: Any) -> None:
        seen.append(agent._run.state if agent._run is not None else None)  # type: ignore[arg-type]

    agent = PlanningAgent(
        None,
        tools=[t],
        store=False,
        pattern=PlanningPattern(execution_mode="sequential"),
        on_step_complete=complete,
    )
    result = asyncio.run(agent.execute_plan(plan()))
    assert result.success
    # Each step's state is its own value: later steps did not change the earlier ones.
    assert [sorted(s.outputs) for s in seen] == [["a"], ["a", "b"], ["a", "b", "c"]]
