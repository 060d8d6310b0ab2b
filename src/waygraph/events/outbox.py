"""Plans whose outbox stays unsent: what ``waygraph events outbox`` and the dashboard show.

A plan's requests and answers are committed in its outbox and then sent; an
entry normally leaves the stored outbox within seconds (``docs/events.md``,
"Guarantees"). One still there :data:`STUCK_AFTER` seconds after the plan's
last change did not go out: the bus was away, or refused it. The planner
logs each failed try with the plan id and tries again with backoff; this
lists such plans from the store, so an operator sees them without the logs.

Example:
    >>> from waygraph.store import open_store
    >>> stuck_outboxes(open_store("memory://"))
    []
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from waygraph.events._outbox_marks import OUTBOX_PENDING
from waygraph.events._payload import size_of
from waygraph.events._planner_context import KIND
from waygraph.store import Store

__all__ = ["STUCK_AFTER", "StuckOutbox", "stuck_outboxes"]

#: Seconds after a plan's last change from which entries still in its outbox count as stuck.
#: Sent entries leave it within seconds (MARK_AFTER, 5 s); the planners' recovery
#: sends leftovers every 30 s.
STUCK_AFTER = 60.0


@dataclass(frozen=True)
class StuckOutbox:
    """One plan with outbox entries unsent ``waiting`` seconds after its last change.

    ``entries``: each entry's ``id``, ``type``, ``topic`` and ``bytes`` (its
    size as the bus would carry it).
    """

    plan_id: str
    planner: str
    status: str
    session: str | None
    waiting: float
    entries: tuple[dict[str, Any], ...]

    def as_dict(self) -> dict[str, Any]:
        """The row as JSON data (``waygraph events outbox --json``, ``/api/outbox``)."""
        return {
            "plan_id": self.plan_id,
            "planner": self.planner,
            "status": self.status,
            "session": self.session,
            "waiting": round(self.waiting, 1),
            "entries": [dict(e) for e in self.entries],
        }


def stuck_outboxes(
    store: Store, *, older_than: float = STUCK_AFTER, now: float | None = None
) -> list[StuckOutbox]:
    """Event plans in ``store`` with outbox entries left ``older_than`` seconds after
    their last change, longest waiting first."""
    now = time.time() if now is None else now
    found: list[StuckOutbox] = []
    for record in store.list(correlation_id=OUTBOX_PENDING):
        data = record.data
        outbox = data.get("outbox") or []
        if record.kind != KIND or not outbox:
            continue
        updated = data.get("updated_at")
        waiting = now - updated if isinstance(updated, int | float) else older_than
        if waiting < older_than:
            continue
        entries = tuple(_entry(e) for e in outbox if isinstance(e, dict))
        found.append(
            StuckOutbox(
                plan_id=record.key,
                planner=str(data.get("planner") or ""),
                status=str(data.get("status") or record.status or ""),
                session=record.session,
                waiting=waiting,
                entries=entries,
            )
        )
    return sorted(found, key=lambda s: -s.waiting)


def _entry(entry: dict[str, Any]) -> dict[str, Any]:
    envelope = entry.get("envelope")
    wire = envelope if isinstance(envelope, dict) else {}
    try:
        size: int | None = size_of(wire)
    except (TypeError, ValueError):
        size = None
    return {
        "id": entry.get("id"),
        "type": wire.get("type"),
        "topic": entry.get("topic"),
        "bytes": size,
    }
