"""PlanContext: one plan's state, persisted in a store, moved along by events.

Every change is one store commit, version-checked: the new state, the ids of
the events it processed, and the *outbox* (the requests and responses the
change sends) are written together. Only then is the outbox published, and
then marked published in a second commit. A process that dies in between
leaves the entries in the outbox; :meth:`PlanContext.publish_pending` (called
by :meth:`Planner.start`) sends them again with the same event ids, so
receivers that deduplicate by id see each once. See ``docs/events.md``,
"Guarantees".

Example:
    >>> import asyncio
    >>> from waygraph.events import (InProcessBus, Planner, PlanContext, StateConfig,
    ...                              StateAction, StateTransition)
    >>> SM = {"start": StateConfig(state_name="start", default_next="work"),
    ...       "work": StateConfig(state_name="work",
    ...           action=StateAction(event_type="job.requested", data={"n": "{goal_data.n}"}),
    ...           transitions=[StateTransition(on_event="job.completed", to_state="done")]),
    ...       "done": StateConfig(state_name="done", is_terminal=True)}
    >>> async def main():
    ...     planner = Planner("doc", bus=InProcessBus(), store="memory://")
    ...     goal = planner.context.bus.envelope("job.goal", {"n": 2}, correlation_id="c1")
    ...     plan = await PlanContext.create_from_goal(goal, state_machine=SM,
    ...                                               context=planner.context)
    ...     await plan.execute_next()
    ...     again = await PlanContext.restore_by_correlation("c1", planner.context)
    ...     return plan.current_state, plan.status == "running", again.plan_id == plan.plan_id
    >>> asyncio.run(main())
    ('work', True, True)
"""

from __future__ import annotations

import copy
import logging
import uuid
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from waygraph.errors import PlanFormatError, PlanStateError
from waygraph.events._plan_records import Change, PlanRecords
from waygraph.events._planner_context import (
    KIND,
    PLAN_NAMESPACE,
    PlannerContext,
    current_planner_context,
)
from waygraph.events.envelope import Envelope, Topic, new_event_id
from waygraph.events.failures import error_payload
from waygraph.events.statemachine import (
    StateAction,
    StateConfig,
    StateMachine,
    fill_template,
    validate_state_machine,
)
from waygraph.model import FINISHED, RunStatus

__all__ = ["KIND", "PlanContext", "PlanStatus", "PlannerContext", "current_planner_context"]

log = logging.getLogger("waygraph.events")

#: An event-driven plan's status: the one run status (it takes ``pending``,
#: ``running``, ``paused``, ``completed`` and ``failed``). The name is kept for
#: code written against it.
PlanStatus = RunStatus

#: How many processed event ids a plan remembers. Redeliveries come soon after
#: the first delivery; the bound keeps long-lived plans' records small.
MAX_PROCESSED_IDS = 1000


