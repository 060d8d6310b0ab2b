"""Session plans in the store: each plan.json write is also a run record of kind ``session``.

plan.json stays what the hooks read and write (document 001); with a store
(``SessionPlanner(workspace, store=URL)``) every write is mirrored as a run
record of the one schema every driver writes (``docs/stores.md``, "The run
record"), so a session plan shows in ``waygraph sessions list``/``show``/
``events`` and on the dashboard like any other run:

- key and ``plan``: the plan's id (``plan_<hex>``); ``run_id`` the same;
- ``current_node``: the running step (``step_<n>``), None when none runs;
- ``visited``: each step entered so far with its outcome and status;
- ``path``: the steps entered, in order; ``status``: the plan's status;
- ``total_nodes``/``completed_nodes``: steps declared and steps completed;
- the rest of plan.json as it is (``goal``, ``steps``, ``iteration_count``,
  ``awaiting`` and ``question`` while the model's question waits for the
  user, ...), so :func:`waygraph.sessions.to_plan` draws the record as it
  draws the file.

The events say what changed between two writes (:func:`changes`): the plan
started, steps declared, entered, completed, failed or reopened, the model
asked the user a question (``question_asked``, with an excerpt), the plan
paused, resumed, completed or failed. Each write restates the whole record
and its events are computed against the record last stored, so a write the
store missed (it was down) is made up by the next one.

Example:
    >>> before = {"id": "plan_1", "session_id": "s", "goal": "Tidy", "status": "running",
    ...           "current_step_index": 0, "steps": []}
    >>> after = dict(before, steps=[{"id": "step_1", "description": "List files",
    ...                              "status": "running"}])
    >>> record = to_record(after)
    >>> record["kind"], record["current_node"], record["path"]
    ('session', 'step_1', ['step_1'])
    >>> [e["type"] for e in changes(to_record(before), record)]
    ['step_declared', 'node_entered']
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from waygraph.engine.session_plan_text import detect_language
from waygraph.errors import StoreError
from waygraph.model import node_outcome
from waygraph.model.record import CORE_FIELDS, RunKind, RunRecord
from waygraph.sessions import _render
from waygraph.sessions._graph import declared_steps
from waygraph.store import Store
from waygraph.store.retry import retry_conflicts

__all__ = ["KIND", "SessionRecords", "changes", "context", "to_record"]

#: The store kind of a session plan's record.
KIND = RunKind.SESSION.value

log = logging.getLogger("waygraph.sessions")

#: A step's status -> the event its arrival at that status is told by.
_STEP_EVENT = {"running": "node_entered", "completed": "step_completed", "failed": "step_failed"}
_PLAN_EVENT = {
    "paused": "plan_paused",
    "completed": "plan_completed",
    "failed": "plan_failed",
}
#: How much of a step's result an event carries (the record has it whole).
_RESULT_CHARS = 200


def to_record(plan: Mapping[str, Any]) -> dict[str, Any]:
    """plan.json as a run record of kind ``session`` (see the module docstring)."""
    return session_record(plan).to_dict()


def session_record(plan: Mapping[str, Any]) -> RunRecord:
    """plan.json as the one :class:`~waygraph.model.record.RunRecord` of every kind."""
    ids, steps = declared_steps(plan)
    current = next(
        (i for i, s in zip(ids, steps, strict=True) if s.get("status") == "running"), None
    )
    entered = [(i, s) for i, s in zip(ids, steps, strict=True) if s.get("status") != "pending"]
    return RunRecord(
        kind=RunKind.SESSION,
        run_id=str(plan.get("id")),
        plan=str(plan.get("id")),
        status=str(plan.get("status", "running")),
        current_node=current,
        visited={
            i: {"outcome": node_outcome(str(s.get("status"))), "status": s.get("status")}
            for i, s in entered
        },
        path=[i for i, _ in entered],
        # The progress the dashboard shows of every run: steps done of steps declared.
        total_nodes=len(steps),
        completed_nodes=sum(1 for s in steps if s.get("status") == "completed"),
        details={k: v for k, v in plan.items() if k not in CORE_FIELDS},
    )


def context(record: Mapping[str, Any]) -> str | None:
    """The plan block the model is given now, in the goal's language (None once finished)."""
    language = detect_language(str(record.get("goal") or "")) or "en"
    return _render.context_block(dict(record), language)


