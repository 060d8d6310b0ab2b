"""One log record per event a planner or worker handled, for ``waygraph worker -v``.

Records go to the ``waygraph.events.activity`` logger at INFO, with the
fields as attributes (``who``, ``event_type``, ``event_id``,
``correlation_id``, ``goal_id``, ``outcome``), so any logging setup can show
or collect them; the CLI's ``-v`` prints them with :func:`format_line`.

Example:
    >>> from waygraph.events import Envelope
    >>> event = Envelope(id="e1", source="s", type="job.requested", correlation_id="c1")
    >>> record = logging.makeLogRecord(fields("worker w", event, "completed"))
    >>> format_line(record)[13:]
    'worker w  job.requested  corr=c1  completed'
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from waygraph.events.envelope import Envelope

__all__ = ["LOGGER", "describe", "fields", "format_line", "handled"]

#: The logger the records go to.
LOGGER = logging.getLogger("waygraph.events.activity")


def describe(exc: BaseException) -> str:
    """``Type: message`` on one line."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def fields(who: str, event: Envelope, outcome: str) -> dict[str, Any]:
    """The attributes of one record (also its ``msg``)."""
    return {
        "msg": "%s handled %s (%s): %s",
        "args": (who, event.type, event.id, outcome),
        "levelno": logging.INFO,
        "levelname": "INFO",
        "who": who,
        "event_type": event.type,
        "event_id": event.id,
        "correlation_id": event.correlation_id,
        "goal_id": event.goal_id,
        "outcome": outcome,
    }


def handled(who: str, event: Envelope, outcome: str) -> None:
    """Record that ``who`` (``planner NAME`` or ``worker NAME``; a bare name is a planner's)
    handled ``event`` with ``outcome``."""
    if not LOGGER.isEnabledFor(logging.INFO):
        return
    if " " not in who:
        who = f"planner {who}"
    data = fields(who, event, outcome)
    extra = {k: v for k, v in data.items() if k not in ("msg", "args", "levelno", "levelname")}
    LOGGER.info(data["msg"], *data["args"], extra=extra)


def format_line(record: logging.LogRecord) -> str:
    """``HH:MM:SS.mmm who  event type  corr=... [goal=...]  outcome``: one line per event."""
    stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
    stamp += f".{int(record.msecs):03d}"
    parts = [stamp, getattr(record, "who", "?"), "", getattr(record, "event_type", "?")]
    ids = f"corr={getattr(record, 'correlation_id', None) or '-'}"
    goal = getattr(record, "goal_id", None)
    if goal:
        ids += f" goal={goal}"
    return " ".join(parts) + f"  {ids}  {getattr(record, 'outcome', record.getMessage())}"
