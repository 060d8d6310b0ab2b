"""What a planner does with each event it receives: goals, plans' answers, dependencies.

:meth:`Planner.start <waygraph.events.Planner.start>` subscribes these
handlers: :func:`goal_handler` runs an ``on_goal`` handler (answering the
goal as failed when it fails for good), :func:`route` hands an event to the
plan that accepts it (through ``on_transition`` or :func:`advance`),
:func:`dependency` starts plans waiting for one that finished, and
:func:`event_handler` runs an ``on_event`` handler. Each runs inside
:func:`tracked`, so :meth:`Planner.close` can wait for it and
``PlanContext.restore`` finds the planner's context.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from waygraph import callbacks
from waygraph.events._plan_records import AFTER, cached, from_record, reload
from waygraph.events._planner_checks import run_state_machine
from waygraph.events._planner_context import _CURRENT, plan_id_for
from waygraph.events.activity import describe, handled
from waygraph.events.bus import first_delivery
from waygraph.events.context import PlanContext
from waygraph.events.envelope import Envelope, Topic
from waygraph.events.failures import answer_goal_failed, error_payload, is_permanent
from waygraph.events.goals import GoalContext, TransitionContext
from waygraph.store.retry import retry_conflicts_async

if TYPE_CHECKING:
    from waygraph.events.planner import Planner

__all__ = [
    "advance",
    "candidates",
    "default_result",
    "dependency",
    "event_handler",
    "goal_handler",
    "route",
    "tracked",
]

log = logging.getLogger("waygraph.events")

Handler = Callable[[Envelope], Awaitable[None]]


def default_result(plan: PlanContext) -> dict[str, Any]:
    """The answer of a plan the planner finished itself: its terminal state and results."""
    # A copy taken before finalize adds results["final"], so the answer holds no copy of itself.
    return {"state": plan.current_state, "results": dict(plan.results)}


def tracked(planner: Planner, handler: Handler) -> Handler:
    """``handler``, run as one of ``planner``'s: counted while it runs (close() waits for
    it, so none finds the store closed midway), with the planner's context current."""

    async def run(event: Envelope) -> None:
        if planner._closing:
            log.debug("planner %s is closing; leaving %s alone", planner.name, event.id)
            return
        task = asyncio.current_task()
        if task is not None:
            planner._inflight.add(task)
        token = _CURRENT.set(planner.context)
        try:
            await handler(event)
        finally:
            _CURRENT.reset(token)
            if task is not None:
                planner._inflight.discard(task)

    return run


def goal_handler(planner: Planner, handler: Callable[..., Awaitable[Any]]) -> Handler:
    """The subscriber of an ``on_goal`` handler."""
    # An application's handler runs once per plan; the default one may run again safely.
    look_first = handler is not run_state_machine
    context = planner.context

    async def on_goal(goal: Envelope) -> None:
        # A first delivery (the bus says so) made no plan before: nothing to look up.
        if (
            look_first
            and not first_delivery(goal.id)
            and await context.plan_started(plan_id_for(goal))
        ):
            log.debug("goal %s delivered again; its plan already started", goal.id)
            return
        values = {"goal": GoalContext.from_event(goal), "context": context, "planner": planner}
        machine = planner._machines.get(goal.type)
        if machine is not None:
            values["state_machine"] = machine.states
        try:
            await callbacks.call(handler, ("goal", "context"), values)
        except Exception as exc:
            await _goal_failed(planner, goal, exc)
            return
        handled(planner.name, goal, "planned")

    return tracked(planner, on_goal)


def event_handler(planner: Planner, handler: Callable[..., Awaitable[Any]]) -> Handler:
    """The subscriber of an ``on_event`` handler."""

    async def on_event(event: Envelope) -> None:
        values = {"event": event, "context": planner.context, "planner": planner}
        await callbacks.call(handler, ("event", "context"), values)
        handled(planner.name, event, "handled")

    return tracked(planner, on_event)


async def _goal_failed(planner: Planner, goal: Envelope, exc: Exception) -> None:
    if not is_permanent(exc):
        handled(planner.name, goal, f"error, to be redelivered: {describe(exc)}")
        raise exc
    log.warning("planner %s: goal %s failed: %s", planner.name, goal.id, describe(exc))
    await answer_goal_failed(planner.context, goal, exc)
    handled(planner.name, goal, f"failed, answered: {describe(exc)}")


