"""How a stored pipeline run is shown: its plan, what it waits on, and its drawing.

The dashboard, the HTTP API and ``waygraph sessions`` read pipeline runs
that :class:`~waygraph.pipelines.record.PipelineRecords` wrote; these are
their readings of a record, with no store writes.

Example:
    >>> asked = pipeline_waiting({"awaiting": "user", "status": "paused",
    ...     "waiting": {"node": "ok", "prompt": "Ship?", "choices": ["[Y] Yes", "[N] No"]}})
    >>> asked["kind"], asked["choices"]
    ('choice', ['[Y] Yes', '[N] No'])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from waygraph.model import Plan
from waygraph.model.record import RunKind
from waygraph.store import Store, StoredRecord

__all__ = ["ENDED", "KIND", "not_waiting", "pipeline_view", "pipeline_waiting", "stored_plan"]

#: The store kind of an executed pipeline's run.
KIND = RunKind.PIPELINE.value
#: Statuses a run ends with: its lease is released, nothing resumes it.
ENDED = frozenset({"completed", "failed"})


def stored_plan(store: Store, record: StoredRecord) -> Plan | None:
    """The plan a stored pipeline run follows (its latest, when a resume changed it)."""
    seq = record.data.get("plan_seq")
    events: Sequence[Any] = ()
    if isinstance(seq, int) and seq > 0:
        events = store.events(record.key, seq - 1, 1)
    if not events or "plan" not in events[0].data:
        events = [e for e in store.events(record.key) if "plan" in e.data][-1:]
    if not events:
        return None
    try:
        return Plan.model_validate(events[0].data["plan"])
    except ValidationError:
        return None


def not_waiting(run_id: str, data: Mapping[str, Any]) -> str:
    """Why an answer for pipeline run ``run_id`` (record ``data``) had nowhere to go.

    Example:
        >>> not_waiting("r1", {"status": "running", "current_node": "build"})
        "pipeline run 'r1' is not waiting for an answer: it is running node 'build'"
    """
    start = f"pipeline run {run_id!r} is not waiting for an answer"
    status, node = data.get("status"), data.get("current_node")
    if status in ("running", "paused"):
        return f"{start}: it is running node {node!r}"
    return f"{start}: it is {status}" + (f" (at node {node!r})" if node else "")


def pipeline_waiting(data: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a stored pipeline run asks a person, in the shape the dashboard's answer box takes.

    Example:
        >>> pipeline_waiting({"awaiting": "user", "status": "paused", "waiting": {
        ...     "node": "ok", "prompt": "Ship?", "choices": ["[Y] Yes"]}})["kind"]
        'choice'
    """
    waiting = data.get("waiting")
    if data.get("awaiting") != "user" or not isinstance(waiting, Mapping):
        return None
    if data.get("status") in ENDED:
        return None
    choices = [str(c) for c in waiting.get("choices") or ()]
    return {
        "node": waiting.get("node"),
        "kind": "choice" if choices else "question",
        "prompt": waiting.get("prompt"),
        "choices": choices,
        "value": None,
    }


def pipeline_view(store: Store, record: StoredRecord) -> tuple[Plan | None, dict[str, Any]]:
    """A stored pipeline run as its plan and a run-like state, to draw it.

    Finished nodes are done or failed by their outcome, the node the run
    is at (or waits on) is current, the path is the nodes in the order they
    finished. ``(None, data)`` when the record holds no plan.
    """
    data = dict(record.data)
    plan = stored_plan(store, record)
    if plan is None:
        return None, data
    status = str(record.status or data.get("status") or "running")
    path = [str(n) for n in data.get("path") or ()]
    current = data.get("current_node")
    if status not in ENDED and current is not None:
        path.append(str(current))  # the edge into the node it is at is followed too
    state = {
        "kind": KIND,
        # A run paused at a gate is at that node all the same: drawn as current.
        "status": "running" if status == "paused" else status,
        "current_node": current,
        "path": path,
        "visited": data.get("visited") or {},
    }
    return plan, state
