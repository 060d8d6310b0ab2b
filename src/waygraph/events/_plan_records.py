"""A plan context in the store: creating, loading, version-checked commits, the outbox.

:class:`PlanRecords` is the part of :class:`~waygraph.events.PlanContext`
that talks to the store and the bus; the state-machine rules are the
engine's (:mod:`waygraph.engine.events`, over an immutable
:class:`~waygraph.engine.event_run.EventRun`). A change is the engine's new
run and effects, committed with the outgoing envelopes in one write (the
outbox), and only then published, so a crash never loses a request or sends
one twice; the object takes the new state once the commit succeeded.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self

from waygraph import tracing
from waygraph.engine import events as engine
from waygraph.engine.event_run import EventPlan, EventRun, Moved
from waygraph.errors import Conflict, PayloadTooLargeError, PlanContextNotFoundError
from waygraph.events._fitting import failed_answer, fit
from waygraph.events._outbox_marks import OUTBOX_PENDING, mark_stored
from waygraph.events._payload import bus_limit
from waygraph.events._planner_context import (
    KIND,
    PlannerContext,
    _context_or_current,
    plan_id_for,
)
from waygraph.events._shared_values import pack, unpack
from waygraph.events.envelope import Envelope, Topic, new_event_id
from waygraph.events.statemachine import StateConfig, validate_state_machine
from waygraph.model import FINISHED
from waygraph.retry import retry_conflicts_async
from waygraph.store import StoredRecord, Write

if TYPE_CHECKING:
    # PlanContext, the one class with this mixin, is a pydantic model.
    from pydantic import BaseModel as _Model

    from waygraph.events.context import PlanContext, PlanStatus
    from waygraph.events.statemachine import StateMachine
else:
    _Model = object

__all__ = ["Change", "PlanRecords"]

log = logging.getLogger("waygraph.events")

# Index entries that are not event correlation ids; the prefix keeps them apart.
AFTER = "waygraph:after:"
PARENT = "waygraph:parent:"


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


class PlanRecords(_Model):
    """Store and outbox methods of :class:`~waygraph.events.PlanContext` (a mixin)."""

    if TYPE_CHECKING:
        # What PlanContext provides.
        plan_id: str
        planner: str
        status: PlanStatus
        session_id: str | None
        parent_plan_id: str | None
        correlation_id: str | None
        correlation_ids: list[str]
        depends_on: list[str]
        current_state: str
        path: list[str]
        outbox: list[dict[str, Any]]
        updated_at: float
        _context: PlannerContext | None
        _version: int
        _machine: StateMachine | None

        def __init__(self, **data: Any) -> None: ...
        @property
        def context(self) -> PlannerContext: ...
        def _plan(self) -> EventPlan: ...
        def _run(self) -> EventRun: ...
        async def _advance(self, apply: Callable[[Self], Moved | None]) -> bool: ...
        async def execute_next(self) -> bool: ...

    # ------------------------------------------------------------ creating

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
        from waygraph.events.context import PlanContext

        if isinstance(state_machine, PlanContext):
            state_machine = state_machine.state_machine
        machine = validate_state_machine(state_machine, name=plan_id or goal.type)
        plan_id = plan_id or plan_id_for(goal)
        now = time.time()
        plan = cls(
            plan_id=plan_id,
            planner=context.name,
            goal_event=goal.type,
            goal=goal.to_wire(),
            goal_data=dict(goal.data),
            response_event=goal.response_event,
            response_topic=goal.response_topic,
            status="pending" if depends_on else "running",
            state_machine=machine.states,
            current_state=machine.start,
            parent_plan_id=parent_plan_id or goal.plan_id,
            session_id=goal.session_id,
            user_id=goal.user_id,
            tenant_id=goal.tenant_id,
            correlation_id=goal.correlation_id,
            correlation_ids=[goal.correlation_id] if goal.correlation_id else [],
            depends_on=list(dict.fromkeys(depends_on)),
            processed_event_ids=[goal.id],
            created_at=now,
            updated_at=now,
        )
        plan._context = context
        plan._machine = machine
        event = {"type": "plan_created", "state": machine.start, "goal_id": goal.id}
        if start and not depends_on:
            return await plan._create_started(event)
        try:
            await plan._commit(0, [event])
        except Conflict:
            existing = await cls.restore(plan_id, context)
            log.info("plan %s already exists (goal %s delivered again)", plan_id, goal.id)
            plan = existing
        if start:
            await plan.execute_next()
        return plan

    async def _create_started(self, created: dict[str, Any]) -> Self:
        """Store the new plan already on its first state, with its request, in one commit.

        A goal delivered again finds the stored plan (the insert conflicts),
        reloads it and changes nothing when that plan started already (one
        stored unstarted, by a handler that calls ``execute_next()`` next, is
        started here, as that call would).
        """

        def apply(plan: Self) -> Moved | None:
            run = plan._run()
            if plan._version != 0 and run.started:
                # Advancing again would follow a default_next past the request it waits for.
                return None
            moved = engine.advance(plan._plan(), run, new_event_id)
            if plan._version != 0:
                return moved
            if moved is None:
                return Moved(run, (created,))
            return Moved(moved.run, (created, *moved.events), moved.messages)

        await self._advance(apply)
        return self

    # ------------------------------------------------------------ loading

    @classmethod
    def _from_record(cls, record: StoredRecord, context: PlannerContext) -> Self:
        plan = cls.model_validate(unpack(record.data))
        plan._context = context
        plan._version = record.version
        return plan

    def _reload_from(self, record: StoredRecord) -> None:
        fresh = type(self).model_validate(unpack(record.data))
        for name in type(self).model_fields:
            setattr(self, name, getattr(fresh, name))
        self._version = record.version
        self._machine = None

    async def _reload(self) -> None:
        record = await self.context.call(self.context.store.get, self.plan_id)
        if record is None:
            raise PlanContextNotFoundError(f"plan {self.plan_id!r} is no longer in the store")
        self._reload_from(record)

    @classmethod
    async def restore(cls, plan_id: str, context: PlannerContext | None = None) -> Self:
        """The stored plan ``plan_id``; PlanContextNotFoundError when there is none.

        ``context`` may be left out inside a planner's handler (the running
        planner's is used).

        Example::

            plan = await PlanContext.restore(answer.data["plan_id"], planner.context)
        """
        context = _context_or_current(context, "PlanContext.restore")
        record = await context.call(context.store.get, plan_id)
        if record is None or record.kind != KIND:
            raise PlanContextNotFoundError(
                f"no plan {plan_id!r} in {context.store.url}; "
                "plans are stored under the plan_id that create_from_goal returned"
            )
        return cls._from_record(record, context)

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
        if not correlation_id or correlation_id.startswith("waygraph:"):
            return None
        records = await context.by_correlation(correlation_id)
        # A parent's request id is also its child's goal id: the goal's owner wins.
        plans = sorted(
            (cls._from_record(r, context) for r in records),
            key=lambda p: (p.correlation_id != correlation_id, p.planner != context.name),
        )
        return plans[0] if plans else None

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
        # The planner is in the data, not a column (``plan`` is the plan id);
        # asked for one planner's plans, the store lists them all and they are picked here.
        records = await context.call(
            context.store.list,
            kind=KIND,
            session=session,
            status=status,
            limit=limit if planner is None else None,
        )
        if planner is not None:
            records = [r for r in records if r.data.get("planner") == planner][:limit]
        return [cls._from_record(r, context) for r in records]

    async def children(self) -> list[Self]:
        """The plans whose ``parent_plan_id`` is this plan."""
        records = await self.context.by_correlation(PARENT + self.plan_id)
        return [type(self)._from_record(r, self.context) for r in records]

    async def parent(self) -> Self | None:
        """The parent plan, or None for a top-level plan (or a parent stored elsewhere)."""
        if self.parent_plan_id is None:
            return None
        try:
            return await type(self).restore(self.parent_plan_id, self.context)
        except PlanContextNotFoundError:
            return None

    # ------------------------------------------------------------ committing

    async def save(self) -> None:
        """Store the plan as it is now (after changing ``results`` by hand, say).

        Version-checked: raises :class:`~waygraph.errors.Conflict` when the
        stored plan changed since this object loaded it; restore and redo.
        """
        await self._commit(self._version, [{"type": "plan_saved"}])

    def _index(self) -> list[str]:
        ids = list(self.correlation_ids)
        ids += [AFTER + dep for dep in self.depends_on]
        if self.parent_plan_id:
            ids.append(PARENT + self.parent_plan_id)
        if self.outbox:
            ids.append(OUTBOX_PENDING)
        return ids

    def _visited(self) -> dict[str, dict[str, str]]:
        """Each state entered and how it came out, as every run record says it."""
        ended = {"completed": "success", "failed": "fail"}.get(self.status)
        visited = {state: {"outcome": "success"} for state in self.path}
        if self.path:
            visited[self.current_state] = {"outcome": ended or "pending"}
        return visited

    async def _commit(
        self,
        expected: int,
        events: Sequence[dict[str, Any]],
        run: EventRun | None = None,
        entries: Sequence[dict[str, Any]] = (),
    ) -> Write:
        """Store the plan, version-checked; the write as stored, at its new version.

        ``run`` (the engine's new run) and the outbox ``entries`` it sends
        are stored with the plan's other fields; this object takes them only
        once the commit succeeded, so a failed commit leaves it as it was.
        Outbox entries this process published since the plan's last commit
        are dropped from the outbox here: marking them costs no commit of its own.
        """
        context = self.context
        sent = context.marks.pending(self.plan_id)
        outbox = [e for e in self.outbox if e["id"] not in sent] if sent else list(self.outbox)
        outbox += entries
        changes: dict[str, Any] = _run_fields(run) if run is not None else {}
        changes.update(outbox=outbox, updated_at=time.time())
        # A shallow copy (no validation) is the new state until the commit succeeds.
        new = self.model_copy(update=changes)
        # Each large value once: the goal's data, the result and its copies (_shared_values).
        record = pack(new.model_dump(mode="json"))
        # The one run-record schema (waygraph.model.record); a state is a node.
        record.update(
            kind=KIND,
            plan=self.plan_id,
            current_node=new.current_state,
            path=new.path,
            visited=new._visited(),
        )
        write = Write(
            self.plan_id,
            record,
            expected,
            # Inside a span of the application's, the plan's events carry its trace.
            tracing.stamp(list(events)),
            kind=KIND,
            session=self.session_id,
            status=new.status,
            plan=self.plan_id,
            correlation_ids=new._index(),
        )
        [version] = await context.call(context.store.commit_all, [write])
        for name, value in changes.items():
            setattr(self, name, value)
        self._version = version
        stored = dataclasses.replace(write, expected_version=version, events=())
        if sent:
            context.marks.committed(self.plan_id, sent, stored)
        return stored

    async def _change(self, apply: Callable[[Self], Moved | None]) -> bool:
        """Apply an engine transition to the plan as stored, commit it version-checked,
        then publish its outbox.

        ``apply`` returns the transition (None: nothing to change) without
        changing the plan. On Conflict the plan is reloaded and ``apply``
        called again; transitions are written so that applying them to a
        plan that already took the change does nothing. What was published
        is marked so by the plan's next commit, or by a batch (see ``_outbox_marks``).
        """
        context = self.context
        async with context.lock(self.plan_id):

            async def attempt() -> tuple[Change, Write] | None:
                moved = apply(self)
                if moved is None:
                    return None
                change = Change.of(moved)
                # Before the commit: an answer too large for the bus becomes a failed one.
                limit = bus_limit(context.bus)
                refitted = fit(self._plan(), moved, change.outbox, limit=limit)
                if refitted is not None:
                    moved, change = refitted, Change.of(refitted)
                    fit(self._plan(), moved, change.outbox, limit=limit, refit=False)
                stored = await self._commit(self._version, change.events, moved.run, change.outbox)
                return change, stored

            done = await retry_conflicts_async(
                attempt, what=f"plan {self.plan_id!r}", forget=self._reload
            )
            if done is None:
                return False
            change, stored = done
            if change.outbox:
                try:
                    published = await self._publish(change.outbox, stored, change.envelopes)
                except Exception as exc:
                    # Committed, so not lost: logged with the plan, and tried again.
                    self._outbox_failed(change.outbox, exc)
                    raise
                if published:
                    context.marks.published(stored, published, finished=self.status in FINISHED)
                    context.marks.schedule(context.call, context.store)
            return True

    # ------------------------------------------------------------ the outbox

    async def _publish(
        self,
        entries: Sequence[dict[str, Any]],
        stored: Write | None = None,
        envelopes: Mapping[str, Envelope] | None = None,
    ) -> list[str]:
        """Publish ``entries``, all at once (each awaits its own acknowledgement);
        the ids that went out, or the first failure raised.

        With ``stored`` (the commit that added them), ids published before a
        failure are handed to the marks first, so the plan's next commit drops them.
        """
        bus = self.context.bus

        async def one(entry: dict[str, Any]) -> str:
            envelope = (envelopes or {}).get(entry["id"])
            if envelope is None:  # an entry read back from the store
                envelope = Envelope.from_wire(entry["envelope"], entry["topic"])
            try:
                await bus.publish(envelope, entry["topic"])
            except PayloadTooLargeError as exc:
                # Committed before the limit was known or lowered (or by an older
                # version): the caller hears a failed answer; the result stays stored.
                substitute = failed_answer(self.plan_id, envelope, exc)
                if substitute is None:
                    raise
                log.warning("plan %s: %s; sent a failed answer instead", self.plan_id, exc)
                await bus.publish(substitute, entry["topic"])
            return str(entry["id"])

        if len(entries) == 1:
            return [await one(entries[0])]
        # Pipelined: entries of one change go to different streams and receivers,
        # which never relied on their order; waiting for each ack in turn only adds latency.
        results = await asyncio.gather(*(one(e) for e in entries), return_exceptions=True)
        published = [r for r in results if isinstance(r, str)]
        failed = [r for r in results if isinstance(r, BaseException)]
        if failed:
            if published and stored is not None:
                self.context.marks.published(stored, published, finished=False)
            raise failed[0]
        return published

    def _outbox_failed(self, entries: Sequence[dict[str, Any]], exc: BaseException) -> None:
        """Log that ``entries`` did not go out and, while the planner runs, try again later."""
        context = self.context

        async def resend(plan_id: str) -> int:
            plan = await type(self).restore(plan_id, context)
            return await plan.publish_pending()

        context.retries.failed(self.plan_id, entries, exc, resend if context.running else None)

    async def _publish_and_mark(self, entries: Sequence[dict[str, Any]]) -> None:
        published: list[str] = []
        try:
            for entry in entries:
                published += await self._publish([entry])
        except Exception as exc:
            self._outbox_failed([e for e in entries if e["id"] not in published], exc)
            raise
        else:
            self.context.retries.sent(self.plan_id)
        finally:
            # Mark what went out even when a later entry failed; the rest stay in
            # the outbox and go out again on the next publish_pending.
            if published:
                await self._mark_published(published)

    async def _mark_published(self, ids: Sequence[str]) -> None:
        # The plan as stored, not this object, is what the mark changes: one
        # way to mark (retried on Conflict, or left for recovery), then a reload.
        await mark_stored(self.context.call, self.context.store, self.plan_id, frozenset(ids))
        await self._reload()

    async def publish_pending(self) -> int:
        """Publish what the outbox still holds (left by a process that stopped); the count."""
        async with self.context.lock(self.plan_id):
            await self._reload()
            # What this process published already is only waiting for its mark.
            sent = self.context.marks.pending(self.plan_id)
            entries = [e for e in self.outbox if e["id"] not in sent]
            if entries:
                await self._publish_and_mark(entries)
            return len(entries)

    @classmethod
    async def publish_all_pending(cls, context: PlannerContext) -> int:
        """:meth:`publish_pending` for every plan of this planner with outbox entries left."""
        await context.flush_marks()
        records = await context.by_correlation(OUTBOX_PENDING, planner=context.name)
        sent = 0
        for record in records:
            try:
                sent += await cls._from_record(record, context).publish_pending()
            except Exception:  # logged with its plan and tried again; the others go on
                continue
        return sent

    @classmethod
    async def dependents_of(cls, plan_id: str, context: PlannerContext) -> list[Self]:
        """Plans of this planner that list ``plan_id`` in ``depends_on``."""
        records = await context.by_correlation(AFTER + plan_id, planner=context.name)
        return [cls._from_record(r, context) for r in records]


def _run_fields(run: EventRun) -> dict[str, Any]:
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
