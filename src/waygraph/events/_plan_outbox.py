"""A plan's outbox: publishing what a commit put there, and what a stopped process left.

A change is committed with the envelopes it sends (the outbox), and only
then published; what went out is marked so by the plan's next commit or by
a batch (:mod:`waygraph.events._outbox_marks`). What failed to go out stays
stored and is tried again (:mod:`waygraph.events._outbox_retry`), with the
same event ids, so receivers that deduplicate by id see each once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from waygraph.errors import PayloadTooLargeError
from waygraph.events._fitting import failed_answer
from waygraph.events._outbox_marks import OUTBOX_PENDING, mark_stored
from waygraph.events._plan_records import from_record, load, reload
from waygraph.events._planner_context import PlannerContext
from waygraph.events.envelope import Envelope
from waygraph.store import Write

if TYPE_CHECKING:
    from waygraph.events.context import PlanContext

__all__ = [
    "outbox_failed",
    "publish",
    "publish_all_pending",
    "publish_and_mark",
    "publish_pending",
]

log = logging.getLogger("waygraph.events")


async def publish(
    plan: PlanContext,
    entries: Sequence[dict[str, Any]],
    stored: Write | None = None,
    envelopes: Mapping[str, Envelope] | None = None,
) -> list[str]:
    """Publish ``entries`` of ``plan``, all at once (each awaits its own acknowledgement);
    the ids that went out, or the first failure raised.

    With ``stored`` (the commit that added them), ids published before a
    failure are handed to the marks first, so the plan's next commit drops them.
    """
    context = plan.context
    bus = context.bus

    async def one(entry: dict[str, Any]) -> str:
        envelope = (envelopes or {}).get(entry["id"])
        if envelope is None:  # an entry read back from the store
            envelope = Envelope.from_wire(entry["envelope"], entry["topic"])
        try:
            await bus.publish(envelope, entry["topic"])
        except PayloadTooLargeError as exc:
            # Committed before the limit was known or lowered (or by an older
            # version): the caller hears a failed answer; the result stays stored.
            substitute = failed_answer(plan.plan_id, envelope, exc)
            if substitute is None:
                raise
            log.warning("plan %s: %s; sent a failed answer instead", plan.plan_id, exc)
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
            context.marks.published(stored, published, finished=False)
        raise failed[0]
    return published


def outbox_failed(plan: PlanContext, entries: Sequence[dict[str, Any]], exc: BaseException) -> None:
    """Log that ``entries`` did not go out and, while the planner runs, try again later."""
    context = plan.context
    cls = type(plan)

    async def resend(plan_id: str) -> int:
        return await publish_pending(await load(cls, plan_id, context))

    context.retries.failed(plan.plan_id, entries, exc, resend if context.running else None)


async def publish_and_mark(plan: PlanContext, entries: Sequence[dict[str, Any]]) -> None:
    """Publish ``entries`` one by one and mark what went out, even when a later one failed."""
    published: list[str] = []
    try:
        for entry in entries:
            published += await publish(plan, [entry])
    except Exception as exc:
        outbox_failed(plan, [e for e in entries if e["id"] not in published], exc)
        raise
    else:
        plan.context.retries.sent(plan.plan_id)
    finally:
        # Mark what went out even when a later entry failed; the rest stay in
        # the outbox and go out again on the next publish_pending.
        if published:
            # The plan as stored, not this object, is what the mark changes: one
            # way to mark (retried on Conflict, or left for recovery), then a reload.
            context = plan.context
            await mark_stored(context.call, context.store, plan.plan_id, frozenset(published))
            await reload(plan)


async def publish_pending(plan: PlanContext) -> int:
    """Publish what ``plan``'s outbox still holds (left by a process that stopped); the count."""
    context = plan.context
    async with context.lock(plan.plan_id):
        await reload(plan)
        # What this process published already is only waiting for its mark.
        sent = context.marks.pending(plan.plan_id)
        entries = [e for e in plan.outbox if e["id"] not in sent]
        if entries:
            await publish_and_mark(plan, entries)
        return len(entries)


async def publish_all_pending(cls: type[PlanContext], context: PlannerContext) -> int:
    """:func:`publish_pending` for every plan of ``context``'s planner with entries left."""
    await context.flush_marks()
    records = await context.by_correlation(OUTBOX_PENDING, planner=context.name)
    sent = 0
    for record in records:
        try:
            sent += await publish_pending(from_record(cls, record, context))
        except Exception:  # logged with its plan and tried again; the others go on
            continue
    return sent
