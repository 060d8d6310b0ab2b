"""The rules of an event-driven plan, pure: event routing and the state machine's transitions.

Routing: a state machine compiles into a plan (:func:`waygraph.events.to_plan`):
states are nodes, each transition an edge with ``on_event`` and its
condition as ``when``, and a ``default_next`` after a request an edge whose
``on_event`` is the response event. An event leads along:

- the first edge out of the current node, in plan order, whose ``on_event``
  is the event's type and whose ``when`` holds (an edge without ``when``
  always holds);
- None when no edge accepts the event: the run stays where it is.

``holds`` evaluates a ``when`` predicate against the event (its data, the
run's results); the driver supplies it, so this module stays free of
evaluation context.

Transitions, over an immutable :class:`~waygraph.engine.event_run.EventRun`
(docs/events.md, "State machines"); each returns a
:class:`~waygraph.engine.event_run.Moved` (the new run and its effects) or
None when it does not apply, and leaves the run it was given as it was:

- Entering a state follows ``default_next`` out of states without an
  action (:func:`follow_defaults`), then sends the state's request (with a
  fresh correlation id the run then awaits), or pauses there first when asked.
- :func:`advance` (no event): a fresh run enters its start state; a later
  call follows the current state's ``default_next``; a state without one
  waits for an event. Finished or paused runs, and pending runs waiting
  for ``depends_on``, do not move.
- :func:`accept`: a running, started run takes an event it has not
  processed that answers the request it awaits (or carries the goal's
  correlation id) when a transition accepts it (:func:`accepts`); the
  event's data becomes ``results[<state>]``.
- :func:`pause`, :func:`resume`, :func:`start_after_dependencies`,
  :func:`dispatch` (a request the driver chose) and :func:`finish` (the
  answer to the goal and ``plan.<status>``).

Example:
    >>> from waygraph.model import Graph, Plan
    >>> graph = (Graph.builder("waiting").task("waiting").exit("done").exit("retry")
    ...          .edge("waiting", "done", "always", on_event="job.completed",
    ...                when={"type": "any_output"})
    ...          .edge("waiting", "retry", "always", on_event="job.completed")
    ...          .build())
    >>> plan = Plan(id="p", graph=graph)
    >>> route_event(plan, "waiting", "job.completed", lambda when: False)
    'retry'
    >>> route_event(plan, "waiting", "job.cancelled", lambda when: True) is None
    True

    >>> from waygraph.events import (StateAction, StateConfig, StateTransition,
    ...                              validate_state_machine)
    >>> machine = validate_state_machine({
    ...     "start": StateConfig(state_name="start", default_next="work"),
    ...     "work": StateConfig(state_name="work", action=StateAction(event_type="job.requested"),
    ...         transitions=[StateTransition(on_event="job.completed", to_state="done")]),
    ...     "done": StateConfig(state_name="done", is_terminal=True)}, name="job")
    >>> plan = EventPlan(plan_id="p1", machine=machine, source="doc")
    >>> ids = iter(["c1", "r1"])
    >>> run = EventRun(current_state="start")
    >>> moved = advance(plan, run, lambda: next(ids))
    >>> moved.run.current_state, moved.run.awaiting["correlation_id"], run.path
    ('work', 'c1', ())
    >>> [e["type"] for e in moved.events], [m.topic for m in moved.messages]
    (['state_entered', 'request_sent'], ['action-requests'])
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, Protocol

from waygraph.engine.event_run import (
    ACTION_REQUESTS,
    ACTION_RESULTS,
    MAX_HOPS,
    MAX_PROCESSED_IDS,
    NOTIFICATION_EVENTS,
    PLAN_EVENTS,
    Effects,
    EventAction,
    EventMachine,
    EventPlan,
    EventRun,
    EventStates,
    IncomingEvent,
    Moved,
    Outgoing,
    derived_id,
    evolve,
)
from waygraph.engine.templates import fill_template
from waygraph.errors import PlanStateError, StateMachineError
from waygraph.model import FINISHED, RunStatus

if TYPE_CHECKING:
    from waygraph.model import Plan, Verify

__all__ = [
    "EventEdge",
    "accept",
    "accepts",
    "advance",
    "dependencies_met",
    "dependency_failure",
    "dispatch",
    "finish",
    "follow_defaults",
    "is_complete",
    "next_state",
    "pause",
    "resume",
    "route_event",
    "scope",
    "start_after_dependencies",
    "take_event",
]


class EventEdge(Protocol):
    """What routing reads of an edge (:class:`waygraph.model.Edge` has it; lighter ones may)."""

    @property
    def on_event(self) -> str | None:
        """The event type the edge is taken on (None: not an event edge)."""

    @property
    def when(self) -> Verify | None:
        """The condition over the event (None: always holds)."""

    @property
    def to(self) -> str:
        """The node the edge leads to."""


def take_event(
    edges: Iterable[EventEdge], event_type: str, holds: Callable[[Verify], bool]
) -> str | None:
    """The rule itself, over one node's out edges in order (see the module docstring).

    Example:
        >>> from waygraph.model import Edge
        >>> edges = [Edge.model_validate({"from": "a", "to": "b", "on_event": "x.done"})]
        >>> take_event(edges, "x.done", lambda when: True), take_event(edges, "y", bool)
        ('b', None)
    """
    for edge in edges:
        if edge.on_event != event_type:
            continue
        if edge.when is None or holds(edge.when):
            return edge.to
    return None


def route_event(
    plan: Plan, node: str, event_type: str, holds: Callable[[Verify], bool]
) -> str | None:
    """The node ``event_type`` moves a run at ``node`` to, or None (see the module docstring)."""
    return take_event(plan.graph.out_edges(node), event_type, holds)


# ---------------------------------------------------------------- reading


def follow_defaults(machine: EventMachine, state: str) -> str:
    """Where entering ``state`` leads: along ``default_next`` out of action-less states.

    Raises :class:`~waygraph.errors.StateMachineError` after :data:`MAX_HOPS` states.
    """
    hops = 0
    config = machine[state]
    while config.action is None and not config.is_terminal and config.default_next:
        hops += 1
        if hops > MAX_HOPS:
            raise StateMachineError(
                f"more than {MAX_HOPS} states without actions in a row; is there a loop?",
                plan=machine.name,
                state=state,
                field="default_next",
            )
        state = config.default_next
        config = machine[state]
    return state


def scope(plan: EventPlan, run: EventRun, event: IncomingEvent | None = None) -> dict[str, Any]:
    """What conditions and request templates see: ``goal_data``, ``results``, ``plan``,
    and with an event its ``data`` and ``event`` (id, type, source, subject, correlation id)."""
    seen: dict[str, Any] = {
        "goal_data": plan.goal_data,
        # A plain dict: a template "{results}" puts it in a request as it is.
        "results": dict(run.results),
        "plan": {
            "plan_id": plan.plan_id,
            "session_id": plan.session_id,
            "user_id": plan.user_id,
            "tenant_id": plan.tenant_id,
            "parent_plan_id": plan.parent_plan_id,
            "current_state": run.current_state,
        },
    }
    if event is not None:
        seen["data"] = event.data
        seen["event"] = {
            "id": event.id,
            "type": event.type,
            "source": event.source,
            "subject": event.subject,
            "correlation_id": event.correlation_id,
        }
    return seen


def next_state(plan: EventPlan, run: EventRun, event: IncomingEvent) -> str | None:
    """The state ``event`` moves the run to by the machine alone, or None."""
    if run.current_state not in plan.machine:
        return None
    return plan.machine.next_state(run.current_state, event.type, scope(plan, run, event))


def accepts(plan: EventPlan, run: EventRun, event: IncomingEvent) -> str | None:
    """The state ``event`` moves the run to, if the run takes it now, else None.

    A run takes an event when it is running and started, has not processed
    the event's id, and the event answers the request the run awaits (or
    carries the goal's correlation id); then the first transition that
    accepts it names the state.
    """
    if run.status != RunStatus.RUNNING or not run.started:
        return None
    if event.id in run.processed_event_ids:
        return None
    cid = event.correlation_id
    waiting_for = run.awaiting.get("correlation_id") if run.awaiting else None
    if cid is None or cid not in (waiting_for, plan.correlation_id):
        return None
    return next_state(plan, run, event)


def is_complete(states: EventStates, run: EventRun) -> bool:
    """True when the run is finished or stands on a terminal state.

    ``states``: the machine, or its states by name as stored (no validation needed).
    """
    if run.status in FINISHED:
        return True
    return run.current_state in states and states[run.current_state].is_terminal


def dependencies_met(statuses: Mapping[str, str]) -> bool:
    """True when every dependency completed (a pending run may start).

    Example:
        >>> dependencies_met({"a": "completed"}), dependencies_met({"a": "running"})
        (True, False)
    """
    return all(s == "completed" for s in statuses.values())


def dependency_failure(statuses: Mapping[str, str]) -> dict[str, Any] | None:
    """The failed plan's result when a dependency failed (the first in order), else None.

    Example:
        >>> dependency_failure({"a": "completed", "b": "failed"})["error"]
        "dependency 'b' failed"
    """
    failed = [d for d, s in statuses.items() if s == "failed"]
    if not failed:
        return None
    return {"error": f"dependency {failed[0]!r} failed", "dependencies": dict(statuses)}


# ---------------------------------------------------------------- changing


def _remember(run: EventRun, event_id: str) -> tuple[str, ...]:
    if event_id in run.processed_event_ids:
        return run.processed_event_ids
    return (*run.processed_event_ids, event_id)[-MAX_PROCESSED_IDS:]


def _enter(
    plan: EventPlan,
    run: EventRun,
    state: str,
    out: Effects,
    new_id: Callable[[], str],
    via: IncomingEvent | None = None,
    pause_reason: str | None = None,
) -> EventRun:
    state = follow_defaults(plan.machine, state)
    run = evolve(run, current_state=state, path=(*run.path, state), awaiting=None)
    out.events.append({"type": "state_entered", "state": state})
    config = plan.machine[state]
    if pause_reason is not None and not config.is_terminal:
        return _pause(plan, run, pause_reason, out, new_id)
    if config.action is not None:
        return _dispatch(plan, run, config.action, out, new_id, via)
    return run


def _dispatch(
    plan: EventPlan,
    run: EventRun,
    action: EventAction,
    out: Effects,
    new_id: Callable[[], str],
    via: IncomingEvent | None,
) -> EventRun:
    state = run.current_state
    data = fill_template(action.data, scope(plan, run, via), where=f"{state}.action.data")
    correlation_id = new_id()
    request_id = new_id()
    out.messages.append(
        Outgoing(
            ACTION_REQUESTS,
            {
                "id": request_id,
                "source": plan.source,
                "type": action.event_type,
                "data": data,
                "correlation_id": correlation_id,
                "response_event": action.expected_response,
                "response_topic": ACTION_RESULTS,
                "session_id": plan.session_id,
                "tenant_id": plan.tenant_id,
                "user_id": plan.user_id,
                "goal_id": plan.goal_id,
                "plan_id": plan.plan_id,
                "parent_event_id": via.id if via is not None else plan.goal_id,
                "traceparent": plan.traceparent,
            },
        )
    )
    out.events.append(
        {
            "type": "request_sent",
            "state": state,
            "event_type": action.event_type,
            "event_id": request_id,
            "correlation_id": correlation_id,
        }
    )
    ids = run.correlation_ids
    awaiting = {
        "state": state,
        "event_type": action.event_type,
        "response_event": action.expected_response,
        "correlation_id": correlation_id,
        "request_id": request_id,
    }
    return evolve(
        run,
        awaiting=MappingProxyType(awaiting),
        correlation_ids=ids if correlation_id in ids else (*ids, correlation_id),
    )


def _pause(
    plan: EventPlan, run: EventRun, reason: str, out: Effects, new_id: Callable[[], str]
) -> EventRun:
    out.messages.append(
        Outgoing(
            NOTIFICATION_EVENTS,
            {
                "id": new_id(),
                "source": plan.source,
                "type": "plan.paused",
                "data": {"plan_id": plan.plan_id, "state": run.current_state, "reason": reason},
                "correlation_id": plan.correlation_id,
                "plan_id": plan.plan_id,
                "session_id": plan.session_id,
                "user_id": plan.user_id,
                "tenant_id": plan.tenant_id,
            },
        )
    )
    out.events.append({"type": "plan_paused", "state": run.current_state})
    return evolve(run, status=RunStatus.PAUSED, pause_reason=reason)


def advance(
    plan: EventPlan, run: EventRun, new_id: Callable[[], str], *, pause: str | None = None
) -> Moved | None:
    """Move the run along without an event, or None when it does not move.

    A fresh run enters the start state; later, the current state's
    ``default_next`` is followed; a state without one waits for an event.
    ``pause``: pause on the state entered instead of sending its request.
    """
    if run.status in FINISHED or run.status == RunStatus.PAUSED:
        return None
    if run.status == RunStatus.PENDING:
        if plan.depends_on:
            return None
        run = evolve(run, status=RunStatus.RUNNING)
    out = Effects()
    if not run.started:
        run = evolve(run, started=True)
        return out.moved(_enter(plan, run, plan.machine.start, out, new_id, None, pause))
    config = plan.machine[run.current_state]
    if config.is_terminal or config.default_next is None:
        # The state waits for an event. Doing nothing (rather than raising)
        # keeps a goal handler that runs twice, as redelivery allows, harmless.
        return None
    return out.moved(_enter(plan, run, config.default_next, out, new_id, None, pause))


def accept(
    plan: EventPlan,
    run: EventRun,
    event: IncomingEvent,
    new_id: Callable[[], str],
    *,
    pause: str | None = None,
) -> Moved | None:
    """Take ``event`` (see :func:`accepts`), or None when the run does not take it.

    The event's data becomes ``results[<current state>]``, its id is
    remembered, and the run enters the state the transition names.
    """
    target = accepts(plan, run, event)
    if target is None:
        return None
    out = Effects()
    out.events.append(
        {
            "type": "event_applied",
            "event_id": event.id,
            "event_type": event.type,
            "from": run.current_state,
            "to": target,
        }
    )
    run = evolve(
        run,
        results=MappingProxyType({**run.results, run.current_state: event.data}),
        processed_event_ids=_remember(run, event.id),
    )
    return out.moved(_enter(plan, run, target, out, new_id, event, pause))


def dispatch(
    plan: EventPlan, run: EventRun, action: EventAction, new_id: Callable[[], str]
) -> Moved:
    """Send ``action`` as the current state's request; the run awaits its answer.

    Raises :class:`~waygraph.errors.PlanStateError` when the run is not running.
    """
    if run.status != RunStatus.RUNNING:
        raise PlanStateError(f"plan {plan.plan_id!r} is {run.status}; it sends no requests")
    out = Effects()
    return out.moved(_dispatch(plan, run, action, out, new_id, None))


def pause(plan: EventPlan, run: EventRun, reason: str, new_id: Callable[[], str]) -> Moved | None:
    """Pause a running run (``plan.paused`` goes out), or None when it is not running."""
    if run.status != RunStatus.RUNNING:
        return None
    out = Effects()
    return out.moved(_pause(plan, run, reason, out, new_id))


def resume(
    plan: EventPlan,
    run: EventRun,
    new_id: Callable[[], str],
    input: Any = None,
    event: IncomingEvent | None = None,
) -> Moved | None:
    """Resume a paused run, or None when it is not paused (or ``event`` was processed).

    ``input`` becomes ``results["user_input"]`` and ``results["resume_input"]``.
    The current state's request is sent again with a new correlation id; a
    state without one follows its ``default_next``; a run never started
    enters its start state.
    """
    if run.status != RunStatus.PAUSED:
        return None
    processed = run.processed_event_ids
    if event is not None:
        if event.id in processed:
            return None
        processed = _remember(run, event.id)
    run = evolve(
        run,
        status=RunStatus.RUNNING,
        pause_reason=None,
        results=MappingProxyType({**run.results, "user_input": input, "resume_input": input}),
        processed_event_ids=processed,
    )
    out = Effects()
    out.events.append({"type": "plan_resumed", "state": run.current_state})
    config = plan.machine[run.current_state]
    if not run.started:
        run = _enter(plan, evolve(run, started=True), plan.machine.start, out, new_id, event)
    elif config.action is not None:
        run = _dispatch(plan, run, config.action, out, new_id, event)
    elif config.default_next is not None and not config.is_terminal:
        run = _enter(plan, run, config.default_next, out, new_id, event)
    return out.moved(run)


def start_after_dependencies(
    plan: EventPlan, run: EventRun, new_id: Callable[[], str]
) -> Moved | None:
    """Start a pending run whose dependencies completed, or None when it is not pending."""
    if run.status != RunStatus.PENDING:
        return None
    out = Effects()
    out.events.append({"type": "dependencies_met", "depends_on": list(plan.depends_on)})
    run = evolve(run, status=RunStatus.RUNNING, started=True)
    return out.moved(_enter(plan, run, plan.machine.start, out, new_id))


def finish(
    plan: EventPlan,
    run: EventRun,
    result: Any = None,
    *,
    status: Literal["completed", "failed"] | None = None,
    parent_correlation: str | None = None,
    error: Mapping[str, Any] | None = None,
) -> Moved | None:
    """Finish the run and answer the goal, or None when it is finished already.

    The status is ``status``, else ``failed`` on a state named ``failed``,
    else ``completed``. The answer goes on the goal's ``response_event``
    (default ``<goal type>.completed``) and ``response_topic`` (default
    ``action-results``) with the goal's correlation id (else
    ``parent_correlation``), then ``plan.<status>`` on ``plan-events``;
    both have ids derived from the plan id.
    """
    if run.status in FINISHED:
        return None
    final = status or ("failed" if run.current_state == "failed" else "completed")
    # A copy: the result may be built from the run's results, which it is stored in.
    result = copy.deepcopy(result)
    data: dict[str, Any] = {"plan_id": plan.plan_id, "status": final, "result": result}
    if error is not None:
        data["error"] = error
    answer = {
        "id": derived_id(plan.plan_id, "response"),
        "source": plan.source,
        "type": plan.response_event or f"{plan.goal_event}.completed",
        "data": data,
        "correlation_id": plan.correlation_id or parent_correlation,
        "session_id": plan.session_id,
        "tenant_id": plan.tenant_id,
        "user_id": plan.user_id,
        "goal_id": plan.goal_id,
        "plan_id": plan.plan_id,
        "parent_event_id": plan.goal_id,
        "traceparent": plan.traceparent,
    }
    done = {
        "id": derived_id(plan.plan_id, f"plan.{final}"),
        "source": plan.source,
        "type": f"plan.{final}",
        "data": {"plan_id": plan.plan_id, "status": final, "planner": plan.planner},
        "plan_id": plan.plan_id,
        "session_id": plan.session_id,
        "correlation_id": plan.correlation_id,
        "parent_event_id": plan.goal_id,
    }
    run = evolve(
        run,
        status=RunStatus(final),
        results=MappingProxyType({**run.results, "final": result}),
        result=result,
        awaiting=None,
        error=run.error if error is None else MappingProxyType(dict(error)),
    )
    return Moved(
        run,
        ({"type": f"plan_{final}", "state": run.current_state},),
        (
            Outgoing(plan.response_topic or ACTION_RESULTS, answer),
            Outgoing(PLAN_EVENTS, done),
        ),
    )
