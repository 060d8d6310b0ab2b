"""An event-driven plan's run as a value: :class:`EventRun` and what its transitions return.

Where a plan stands (its status, current state, path, results, the request
it awaits, the events it processed) is an :class:`EventRun`, a frozen value
whose containers are read-only. The transitions, in
:mod:`waygraph.engine.events`, take the plan's fixed parts
(:class:`EventPlan`: its ids, goal and state machine) and a run, and return
a :class:`Moved`: the new run plus the effects as plain data, in order: the
record events (``state_entered``, ``event_applied``, ``request_sent``,
``plan_paused``, ``plan_resumed``, ``dependencies_met``, ``plan_<status>``)
and the messages to send (:class:`Outgoing`: a topic and the envelope's
attributes). The run given is never changed.

The engine does no I/O and reads no clock: the driver passes the planner's
``source`` in the :class:`EventPlan` and a ``new_id`` function for fresh
correlation and event ids; the ids of a plan's one-time messages are derived
from the plan id (:func:`derived_id`). The driver
(``waygraph.events.PlanContext``) commits the new run and its effects in one
store write.

Example:
    >>> from dataclasses import replace
    >>> run = EventRun(current_state="start", path=("start",))
    >>> later = replace(run, current_state="work", path=(*run.path, "work"))
    >>> run.path, later.path
    (('start',), ('start', 'work'))
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol

from waygraph.model import RunStatus

__all__ = [
    "MAX_HOPS",
    "MAX_PROCESSED_IDS",
    "PLAN_NAMESPACE",
    "Effects",
    "EventAction",
    "EventMachine",
    "EventPlan",
    "EventRun",
    "EventState",
    "EventStates",
    "IncomingEvent",
    "Moved",
    "Outgoing",
    "derived_id",
    "evolve",
    "then",
]

#: How many processed event ids a plan remembers. Redeliveries come soon after
#: the first delivery; the bound keeps long-lived plans' records small.
MAX_PROCESSED_IDS = 1000
#: The most states an action-less chain of ``default_next`` may pass in one step.
MAX_HOPS = 50
#: The namespace of the ids derived from a plan id (:func:`derived_id`).
PLAN_NAMESPACE = uuid.UUID("5b0f4f3e-8a0c-4d5e-9d35-0c1c2a3b4d5e")

# The topics' names (waygraph.events.Topic has them; the engine imports no bus).
ACTION_REQUESTS = "action-requests"
ACTION_RESULTS = "action-results"
PLAN_EVENTS = "plan-events"
NOTIFICATION_EVENTS = "notification-events"

_EMPTY: Mapping[str, Any] = MappingProxyType({})


class EventAction(Protocol):
    """What the engine reads of a state's request (``StateAction`` has it)."""

    @property
    def event_type(self) -> str:
        """The request's event type."""

    @property
    def expected_response(self) -> str:
        """The event type its answer comes as."""

    @property
    def data(self) -> Mapping[str, Any]:
        """The request's data, with templates (``{goal_data.topic}``)."""


class EventState(Protocol):
    """What the engine reads of a state (``StateConfig`` has it)."""

    @property
    def action(self) -> EventAction | None:
        """The request entering the state sends, or None."""

    @property
    def default_next(self) -> str | None:
        """Where the state goes without a transition, or None."""

    @property
    def is_terminal(self) -> bool:
        """Whether the plan ends here."""


class EventStates(Protocol):
    """A state machine's states by name (a ``dict`` of ``StateConfig`` has it)."""

    def __getitem__(self, state: str, /) -> EventState: ...
    def __contains__(self, state: object, /) -> bool: ...


class EventMachine(EventStates, Protocol):
    """What the engine reads of a validated state machine (``StateMachine`` has it)."""

    @property
    def start(self) -> str:
        """The start state."""

    @property
    def name(self) -> str | None:
        """The machine's name, for errors."""

    def next_state(self, state: str, event_type: str, scope: Mapping[str, Any]) -> str | None:
        """The routing rule (:func:`waygraph.engine.events.take_event`) over the state's edges."""


class IncomingEvent(Protocol):
    """What the engine reads of an event (``waygraph.events.Envelope`` has it)."""

    @property
    def id(self) -> str:
        """The event id (processed ids are remembered)."""

    @property
    def type(self) -> str:
        """The event type transitions match."""

    @property
    def data(self) -> Mapping[str, Any]:
        """The event's data (kept as the state's result)."""

    @property
    def source(self) -> str:
        """Who sent it."""

    @property
    def subject(self) -> str | None:
        """The CloudEvents subject, or None."""

    @property
    def correlation_id(self) -> str | None:
        """The request (or goal) it answers."""


