"""How a plan changes: one engine transition, one version-checked commit, then its outbox.

Every method of :class:`~waygraph.events.PlanContext` that changes a plan
hands :func:`change` a function from the plan as stored to the engine's
:class:`~waygraph.engine.event_run.Moved` (the new run and its effects);
:func:`change` commits it with the envelopes it sends, applies it again to
a fresh load when another writer got there first, and publishes what it
committed. Creating a plan (:func:`create`) is the first such commit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from waygraph.engine import events as engine
from waygraph.engine.event_run import EventRun, Moved, then
from waygraph.errors import InputError, PayloadTooLargeError, PlanFormatError
from waygraph.events._fitting import fit
from waygraph.events._payload import bus_limit
from waygraph.events._plan_outbox import outbox_failed, publish
from waygraph.events._plan_records import commit, insert, new_plan, reload
from waygraph.events._plan_view import engine_plan, engine_run, run_fields
from waygraph.events._planner_context import PlannerContext
from waygraph.events.envelope import Envelope, Topic, new_event_id
from waygraph.events.failures import error_payload
from waygraph.events.statemachine import StateAction, StateConfig, validate_state_machine
from waygraph.model import FINISHED
from waygraph.store import Write
from waygraph.store.retry import retry_conflicts_async

if TYPE_CHECKING:
    from waygraph.events.context import PlanContext

__all__ = [
    "Change",
    "action_for",
    "advance",
    "change",
    "create",
    "dispatching",
    "finishing",
    "moving",
    "parent_correlation",
    "pausing",
    "resuming",
    "start_after_dependencies",
]

log = logging.getLogger("waygraph.events")

P = TypeVar("P", bound="PlanContext")
Apply = Callable[["PlanContext"], Moved | None]


class Change:
    """What one change adds besides the new state: store events and outgoing envelopes.

    Built from an engine transition (:meth:`of`): its messages become
    envelopes (stamped with the time here: the engine reads no clock) and
    their outbox entries.
    """

    def __init__(self, events: Sequence[dict[str, Any]] = ()) -> None:
        self.events: list[dict[str, Any]] = list(events)
        self.outbox: list[dict[str, Any]] = []
        # The outbox entries' envelopes, kept so publishing need not parse them back.
        self.envelopes: dict[str, Envelope] = {}

    @classmethod
    def of(cls, moved: Moved) -> Change:
        """The events and envelopes of ``moved``, in its order."""
        change = cls(moved.events)
        for message in moved.messages:
            envelope = Envelope(**message.envelope)
            # Topic() refuses a goal's unknown response topic, as a ValueError.
            entry = {
                "id": envelope.id,
                "topic": Topic(message.topic).value,
                "envelope": envelope.to_wire(),
            }
            change.outbox.append(entry)
            change.envelopes[envelope.id] = envelope
        return change


async def change(plan: PlanContext, apply: Apply) -> bool:
    """Apply an engine transition to ``plan`` as stored, commit it version-checked,
    then publish its outbox; True when something changed.

    ``apply`` returns the transition (None: nothing to change) without
    changing the plan. On Conflict the plan is reloaded and ``apply``
    called again; transitions are written so that applying them to a
    plan that already took the change does nothing. What was published
    is marked so by the plan's next commit, or by a batch (see ``_outbox_marks``).
    """
    context = plan.context
    async with context.lock(plan.plan_id):

        async def attempt() -> tuple[Change, Write] | None:
            moved = apply(plan)
            if moved is None:
                return None
            change = Change.of(moved)
            # Before the commit: an answer too large for the bus becomes a failed one.
            limit = bus_limit(context.bus)
            refitted = fit(engine_plan(plan), moved, change.outbox, limit=limit)
            if refitted is not None:
                moved, change = refitted, Change.of(refitted)
                fit(engine_plan(plan), moved, change.outbox, limit=limit, refit=False)
            stored = await commit(plan, plan.version, change.events, moved.run, change.outbox)
            return change, stored

        async def forget() -> None:
            await reload(plan)

        done = await retry_conflicts_async(attempt, what=f"plan {plan.plan_id!r}", forget=forget)
        if done is None:
            return False
        change, stored = done
        if change.outbox:
            try:
                published = await publish(plan, change.outbox, stored, change.envelopes)
            except Exception as exc:
                # Committed, so not lost: logged with the plan, and tried again.
                outbox_failed(plan, change.outbox, exc)
                raise
            if published:
                context.marks.published(stored, published, finished=plan.status in FINISHED)
                context.marks.schedule(context.call, context.store)
        return True


async def advance(plan: PlanContext, apply: Apply) -> bool:
    """:func:`change` for changes that send requests: a request whose data
    template has no value for this goal fails the plan (answering its goal)
    instead of failing every redelivery of the event."""
    try:
        return await change(plan, apply)
    except PlanFormatError as exc:
        log.warning("plan %s failed: %s", plan.plan_id, exc)
        await plan.finalize(
            {"error": str(exc), "field": exc.field, "state": plan.current_state},
            status="failed",
            error=error_payload(exc),
        )
        return True
    except PayloadTooLargeError as exc:
        # A request the bus cannot carry (checked before the commit) fails the plan.
        log.warning("plan %s failed: %s", plan.plan_id, exc)
        await plan.finalize(
            {"error": str(exc), "state": plan.current_state},
            status="failed",
            error=error_payload(exc),
        )
        return True


def action_for(plan: PlanContext, event_type: str) -> StateAction:
    """The action of ``plan``'s state that sends ``event_type`` (its current state's first),
    else a bare request of that type."""
    own = plan.state_machine.get(plan.current_state)
    if own is not None and own.action is not None and own.action.event_type == event_type:
        return own.action
    for config in plan.state_machine.values():
        if config.action is not None and config.action.event_type == event_type:
            return config.action
    return StateAction(event_type=event_type)


def dispatching(action: StateAction) -> Apply:
    """The transition of :meth:`PlanContext.dispatch`."""
    return lambda plan: engine.dispatch(engine_plan(plan), engine_run(plan), action, new_event_id)


def pausing(reason: str) -> Apply:
    """The transition of :meth:`PlanContext.pause`."""
    return lambda plan: engine.pause(engine_plan(plan), engine_run(plan), reason, new_event_id)


def resuming(given: Any, input_data: Any, event: Envelope | None) -> Apply:
    """The transition of :meth:`PlanContext.resume` (``input`` or ``input_data``, not both)."""
    if given is not None and input_data is not None:
        raise InputError(
            "resume takes input or input_data (the same value under document 002's name), not both"
        )
    value = input_data if given is None else given
    return lambda plan: engine.resume(
        engine_plan(plan), engine_run(plan), new_event_id, value, event
    )


async def parent_correlation(plan: PlanContext) -> str | None:
    """The parent plan's correlation id, for a nested goal that had none of its own."""
    if plan.correlation_id is None and plan.parent_plan_id:
        parent = await plan.parent()
        return parent.correlation_id if parent else None
    return None


