"""Planner: receives goals, routes events to plans by correlation id, starts dependent plans.

Handlers are registered with decorators and take ``(event, context)`` as
document 002 writes them (a handler may also take fewer arguments, or name
``planner=``; see :mod:`waygraph.callbacks`):

- ``@planner.on_goal("research.goal")``: a goal arrived (on ``action-requests``);
  the handler gets a :class:`~waygraph.events.GoalContext` (the goal
  envelope) and usually creates a :class:`~waygraph.events.PlanContext` and
  calls ``execute_next()``. A goal delivered again after its plan started
  is not passed on (the default handler gets it: it then changes nothing);
  on a bus that counts deliveries (NATS) a first delivery is passed on
  without looking for a plan first, so the same goal published again
  after the bus's duplicate window reaches the handler a second time.
- ``@planner.on_transition()``: an event on ``action-requests`` or
  ``action-results`` whose correlation id belongs to one of this planner's
  plans and that the plan accepts (``plan.accepts(event)``: running, not a
  duplicate, answering the request it waits for, and some transition takes
  it). The handler gets a :class:`~waygraph.events.TransitionContext`
  (``.event``, ``.plan``, ``.next_state``). A plan's own requests and
  responses, the goal event, and events no transition accepts never arrive
  here. Without an ``on_transition`` handler the planner advances plans
  itself (``execute_next``, then ``finalize`` with the results on a
  terminal state).
- ``@planner.on_event(topic, event_type)``: anything else, for example an
  approval that resumes a paused plan.

While a handler runs, ``PlanContext.restore(...)`` and
``restore_by_correlation(...)`` need no ``context``.

Example:
    >>> import asyncio
    >>> from waygraph.events import InProcessBus, Planner
    >>> planner = Planner("research-planner", bus=InProcessBus(), store="memory://")
    >>> planner.context.name, planner.context.source
    ('research-planner', 'waygraph/planners/research-planner')
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from waygraph.events import _planner_delivery as delivery
from waygraph.events._planner_checks import (
    check_goal_registration,
    check_planner,
    run_state_machine,
)
from waygraph.events._planner_context import PlannerContext, plan_id_for
from waygraph.events.bus import first_delivery
from waygraph.events.context import PlanContext
from waygraph.events.envelope import Envelope, Topic
from waygraph.events.goals import Transition, TransitionContext
from waygraph.events.statemachine import StateAction, StateConfig, StateMachine
from waygraph.store import Store, open_store

if TYPE_CHECKING:
    from waygraph.events.bus import Bus, Subscription
    from waygraph.planning import LLM

__all__ = ["Planner", "Transition", "TransitionContext", "default_plan_store_url"]

log = logging.getLogger("waygraph.events")

GoalHandler = Callable[..., Awaitable[Any]]  # (goal, context), as callbacks.bind fills it
EventHandler = Callable[[Envelope, PlannerContext], Awaitable[Any]]
TransitionHandler = Callable[[TransitionContext, PlannerContext], Awaitable[Any]]
F = TypeVar("F", bound=Callable[..., Awaitable[Any]])
#: Seconds between the planner's recovery rounds (see Planner.recover).
RECOVERY_INTERVAL = 30.0


def default_plan_store_url() -> str:
    """``$WAYGRAPH_DATABASE_URL``, else the Navigator's default store."""
    env = os.environ.get("WAYGRAPH_DATABASE_URL", "").strip()
    if env:
        return env
    from waygraph.navigator import default_store_url

    return default_store_url()


def _group(*parts: str) -> str:
    # Queue groups name NATS durable consumers: letters, digits, '-' and '_' only.
    return re.sub(r"[^A-Za-z0-9_-]", "_", "-".join(parts))