@dataclass(frozen=True, slots=True)
class EventPlan:
    """The parts of an event-driven plan that no transition changes.

    ``source`` is the planner's, for the envelopes the plan sends;
    ``goal_id`` and ``traceparent`` are the goal event's.

    Example:
        >>> from waygraph.events import StateConfig, validate_state_machine
        >>> machine = validate_state_machine({"done": StateConfig(state_name="done",
        ...                                                       is_terminal=True)})
        >>> EventPlan(plan_id="p1", machine=machine, source="doc").depends_on
        ()
    """

    plan_id: str
    machine: EventMachine
    source: str
    planner: str = ""
    goal_event: str = ""
    goal_id: str | None = None
    traceparent: str | None = None
    goal_data: Mapping[str, Any] = field(default_factory=dict)
    response_event: str | None = None
    response_topic: str | None = None
    correlation_id: str | None = None
    parent_plan_id: str | None = None
    session_id: str | None = None
    user_id: str | None = None
    tenant_id: str | None = None
    depends_on: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class EventRun:
    """Where an event-driven plan stands; every transition returns a new value.

    Containers are read-only (tuples and mapping views of copies); the
    values inside ``results`` (event data) are shared, never changed.

    Example:
        >>> run = EventRun(current_state="start", results={"a": 1})
        >>> run.results["b"] = 2
        Traceback (most recent call last):
        ...
        TypeError: 'mappingproxy' object does not support item assignment
    """

    current_state: str
    status: RunStatus = RunStatus.RUNNING
    path: tuple[str, ...] = ()
    started: bool = False
    results: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    result: Any = None
    error: Mapping[str, Any] | None = None
    awaiting: Mapping[str, Any] | None = None
    processed_event_ids: tuple[str, ...] = ()
    correlation_ids: tuple[str, ...] = ()
    pause_reason: str | None = None

    def __post_init__(self) -> None:
        # Read-only copies of what the caller gave; the transitions pass fresh
        # tuples and views nobody else holds, which are kept as they are.
        set_ = object.__setattr__
        if type(self.status) is not RunStatus:
            set_(self, "status", RunStatus(self.status))
        for name in ("path", "processed_event_ids", "correlation_ids"):
            value = getattr(self, name)
            if type(value) is not tuple:
                set_(self, name, tuple(value))
        for name in ("results", "error", "awaiting"):
            value = getattr(self, name)
            if value is not None and type(value) is not MappingProxyType:
                set_(self, name, MappingProxyType(dict(value)))


_RUN_FIELDS = tuple(EventRun.__dataclass_fields__)


def evolve(run: EventRun, **changes: Any) -> EventRun:
    """``run`` with ``changes``, which must already be read-only (tuples, mapping views).

    ``dataclasses.replace`` without its checks and copies: the transitions
    make several of these per event, and only ever pass fresh values.

    Example:
        >>> evolve(EventRun("a"), current_state="b").current_state
        'b'
    """
    new = object.__new__(EventRun)
    set_ = object.__setattr__
    for name in _RUN_FIELDS:
        set_(new, name, changes[name] if name in changes else getattr(run, name))
    return new


@dataclass(frozen=True, slots=True)
class Outgoing:
    """A message a transition sends: the topic and the envelope's attributes
    (keyword arguments of ``waygraph.events.Envelope``; the driver adds the time)."""

    topic: str
    envelope: Mapping[str, Any]


class Moved(NamedTuple):
    """A transition's result: the new run, then its effects in order."""

    run: EventRun
    events: tuple[dict[str, Any], ...] = ()
    messages: tuple[Outgoing, ...] = ()


def then(first: Moved, step: Callable[[EventRun], Moved | None]) -> Moved:
    """``first`` followed by ``step`` on its run: the later run, the effects of both in order.

    Example:
        >>> first = Moved(EventRun("a"), ({"type": "state_entered", "state": "a"},))
        >>> moved = then(first, lambda run: Moved(EventRun("b"), ({"type": "plan_completed"},)))
        >>> moved.run.current_state, [e["type"] for e in moved.events]
        ('b', ['state_entered', 'plan_completed'])
    """
    second = step(first.run)
    if second is None:
        return first
    return Moved(second.run, first.events + second.events, first.messages + second.messages)


class Effects:
    """The effects of one transition under way (each transition makes its own)."""

    __slots__ = ("events", "messages")

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.messages: list[Outgoing] = []

    def moved(self, run: EventRun) -> Moved:
        """The transition's result: ``run`` and the effects gathered."""
        return Moved(run, tuple(self.events), tuple(self.messages))


def derived_id(plan_id: str, what: str) -> str:
    """The fixed id of a plan's one-time message: sending it again is recognisable.

    Example:
        >>> derived_id("p1", "response") == derived_id("p1", "response")
        True
    """
    return uuid.uuid5(PLAN_NAMESPACE, f"{plan_id}\x00{what}").hex