def changes(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The events that tell how ``before`` (a stored record, None: none) became ``after``."""
    # One write can declare steps, finish one and start the next: told in that order.
    declared: list[dict[str, Any]] = []
    settled: list[dict[str, Any]] = []
    entered: list[dict[str, Any]] = []
    if before is None or before.get("id") != after.get("id"):
        declared.append({"type": "session_plan_started", "goal": after.get("goal")})
        before = {}
    old = dict(zip(*declared_steps(before), strict=True))
    for node, step in zip(*declared_steps(after), strict=True):
        status = step.get("status")
        was = old.get(node)
        if was is None:
            declared.append(
                {"type": "step_declared", "node": node, "description": step.get("description")}
            )
        was_status = was.get("status") if was is not None else "pending"
        if status == was_status:
            continue
        if was_status in ("completed", "failed") and status in ("running", "pending"):
            settled.append({"type": "step_reopened", "node": node})
        kind = _STEP_EVENT.get(str(status))
        if kind == "node_entered":
            entered.append({"type": kind, "node": node})
        elif kind is not None:
            event: dict[str, Any] = {"type": kind, "node": node}
            result = step.get("result")
            if isinstance(result, str) and result:
                event["result"] = result[:_RESULT_CHARS]
            if step.get("completed_by"):
                event["completed_by"] = step.get("completed_by")
            settled.append(event)
    ordered = declared + settled + entered
    asked = after.get("awaiting") == "user" and (
        before.get("awaiting") != "user" or before.get("question") != after.get("question")
    )
    if asked:
        where = after.get("current_node") or (after.get("path") or [None])[-1]
        question = after.get("question")
        ordered.append(
            {
                "type": "question_asked",
                "node": where,
                "excerpt": question[:_RESULT_CHARS] if isinstance(question, str) else None,
            }
        )
    status = after.get("status")
    if status != before.get("status", "running"):
        where = after.get("current_node") or (after.get("path") or [None])[-1]
        if status == "running" and before.get("status") == "paused":
            ordered.append({"type": "plan_resumed", "node": where})
        elif status in _PLAN_EVENT:
            event = {"type": _PLAN_EVENT[str(status)], "node": where}
            if status == "failed" and after.get("failure_reason"):
                event["reason"] = after.get("failure_reason")
            ordered.append(event)
    return ordered


class SessionRecords:
    """Mirrors session plans into a store (see the module docstring).

    A store that fails is logged on ``waygraph.sessions`` and skipped: the
    host agent goes on with its plan.json, and the next write restates the
    record. ``remember``: how many plans' last stored records are kept in
    memory (the oldest forgotten first; a forgotten one is read back).
    """

    def __init__(self, store: Store, remember: int) -> None:
        self.store = store
        self._remember = remember
        self._last: OrderedDict[str, tuple[int, dict[str, Any]]] = OrderedDict()

    def write(self, plan: Mapping[str, Any]) -> None:
        """Commit ``plan`` (a plan.json) as its record, with the events since the last one."""
        key = str(plan.get("id") or "")
        if not key:
            return
        record = to_record(plan)
        try:
            retry_conflicts(
                lambda: self._commit(key, record),
                what=f"session plan {key!r}",
                forget=lambda: self._forget(key),
            )
        except (StoreError, OSError, TypeError, ValueError) as exc:
            # The plan file holds the truth; the store catches up on the next write.
            self._forget(key)
            log.warning("session plan %s was not stored in %s: %s", key, self.store.url, exc)

    def _forget(self, key: str) -> None:
        # Another writer or a failed write: the stored record is read again next time.
        self._last.pop(key, None)

    def _commit(self, key: str, record: dict[str, Any]) -> None:
        before: Mapping[str, Any] | None
        if key in self._last:
            version, before = self._last[key]
        else:
            stored = self.store.get(key)
            version, before = (stored.version, stored.data) if stored is not None else (0, None)
        events = changes(before, record)
        new_version = self.store.commit(
            key,
            record,
            version,
            events,
            kind=KIND,
            session=str(record.get("session_id") or "") or None,
            status=str(record.get("status") or "") or None,
            plan=key,
        )
        self._last[key] = (new_version, record)
        self._last.move_to_end(key)
        while len(self._last) > self._remember:
            self._last.popitem(last=False)