class Planner:
    """Runs state-machine plans for goals that arrive on a bus.

    ``bus``: a :class:`~waygraph.events.Bus` (default: :func:`open_bus`, from
    ``$WAYGRAPH_NATS_URL`` or in-process). ``store``: a store URL or Store
    (default ``$WAYGRAPH_DATABASE_URL``, else the Navigator's SQLite file).
    ``llm``: the model :meth:`create_plan` and :meth:`reason_next_action` ask
    (any :class:`waygraph.planning.LLM`). Envelopes the planner sends have
    the source ``<bus source>/planners/<name>``. ``recovery_interval``:
    seconds between :meth:`recover` rounds while the planner runs (None:
    only at :meth:`start`).

    Example:
        >>> from waygraph.events import InProcessBus
        >>> planner = Planner("p", bus=InProcessBus(), store="memory://")
        >>> @planner.on_goal("research.goal")
        ... async def start(goal, context):
        ...     pass
        >>> planner.goal_types
        ['research.goal']
    """

    def __init__(
        self,
        name: str,
        bus: Bus | None = None,
        store: Any = None,
        *,
        llm: LLM | None = None,
        source: str | None = None,
        recovery_interval: float | None = RECOVERY_INTERVAL,
    ) -> None:
        if not name or not isinstance(name, str):
            raise ValueError(f"a planner needs a name (got {name!r})")
        if bus is None:
            from waygraph.events import open_bus

            bus = open_bus()
            self._owns_bus = True
        else:
            self._owns_bus = False
        self._owns_store = not hasattr(store, "commit")
        self.llm = llm
        #: The planner's name, bus and store live here, once (handlers get it as ``context``).
        self.context = PlannerContext(
            name=name,
            bus=bus,
            store=open_store(store if store is not None else default_plan_store_url()),
            source=source or f"{bus.source}/planners/{name}",
            planner=self,
        )
        self._goals: list[tuple[str, Topic, GoalHandler]] = []
        self._machines: dict[str, StateMachine] = {}
        self._declared: set[str] = set()
        self._transition: TransitionHandler | None = None
        self._events: list[tuple[Topic, str, EventHandler]] = []
        self._subscriptions: list[Subscription] = []
        self._started = False
        self._closing = False
        self._inflight: set[asyncio.Task[Any]] = set()
        self.recovery_interval = recovery_interval
        self._recovery: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"Planner({self.name!r}, store={self.store.url!r})"

    @property
    def name(self) -> str:
        """The planner's name (its context's)."""
        return self.context.name

    @property
    def bus(self) -> Bus:
        """The bus the planner listens and sends on (its context's)."""
        return self.context.bus

    @property
    def store(self) -> Store:
        """The store holding the planner's plans (its context's)."""
        return self.context.store

    @property
    def goal_types(self) -> list[str]:
        """The goal event types this planner handles."""
        return [event_type for event_type, _, _ in self._goals]

    # ------------------------------------------------------------ decorators

    def on_goal(
        self,
        event_type: str,
        *,
        topic: Topic | str = Topic.ACTION_REQUESTS,
        state_machine: Mapping[str, StateConfig | Mapping[str, Any]] | None = None,
    ) -> Callable[[F], F]:
        """Register ``handler(goal, context)`` for goal events of ``event_type``.

        ``state_machine``: the machine this goal's plans run, validated now
        (:class:`~waygraph.errors.PlannerSetupError` names the
        planner, goal, state and field). With it the handler may be left
        out: ``planner.on_goal("x.goal", state_machine=SM)`` alone starts a
        plan of ``SM`` per goal; a handler that names ``state_machine`` gets
        the validated states.
        """
        machine = check_goal_registration(self.name, event_type, state_machine)
        topic = Topic(topic)
        if machine is not None:
            self._machines[event_type] = machine
            self._goals.append((event_type, topic, run_state_machine))
        else:
            self._declared.add(event_type)

        def register(handler: F) -> F:
            self._declared.discard(event_type)
            default = (event_type, topic, run_state_machine)
            self._goals = [g for g in self._goals if g != default]
            self._goals.append((event_type, topic, handler))
            return handler

        return register

    def on_transition(self) -> Callable[[F], F]:
        """Register ``handler(transition, context)`` for events plans accept (one per planner)."""

        def register(handler: F) -> F:
            self._transition = handler
            return handler

        return register

    def on_event(self, topic: Topic | str, event_type: str) -> Callable[[F], F]:
        """Register ``handler(event, context)`` for ``event_type`` (or ``"*"``) on ``topic``."""

        def register(handler: F) -> F:
            self._events.append((Topic(topic), event_type, handler))
            return handler

        return register

    # ------------------------------------------------------------ life cycle

    async def start(self) -> None:
        """Subscribe, then send what plans left in their outbox and start ready pending plans.

        Calling it again is harmless.
        """
        if self._started:
            return
        check_planner(self.name, self._declared, self._machines)
        self._started = True
        self._closing = False
        await self.bus.start()
        subscribe = self.bus.subscribe
        subs = self._subscriptions
        for event_type, topic, handler in self._goals:
            group = _group(self.name, "goal", event_type)
            subs.append(
                await subscribe(topic, event_type, delivery.goal_handler(self, handler), group)
            )
        route = delivery.tracked(self, partial(delivery.route, self))
        for topic in (Topic.ACTION_REQUESTS, Topic.ACTION_RESULTS):
            subs.append(await subscribe(topic, "*", route, _group(self.name, topic.value)))
        for topic, event_type, handler in self._events:
            group = _group(self.name, "on", topic.value, event_type)
            subs.append(
                await subscribe(topic, event_type, delivery.event_handler(self, handler), group)
            )
        for event_type in ("plan.completed", "plan.failed"):
            group = _group(self.name, "after", event_type)
            dependency = delivery.tracked(self, partial(delivery.dependency, self))
            subs.append(await subscribe(Topic.PLAN_EVENTS, event_type, dependency, group))
        await self.recover()
        for plan in await PlanContext.find(self.context, status="pending", planner=self.name):
            if plan.depends_on:
                await plan.execute_next()
        if self.recovery_interval:
            self._recovery = asyncio.create_task(self._recover_every(self.recovery_interval))

    async def recover(self) -> int:
        """Send what a stopped process left unsent; answer plans left on a terminal state.

        Called by :meth:`start` and then every ``recovery_interval`` seconds.
        Outbox entries are published again (receivers drop duplicates by
        event id); a running plan that stands on a terminal state without an
        answer (left so by a custom ``on_transition`` that died, or that
        never called ``finalize``) is finalized with the default result
        ``{"state", "results"}``. Returns how many of each it handled.
        """
        sent = await PlanContext.publish_all_pending(self.context)
        if sent:
            log.info(
                "planner %s: re-sent %d outbox entries left by a stopped process", self.name, sent
            )
        answered = 0
        for plan in await PlanContext.find(self.context, status="running", planner=self.name):
            if plan.is_complete() and await plan.finalize(delivery.default_result(plan)):
                answered += 1
        if answered:
            log.info("planner %s: answered %d goals left unanswered", self.name, answered)
        return sent + answered

    async def _recover_every(self, seconds: float) -> None:
        while True:
            await asyncio.sleep(seconds)
            try:
                await self.recover()
            except Exception:  # the next round tries again; the planner keeps running
                log.warning("planner %s: recovery failed", self.name, exc_info=True)

    async def close(self, timeout: float = 10.0) -> None:
        """Unsubscribe, let running handlers finish (up to ``timeout`` s), close what it opened."""
        self._closing = True
        if self._recovery is not None:
            self._recovery.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._recovery
            self._recovery = None
        subs, self._subscriptions = self._subscriptions, []
        for sub in subs:
            await sub.unsubscribe()
        running = [t for t in self._inflight if t is not asyncio.current_task()]
        if running:
            await asyncio.wait(running, timeout=timeout)
        self.context.marks.cancel()
        await self.context.retries.stop()
        try:
            await self.context.flush_marks()
        except Exception:  # left in the outbox: the next start sends them again, deduplicated
            log.warning("planner %s: marking sent outbox entries failed", self.name, exc_info=True)
        self._started = False
        if self._owns_bus:
            await self.bus.close()
        if self._owns_store:
            self.store.close()

    async def __aenter__(self) -> Planner:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------ queries

    async def plans(
        self, *, session: str | None = None, status: str | None = None
    ) -> list[PlanContext]:
        """This planner's plans, filtered by session and status, most recently updated first."""
        return await PlanContext.find(
            self.context, session=session, status=status, planner=self.name
        )

    async def plan_for_correlation(self, correlation_id: str) -> PlanContext | None:
        """:meth:`PlanContext.restore_by_correlation`, limited to this planner's plans."""
        return next(iter(await delivery.candidates(self, correlation_id)), None)

    # ------------------------------------------------------------ handlers

    @staticmethod
    async def advance(transition: TransitionContext) -> None:
        """The default ``on_transition``: take the event; on a terminal state answer the goal.

        Both in one commit. The result is ``{"state": <terminal state>,
        "results": plan.results}`` (also kept as ``results["final"]``).
        """
        await delivery.advance(transition)

    # ------------------------------------------------------------ models

    async def create_plan(
        self,
        goal: Envelope | str | Mapping[str, Any],
        agents: Sequence[Any] = (),
        context: PlannerContext | str | Mapping[str, Any] | None = None,
        *,
        repair_attempts: int = 2,
        plan_id: str | None = None,
        parent_plan_id: str | None = None,
    ) -> PlanContext:
        """Ask the planning model for a state machine for ``goal`` and store it as a new plan.

        Document 002's ``create_plan(goal, agents, context) -> PlanContext``.
        ``goal``: the :class:`~waygraph.events.GoalContext` an ``on_goal``
        handler got (or any goal envelope); text or a dict makes a goal
        event ``<planner name>.goal`` with a new correlation id.
        ``agents`` describes who can do work: :class:`~waygraph.events.Worker`
        objects, or dicts with ``name``, ``description`` and ``tasks`` (the
        request event types they answer). ``context``: the handler's
        context, as the document passes it, or notes for the model (text
        or a dict).

        The reply is validated like a hand-written machine, and every action
        must ask for work an agent offers; problems go back to the model up
        to ``repair_attempts`` times, then
        :class:`~waygraph.planning.InvalidPlanError` is raised and nothing
        is stored. The plan is stored ``running`` and not started:
        ``await plan.execute_next()`` sends its first request. A goal
        delivered again gets the plan its first delivery made, without
        asking the model twice.

        Example::

            @planner.on_goal("research.goal")
            async def start(goal, context):
                plan = await planner.create_plan(goal, [researcher], context)
                await plan.execute_next()
        """
        from waygraph.events.modelplans import goal_event, planner_model, request_state_machine

        envelope = goal_event(self.bus, self.name, goal)
        # The goal's first delivery (the bus says so) made no plan of the goal's id before.
        fresh = plan_id is None and first_delivery(envelope.id)
        plan_id = plan_id or plan_id_for(envelope)
        if not fresh and await self.context.call(self.store.get, plan_id):
            return await PlanContext.restore(plan_id, self.context)
        notes = None if isinstance(context, PlannerContext) else context
        states = await request_state_machine(
            planner_model(self.llm, self.name),
            envelope,
            agents,
            notes,
            repair_attempts=repair_attempts,
            name=self.name,
        )
        return await PlanContext.create_from_goal(
            envelope,
            state_machine=states,
            context=self.context,
            plan_id=plan_id,
            parent_plan_id=parent_plan_id,
        )

    async def reason_next_action(
        self,
        plan: PlanContext,
        event: Envelope | Sequence[str | StateAction] | None = None,
        context: PlannerContext | str | Mapping[str, Any] | None = None,
        *,
        options: Sequence[str | StateAction] | None = None,
        hint: str | None = None,
    ) -> str | None:
        """Ask the model for the next request of a dynamic plan: an event type, or None when done.

        Document 002's ``reason_next_action(plan, event, context)``: returns
        the event type to publish (send it with ``await plan.dispatch(...)``,
        which uses the action of the plan's state that has it), or None when
        the plan is complete (on a terminal state or finished, without asking
        the model; or when the model says the goal is reached). ``event``: the
        event that just arrived, shown to the model. ``options``: the event
        types (or :class:`StateAction` objects) it may choose from; by
        default the actions of the plan's states. A choice outside them is
        sent back once, then :class:`~waygraph.planning.InvalidPlanError`.
        :meth:`choose_action` returns the whole action, with the data the
        model chose.
        """
        from waygraph.events.modelplans import choose_next_action, planner_model

        if isinstance(event, Sequence):  # the pre-document form: (plan, options)
            event, options = None, event
        if plan.is_complete():
            return None
        notes = None if isinstance(context, PlannerContext) else context
        if notes:
            extra = notes if isinstance(notes, str) else json.dumps(dict(notes), default=str)
            hint = f"{hint}\n\nContext: {extra}" if hint else f"Context: {extra}"
        action = await choose_next_action(
            planner_model(self.llm, self.name),
            plan,
            options,
            hint=hint,
            event=event,
            allow_done=True,
        )
        return None if action is None else action.event_type

    async def choose_action(
        self,
        plan: PlanContext,
        options: Sequence[str | StateAction] | None = None,
        *,
        hint: str | None = None,
    ) -> StateAction:
        """Let the model pick the next request of a dynamic plan, with its data.

        ``options``: the event types (or ready :class:`StateAction` objects)
        the model may choose from; by default the actions of the plan's
        states. Returns the chosen :class:`StateAction` (send it with
        ``await plan.dispatch(action)``); a choice outside ``options`` is sent
        back once, then :class:`~waygraph.planning.InvalidPlanError` is raised.
        """
        from waygraph.events.modelplans import choose_next_action, planner_model

        action = await choose_next_action(
            planner_model(self.llm, self.name), plan, options, hint=hint
        )
        assert action is not None  # only allow_done=True may give None
        return action
