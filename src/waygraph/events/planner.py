"""Planner: receives goals, routes events to plans by correlation id, starts dependent plans.

Handlers are registered with decorators and take ``(event, context)`` as
document 002 writes them (a handler may also take fewer arguments, or name
``planner=``; see :mod:`waygraph.callbacks`):

- ``@planner.on_goal("research.goal")``: a goal arrived (on ``action-requests``);
  the handler gets a :class:`~waygraph.events.GoalContext` (the goal
  envelope) and usually creates a :class:`~waygraph.events.PlanContext` and
  calls ``execute_next()``. A goal delivered again after its plan started
  is not passed on (the default handler gets it: it then changes nothing).
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
from typing import TYPE_CHECKING, Any, TypeVar

from waygraph import callbacks
from waygraph.events._planner_checks import (
    check_goal_registration,
    check_planner,
    run_state_machine,
)
from waygraph.events._planner_context import _CURRENT, PlannerContext, plan_id_for
from waygraph.events.activity import describe, handled
from waygraph.events.context import PlanContext
from waygraph.events.envelope import Envelope, Topic, new_event_id
from waygraph.events.failures import answer_goal_failed, error_payload, is_permanent
from waygraph.events.goals import GoalContext, Transition, TransitionContext
from waygraph.events.statemachine import StateAction, StateConfig, StateMachine
from waygraph.retry import retry_conflicts_async
from waygraph.store import open_store

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


def _default_result(plan: PlanContext) -> dict[str, Any]:
    # A copy taken before finalize adds results["final"], so the answer holds no copy of itself.
    return {"state": plan.current_state, "results": dict(plan.results)}


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
        self.name = name
        self.bus = bus
        self.store = open_store(store if store is not None else default_plan_store_url())
        self.llm = llm
        self.context = PlannerContext(
            name=name,
            bus=bus,
            store=self.store,
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
            subs.append(await subscribe(topic, event_type, self._goal_handler(handler), group))
        route = self._tracked(self._route)
        for topic in (Topic.ACTION_REQUESTS, Topic.ACTION_RESULTS):
            subs.append(await subscribe(topic, "*", route, _group(self.name, topic.value)))
        for topic, event_type, handler in self._events:
            group = _group(self.name, "on", topic.value, event_type)
            subs.append(await subscribe(topic, event_type, self._event_handler(handler), group))
        for event_type in ("plan.completed", "plan.failed"):
            group = _group(self.name, "after", event_type)
            dependency = self._tracked(self._dependency)
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
            if plan.is_complete() and await plan.finalize(_default_result(plan)):
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
        return next(iter(await self._candidates(correlation_id)), None)

    async def _candidates(self, correlation_id: str | None, skip: str = "") -> list[PlanContext]:
        if not correlation_id or correlation_id.startswith("waygraph:"):
            return []
        ctx = self.context
        records = await ctx.by_correlation(correlation_id, planner=self.name)
        # ``skip``: a plan whose own event this is, left out before the cost of loading it.
        plans = [PlanContext._from_record(r, ctx) for r in records if r.key != skip]
        # The plan whose goal carried the id first, then the ones that sent it in a request.
        return sorted(plans, key=lambda p: p.correlation_id != correlation_id)

    # ------------------------------------------------------------ handlers

    def _tracked(
        self, handler: Callable[[Envelope], Awaitable[None]]
    ) -> Callable[[Envelope], Awaitable[None]]:
        # close() waits for running handlers, so none finds the store closed midway.
        async def tracked(event: Envelope) -> None:
            if self._closing:
                log.debug("planner %s is closing; leaving %s alone", self.name, event.id)
                return
            task = asyncio.current_task()
            if task is not None:
                self._inflight.add(task)
            token = _CURRENT.set(self.context)
            try:
                await handler(event)
            finally:
                _CURRENT.reset(token)
                if task is not None:
                    self._inflight.discard(task)

        return tracked

    def _goal_handler(self, handler: GoalHandler) -> Callable[[Envelope], Awaitable[None]]:
        # An application's handler runs once per plan; the default one may run again safely.
        look_first = handler is not run_state_machine

        @self._tracked
        async def on_goal(goal: Envelope) -> None:
            if look_first and await self.context.plan_started(plan_id_for(goal)):
                log.debug("goal %s delivered again; its plan already started", goal.id)
                return
            context = self.context
            values = {"goal": GoalContext.from_event(goal), "context": context, "planner": self}
            if goal.type in self._machines:
                values["state_machine"] = self._machines[goal.type].states
            try:
                await callbacks.call(handler, ("goal", "context"), values)
            except Exception as exc:
                await self._goal_failed(goal, exc)
                return
            handled(self.name, goal, "planned")

        return on_goal

    def _event_handler(self, handler: EventHandler) -> Callable[[Envelope], Awaitable[None]]:
        @self._tracked
        async def on_event(event: Envelope) -> None:
            values = {"event": event, "context": self.context, "planner": self}
            await callbacks.call(handler, ("event", "context"), values)
            handled(self.name, event, "handled")

        return on_event

    async def _goal_failed(self, goal: Envelope, exc: Exception) -> None:
        if not is_permanent(exc):
            handled(self.name, goal, f"error, to be redelivered: {describe(exc)}")
            raise exc
        log.warning("planner %s: goal %s failed: %s", self.name, goal.id, describe(exc))
        await answer_goal_failed(self.context, goal, exc)
        handled(self.name, goal, f"failed, answered: {describe(exc)}")

    async def _route(self, event: Envelope) -> None:
        """Hand ``event`` to the plan that accepts it, retrying on write conflicts."""
        if not event.correlation_id:
            return
        if event.topic is Topic.ACTION_REQUESTS and event.source == self.context.source:
            # This planner's own requests: no plan of it takes them (a nested
            # plan has their id as its goal's, and goals never move plans).
            return
        if any(event.type == t and event.topic is topic for t, topic, _ in self._goals):
            return  # a goal: it starts a plan (on_goal), it never moves one

        async def attempt() -> None:
            transition = None
            own = event.plan_id if event.source == self.context.source else None
            # A plan's own request or response never moves it.
            for plan in await self._candidates(event.correlation_id, skip=own or ""):
                next_state = plan.accepts(event)
                if next_state is not None:
                    transition = TransitionContext(event, plan, next_state)
                    break
            if transition is None:
                return
            before = transition.plan.current_state
            try:
                if self._transition is not None:
                    values = {"transition": transition, "context": self.context, "planner": self}
                    await callbacks.call(self._transition, ("transition", "context"), values)
                else:
                    await self.advance(transition)
            except Exception as exc:
                if not is_permanent(exc):
                    raise
                # Retrying cannot help: the plan fails and answers its goal now.
                await transition.plan._reload()
                await transition.plan.finalize(None, status="failed", error=error_payload(exc))
                handled(self.name, event, f"plan failed: {describe(exc)}")
                return
            handled(self.name, event, f"{before} -> {transition.next_state}")

        # A plan that changed meanwhile is looked up again on the next try.
        await retry_conflicts_async(attempt, what=f"routing {event.type} ({event.id})")

    @staticmethod
    async def advance(transition: TransitionContext) -> None:
        """The default ``on_transition``: take the event; on a terminal state answer the goal.

        Both in one commit. The result is ``{"state": <terminal state>,
        "results": plan.results}`` (also kept as ``results["final"]``).
        """
        await transition.plan.execute_next(transition.event, finalize=_default_result)

    async def _dependency(self, event: Envelope) -> None:
        finished = event.data.get("plan_id") or event.plan_id
        if not isinstance(finished, str):
            return
        for plan in await PlanContext.dependents_of(finished, self.context):
            if plan.status == "pending":
                await plan.execute_next()

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
        from waygraph.events.modelplans import request_state_machine

        envelope = self._goal_envelope(goal)
        plan_id = plan_id or plan_id_for(envelope)
        existing = await self.context.call(self.store.get, plan_id)
        if existing is not None:
            return await PlanContext.restore(plan_id, self.context)
        notes = None if isinstance(context, PlannerContext) else context
        states = await request_state_machine(
            self._model(), envelope, agents, notes, repair_attempts=repair_attempts, name=self.name
        )
        return await PlanContext.create_from_goal(
            envelope,
            state_machine=states,
            context=self.context,
            plan_id=plan_id,
            parent_plan_id=parent_plan_id,
        )

    def _goal_envelope(self, goal: Envelope | str | Mapping[str, Any]) -> Envelope:
        if isinstance(goal, Envelope):
            return goal
        data = {"goal": goal} if isinstance(goal, str) else dict(goal)
        return self.bus.envelope(f"{self.name}.goal", data, correlation_id=new_event_id())

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
        from waygraph.events.modelplans import choose_next_action

        if isinstance(event, Sequence):  # the pre-document form: (plan, options)
            event, options = None, event
        if plan.is_complete():
            return None
        notes = None if isinstance(context, PlannerContext) else context
        if notes:
            extra = notes if isinstance(notes, str) else json.dumps(dict(notes), default=str)
            hint = f"{hint}\n\nContext: {extra}" if hint else f"Context: {extra}"
        action = await choose_next_action(
            self._model(), plan, options, hint=hint, event=event, allow_done=True
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
        from waygraph.events.modelplans import choose_next_action

        action = await choose_next_action(self._model(), plan, options, hint=hint)
        assert action is not None  # only allow_done=True may give None
        return action

    def _model(self) -> LLM:
        if self.llm is None:
            from waygraph.errors import ConfigError

            raise ConfigError(
                f"planner {self.name!r} has no model: pass llm=OpenAILLM(...) to Planner(...)"
            )
        return self.llm
