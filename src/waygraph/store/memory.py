"""``memory://``: records and events in dicts behind one lock.

Nothing survives the process. It is the store to use in tests of code that
takes a :class:`~waygraph.store.Store`: it behaves exactly like the durable
backends (same version checks, same Conflict, same copies, JSON-ready data
enforced), because it runs the same contract suite. Each ``open_store
("memory://")`` is a new, empty, private store.

It keeps Python values, never JSON text: a commit checks and copies its
data by the JSON encoder's rules (:func:`waygraph.store.values.held`: the
same values refused, tuples read back as lists, keys as strings), and a read
hands out a fresh copy (:func:`~waygraph.store.values.thawed`). What it keeps
is never changed in place, so rows share the events they have in common.

Example:
    >>> store = MemoryStore()
    >>> store.commit("run_1", {"n": 1}, 0, [{"type": "plan_activated"}], session="s1",
    ...              make_current=True)
    1
    >>> store.current("s1"), store.get("run_1").data
    ('run_1', {'n': 1})
"""

from __future__ import annotations

import builtins
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from waygraph.errors import StoreError
from waygraph.store.base import (
    Commit,
    MonotonicClock,
    Store,
    StoredEvent,
    StoredRecord,
    conflict,
    kind_matches,
    paging,
    read_record,
)
from waygraph.store.values import HeldSources, thawed

__all__ = ["MemoryStore"]


@dataclass(slots=True)
class _Row:
    # Data is a held value (checked and copied at commit, never changed after);
    # every read thaws a fresh copy, which is faster than parsing JSON text.
    kind: str
    data: dict[str, Any]
    version: int
    session: str | None
    status: str | None
    plan: str | None
    correlation_ids: tuple[str, ...]
    updated_at: float
    # What data's events and node states were held from, while the run goes
    # on: its next commit holds only what changed (None once it ended).
    sources: HeldSources | None = None

    def to_record(self, key: str) -> StoredRecord:
        return read_record(
            key,
            self.kind,
            thawed(self.data),
            self.version,
            self.session,
            self.status,
            self.plan,
            self.correlation_ids,
            self.updated_at,
        )


