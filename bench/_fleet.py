"""A fleet of stored runs for the benchmarks that measure stores at size (dashboard, scale).

Every run is a copy of one real run record and its events, written by the
Navigator on the store being measured (:func:`template`); :func:`session_writes`
makes one session's writes from it.

Example:
    >>> writes = session_writes({"plan_id": "p"}, [], 3, "agent-3", old=True)
    >>> [(w.key, w.status, w.make_current) for w in writes]
    [('old_3', 'completed', False), ('run_3', 'aborted', True)]
"""

from __future__ import annotations

from typing import Any

from waygraph import load_library
from waygraph.navigator import Navigator
from waygraph.store import Write

STATUSES = ("running", "completed", "escalated", "aborted")
BUG = {"user_message": "I need to fix a bug in the login module", "domain": "bugfix"}
FAIL = {"tool_output": "AssertionError: login failed", "exit_code": 1}


def template(url: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A real run record and its events: two turns of bugfix_workflow on the Navigator."""
    nav = Navigator(load_library(), store=url)
    nav.turn("template", **BUG)
    nav.turn("template", **FAIL)
    key = nav.store.current("template")
    assert key is not None
    record = nav.store.get(key)
    assert record is not None and record.status == "running", record
    events = [e.data for e in nav.store.events(key)]
    nav.store.clear_current("template")
    nav.close()
    return record.data, events


def session_writes(
    record: dict[str, Any], events: list[dict[str, Any]], n: int, session: str, *, old: bool
) -> list[Write]:
    """Session ``n``'s writes: its current run (status by ``n``), after an older finished one."""
    writes = []
    if old:
        data = {**record, "run_id": f"old_{n}", "session_id": session, "status": "completed"}
        writes.append(
            Write(
                f"old_{n}",
                data,
                0,
                events,
                session=session,
                status="completed",
                plan=record["plan_id"],
            )
        )
    status = STATUSES[n % len(STATUSES)]
    data = {**record, "run_id": f"run_{n}", "session_id": session, "status": status}
    writes.append(
        Write(
            f"run_{n}",
            data,
            0,
            events,
            session=session,
            status=status,
            plan=record["plan_id"],
            make_current=True,
        )
    )
    return writes
