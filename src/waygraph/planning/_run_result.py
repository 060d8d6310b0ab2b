"""What a run's frozen state says to the outside: snapshots and the final result (pure).

Example:
    >>> from waygraph.planning._models import Plan, TokenUsage
    >>> from waygraph.planning._run_state import RunState, stop
    >>> plan = Plan(goal="g", steps=[{"id": "a", "action": "t"}])
    >>> state = stop(RunState.of(plan, "g", started_at=None), "budget")
    >>> failure_text(state)
    'The plan did not complete: budget'
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from waygraph.planning._models import (
    PlanExecutionResult,
    PlanExecutionState,
    StepStatus,
    TokenUsage,
)
from waygraph.planning._run_state import RunState

__all__ = ["failure_text", "final_output", "result_of", "snapshot_of"]


def snapshot_of(
    state: RunState, *, running: Iterable[str], token_usage: TokenUsage, depth: int
) -> PlanExecutionState:
    """The public view of ``state`` (``running``: the steps running, in start order)."""
    statuses = {sid: StepStatus.REVISED for sid in state.replaced}
    statuses.update(state.status)
    return PlanExecutionState(
        goal=state.goal,
        plan=state.plan,
        statuses=statuses,
        results={**state.replaced, **state.results},
        running=tuple(running),
        revisions=state.revisions,
        revision_count=state.revision_count,
        token_usage=token_usage,
        depth=depth,
        started_at=state.started_at,
        finished_at=state.finished_at,
        stop_reason=state.stop_reason,
    )


def result_of(
    state: RunState, snapshot: PlanExecutionState, *, token_usage: TokenUsage, elapsed: float
) -> PlanExecutionResult:
    """The result of the ended run ``state`` (see :func:`~waygraph.planning._run_state.block`)."""
    success = state.dag.succeeded()
    results = state.results
    ordered = {sid: results[sid] for sid in state.plan.step_ids if sid in results}
    for sid, result in state.replaced.items():
        ordered.setdefault(sid, result)
    return PlanExecutionResult(
        success=success,
        plan=state.initial_plan,
        final_plan=state.plan,
        step_results=ordered,
        final_output=final_output(state) if success else failure_text(state),
        revision_count=state.revision_count,
        execution_state=snapshot,
        token_usage=token_usage,
        execution_time=elapsed,
    )


def final_output(state: RunState) -> Any:
    """The leaves' outputs: the one output of a single leaf, else ``{leaf: output}``."""
    outputs = {
        s.id: state.outputs.get(s.id)
        for s in state.plan.leaves()
        if state.status[s.id] == StepStatus.COMPLETED
    }
    if len(outputs) == 1:
        return next(iter(outputs.values()))
    return outputs


def failure_text(state: RunState) -> str:
    """Why the run did not complete, naming the failed, skipped and blocked steps."""
    reason = state.stop_reason
    parts = [reason] if reason else []
    for sid in state.plan.step_ids:
        result = state.results.get(sid)
        already_named = f"step {sid!r} failed" in (reason or "")
        if state.status[sid] == StepStatus.FAILED and result is not None and not already_named:
            parts.append(f"step {sid!r} failed: {result.error}")
    skipped = [
        sid
        for sid in state.plan.step_ids
        if state.status[sid] == StepStatus.SKIPPED and sid not in state.waived
    ]
    blocked = state.dag.with_(StepStatus.BLOCKED)
    if skipped:
        parts.append(f"skipped after a failed dependency: {', '.join(skipped)}")
    if blocked:
        parts.append(f"not run: {', '.join(blocked)}")
    return "The plan did not complete: " + "; ".join(parts)