class PlanContext(PlanRecords, BaseModel):
    """One plan: its goal, state machine, current state, results and links.

    Create with :meth:`create_from_goal`; load with :meth:`restore` or
    :meth:`restore_by_correlation`. Methods that change the plan
    (:meth:`execute_next`, :meth:`finalize`, :meth:`pause`, :meth:`resume`,
    :meth:`save`) commit to the store, version-checked; when another writer
    got there first they reload the plan and apply the change again, so the
    object always shows the stored state afterwards.
    """

    model_config = ConfigDict(extra="ignore", validate_assignment=False)

    plan_id: str
    planner: str
    goal_event: str
    goal: dict[str, Any]
    goal_data: dict[str, Any] = Field(default_factory=dict)
    response_event: str | None = None
    response_topic: str | None = None
    status: RunStatus = RunStatus.RUNNING
    state_machine: dict[str, StateConfig]
    current_state: str
    path: list[str] = Field(default_factory=list)
    started: bool = False
    results: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    error: dict[str, Any] | None = None
    parent_plan_id: str | None = None
    session_id: str | None = None
    user_id: str | None = None
    tenant_id: str | None = None
    correlation_id: str | None = None
    correlation_ids: list[str] = Field(default_factory=list)
    depends_on: list[str] = Field(default_factory=list)
    awaiting: dict[str, Any] | None = None
    processed_event_ids: list[str] = Field(default_factory=list)
    outbox: list[dict[str, Any]] = Field(default_factory=list)
    pause_reason: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0

    _context: PlannerContext | None = PrivateAttr(default=None)
    _version: int = PrivateAttr(default=0)
    _machine: StateMachine | None = PrivateAttr(default=None)

    # ------------------------------------------------------------ loading

    @property
    def version(self) -> int:
        """The store version this object was loaded at or last committed."""
        return self._version

    @property
    def context(self) -> PlannerContext:
        """The planner context the plan is attached to; PlanStateError when none is."""
        if self._context is None:
            raise PlanStateError(f"plan {self.plan_id!r} is not attached to a planner context")
        return self._context

    @property
    def machine(self) -> StateMachine:
        """The validated state machine."""
        if self._machine is None:
            self._machine = validate_state_machine(self.state_machine, name=self.plan_id)
        return self._machine

    @property
    def goal_envelope(self) -> Envelope:
        """The goal event as an :class:`Envelope`."""
        return Envelope.from_wire(self.goal)

    # ------------------------------------------------------------ reading

    def get_next_state(self, event: Envelope) -> str | None:
        """The state ``event`` moves this plan to, or None when no transition accepts it.

        Transitions of the current state are tried in order; the first whose
        ``on_event`` is the event's type and whose condition holds over
        ``data`` (the event's data), ``results``, ``goal_data`` and ``event``
        wins. This looks at the state machine only; :meth:`accepts` also
        checks the plan's status, duplicates and correlation.
        """
        if self.current_state not in self.machine:
            return None
        return self.machine.next_state(self.current_state, event.type, self._scope(event))

    def accepts(self, event: Envelope) -> str | None:
        """:meth:`get_next_state`, if the plan takes ``event`` at all now, else None.

        A plan takes an event when it is running and started, has not
        processed the event's id, and the event answers the request the plan
        is waiting for (or carries the goal's correlation id). A late answer
        to an older request (one re-sent by :meth:`resume`, say) is refused.
        """
        if self.status != "running" or not self.started:
            return None
        if event.id in self.processed_event_ids:
            return None
        cid = event.correlation_id
        waiting_for = self.awaiting.get("correlation_id") if self.awaiting else None
        if cid is None or cid not in (waiting_for, self.correlation_id):
            return None
        return self.get_next_state(event)

    def is_complete(self) -> bool:
        """True when the plan is finished or stands on a terminal state."""
        if self.status in FINISHED:
            return True
        config = self.state_machine.get(self.current_state)
        return bool(config and config.is_terminal)

    def _scope(self, event: Envelope | None = None) -> dict[str, Any]:
        scope: dict[str, Any] = {
            "goal_data": self.goal_data,
            "results": self.results,
            "plan": {
                "plan_id": self.plan_id,
                "session_id": self.session_id,
                "user_id": self.user_id,
                "tenant_id": self.tenant_id,
                "parent_plan_id": self.parent_plan_id,
                "current_state": self.current_state,
            },
        }
        if event is not None:
            scope["data"] = event.data
            scope["event"] = {
                "id": event.id,
                "type": event.type,
                "source": event.source,
                "subject": event.subject,
                "correlation_id": event.correlation_id,
            }
        return scope

    # ------------------------------------------------------------ changing

    async def execute_next(
        self,
        trigger_event: Envelope | None = None,
        *,
        pause: str | None = None,
        finalize: Callable[[PlanContext], Any] | None = None,
    ) -> bool:
        """Move the plan along; True when it changed.

        Without an event: the first call enters the start state (following
        its ``default_next``, and sending the request of the state it lands
        on); a pending plan starts only once every plan in ``depends_on``
        has completed (and fails when one failed); later calls follow the
        current state's ``default_next`` when it has one, and otherwise
        change nothing (the state waits for an event). With an event: the event's data
        becomes ``results[<current state>]`` and the plan enters the state
        :meth:`accepts` names. An event the plan does not take (a
        duplicate, a stale answer, one no transition accepts) changes
        nothing and returns False.

        ``pause``: enter the next state but pause there, with this reason, in
        the same commit, without sending its request; :meth:`resume` sends
        it. This is the race-free way to hold a plan for an approval before
        a step (``pause()`` after ``execute_next`` lets a fast worker answer
        first).

        ``finalize``: when the plan lands on a terminal state, answer the goal
        in the same commit, with ``finalize(plan)`` as the result (see
        :meth:`finalize`). One commit means a crash can never leave a plan on
        its terminal state with its goal unanswered.
        """
        if trigger_event is None and self.status == "pending" and self.depends_on:
            return await self._start_after_dependencies()
        parent_correlation = await self._parent_correlation() if finalize is not None else None

        def apply(plan: PlanContext, change: Change) -> bool:
            if not plan._apply_next(trigger_event, change, pause):
                return False
            if finalize is not None and plan.status not in FINISHED and plan.is_complete():
                plan._finish(change, finalize(plan), None, parent_correlation)
            return True

        return await self._advance(apply)

    def _apply_next(self, event: Envelope | None, change: Change, pause: str | None) -> bool:
        if event is None:
            if self.status in FINISHED or self.status == "paused":
                return False
            if self.status == "pending":
                if self.depends_on:
                    return False
                self.status = RunStatus.RUNNING
            if not self.started:
                self.started = True
                self._enter(self.machine.start, change, None, pause)
                return True
            config = self.machine[self.current_state]
            if config.is_terminal:
                return False
            if config.default_next is None:
                # The state waits for an event. Doing nothing (rather than raising)
                # keeps a goal handler that runs twice, as redelivery allows, harmless.
                return False
            self._enter(config.default_next, change, None, pause)
            return True
        target = self.accepts(event)
        if target is None:
            return False
        self.results[self.current_state] = event.data
        self._remember(event.id)
        change.events.append(
            {
                "type": "event_applied",
                "event_id": event.id,
                "event_type": event.type,
                "from": self.current_state,
                "to": target,
            }
        )
        self._enter(target, change, event, pause)
        return True

    def _enter(
        self, state: str, change: Change, via: Envelope | None, pause: str | None = None
    ) -> None:
        state = self.machine.follow_defaults(state)
        self.current_state = state
        self.path.append(state)
        self.awaiting = None
        change.events.append({"type": "state_entered", "state": state})
        config = self.machine[state]
        if pause is not None and not config.is_terminal:
            self._pause(pause, change)
            return
        if config.action is not None:
            self._dispatch(config.action, change, via)

    def _dispatch(self, action: StateAction, change: Change, via: Envelope | None) -> None:
        scope = self._scope(via)
        data = fill_template(action.data, scope, where=f"{self.current_state}.action.data")
        correlation_id = new_event_id()
        envelope = Envelope(
            source=self.context.source,
            type=action.event_type,
            data=data,
            correlation_id=correlation_id,
            response_event=action.expected_response,
            response_topic=Topic.ACTION_RESULTS.value,
            session_id=self.session_id,
            tenant_id=self.tenant_id,
            user_id=self.user_id,
            goal_id=self.goal.get("id"),
            plan_id=self.plan_id,
            parent_event_id=via.id if via is not None else self.goal.get("id"),
            traceparent=self.goal.get("traceparent"),
        )
        self.awaiting = {
            "state": self.current_state,
            "event_type": action.event_type,
            "response_event": action.expected_response,
            "correlation_id": correlation_id,
            "request_id": envelope.id,
        }
        if correlation_id not in self.correlation_ids:
            self.correlation_ids.append(correlation_id)
        self._send(envelope, Topic.ACTION_REQUESTS, change)
        change.events.append(
            {
                "type": "request_sent",
                "state": self.current_state,
                "event_type": action.event_type,
                "event_id": envelope.id,
                "correlation_id": correlation_id,
            }
        )

    def _send(self, envelope: Envelope, topic: Topic, change: Change) -> None:
        entry = {"id": envelope.id, "topic": topic.value, "envelope": envelope.to_wire()}
        self.outbox.append(entry)
        change.send(entry, envelope)

    def _remember(self, event_id: str) -> None:
        if event_id not in self.processed_event_ids:
            self.processed_event_ids.append(event_id)
            del self.processed_event_ids[:-MAX_PROCESSED_IDS]

    async def dispatch(self, action: StateAction | str) -> None:
        """Send ``action`` as the current state's request (dynamic plans, see
        :meth:`Planner.reason_next_action`); the plan waits for its answer.

        An event type (what ``reason_next_action`` returns) sends the action
        of the plan's state that has it (its data and response event), else
        a bare request of that type.
        """
        if isinstance(action, str):
            action = self._action_for(action)
        if self.status != "running":
            raise PlanStateError(f"plan {self.plan_id!r} is {self.status}; it sends no requests")

        def apply(plan: PlanContext, change: Change) -> bool:
            plan._dispatch(action, change, None)
            return True

        await self._advance(apply)

    def _action_for(self, event_type: str) -> StateAction:
        if self.state_machine.get(self.current_state) is not None:
            own = self.state_machine[self.current_state].action
            if own is not None and own.event_type == event_type:
                return own
        for config in self.state_machine.values():
            if config.action is not None and config.action.event_type == event_type:
                return config.action
        return StateAction(event_type=event_type)

    async def finalize(
        self,
        result: Any = None,
        *,
        status: Literal["completed", "failed"] | None = None,
        error: dict[str, Any] | None = None,
    ) -> bool:
        """Finish the plan and answer the goal; True the first time, False after.

        Stores the plan as ``completed`` (``failed`` when it stands on a
        terminal state named ``failed``, or when ``status`` says so) with
        ``result`` (also kept as ``results["final"]``, as document 002
        has it), and in the same commit puts in the outbox: the response
        on the goal's ``response_event`` (default ``<goal type>.completed``)
        and ``response_topic`` (default ``action-results``) with the goal's
        correlation id, or the parent plan's when the goal had none, data
        ``{"plan_id", "status", "result"}`` (plus ``error``, when given, as
        a failed answer carries it: ``{"type", "message", ...}``); and ``plan.completed`` /
        ``plan.failed`` on ``plan-events``, which starts plans that depend on
        this one.
        """
        parent_correlation = await self._parent_correlation()

        def apply(plan: PlanContext, change: Change) -> bool:
            if plan.status in FINISHED:
                return False
            plan._finish(change, result, status, parent_correlation, error=error)
            return True

        return await self._change(apply)

    async def _parent_correlation(self) -> str | None:
        """The parent plan's correlation id, for a nested goal that had none of its own."""
        if self.correlation_id is None and self.parent_plan_id:
            parent = await self.parent()
            return parent.correlation_id if parent else None
        return None

    def _finish(
        self,
        change: Change,
        result: Any,
        status: Literal["completed", "failed"] | None,
        parent_correlation: str | None,
        *,
        error: dict[str, Any] | None = None,
    ) -> None:
        """Mark the plan finished and put the goal's answer and ``plan.<status>`` in the outbox."""
        final = status or ("failed" if self.current_state == "failed" else "completed")
        self.status = RunStatus(final)
        # A copy: a result built from self.results must not come to contain itself.
        result = copy.deepcopy(result)
        self.results["final"] = result
        self.result = result
        self.awaiting = None
        goal_id = self.goal.get("id")
        data = {"plan_id": self.plan_id, "status": final, "result": result}
        if error is not None:
            self.error = data["error"] = error
        response = Envelope(
            id=_derived_id(self.plan_id, "response"),
            source=self.context.source,
            type=self.response_event or f"{self.goal_event}.completed",
            data=data,
            correlation_id=self.correlation_id or parent_correlation,
            session_id=self.session_id,
            tenant_id=self.tenant_id,
            user_id=self.user_id,
            goal_id=goal_id,
            plan_id=self.plan_id,
            parent_event_id=goal_id,
            traceparent=self.goal.get("traceparent"),
        )
        self._send(response, Topic(self.response_topic or Topic.ACTION_RESULTS), change)
        done = Envelope(
            id=_derived_id(self.plan_id, f"plan.{final}"),
            source=self.context.source,
            type=f"plan.{final}",
            data={"plan_id": self.plan_id, "status": final, "planner": self.planner},
            plan_id=self.plan_id,
            session_id=self.session_id,
            correlation_id=self.correlation_id,
            parent_event_id=goal_id,
        )
        self._send(done, Topic.PLAN_EVENTS, change)
        change.events.append({"type": f"plan_{final}", "state": self.current_state})

    async def pause(self, reason: str = "user_input_required") -> bool:
        """Pause a running plan until :meth:`resume`; True when it was running.

        A paused plan takes no events: an answer to its outstanding request
        is ignored, and :meth:`resume` sends the request again.
        ``plan.paused`` (with the reason) goes out on ``notification-events``,
        so a person or a UI can act on it. To pause before a state's request
        goes out, use ``execute_next(event, pause=reason)``.
        """

        def apply(plan: PlanContext, change: Change) -> bool:
            if plan.status != "running":
                return False
            plan._pause(reason, change)
            return True

        return await self._change(apply)

    def _pause(self, reason: str, change: Change) -> None:
        self.status = RunStatus.PAUSED
        self.pause_reason = reason
        notice = Envelope(
            source=self.context.source,
            type="plan.paused",
            data={"plan_id": self.plan_id, "state": self.current_state, "reason": reason},
            correlation_id=self.correlation_id,
            plan_id=self.plan_id,
            session_id=self.session_id,
            user_id=self.user_id,
            tenant_id=self.tenant_id,
        )
        self._send(notice, Topic.NOTIFICATION_EVENTS, change)
        change.events.append({"type": "plan_paused", "state": self.current_state})

    async def resume(self, input: Any = None, *, event: Envelope | None = None) -> bool:
        """Resume a paused plan; True when it was paused (so a repeated approval is a no-op).

        ``input`` is kept as ``results["user_input"]`` (document 002's name)
        and ``results["resume_input"]`` (conditions and templates see both).
        The current state's action is sent again, with a new correlation id,
        so an answer to the request sent before the pause is ignored; a state
        without an action follows its ``default_next``.
        ``event``, when given, is recorded as processed.
        """

        def apply(plan: PlanContext, change: Change) -> bool:
            if plan.status != "paused":
                return False
            if event is not None:
                if event.id in plan.processed_event_ids:
                    return False
                plan._remember(event.id)
            plan.status = RunStatus.RUNNING
            plan.pause_reason = None
            plan.results["user_input"] = input
            plan.results["resume_input"] = input
            change.events.append({"type": "plan_resumed", "state": plan.current_state})
            config = plan.machine[plan.current_state]
            if not plan.started:
                plan.started = True
                plan._enter(plan.machine.start, change, event)
            elif config.action is not None:
                plan._dispatch(config.action, change, event)
            elif config.default_next is not None and not config.is_terminal:
                plan._enter(config.default_next, change, event)
            return True

        return await self._advance(apply)

    async def _start_after_dependencies(self) -> bool:
        statuses: dict[str, str] = {}
        for dep in self.depends_on:
            record = await self.context.call(self.context.store.get, dep)
            statuses[dep] = record.data.get("status", "missing") if record else "missing"
        failed = [d for d, s in statuses.items() if s == "failed"]
        if failed:
            await self._reload()
            if self.status != "pending":
                return False
            return await self.finalize(
                {"error": f"dependency {failed[0]!r} failed", "dependencies": statuses},
                status="failed",
            )
        if any(s != "completed" for s in statuses.values()):
            return False

        def apply(plan: PlanContext, change: Change) -> bool:
            if plan.status != "pending":
                return False
            plan.status = RunStatus.RUNNING
            plan.started = True
            change.events.append({"type": "dependencies_met", "depends_on": plan.depends_on})
            plan._enter(plan.machine.start, change, None)
            return True

        return await self._advance(apply)

    # ------------------------------------------------------------ committing

    async def _advance(self, apply: Callable[[PlanContext, Change], bool]) -> bool:
        """:meth:`_change` for changes that send requests: a request whose data
        template has no value for this goal fails the plan (answering its goal)
        instead of failing every redelivery of the event."""
        try:
            return await self._change(apply)
        except PlanFormatError as exc:
            log.warning("plan %s failed: %s", self.plan_id, exc)
            await self.finalize(
                {"error": str(exc), "field": exc.field, "state": self.current_state},
                status="failed",
                error=error_payload(exc),
            )
            return True

    def __repr__(self) -> str:
        return (
            f"PlanContext(plan_id={self.plan_id!r}, status={str(self.status)!r}, "
            f"current_state={self.current_state!r})"
        )


def _derived_id(plan_id: str, what: str) -> str:
    # Fixed ids for a plan's one-time events: re-sending them is recognisable.
    return uuid.uuid5(PLAN_NAMESPACE, f"{plan_id}\x00{what}").hex
