"""How large an event may be: the bus's limit, and each event's size against it.

NATS refuses a message larger than the server's ``max_payload`` (1 MiB by
default); it counts the headers too, so an event's CloudEvents JSON may take
the limit less :data:`HEADER_ROOM`. :attr:`Bus.max_payload` is that number
(None: no limit). The in-process bus keeps the same limit as a NATS server
with its default, so what works in process fits NATS too.

Example:
    >>> size_of({"id": "1", "data": {"text": "é"}})
    31
    >>> check_size(b"x" * 10, limit=5, what="event e1 (job.requested)")
    Traceback (most recent call last):
    ...
    waygraph.errors.PayloadTooLargeError: event e1 (job.requested) is 10 bytes; \
the bus carries at most 5
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from waygraph.errors import PayloadTooLargeError

__all__ = ["DEFAULT_MAX_PAYLOAD", "HEADER_ROOM", "bus_limit", "check_size", "size_of"]

#: Bytes kept for the headers waygraph sends with an event over NATS
#: (``Nats-Msg-Id``, ``Content-Type``, ``Nats-Expected-Stream``: about 150).
HEADER_ROOM = 512
#: The in-process bus's limit: a NATS server's default ``max_payload`` (1 MiB) less the room.
DEFAULT_MAX_PAYLOAD = 1024 * 1024 - HEADER_ROOM


def size_of(wire: Mapping[str, Any]) -> int:
    """Bytes of ``wire`` (an event in the CloudEvents JSON format) as the bus sends it."""
    text = json.dumps(wire, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    if text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def bus_limit(bus: Any) -> int | None:
    """The largest event ``bus`` carries, in bytes (None: no limit, or not known yet)."""
    limit = getattr(bus, "max_payload", None)
    return limit if isinstance(limit, int) and limit > 0 else None


def check_size(
    payload: bytes, *, limit: int | None, what: str, event_type: str | None = None
) -> None:
    """Raise :class:`~waygraph.errors.PayloadTooLargeError` when ``payload`` is over ``limit``."""
    if limit is not None and len(payload) > limit:
        raise PayloadTooLargeError(what, size=len(payload), limit=limit, event_type=event_type)
