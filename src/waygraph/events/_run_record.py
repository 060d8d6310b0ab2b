"""An event plan's run record: the one :class:`~waygraph.model.record.RunRecord` of every kind.

A state is a node. An event plan routes by the events it receives, so which
of its machine's states it will pass through is not known ahead:
``total_nodes`` counts the states it has entered so far and
``completed_nodes`` those it left with success (the terminal state too, once
the plan completed). ``run_id`` is the plan id, as the key is.

Example:
    >>> rec = event_record({"plan_id": "p1", "status": "running", "current_state": "work",
    ...                     "path": ["work"]})
    >>> rec.run_id, rec.current_node, rec.total_nodes, rec.completed_nodes
    ('p1', 'work', 1, 0)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from waygraph.events._plan_view import visited as visited_states
from waygraph.model.record import CORE_FIELDS, RunKind, RunRecord

__all__ = ["event_record"]


def event_record(fields: Mapping[str, Any]) -> RunRecord:
    """A plan context's stored fields (``pack``-ed or not) as a :class:`RunRecord`."""
    plan_id = str(fields["plan_id"])
    path = list(fields["path"])
    visited = visited_states(str(fields["status"]), fields["current_state"], path)
    return RunRecord(
        kind=RunKind.EVENT,
        run_id=plan_id,
        plan=plan_id,
        status=str(fields["status"]),
        current_node=fields["current_state"],
        visited=visited,
        path=path,
        total_nodes=len(visited),
        completed_nodes=sum(1 for v in visited.values() if v["outcome"] == "success"),
        details={k: v for k, v in fields.items() if k not in CORE_FIELDS},
        session=fields.get("session_id"),
    )
