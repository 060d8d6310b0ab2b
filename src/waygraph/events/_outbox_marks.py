"""Outbox entries published but not yet marked so in the store, and marking them in batches.

A plan's change is committed together with its outbox, then the outbox is
published. Marking the entries published used to cost a second commit per
change. Now the ids are kept here instead: the plan's next commit (which
most plans make soon: the answer to the request just sent moves them on)
drops them from the stored outbox at no extra cost, and a plan that makes
no further commit (a finished one, or one waiting long) is marked by
:meth:`OutboxMarks.flush`, which writes many plans in one store commit.

Delivery is unchanged: an entry stays in the stored outbox until a commit
says it went out, so a process killed before that leaves it there and the
next planner to start sends it again with the same event id (JetStream and
receivers drop the copy). Only the window for such a re-send is longer.

Example:
    >>> marks = OutboxMarks()
    >>> marks.pending("plan-1")
    frozenset()
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from waygraph.errors import Conflict
from waygraph.store import Store, Write
from waygraph.store.retry import retry_conflicts_async

__all__ = ["MARK_AFTER", "OutboxMarks", "mark_stored"]

log = logging.getLogger("waygraph.events")

#: Seconds a running plan's published ids wait for its next commit before a
#: batch writes them; finished plans make no next commit and are written at once.
#: Long enough for a busy worker's answer to come first (1,000 plans at once
#: wait seconds for theirs), well inside JetStream's duplicate window (2 min)
#: and the planners' recovery interval (30 s), which would send them again.
MARK_AFTER = 5.0

#: The most plans one batch commit marks.
BATCH = 200

#: The index entry of plans with unpublished outbox entries (see _plan_records).
OUTBOX_PENDING = "waygraph:outbox-pending"


@dataclass
class _Entry:
    ids: set[str]
    write: Write  # the plan's last commit, as stored: what a batch mark starts from
    due: float  # monotonic time after which a batch writes the mark


@dataclass
class OutboxMarks:
    """Published outbox ids per plan, waiting to be written (one per planner context)."""

    _entries: dict[str, _Entry] = field(default_factory=dict)
    _flusher: asyncio.Task[None] | None = None
    _wake: asyncio.Event = field(default_factory=asyncio.Event)

    def pending(self, plan_id: str) -> frozenset[str]:
        """The ids of ``plan_id``'s outbox entries published but not yet marked."""
        entry = self._entries.get(plan_id)
        return frozenset(entry.ids) if entry else frozenset()

    def published(self, write: Write, ids: Sequence[str], *, finished: bool) -> None:
        """``ids`` of the plan ``write`` stored (at version ``write.expected_version``)
        went out; a later commit marks them."""
        due = time.monotonic() + (0.0 if finished else MARK_AFTER)
        entry = self._entries.get(write.key)
        if entry is None:
            self._entries[write.key] = _Entry(set(ids), write, due)
        else:
            entry.ids.update(ids)
            entry.write = write
            entry.due = min(entry.due, due)
        if finished:
            self._wake.set()

    def committed(self, plan_id: str, ids: frozenset[str], write: Write | None = None) -> None:
        """A commit of the plan dropped ``ids`` from its outbox: forget them.

        ``write``: that commit, at its new version, for ids still waiting (a
        batch mark must start from the plan as last stored).
        """
        entry = self._entries.get(plan_id)
        if entry is None:
            return
        entry.ids -= ids
        if not entry.ids:
            del self._entries[plan_id]
        elif write is not None:
            entry.write = write

    def schedule(self, store_call: Callable[..., Awaitable[Any]], store: Store) -> None:
        """Make sure a batch will write the marks that come due (one task at a time)."""
        if self._flusher is not None and not self._flusher.done():
            return
        # A new event per task: an asyncio.Event belongs to the loop that first waits on it.
        self._wake = asyncio.Event()
        self._flusher = asyncio.get_running_loop().create_task(self._run(store_call, store))

    async def _run(self, store_call: Callable[..., Awaitable[Any]], store: Store) -> None:
        while self._entries:
            self._wake.clear()
            wait = min(entry.due for entry in self._entries.values()) - time.monotonic()
            if wait > 0:
                # A finished plan's marks (due at once) wake the batch early.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), wait)
            # Yield at least once, so the marks of plans finishing together share a commit.
            await asyncio.sleep(0)
            try:
                await self.flush(store_call, store, due_only=True)
            except Exception:  # the marks stay; the next commit or batch tries again
                log.warning("marking outbox entries published failed", exc_info=True)
                await asyncio.sleep(MARK_AFTER)

    async def flush(
        self, store_call: Callable[..., Awaitable[Any]], store: Store, *, due_only: bool = False
    ) -> int:
        """Write the marks (those come due, or all) in one commit; how many plans it marked.

        When another writer changed one of the plans since (a second planner
        process), the batch falls back to one commit per plan, each checked
        against the plan's stored version; a plan that changed is left alone
        (its entries stay in its outbox and are sent again with the same ids
        on recovery, which receivers drop).
        """
        now = time.monotonic()
        chosen = {
            key: entry for key, entry in self._entries.items() if not due_only or entry.due <= now
        }
        # A bounded batch keeps each transaction short; the rest go in the next one.
        chosen = dict(list(chosen.items())[:BATCH])
        if not chosen:
            return 0
        # Snapshots: more ids may be published for these plans while the batch is written.
        ids = {key: frozenset(entry.ids) for key, entry in chosen.items()}
        writes = {key: _marked(entry.write, ids[key]) for key, entry in chosen.items()}
        try:
            await store_call(store.commit_all, list(writes.values()))
        except Conflict:
            for key, write in writes.items():
                try:
                    await store_call(store.commit_all, [write])
                except Conflict:
                    await mark_stored(store_call, store, key, ids[key])
        for key in chosen:
            self.committed(key, ids[key])
        return len(chosen)

    def cancel(self) -> None:
        """Stop the batch task (the planner is closing; it flushes first)."""
        if self._flusher is not None:
            self._flusher.cancel()
            self._flusher = None


async def mark_stored(
    store_call: Callable[..., Awaitable[Any]], store: Store, key: str, ids: frozenset[str]
) -> None:
    """Drop ``ids`` from the plan's outbox as it is stored now (another writer changed it)."""

    async def attempt() -> None:
        record = await store_call(store.get, key)
        if record is None or not any(e["id"] in ids for e in record.data.get("outbox", [])):
            return
        # (key, record, expected version, events, kind, session, status, plan, index)
        fields = (record.kind, record.session, record.status, record.plan, record.correlation_ids)
        write = Write(key, record.data, record.version, (), *fields)
        await store_call(store.commit_all, [_marked(write, ids)])

    try:
        await retry_conflicts_async(attempt, what=f"plan {key!r}")
    except Conflict:
        # Left in the outbox: recovery sends them again with the same ids; receivers dedupe.
        log.warning("plan %s: could not mark %d outbox entries published", key, len(ids))


def _marked(write: Write, ids: frozenset[str]) -> Write:
    """The plan's last commit with the published entries ``ids`` dropped from its outbox."""
    record = dict(write.record)
    outbox = [e for e in record.get("outbox", []) if e["id"] not in ids]
    record["outbox"] = outbox
    index = list(write.correlation_ids)
    if not outbox:
        index = [cid for cid in index if cid != OUTBOX_PENDING]
    return dataclasses.replace(write, record=record, events=(), correlation_ids=index)
