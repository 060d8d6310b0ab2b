"""PlanContext: one plan's state, persisted in a store, moved along by events.

The façade over the engine: each method that changes the plan reads its
fields into an immutable :class:`~waygraph.engine.event_run.EventRun`, calls
one pure transition of :mod:`waygraph.engine.events` (which holds every rule:
entering states, requests, accepting events, pause, resume, dependencies,
finishing) and commits the new run with the transition's effects
(:mod:`waygraph.events._plan_changes`). The object takes the new fields only
once the commit succeeded; assigning a field raises
:class:`~waygraph.errors.ReadOnlyFieldError` naming the method that changes
it, so a plan never holds in memory what the store does not.

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
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from waygraph.engine import events as engine

# MAX_PROCESSED_IDS: how many processed event ids a plan remembers (kept importable here).
from waygraph.engine.event_run import MAX_PROCESSED_IDS as MAX_PROCESSED_IDS
from waygraph.errors import (
    PlanContextNotFoundError,
    PlanStateError,
    ReadOnlyFieldError,
)
from waygraph.events import _plan_changes as changes
from waygraph.events import _plan_outbox as outbox
from waygraph.events import _plan_records as records
from waygraph.events._plan_view import engine_plan, engine_run
from waygraph.events._planner_context import (
    KIND,
    PlannerContext,
    _context_or_current,
    current_planner_context,
)
from waygraph.events.envelope import Envelope
from waygraph.events.statemachine import (
    StateAction,
    StateConfig,
    StateMachine,
    validate_state_machine,
)
from waygraph.model import RunStatus

__all__ = ["KIND", "PlanContext", "PlanStatus", "PlannerContext", "current_planner_context"]

log = logging.getLogger("waygraph.events")

#: An event-driven plan's status: the one run status (it takes ``pending``,
#: ``running``, ``paused``, ``completed`` and ``failed``). The name is kept for
#: code written against it.
PlanStatus = RunStatus

_MOVE = "call plan.execute_next(event) (or plan.execute_next() to follow default_next)"
_FIXED = "it is fixed when the plan is made: pass it to PlanContext.create_from_goal(...)"
#: For each field a program may be tempted to assign, the way that changes it.
_HOW: dict[str, str] = {
    "status": "call plan.execute_next(...), plan.finalize(result, status=...), "
    "plan.pause(reason) or plan.resume(input)",
    "current_state": _MOVE,
    "path": _MOVE,
    "started": _MOVE,
    "awaiting": _MOVE + " or plan.dispatch(action)",
    "correlation_ids": _MOVE + " or plan.dispatch(action)",
    "processed_event_ids": "call plan.execute_next(event), which records the event's id",
    "results": "an event's data is kept by plan.execute_next(event), resume input by "
    "plan.resume(input); to keep a value of your own, set an entry "
    "(plan.results[key] = value) and call await plan.save()",
    "result": "call plan.finalize(result)",
    "error": "call plan.finalize(result, status='failed', error={...})",
    "pause_reason": "call plan.pause(reason)",
    "outbox": "a commit fills it and publishing empties it; plan.publish_pending() sends it",
    "planner": "call plan.attach(planner.context)",
    "created_at": "every commit stamps it",
    "updated_at": "every commit stamps it",
}


def _read_only(name: str) -> ReadOnlyFieldError:
    return ReadOnlyFieldError(
        f"PlanContext.{name} is read-only: {_HOW.get(name, _FIXED)}; "
        "a plan changes only through its methods, each one store commit"
    )


class PlanContext(BaseModel):
    """One plan: its goal, state machine, current state, results and links.

    Create with :meth:`create_from_goal`; load with :meth:`restore` or
    :meth:`restore_by_correlation`; or build one as document 002 does,
    ``PlanContext(plan_id=..., goal_event=..., state_machine=...,
    current_state="start", ...)`` (without ``goal``, the goal event is rebuilt
    from the fields), then ``await plan.save()`` (outside a planner's handler,
    :meth:`attach` it first). Methods that change the plan commit to the
    store, version-checked (on a lost race they reload and apply the change
    again); fields are read-only: assigning one raises
    :class:`~waygraph.errors.ReadOnlyFieldError` naming the method to call.

    Example:
        >>> plan = PlanContext(plan_id="p", goal_event="g", current_state="start",
        ...                    state_machine={})
        >>> plan.status = "completed"
        Traceback (most recent call last):
        ...
        waygraph.errors.ReadOnlyFieldError: PlanContext.status is read-only: call \
