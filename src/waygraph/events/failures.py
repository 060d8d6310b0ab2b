"""Errors while handling a goal: permanent ones answer the goal, transient ones are retried.

A goal whose handling fails in a way that would fail the same way on every
redelivery (a state machine that does not validate, a handler that is not
there, goal data the handler refuses) is answered at once on its
``response_event`` with ``status: failed`` and an ``error`` object, and
acknowledged. Anything else goes back to the bus, which redelivers the goal.

Permanent: :class:`PermanentError` (raise it from a handler to say so),
``ValueError`` (which covers waygraph's ``StateMachineError``,
``PlanFormatError``, ``ConfigError``, ``InputError``, ``EventFormatError``
and pydantic's ``ValidationError``), ``TypeError``, ``LookupError``
(``KeyError``, ``IndexError``, ``PlanContextNotFoundError``),
``AttributeError``, ``NameError`` and ``NotImplementedError``.
Transient: :class:`TransientError` and ``StoreError`` (``Conflict``, a store
past its deadline; even when also one of the above) and everything else:
``OSError`` and ``TimeoutError`` (connections, the bus,
``EventTimeoutError``), model errors (``LLMError``), ``RuntimeError``.
A message larger than the bus carries (``PayloadTooLargeError``, an
``EventFormatError``) is permanent; its ``error`` object has its ``size``
and the ``limit``.

Example:
    >>> is_permanent(KeyError("topic")), is_permanent(ConnectionError("reset"))
    (True, False)
    >>> error_payload(PermanentError("no such customer"))
    {'type': 'PermanentError', 'message': 'no such customer'}
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from waygraph.errors import (
    Conflict,
    PayloadTooLargeError,
    PermanentError,
    PlanFormatError,
    PlannerSetupError,
    StateMachineError,
    StoreError,
    TransientError,
)

if TYPE_CHECKING:
    from waygraph.events._planner_context import PlannerContext
    from waygraph.events.envelope import Envelope

__all__ = [
    "PermanentError",
    "PlannerSetupError",
    "TransientError",
    "answer_goal_failed",
    "error_payload",
    "is_permanent",
]

log = logging.getLogger("waygraph.events")

#: Errors that fail the same way on every redelivery (see the module doc).
PERMANENT: tuple[type[BaseException], ...] = (
    ValueError,
    TypeError,
    LookupError,
    AttributeError,
    NameError,
    NotImplementedError,
)


def is_permanent(exc: BaseException) -> bool:
    """True when ``exc`` would fail the same way on every redelivery (see the module doc)."""
    # A store that failed or stopped answering (StoreError, Conflict among them)
    # may answer on the next delivery, whatever else the error says it is.
    if isinstance(exc, TransientError | StoreError):
        return False
    return isinstance(exc, (PermanentError, *PERMANENT))


def error_payload(exc: BaseException) -> dict[str, Any]:
    """The ``error`` object of a failed answer: ``type``, ``message``, and ``state``/``field``
    when the error names them."""
    payload: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, StateMachineError) and exc.state is not None:
        payload["state"] = exc.state
    if isinstance(exc, PlanFormatError) and exc.field is not None:
        payload["field"] = exc.field
    if isinstance(exc, PayloadTooLargeError):
        payload.update(size=exc.size, limit=exc.limit)
    return payload


async def answer_goal_failed(context: PlannerContext, goal: Envelope, exc: BaseException) -> bool:
    """Answer ``goal`` with ``status: failed`` and ``exc`` as its ``error``, exactly once.

    The answer goes through a plan's outbox like every other answer: the
    goal's plan when its handler made one (finalized as failed), else a
    plan record made for the goal in the same commit as the answer, so a
    goal delivered again finds it answered. True when this call answered.
    """
    from waygraph.events import _plan_changes, _plan_outbox, _plan_records
    from waygraph.events._planner_context import plan_id_for
    from waygraph.events.context import PlanContext

    error = error_payload(exc)
    plan_id = plan_id_for(goal)
    record = await context.call(context.store.get, plan_id)
    if record is not None:
        plan = _plan_records.from_record(PlanContext, record, context)
        return await plan.finalize(None, status="failed", error=error)
    plan = _plan_records.new_plan(PlanContext, goal, None, context, plan_id=plan_id)
    finish = _plan_changes.finishing(
        None, "failed", await _plan_changes.parent_correlation(plan), error
    )
    moved = finish(plan)
    assert moved is not None  # a plan made just now is not finished
    change = _plan_changes.Change.of(moved)
    created = {"type": "plan_created", "goal_id": goal.id}
    try:
        await _plan_records.commit(plan, 0, [created, *change.events], moved.run, change.outbox)
    except Conflict:  # another delivery got there first: answer through its plan, once
        record = await context.call(context.store.get, plan_id)
        if record is None:
            raise
        stored = _plan_records.from_record(PlanContext, record, context)
        return await stored.finalize(None, status="failed", error=error)
    await _plan_outbox.publish_and_mark(plan, change.outbox)
    return True
