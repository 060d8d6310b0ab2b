"""Reading a file store's event log: one JSON line per event, appended.

A record names how many bytes and events of its log are committed; what
lies past them (a write a crash cut short) is not read. A log shorter than
its record, a torn last line or a damaged line is logged and skipped, never
raised: the events that can be read are returned.

Example:
    >>> raw = b'{"seq": 1, "data": {"a": 1}}\\n{"seq": 2, "data": {}}\\n'
    >>> [e.seq for e in read_events(raw, "k", "log", committed=len(raw), count=2)]
    [1, 2]
"""

from __future__ import annotations

import logging

from waygraph.store.base import StoredEvent, decode

__all__ = ["read_events"]

logger = logging.getLogger("waygraph.store")


def read_events(
    raw: bytes,
    key: str,
    where: str,
    *,
    committed: int,
    count: int,
    after_seq: int = 0,
    limit: int | None = None,
) -> list[StoredEvent]:
    """The events of ``key`` in ``raw`` (the log's committed bytes, read from ``where``)."""
    if len(raw) < committed:
        logger.warning(
            "%s is %d bytes shorter than its record says; events were lost",
            where,
            committed - len(raw),
        )
    lines = raw.split(b"\n")
    tail = lines.pop()  # b"" when the committed bytes end on a whole line
    if tail:
        logger.warning("%s ends in a torn line (%d bytes); ignored it", where, len(tail))
    out: list[StoredEvent] = []
    for number, line in enumerate(lines, 1):
        try:
            item = decode(line)
            seq, data = item["seq"], item["data"]
            if not isinstance(seq, int) or not isinstance(data, dict):
                raise ValueError("needs an integer seq and an object data")
        except (ValueError, KeyError, TypeError) as exc:
            logger.warning("%s line %d is damaged (%s); skipped it", where, number, exc)
            continue
        if after_seq < seq <= count:
            out.append(StoredEvent(key=key, seq=seq, data=data))
            if limit is not None and len(out) >= limit:
                break
    return out