plan.execute_next(...), plan.finalize(result, status=...), plan.pause(reason) or \
plan.resume(input); a plan changes only through its methods, each one store commit
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

    # ------------------------------------------------------------ read-only fields

    def __setattr__(self, name: str, value: Any) -> None:
        if name in type(self).model_fields:
            raise _read_only(name)
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if name in type(self).model_fields:
            raise _read_only(name)
        super().__delattr__(name)

    def _committed(
        self,
        fields: Mapping[str, Any],
        version: int,
        context: PlannerContext | None = None,
        machine: StateMachine | None = None,
    ) -> None:
        """Take ``fields`` as the store now holds them at ``version`` (the one writer)."""
        self.__dict__.update(fields)
        self._version = version
        if context is not None:
            self._context = context
        if machine is not None or "state_machine" in fields:
            self._machine = machine

    # ------------------------------------------------------------ building

    @model_validator(mode="before")
    @classmethod
    def _derive_goal(cls, data: Any) -> Any:
        """Document 002 builds a plan without ``goal``: see :func:`records.document_goal`."""
        return records.document_goal(data, current_planner_context())

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
            self.__dict__["planner"] = context.name
        return self

    # ------------------------------------------------------------ loading

    @classmethod
    async def create_from_goal(
        cls,
        goal: Envelope,
        *,
        state_machine: Mapping[str, StateConfig | Mapping[str, Any]] | PlanContext,
        context: PlannerContext,
        plan_id: str | None = None,
        parent_plan_id: str | None = None,
        depends_on: Sequence[str] = (),
        start: bool = False,
    ) -> Self:
        """A new plan for ``goal``, stored at once (status ``running``, or ``pending``
        while ``depends_on`` plans are unfinished); nothing is sent until
        :meth:`execute_next`.

        ``start=True``: also enter the start state (and send its request)
        in the same commit, as ``create_from_goal(...)`` then
        ``execute_next()`` does in two. A plan waiting for ``depends_on``
        is stored and then started as ``execute_next()`` starts it.

        The default ``plan_id`` is derived from the goal event, so a goal
        delivered twice finds the plan the first delivery made instead of
        making a second one. ``parent_plan_id`` defaults to the goal's
        ``planid`` attribute (a request sent by a parent plan carries it).
        ``state_machine`` may be a plan (what :meth:`Planner.create_plan`
        returns): its states are used.
        """
        if isinstance(state_machine, PlanContext):
            state_machine = state_machine.state_machine
        return await changes.create(
            cls, goal, state_machine, context, plan_id, parent_plan_id, depends_on, start
        )

    @classmethod
    async def restore(cls, plan_id: str, context: PlannerContext | None = None) -> Self:
        """The stored plan ``plan_id``; PlanContextNotFoundError when there is none.
        ``context`` may be left out inside a planner's handler.

        Example::

            plan = await PlanContext.restore(answer.data["plan_id"], planner.context)
        """
        context = _context_or_current(context, "PlanContext.restore")
        return await records.load(cls, plan_id, context)

    @classmethod
    async def restore_by_correlation(
        cls, correlation_id: str | None, context: PlannerContext | None = None
    ) -> Self | None:
        """The plan whose goal or one of whose requests had ``correlation_id``, or None.

        ``context`` may be left out inside a planner's handler, as document
        002's approval example does.

        When several plans know the id (a parent's request id is its child's
        goal id), the plan whose goal carried it wins, then plans of
        ``context``'s planner, then the most recently updated.
        """
        context = _context_or_current(context, "PlanContext.restore_by_correlation")
        return await records.best_by_correlation(cls, context, correlation_id)

    @classmethod
    async def find(
        cls,
        context: PlannerContext,
        *,
        session: str | None = None,
        status: str | None = None,
        planner: str | None = None,
        limit: int | None = None,
    ) -> list[Self]:
        """Stored plans by session, status and owning planner, most recently updated first."""
        return await records.find(
            cls, context, session=session, status=status, planner=planner, limit=limit
        )

    async def children(self) -> list[Self]:
        """The plans whose ``parent_plan_id`` is this plan."""
        return await records.by_correlation(type(self), self.context, records.PARENT + self.plan_id)

    async def parent(self) -> Self | None:
        """The parent plan, or None for a top-level plan (or a parent stored elsewhere)."""
        if self.parent_plan_id is None:
            return None
        try:
            return await records.load(type(self), self.parent_plan_id, self.context)
        except PlanContextNotFoundError:
            return None

    @classmethod
    async def dependents_of(cls, plan_id: str, context: PlannerContext) -> list[Self]:
        """Plans of this planner that list ``plan_id`` in ``depends_on``."""
        return await records.by_correlation(
            cls, context, records.AFTER + plan_id, planner=context.name
        )

    async def publish_pending(self) -> int:
        """Publish what the outbox still holds (left by a process that stopped); the count."""
        return await outbox.publish_pending(self)

    @classmethod
    async def publish_all_pending(cls, context: PlannerContext) -> int:
        """:meth:`publish_pending` for every plan of this planner with outbox entries left."""
        return await outbox.publish_all_pending(cls, context)

    # ------------------------------------------------------------ reading

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

    def get_next_state(self, event: Envelope) -> str | None:
        """The state ``event`` moves this plan to, or None when no transition accepts it.

        Transitions of the current state are tried in order; the first whose
        ``on_event`` is the event's type and whose condition holds over
        ``data`` (the event's data), ``results``, ``goal_data`` and ``event``
        wins. This looks at the state machine only; :meth:`accepts` also
        checks the plan's status, duplicates and correlation.
        """
        return engine.next_state(engine_plan(self), engine_run(self), event)

    def accepts(self, event: Envelope) -> str | None:
        """:meth:`get_next_state`, if the plan takes ``event`` at all now, else None.

        A plan takes an event when it is running and started, has not
        processed the event's id, and the event answers the request the plan
        is waiting for (or carries the goal's correlation id). A late answer
        to an older request (one re-sent by :meth:`resume`, say) is refused.
        """
        return engine.accepts(engine_plan(self), engine_run(self), event)

    def is_complete(self) -> bool:
        """True when the plan is finished or stands on a terminal state."""
        return engine.is_complete(self.state_machine, engine_run(self))

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
        its ``default_next`` and sending the request of the state it lands
        on); a pending plan starts once every plan in ``depends_on``
        completed (and fails when one failed); later calls follow a
        ``default_next`` or change nothing. With an event: its data becomes
        ``results[<current state>]`` and the plan enters the state
        :meth:`accepts` names; an event the plan does not take changes nothing.

        ``pause``: enter the next state but pause there, with this reason, in
        the same commit, without sending its request (:meth:`resume` sends it):
        the race-free way to hold a plan for an approval before a step.

        ``finalize``: when the plan lands on a terminal state, answer the goal
        in the same commit, with ``finalize(plan)`` as the result (see
        :meth:`finalize`). One commit means a crash can never leave a plan on
        its terminal state with its goal unanswered.
        """
        if trigger_event is None and self.status == "pending" and self.depends_on:
            return await changes.start_after_dependencies(self)
        parent = await changes.parent_correlation(self) if finalize is not None else None
        return await changes.advance(self, changes.moving(trigger_event, pause, finalize, parent))

    async def dispatch(self, action: StateAction | str) -> None:
        """Send ``action`` as the current state's request (dynamic plans, see
        :meth:`Planner.reason_next_action`); the plan waits for its answer.

        An event type (what ``reason_next_action`` returns) sends the action
        of the plan's state that has it (its data and response event), else
        a bare request of that type.
        """
        chosen = changes.action_for(self, action) if isinstance(action, str) else action
        await changes.advance(self, changes.dispatching(chosen))

    async def finalize(
        self,
        result: Any = None,
        *,
        status: Literal["completed", "failed"] | None = None,
        error: dict[str, Any] | None = None,
    ) -> bool:
        """Finish the plan and answer the goal; True the first time, False after.

        Stores the plan as ``completed`` (``failed`` on a terminal state named
        ``failed``, or when ``status`` says so) with ``result`` (also
        ``results["final"]``, as document 002 has it), and in the same commit
        puts in the outbox the response on the goal's ``response_event``
        (default ``<goal type>.completed``) and ``response_topic`` (default
        ``action-results``) with the goal's correlation id (or the parent
        plan's), data ``{"plan_id", "status", "result"}`` (plus ``error``:
        ``{"type", "message", ...}``), and ``plan.completed`` / ``plan.failed``
        on ``plan-events``, which starts plans that depend on this one.
        """
        parent = await changes.parent_correlation(self)
        return await changes.change(self, changes.finishing(result, status, parent, error))

    async def pause(self, reason: str = "user_input_required") -> bool:
        """Pause a running plan until :meth:`resume`; True when it was running.

        A paused plan takes no events: an answer to its outstanding request
        is ignored, and :meth:`resume` sends the request again.
        ``plan.paused`` (with the reason) goes out on ``notification-events``,
        so a person or a UI can act on it. To pause before a state's request
        goes out, use ``execute_next(event, pause=reason)``.
        """
        return await changes.change(self, changes.pausing(reason))

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
        return await changes.advance(self, changes.resuming(input, input_data, event))

    async def save(self) -> None:
        """Store the plan as it is now: a plan built with ``PlanContext(...)``, or
        entries of ``results`` set by hand (document 002 keeps notes there).

        Version-checked: raises :class:`~waygraph.errors.Conflict` when the
        stored plan changed since this object loaded it; restore and redo.
        """
        await records.commit(self, self._version, [{"type": "plan_saved"}])

    def __repr__(self) -> str:
        return (
            f"PlanContext(plan_id={self.plan_id!r}, status={str(self.status)!r}, "
            f"current_state={self.current_state!r})"
        )
