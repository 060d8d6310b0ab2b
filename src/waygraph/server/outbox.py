"""Event plans with stuck outboxes, on the dashboard and under ``/api/outbox``.

An event plan whose requests or answer stay in its outbox a minute after its
last change did not get them onto the bus (:mod:`waygraph.events.outbox`);
the planner logs every failed try and tries again with backoff. The sessions
page shows such plans in a section of their own (nothing when there are
none); ``GET /api/outbox`` lists them as ``waygraph events outbox --json``
does.

Example:
    >>> from waygraph.store import open_store
    >>> section(open_store("memory://"))
    ''
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Query, Request

from waygraph.events.outbox import STUCK_AFTER, StuckOutbox, stuck_outboxes
from waygraph.server.errors import responses
from waygraph.server.html import badge, e
from waygraph.store import Store

__all__ = ["router", "section"]

router = APIRouter(prefix="/api")


@router.get("/outbox", responses=responses(401, 422), tags=["sessions"])
def list_stuck_outboxes(
    request: Request,
    older_than: Annotated[
        float, Query(ge=0, le=10**9, description="Seconds after the plan's last change.")
    ] = STUCK_AFTER,
) -> dict[str, Any]:
    """Event plans with outbox entries unsent ``older_than`` seconds after their last change."""
    store: Store = request.app.state.service.store
    return {"stuck": [row.as_dict() for row in stuck_outboxes(store, older_than=older_than)]}


def _row(row: StuckOutbox) -> str:
    unsent = ", ".join(f"{entry['type']} ({entry['bytes']} bytes)" for entry in row.entries)
    session = "—"
    if row.session:
        session = f'<a href="/sessions/{e(quote(row.session, safe=""))}">{e(row.session)}</a>'

    return (
        f"<tr><td class=mono>{e(row.plan_id)}</td><td>{e(row.planner)}</td>"
        f"<td>{badge(row.status)}</td><td>{session}</td>"
        f"<td class=num>{row.waiting:.0f} s</td><td>{e(unsent)}</td></tr>"
    )


def section(store: Store) -> str:
    """The sessions page's section of stuck outboxes ('' when there are none)."""
    stuck = stuck_outboxes(store)
    if not stuck:
        return ""
    rows = "".join(_row(row) for row in stuck)
    return (
        "<section class=card id=stuck-outboxes><h2>Stuck outboxes</h2>"
        "<p class=muted>Event plans whose requests or answer were not sent; the planner "
        "tries again and logs each failure with the plan id.</p>"
        "<table><thead><tr><th>Plan</th><th>Planner</th><th>Status</th><th>Session</th>"
        "<th class=num>Waiting</th><th>Unsent</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></section>"
    )