async def candidates(
    planner: Planner, correlation_id: str | None, skip: str = ""
) -> list[PlanContext]:
    """``planner``'s plans that know ``correlation_id``: the one whose goal carried it first."""
    if not correlation_id or correlation_id.startswith("waygraph:"):
        return []
    ctx = planner.context
    # An event a plan of this planner sent: its commit may have listed the id already.
    records = await ctx.by_correlation(correlation_id, planner=planner.name, noted=bool(skip))
    # ``skip``: a plan whose own event this is, left out before the cost of loading it.
    plans = [from_record(PlanContext, r, ctx) for r in records if r.key != skip]
    # The plan whose goal carried the id first, then the ones that sent it in a request.
    return sorted(plans, key=lambda p: p.correlation_id != correlation_id)


async def route(planner: Planner, event: Envelope) -> None:
    """Hand ``event`` to the plan that accepts it, retrying on write conflicts."""
    context = planner.context
    if not event.correlation_id:
        return
    if event.topic is Topic.ACTION_REQUESTS and event.source == context.source:
        # This planner's own requests: no plan of it takes them (a nested
        # plan has their id as its goal's, and goals never move plans).
        return
    if any(event.type == t and event.topic is topic for t, topic, _ in planner._goals):
        return  # a goal: it starts a plan (on_goal), it never moves one

    tries = 0

    async def attempt() -> None:
        nonlocal tries
        tries += 1
        own = event.plan_id if event.source == context.source else None
        # The plan committed here that waits for this answer, unless a try failed.
        transition = _cached_transition(planner, event, own) if tries == 1 else None
        if transition is None:
            # A plan's own request or response never moves it.
            for plan in await candidates(planner, event.correlation_id, skip=own or ""):
                next_state = plan.accepts(event)
                if next_state is not None:
                    transition = TransitionContext(event, plan, next_state)
                    break
        if transition is None:
            return
        before = transition.plan.current_state
        try:
            if planner._transition is not None:
                values = {"transition": transition, "context": context, "planner": planner}
                await callbacks.call(planner._transition, ("transition", "context"), values)
            else:
                await advance(transition)
        except Exception as exc:
            if not is_permanent(exc):
                raise
            # Retrying cannot help: the plan fails and answers its goal now.
            await reload(transition.plan)
            await transition.plan.finalize(None, status="failed", error=error_payload(exc))
            handled(planner.name, event, f"plan failed: {describe(exc)}")
            return
        handled(planner.name, event, f"{before} -> {transition.next_state}")

    # A plan that changed meanwhile is looked up again on the next try.
    await retry_conflicts_async(attempt, what=f"routing {event.type} ({event.id})")


def _cached_transition(
    planner: Planner, event: Envelope, own: str | None
) -> TransitionContext | None:
    """The transition of the plan committed here that waits for ``event``, taken from the
    planner's cache (_plan_cache); else None (ask the store).

    Every change of this planner's plans commits version-checked, so a plan
    another process changed since conflicts and is read again, the change
    applied to it (a commit made here replaced the cached copy already). A
    plan that waits on a request of a goal type of this planner may have a
    child plan that knows the same id: the store decides. So it does when the
    cached plan does not take the event.
    """
    cid = event.correlation_id
    if cid is None:
        return None
    context = planner.context
    hit = context.cache.waiting_for(cid)
    if hit is None or hit.plan_id == own or hit.event_type in planner.goal_types:
        return None
    plan = cached(PlanContext, hit, context)
    next_state = plan.accepts(event)
    return None if next_state is None else TransitionContext(event, plan, next_state)


async def advance(transition: TransitionContext) -> None:
    """The default ``on_transition``: take the event; on a terminal state answer the goal."""
    await transition.plan.execute_next(transition.event, finalize=default_result)


async def dependency(planner: Planner, event: Envelope) -> None:
    """Start ``planner``'s pending plans that waited for the plan ``event`` says finished."""
    finished = event.data.get("plan_id") or event.plan_id
    if not isinstance(finished, str):
        return
    context = planner.context
    # PlanContext.dependents_of, or what the finishing commit here listed right after it.
    records = await context.by_correlation(
        AFTER + finished, planner=context.name, noted=event.source == context.source
    )
    for record in records:
        plan = from_record(PlanContext, record, context)
        if plan.status == "pending":
            await plan.execute_next()