class MemoryStore(Store):
    """An in-process store; also the test double for anything that takes a Store.

    ``clock`` supplies ``updated_at`` (default :func:`time.time`).

    Example:
        >>> store = MemoryStore()
        >>> store.commit("k", {"a": 1}, 0, [])
        1
        >>> store.list()[0].key
        'k'
    """

    keeps_values = True

    def __init__(self, url: str = "memory://", *, clock: Callable[[], float] = time.time) -> None:
        self.url = url
        self._lock = threading.Lock()
        self._clock = MonotonicClock(clock)
        self._rows: dict[str, _Row] = {}
        self._events: dict[str, list[dict[str, Any]]] = {}
        self._pointers: dict[str, str] = {}
        # Keys by session and by correlation id, so a filtered list() reads
        # the records it returns, not every record (an event planner lists
        # by correlation id several times a plan; a scan made that O(stored)).
        self._by_session: dict[str, set[str]] = {}
        self._by_correlation: dict[str, set[str]] = {}
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"{self.url}: the store is closed")

    def get(self, key: str) -> StoredRecord | None:
        with self._lock:
            self._check_open()
            row = self._rows.get(key)
        return None if row is None else row.to_record(key)

    def _held_sources(self, key: Any) -> HeldSources | None:
        # Read without the lock: rows are replaced whole, and sources matched
        # by identity are right whichever version of the row they came from.
        row = self._rows.get(key) if type(key) is str else None
        return None if row is None else row.sources

    def _commit_all(self, commits: Sequence[Commit]) -> list[int]:
        with self._lock:
            self._check_open()
            # Every version is checked before anything changes: all or none.
            olds = [self._rows.get(c.key) for c in commits]
            for c, old in zip(commits, olds, strict=True):
                actual = None if old is None else old.version
                if (c.expected_version == 0 and old is not None) or (
                    c.expected_version != 0 and actual != c.expected_version
                ):
                    raise conflict(self.url, c.key, c.expected_version, actual)
            versions = []
            # A key appears once in a commit (commit_all checks): each old row is as read above.
            for c, old in zip(commits, olds, strict=True):
                version = c.expected_version + 1
                # Rows are replaced, never mutated: a reader holding the old row
                # (taken under the lock, parsed outside it) still sees one version.
                self._index(c.key, old, c.session, c.correlation_ids)
                self._rows[c.key] = _Row(
                    kind=c.kind,
                    data=c.data,
                    version=version,
                    session=c.session,
                    status=c.status,
                    plan=c.plan,
                    correlation_ids=c.correlation_ids,
                    updated_at=self._clock(),
                    # A finished run is rarely written again: its sources
                    # (the engine's own events) are not kept alive for it.
                    sources=c.held_sources if c.status == "running" else None,
                )
                if c.events:
                    self._events.setdefault(c.key, []).extend(c.events)
                if c.make_current and c.session is not None:
                    self._pointers[c.session] = c.key
                versions.append(version)
            return versions

    def _index(self, key: str, old: _Row | None, session: str | None, ids: tuple[str, ...]) -> None:
        """Keep the indexes of ``key`` right for its new session and correlation ids."""
        old_session = None if old is None else old.session
        if old_session != session:
            if old_session is not None:
                _drop(self._by_session, old_session, key)
            if session is not None:
                self._by_session.setdefault(session, set()).add(key)
        old_ids = () if old is None else old.correlation_ids
        if old_ids != ids:
            for cid in old_ids:
                _drop(self._by_correlation, cid, key)
            for cid in ids:
                self._by_correlation.setdefault(cid, set()).add(key)

    def list(
        self,
        *,
        kind: str | None = None,
        session: str | None = None,
        status: str | None = None,
        plan: str | None = None,
        correlation_id: str | None = None,
        limit: int | None = None,
    ) -> list[StoredRecord]:
        _, limit = paging(0, limit)
        with self._lock:
            self._check_open()
            if correlation_id is not None:
                keys: Iterable[str] = self._by_correlation.get(correlation_id, ())
            elif session is not None:
                keys = self._by_session.get(session, ())
            else:
                keys = self._rows
            rows = [
                (key, row)
                for key in keys
                if kind_matches(kind, (row := self._rows[key]).kind)
                and (session is None or row.session == session)
                and (status is None or row.status == status)
                and (plan is None or row.plan == plan)
                and (correlation_id is None or correlation_id in row.correlation_ids)
            ]
        rows.sort(key=lambda item: item[0])
        rows.sort(key=lambda item: item[1].updated_at, reverse=True)
        if limit is not None:
            rows = rows[:limit]
        return [row.to_record(key) for key, row in rows]

    def events(
        self, key: str, after_seq: int = 0, limit: int | None = None
    ) -> builtins.list[StoredEvent]:
        after_seq, limit = paging(after_seq, limit)
        start = max(after_seq, 0)
        with self._lock:
            self._check_open()
            kept = self._events.get(key, [])
            end = len(kept) if limit is None else min(len(kept), start + limit)
            chosen = kept[start:end]
        return [
            StoredEvent(key=key, seq=start + i + 1, data=thawed(e)) for i, e in enumerate(chosen)
        ]

    def current(self, session: str) -> str | None:
        with self._lock:
            self._check_open()
            return self._pointers.get(session)

    def clear_current(self, session: str) -> None:
        with self._lock:
            self._check_open()
            self._pointers.pop(session, None)

    def sessions(self) -> builtins.list[str]:
        with self._lock:
            self._check_open()
            names = set(self._pointers)
            names.update(self._by_session)
        return sorted(names)

    def close(self) -> None:
        with self._lock:
            self._closed = True


def _drop(index: dict[str, set[str]], name: str, key: str) -> None:
    keys = index.get(name)
    if keys is not None:
        keys.discard(key)
        if not keys:
            del index[name]