def moving(
    trigger_event: Envelope | None,
    pause: str | None,
    finalize: Callable[[PlanContext], Any] | None,
    parent_correlation: str | None,
) -> Apply:
    """The transition of :meth:`PlanContext.execute_next`: advance or accept, and on a
    terminal state with ``finalize`` also the answer to the goal."""

    def apply(plan: PlanContext) -> Moved | None:
        target = engine_plan(plan)
        if trigger_event is None:
            moved = engine.advance(target, engine_run(plan), new_event_id, pause=pause)
        else:
            moved = engine.accept(
                target, engine_run(plan), trigger_event, new_event_id, pause=pause
            )
        if moved is None or finalize is None:
            return moved
        if moved.run.status in FINISHED or not engine.is_complete(plan.state_machine, moved.run):
            return moved

        def answer(run: EventRun) -> Moved | None:
            # finalize sees the plan as it stands on its terminal state (and
            # what it changes of that copy's results is kept, as it was before).
            view = plan.model_copy(update=run_fields(run))
            result = finalize(view)
            return engine.finish(
                target, engine_run(view), result, parent_correlation=parent_correlation
            )

        return then(moved, answer)

    return apply


async def start_after_dependencies(plan: PlanContext) -> bool:
    """Start a pending plan once every plan it depends on completed; fail it when one failed."""
    context = plan.context
    statuses: dict[str, str] = {}
    for dep in plan.depends_on:
        record = await context.call(context.store.get, dep)
        statuses[dep] = record.data.get("status", "missing") if record else "missing"
    failure = engine.dependency_failure(statuses)
    if failure is not None:
        await reload(plan)
        if plan.status != "pending":
            return False
        return await plan.finalize(failure, status="failed")
    if not engine.dependencies_met(statuses):
        return False
    return await advance(
        plan,
        lambda p: engine.start_after_dependencies(engine_plan(p), engine_run(p), new_event_id),
    )


async def create(
    cls: type[P],
    goal: Envelope,
    state_machine: Mapping[str, StateConfig | Mapping[str, Any]],
    context: PlannerContext,
    plan_id: str | None,
    parent_plan_id: str | None,
    depends_on: Sequence[str],
    start: bool,
) -> P:
    """:meth:`PlanContext.create_from_goal`: the new plan, stored (and started when asked)."""
    machine = validate_state_machine(state_machine, name=plan_id or goal.type)
    plan = new_plan(
        cls,
        goal,
        machine,
        context,
        plan_id=plan_id,
        parent_plan_id=parent_plan_id,
        depends_on=depends_on,
    )
    event = {"type": "plan_created", "state": machine.start, "goal_id": goal.id}
    if start and not depends_on:
        await _create_started(plan, event)
        return plan
    plan = await insert(plan, event)
    if start:
        await plan.execute_next()
    return plan


async def _create_started(plan: PlanContext, created: dict[str, Any]) -> None:
    """Store the new plan already on its first state, with its request, in one commit.

    A goal delivered again finds the stored plan (the insert conflicts),
    reloads it and changes nothing when that plan started already (one
    stored unstarted, by a handler that calls ``execute_next()`` next, is
    started here, as that call would).
    """

    def apply(plan: PlanContext) -> Moved | None:
        run = engine_run(plan)
        if plan.version != 0 and run.started:
            # Advancing again would follow a default_next past the request it waits for.
            return None
        moved = engine.advance(engine_plan(plan), run, new_event_id)
        if plan.version != 0:
            return moved
        if moved is None:
            return Moved(run, (created,))
        return Moved(moved.run, (created, *moved.events), moved.messages)

    await advance(plan, apply)


def finishing(
    result: Any,
    status: Literal["completed", "failed"] | None,
    parent_correlation: str | None,
    error: dict[str, Any] | None,
) -> Apply:
    """The transition of :meth:`PlanContext.finalize`."""
    return lambda plan: engine.finish(
        engine_plan(plan),
        engine_run(plan),
        result,
        status=status,
        parent_correlation=parent_correlation,
        error=error,
    )
