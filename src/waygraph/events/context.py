"""PlanContext: one plan's state, persisted in a store, moved along by events.

The façade over the engine: each method that changes the plan reads its
fields into an immutable :class:`~waygraph.engine.event_run.EventRun`, calls
one pure transition of :mod:`waygraph.engine.events` (which holds every rule:
entering states, requests, accepting events, pause, resume, dependencies,
finishing) and commits the new run with the transition's effects.

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

import logging
from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from waygraph.engine import events as engine

# MAX_PROCESSED_IDS: how many processed event ids a plan remembers (kept importable here).
from waygraph.engine.event_run import MAX_PROCESSED_IDS as MAX_PROCESSED_IDS
from waygraph.engine.event_run import EventPlan, EventRun, Moved, then
from waygraph.errors import InputError, PayloadTooLargeError, PlanFormatError, PlanStateError
from waygraph.events._plan_records import PlanRecords, _run_fields
from waygraph.events._planner_context import (
    KIND,
    PlannerContext,
    current_planner_context,
)
from waygraph.events.envelope import Envelope, new_event_id
from waygraph.events.failures import error_payload
from waygraph.events.statemachine import (
    StateAction,
    StateConfig,
    StateMachine,
    validate_state_machine,
)
from waygraph.model import FINISHED, RunStatus

__all__ = ["KIND", "PlanContext", "PlanStatus", "PlannerContext", "current_planner_context"]

log = logging.getLogger("waygraph.events")

#: An event-driven plan's status: the one run status (it takes ``pending``,
#: ``running``, ``paused``, ``completed`` and ``failed``). The name is kept for
#: code written against it.
PlanStatus = RunStatus


class PlanContext(PlanRecords, BaseModel):
    """One plan: its goal, state machine, current state, results and links.

    Create with :meth:`create_from_goal`; load with :meth:`restore` or
    :meth:`restore_by_correlation`. Document 002's way works too:
    ``PlanContext(plan_id=..., goal_event=..., goal_data=..., response_event=...,
    status="pending", state_machine=..., current_state="start", ...)``, then
    ``await plan.save()`` and ``await plan.execute_next()``: without
    ``goal`` the goal event is rebuilt from the fields (see :meth:`_derive_goal`),
    and a plan built inside a planner's handler belongs to that planner
    (``planner`` is its name; elsewhere call :meth:`attach`). Methods that change the plan
    (:meth:`execute_next`, :meth:`finalize`, :meth:`pause`, :meth:`resume`,
    :meth:`save`) commit to the store, version-checked; when another writer
    got there first they reload the plan and apply the change again, so the
    object always shows the stored state afterwards.
    """

    model_config = ConfigDict(extra="ignore", validate_assignment=False)

    plan_id: str
    #: The owning planner's name; "" until the plan is attached to a planner context.
    planner: str = ""
    goal_event: str
    goal: dict[str, Any] = Field(default_factory=dict)
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

    # ------------------------------------------------------------ building

    @model_validator(mode="before")
    @classmethod
    def _derive_goal(cls, data: Any) -> Any:
        """Document 002 builds a plan without ``goal`` (the goal event on the wire):
        it is rebuilt from ``goal_event``, ``goal_data`` and the plan's other fields,
        with the id ``goal-<plan_id>`` and the running planner's source."""
        if not isinstance(data, dict) or "goal" in data or not data.get("goal_event"):
            return data
        context = current_planner_context()
        wire = {
            "id": f"goal-{data.get('plan_id') or new_event_id()}",
            "source": context.source if context is not None else "waygraph",
            "type": data["goal_event"],
            "data": dict(data.get("goal_data") or {}),
            "correlationid": data.get("correlation_id"),
            "responseevent": data.get("response_event"),
            "responsetopic": data.get("response_topic"),
            "sessionid": data.get("session_id"),
            "tenantid": data.get("tenant_id"),
            "userid": data.get("user_id"),
            "planid": data.get("parent_plan_id"),
        }
        envelope = Envelope.model_validate(wire)
        return {**data, "goal": envelope.to_wire()}

    def model_post_init(self, context: Any, /) -> None:
        """A plan built inside a planner's handler belongs to that planner."""
        running = current_planner_context()
        if running is not None and self._context is None:
            self.attach(running)

    def attach(self, context: PlannerContext) -> PlanContext:
        """Attach the plan to ``context`` (a planner's); the plan, for chaining.

        For a plan built with ``PlanContext(...)`` outside a planner's handler
        (inside one it is attached already). ``planner`` becomes the
        context's name when it was not set.

        Example::

            plan = PlanContext(plan_id="p1", goal_event="research.goal", ...)
            await plan.attach(planner.context).save()
        """
        self._context = context
        if not self.planner:
            self.planner = context.name
        return self

    # ------------------------------------------------------------ loading

    @property
    def version(self) -> int:
        """The store version this object was loaded at or last committed."""
        return self._version

    @property
    def context(self) -> PlannerContext:
        """The planner context the plan is attached to (inside a planner's handler, that
        planner's when it had none); PlanStateError when there is none."""
        if self._context is None:
            running = current_planner_context()
            if running is None:
                raise PlanStateError(
                    f"plan {self.plan_id!r} is not attached to a planner context: "
                    "call plan.attach(planner.context) first"
                )
            self.attach(running)
        assert self._context is not None
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

    # ------------------------------------------------------------ the engine's view

    def _plan(self) -> EventPlan:
        """The plan's fixed parts as the engine reads them."""
        return EventPlan(
            plan_id=self.plan_id,
            # Validated when first read, as before: finishing or pausing a plan
            # reads no state, so a stored machine that no longer validates
            # cannot keep its goal from being answered. A plan made only to
            # answer its goal as failed has no states.
            machine=_LazyMachine(self) if self.state_machine else _NO_STATES,
            source=self._context.source if self._context is not None else "",
            planner=self.planner,
            goal_event=self.goal_event,
            goal_id=self.goal.get("id"),
            traceparent=self.goal.get("traceparent"),
            goal_data=self.goal_data,
            response_event=self.response_event,
            response_topic=self.response_topic,
            correlation_id=self.correlation_id,
            parent_plan_id=self.parent_plan_id,
            session_id=self.session_id,
            user_id=self.user_id,
            tenant_id=self.tenant_id,
            depends_on=tuple(self.depends_on),
        )

    def _run(self) -> EventRun:
        """Where the plan stands, as an immutable engine value (copies of the fields)."""
        return EventRun(
            current_state=self.current_state,
            status=self.status,
            path=tuple(self.path),
            started=self.started,
            results=self.results,
            result=self.result,
            error=self.error,
            awaiting=self.awaiting,
            processed_event_ids=tuple(self.processed_event_ids),
            correlation_ids=tuple(self.correlation_ids),
            pause_reason=self.pause_reason,
        )

    # ------------------------------------------------------------ reading

    def get_next_state(self, event: Envelope) -> str | None:
        """The state ``event`` moves this plan to, or None when no transition accepts it.

        Transitions of the current state are tried in order; the first whose
        ``on_event`` is the event's type and whose condition holds over
        ``data`` (the event's data), ``results``, ``goal_data`` and ``event``
        wins. This looks at the state machine only; :meth:`accepts` also
        checks the plan's status, duplicates and correlation.
        """
        return engine.next_state(self._plan(), self._run(), event)

    def accepts(self, event: Envelope) -> str | None:
        """:meth:`get_next_state`, if the plan takes ``event`` at all now, else None.

        A plan takes an event when it is running and started, has not
        processed the event's id, and the event answers the request the plan
        is waiting for (or carries the goal's correlation id). A late answer
        to an older request (one re-sent by :meth:`resume`, say) is refused.
        """
        return engine.accepts(self._plan(), self._run(), event)

    def is_complete(self) -> bool:
        """True when the plan is finished or stands on a terminal state."""
        return engine.is_complete(self.state_machine, self._run())

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

        def apply(plan: PlanContext) -> Moved | None:
            target = plan._plan()
            if trigger_event is None:
                moved = engine.advance(target, plan._run(), new_event_id, pause=pause)
            else:
                moved = engine.accept(target, plan._run(), trigger_event, new_event_id, pause=pause)
            if moved is None or finalize is None:
                return moved
            if moved.run.status in FINISHED or not engine.is_complete(
                plan.state_machine, moved.run
            ):
                return moved

            def answer(run: EventRun) -> Moved | None:
                # finalize sees the plan as it stands on its terminal state (and
                # what it changes of that copy is kept, as it was before).
                view = plan._with(run)
                result = finalize(view)
                return engine.finish(
                    target, view._run(), result, parent_correlation=parent_correlation
                )

            return then(moved, answer)

        return await self._advance(apply)

    def _with(self, run: EventRun) -> PlanContext:
        """A shallow copy of this plan standing where ``run`` stands."""
        return self.model_copy(update=_run_fields(run))

    async def dispatch(self, action: StateAction | str) -> None:
        """Send ``action`` as the current state's request (dynamic plans, see
        :meth:`Planner.reason_next_action`); the plan waits for its answer.

        An event type (what ``reason_next_action`` returns) sends the action
        of the plan's state that has it (its data and response event), else
        a bare request of that type.
        """
        if isinstance(action, str):
            action = self._action_for(action)
        chosen = action
        await self._advance(
            lambda plan: engine.dispatch(plan._plan(), plan._run(), chosen, new_event_id)
        )

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
        return await self._change(
            lambda plan: plan._finished(result, status, parent_correlation, error)
        )

    def _finished(
        self,
        result: Any,
        status: Literal["completed", "failed"] | None,
        parent_correlation: str | None,
        error: dict[str, Any] | None = None,
    ) -> Moved | None:
        """:func:`engine.finish` of this plan as it stands."""
        return engine.finish(
            self._plan(),
            self._run(),
            result,
            status=status,
            parent_correlation=parent_correlation,
            error=error,
        )

    async def _parent_correlation(self) -> str | None:
        """The parent plan's correlation id, for a nested goal that had none of its own."""
        if self.correlation_id is None and self.parent_plan_id:
            parent = await self.parent()
            return parent.correlation_id if parent else None
        return None

    async def pause(self, reason: str = "user_input_required") -> bool:
        """Pause a running plan until :meth:`resume`; True when it was running.

        A paused plan takes no events: an answer to its outstanding request
        is ignored, and :meth:`resume` sends the request again.
        ``plan.paused`` (with the reason) goes out on ``notification-events``,
        so a person or a UI can act on it. To pause before a state's request
        goes out, use ``execute_next(event, pause=reason)``.
        """
        return await self._change(
            lambda plan: engine.pause(plan._plan(), plan._run(), reason, new_event_id)
        )

    async def resume(
        self, input: Any = None, *, event: Envelope | None = None, input_data: Any = None
    ) -> bool:
        """Resume a paused plan; True when it was paused (so a repeated approval is a no-op).

        ``input`` (or ``input_data``, document 002's name for it: give one,
        both is an :class:`~waygraph.errors.InputError`) is kept as
        ``results["user_input"]`` (document 002's name) and
        ``results["resume_input"]`` (conditions and templates see both).
        The current state's action is sent again, with a new correlation id,
        so an answer to the request sent before the pause is ignored; a state
        without an action follows its ``default_next``.
        ``event``, when given, is recorded as processed.
        """
        if input is not None and input_data is not None:
            raise InputError(
                "resume takes input or input_data (the same value under document 002's "
                "name), not both"
            )
        if input is None:
            input = input_data
        return await self._advance(
            lambda plan: engine.resume(plan._plan(), plan._run(), new_event_id, input, event)
        )

    async def _start_after_dependencies(self) -> bool:
        statuses: dict[str, str] = {}
        for dep in self.depends_on:
            record = await self.context.call(self.context.store.get, dep)
            statuses[dep] = record.data.get("status", "missing") if record else "missing"
        failure = engine.dependency_failure(statuses)
        if failure is not None:
            await self._reload()
            if self.status != "pending":
                return False
            return await self.finalize(failure, status="failed")
        if not engine.dependencies_met(statuses):
            return False
        return await self._advance(
            lambda plan: engine.start_after_dependencies(plan._plan(), plan._run(), new_event_id)
        )

    # ------------------------------------------------------------ committing

    async def _advance(self, apply: Callable[[PlanContext], Moved | None]) -> bool:
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
        except PayloadTooLargeError as exc:
            # A request the bus cannot carry (checked before the commit) fails the plan.
            log.warning("plan %s failed: %s", self.plan_id, exc)
            await self.finalize(
                {"error": str(exc), "state": self.current_state},
                status="failed",
                error=error_payload(exc),
            )
            return True

    def __repr__(self) -> str:
        return (
            f"PlanContext(plan_id={self.plan_id!r}, status={str(self.status)!r}, "
            f"current_state={self.current_state!r})"
        )


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
