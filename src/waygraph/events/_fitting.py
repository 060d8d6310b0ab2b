"""Every message a plan sends fits the bus, or the plan says why: checked before the commit.

A change's outbox entries are measured against the bus's limit
(:attr:`Bus.max_payload`) before the change is committed:

- the goal's answer that is too large (its result carries too much) is
  replaced by a failed answer whose ``error`` names the limit and the size
  (``{"type": "PayloadTooLargeError", "message", "size", "limit"}``); the plan
  is stored ``failed`` with that error and its full ``result``, so the caller's
  ``ask`` hears back and nothing is lost;
- any other message (a request whose data a template filled from large
  results) raises :class:`~waygraph.errors.PayloadTooLargeError`, a permanent
  error: the plan fails and answers its goal with it, as a template with no
  value does.

Example:
    >>> from waygraph.engine.event_run import EventRun
    >>> fit(None, Moved(EventRun("done")), [{"envelope": {"id": "e1"}}], limit=1000) is None
    True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from waygraph.engine import events as engine
from waygraph.engine.event_run import EventPlan, Moved, derived_id, evolve
from waygraph.errors import PayloadTooLargeError
from waygraph.events._payload import size_of
from waygraph.events.envelope import Envelope
from waygraph.model import RunStatus

__all__ = ["failed_answer", "fit", "too_large"]

_FINISHED_EVENTS = frozenset({"plan_completed", "plan_failed"})


def too_large(exc: PayloadTooLargeError) -> dict[str, Any]:
    """The ``error`` object of a plan that failed on a message the bus cannot carry."""
    return {
        "type": type(exc).__name__,
        "message": str(exc),
        "size": exc.size,
        "limit": exc.limit,
    }


def _answer_error(exc: PayloadTooLargeError) -> dict[str, Any]:
    error = too_large(exc)
    error["message"] += "; the full result is kept with the plan in the store"
    return error


def fit(
    plan: EventPlan | None,
    moved: Moved,
    entries: Sequence[Mapping[str, Any]],
    *,
    limit: int | None,
    refit: bool = True,
) -> Moved | None:
    """None when every outbox entry of ``moved`` (``entries``, in the wire form) fits
    ``limit`` bytes; ``moved`` with a failed answer in place of an answer that does not
    (with ``refit``); PayloadTooLargeError for any other entry that does not."""
    if limit is None or plan is None:
        return None
    answer_id = derived_id(plan.plan_id, "response")
    for entry in entries:
        wire = entry["envelope"]
        size = size_of(wire)
        if size <= limit:
            continue
        kind = wire.get("type")
        if entry["id"] == answer_id and refit:
            what = f"plan {plan.plan_id!r}: the answer to its goal ({kind})"
            error = PayloadTooLargeError(what, size=size, limit=limit, event_type=kind)
            return _answer_failed(plan, moved, wire, _answer_error(error))
        raise PayloadTooLargeError(
            f"plan {plan.plan_id!r}, state {moved.run.current_state!r}: the {kind} event",
            size=size,
            limit=limit,
            event_type=kind,
        )
    return None


def failed_answer(plan_id: str, envelope: Envelope, exc: PayloadTooLargeError) -> Envelope | None:
    """The failed answer to send in place of ``envelope`` when it is ``plan_id``'s answer
    to its goal and the bus refused it as too large (None for any other event)."""
    if envelope.id != derived_id(plan_id, "response"):
        return None
    error = _answer_error(exc)
    data = {"plan_id": plan_id, "status": "failed", "result": None, "error": error}
    return envelope.model_copy(update={"data": data})


def _answer_failed(
    plan: EventPlan, moved: Moved, answer: Mapping[str, Any], error: dict[str, Any]
) -> Moved:
    """``moved`` finishing ``failed`` with ``error`` instead of its answer; the full
    result stays in the run (``result`` and ``results["final"]``)."""
    run = moved.run
    full = run.result
    if run.error is not None:
        error["cause"] = dict(run.error)  # why the plan failed, kept with the answer's error
    before = evolve(
        run,
        status=RunStatus.RUNNING,
        results=MappingProxyType({k: v for k, v in run.results.items() if k != "final"}),
        result=None,
        error=None,
    )
    failed = engine.finish(
        plan,
        before,
        None,
        status="failed",
        parent_correlation=answer.get("correlationid"),
        error=error,
    )
    assert failed is not None  # a running run always finishes
    kept = evolve(
        failed.run,
        result=full,
        results=MappingProxyType({**failed.run.results, "final": full}),
    )
    dropped = {answer.get("id"), *(derived_id(plan.plan_id, f"plan.{s}") for s in _STATUSES)}
    events = tuple(e for e in moved.events if e.get("type") not in _FINISHED_EVENTS)
    messages = tuple(m for m in moved.messages if m.envelope.get("id") not in dropped)
    return Moved(kept, events + failed.events, messages + failed.messages)


_STATUSES = ("completed", "failed")
