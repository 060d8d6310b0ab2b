"""A plan as the engine reads it, and the engine's run as a plan's fields.

:func:`engine_plan` gives the parts of a :class:`~waygraph.events.PlanContext`
no transition changes (an :class:`~waygraph.engine.event_run.EventPlan`),
:func:`engine_run` where it stands (an immutable
:class:`~waygraph.engine.event_run.EventRun`), and :func:`run_fields` the
other way: the plan's fields as a run has them, which is all a commit ever
changes of a plan.

Example:
    >>> from waygraph.engine.event_run import EventRun
    >>> run_fields(EventRun("work", path=("work",)))["path"]
    ['work']
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from waygraph.engine.event_run import EventPlan, EventRun

if TYPE_CHECKING:
    from waygraph.events.context import PlanContext
    from waygraph.events.statemachine import StateConfig, StateMachine

__all__ = ["RUN_FIELDS", "engine_plan", "engine_run", "run_fields", "visited"]

#: The plan fields an engine transition changes (the fields of an EventRun).
RUN_FIELDS = frozenset(EventRun.__dataclass_fields__)


def engine_plan(plan: PlanContext) -> EventPlan:
    """The plan's fixed parts as the engine reads them."""
    context = plan._context
    goal = plan.goal
    return EventPlan(
        plan_id=plan.plan_id,
        # Validated when first read, as before: finishing or pausing a plan
        # reads no state, so a stored machine that no longer validates
        # cannot keep its goal from being answered. A plan made only to
        # answer its goal as failed has no states.
        machine=_LazyMachine(plan) if plan.state_machine else _NO_STATES,
        source=context.source if context is not None else "",
        planner=plan.planner,
        goal_event=plan.goal_event,
        goal_id=goal.get("id"),
        traceparent=goal.get("traceparent"),
        goal_data=plan.goal_data,
        response_event=plan.response_event,
        response_topic=plan.response_topic,
        correlation_id=plan.correlation_id,
        parent_plan_id=plan.parent_plan_id,
        session_id=plan.session_id,
        user_id=plan.user_id,
        tenant_id=plan.tenant_id,
        depends_on=tuple(plan.depends_on),
    )


def engine_run(plan: PlanContext) -> EventRun:
    """Where the plan stands, as an immutable engine value (copies of the fields)."""
    return EventRun(
        current_state=plan.current_state,
        status=plan.status,
        path=tuple(plan.path),
        started=plan.started,
        results=plan.results,
        result=plan.result,
        error=plan.error,
        awaiting=plan.awaiting,
        processed_event_ids=tuple(plan.processed_event_ids),
        correlation_ids=tuple(plan.correlation_ids),
        pause_reason=plan.pause_reason,
    )


def run_fields(run: EventRun) -> dict[str, Any]:
    """A plan's fields as ``run`` has them (fresh mutable copies: they are public)."""
    return {
        "status": run.status,
        "current_state": run.current_state,
        "path": list(run.path),
        "started": run.started,
        "results": dict(run.results),
        "result": run.result,
        "error": None if run.error is None else dict(run.error),
        "awaiting": None if run.awaiting is None else dict(run.awaiting),
        "processed_event_ids": list(run.processed_event_ids),
        "correlation_ids": list(run.correlation_ids),
        "pause_reason": run.pause_reason,
    }


def visited(status: str, current_state: str, path: list[str]) -> dict[str, dict[str, str]]:
    """Each state entered and how it came out, as every run record says it.

    Example:
        >>> visited("completed", "done", ["work", "done"])["done"]
        {'outcome': 'success'}
    """
    ended = {"completed": "success", "failed": "fail"}.get(status)
    seen = {state: {"outcome": "success"} for state in path}
    if path:
        seen[current_state] = {"outcome": ended or "pending"}
    return seen


class _LazyMachine:
    """A plan's state machine, validated (:attr:`PlanContext.machine`) when first read."""

    __slots__ = ("_machine", "_owner")

    def __init__(self, plan: PlanContext) -> None:
        self._owner = plan
        self._machine: StateMachine | None = None

    def _get(self) -> StateMachine:
        if self._machine is None:
            self._machine = self._owner.machine
        return self._machine

    @property
    def start(self) -> str:
        return self._get().start

    @property
    def name(self) -> str | None:
        return self._get().name

    def __getitem__(self, state: str) -> StateConfig:
        return self._get()[state]

    def __contains__(self, state: object) -> bool:
        return state in self._get()

    def next_state(self, state: str, event_type: str, scope: Mapping[str, Any]) -> str | None:
        return self._get().next_state(state, event_type, scope)


class _NoStates:
    """The machine of a plan without states (made to answer its goal as failed)."""

    start = ""
    name = None

    def __getitem__(self, state: str) -> StateConfig:
        raise KeyError(state)

    def __contains__(self, state: object) -> bool:
        return False

    def next_state(self, state: str, event_type: str, scope: Mapping[str, Any]) -> str | None:
        return None


_NO_STATES = _NoStates()
