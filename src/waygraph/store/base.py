"""The store interface every backend implements, and the helpers they share.

A store keeps *records* (JSON-ready dicts under a key, with a version and a
few index columns) and, per key, an append-only list of *events* numbered
1, 2, 3, ... . One :meth:`Store.commit` writes a record, its index columns,
its new events and optionally the session's current-key pointer in one atomic
step, after checking the version the caller read. See ``docs/stores.md``.

Example:
    >>> from waygraph.store import open_store
    >>> store = open_store("memory://")
    >>> store.commit("run_1", {"status": "running"}, 0, [{"type": "plan_activated"}],
    ...              session="s1", status="running", make_current=True)
    1
    >>> store.get("run_1").version, store.current("s1")
    (1, 'run_1')
"""

from __future__ import annotations

import builtins
import json
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, ClassVar, Self
from urllib.parse import urlsplit, urlunsplit

from waygraph.errors import Conflict
from waygraph.model.record import LEGACY_KINDS, RunKind, kind_names, migrate

# A commit's checked arguments live in their own module; here for the Store and old imports.
from waygraph.store._commits import Commit, normalise_commit
from waygraph.store.rows import RowPage, check_rows, rows_by_listing
from waygraph.store.stats import Tallies, scan_tallies
from waygraph.store.values import HeldSources, encode

__all__ = [
    "MAX_SEQ",
    "Commit",
    "MonotonicClock",
    "Store",
    "StoredEvent",
    "StoredRecord",
    "Write",
    "check_limit",
    "conflict",
    "decode",
    "encode",
    "kind_matches",
    "normalise_commit",
    "paging",
    "read_record",
    "redact_url",
]


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """One record as the store holds it.

    ``data`` is a fresh copy on every read: changing it never changes the
    store. ``updated_at`` is the store's clock (epoch seconds) at the commit.

    Example:
        >>> rec = StoredRecord(key="run_1", kind="guided", data={"n": 1}, version=1)
        >>> rec.correlation_ids
        ()
    """

    key: str
    kind: str
    data: dict[str, Any]
    version: int
    session: str | None = None
    status: str | None = None
    plan: str | None = None
    correlation_ids: tuple[str, ...] = ()
    updated_at: float = 0.0


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One event of a key; ``seq`` counts from 1 per key.

    Example:
        >>> StoredEvent(key="run_1", seq=1, data={"type": "plan_activated"}).seq
        1
    """

    key: str
    seq: int
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Write:
    """One record's part of :meth:`Store.commit_all`: the arguments of :meth:`Store.commit`.

    Example:
        >>> Write("run_2", {"status": "running"}, 0, [{"type": "plan_activated"}]).kind
        'guided'
    """

    key: str
    record: Mapping[str, Any]
    expected_version: int
    events: Sequence[Mapping[str, Any]] = ()
    kind: str = RunKind.GUIDED.value
    session: str | None = None
    status: str | None = None
    plan: str | None = None
    correlation_ids: Sequence[str] = ()
    make_current: bool = False


class Store(ABC):
    """Durable records and their events. Every backend is thread-safe.

    Subclasses implement the abstract methods; :func:`normalise_commit`,
    :func:`encode` and :func:`decode` keep argument checking and JSON handling
    identical across backends. ``tests/store_contract.py`` is the suite a new
    backend must pass.

    Example:
        >>> from waygraph.store import open_store
        >>> with open_store("memory://") as store:
        ...     store.commit("k", {"a": 1}, 0, [])
        ...     store.commit("k", {"a": 2}, 1, [{"type": "changed"}])
        ...     [e.seq for e in store.events("k")]
        1
        2
        [1]
    """

    #: The URL the store was opened with; any password is replaced by ``***``
    #: so the URL can be shown in logs and command output.
    url: str

    #: True for a store that keeps Python values (``memory://``): its commits
    #: carry checked copies (:func:`waygraph.store.values.held`) instead of JSON text.
    keeps_values: ClassVar[bool] = False

    @abstractmethod
    def get(self, key: str) -> StoredRecord | None:
        """The record stored under ``key``, or None."""

    def commit(
        self,
        key: str,
        record: dict[str, Any],
        expected_version: int,
        new_events: Sequence[dict[str, Any]],
        *,
        kind: str = RunKind.GUIDED.value,
        session: str | None = None,
        status: str | None = None,
        plan: str | None = None,
        correlation_ids: Sequence[str] = (),
        make_current: bool = False,
    ) -> int:
        """Write ``record`` and append ``new_events`` atomically; return the new version.

        ``expected_version`` 0 creates the record (:class:`Conflict` if the key
        exists); any other value must equal the stored version (:class:`Conflict`
        if it does not, or if the key is missing). The index columns (``kind``,
        ``session``, ``status``, ``plan``, ``correlation_ids``) are replaced by
        the values given, so every commit states them in full. With
        ``make_current`` and a ``session``, the session's current key becomes
        ``key`` in the same transaction; without a session it does nothing.
        """
        commit = normalise_commit(
            key,
            record,
            expected_version,
            new_events,
            kind=kind,
            session=session,
            status=status,
            plan=plan,
            correlation_ids=correlation_ids,
            make_current=make_current,
            as_values=self.keeps_values,
            last=self._held_sources(key) if self.keeps_values else None,
        )
        return self._commit_all((commit,))[0]

    def commit_all(self, writes: Sequence[Write]) -> list[int]:
        """Commit several records in one atomic step; return their new versions in order.

        Each :class:`Write` is checked as :meth:`commit` checks its arguments.
        Either every write lands (records, events, pointers) or none does: a
        version conflict on any of them raises :class:`Conflict` and writes
        nothing. A key may appear once.

        Example:
            >>> from waygraph.store import open_store
            >>> store = open_store("memory://")
            >>> store.commit_all([Write("a", {}, 0), Write("b", {}, 0, session="s",
            ...                   make_current=True)])
            [1, 1]
        """
        commits = self._normalise_all(writes)
        return self._commit_all(commits) if commits else []

    def _normalise_all(self, writes: Sequence[Write]) -> tuple[Commit, ...]:
        """``writes`` checked and encoded (:func:`normalise_commit`), each key once."""
        commits = tuple(
            normalise_commit(
                w.key,
                w.record,
                w.expected_version,
                w.events,
                kind=w.kind,
                session=w.session,
                status=w.status,
                plan=w.plan,
                correlation_ids=w.correlation_ids,
                make_current=w.make_current,
                as_values=self.keeps_values,
                last=self._held_sources(w.key) if self.keeps_values else None,
            )
            for w in writes
        )
        keys = [c.key for c in commits]
        if len(set(keys)) != len(keys):
            raise ValueError(f"commit_all writes each key once (got {keys})")
        return commits

    def _held_sources(self, key: Any) -> HeldSources | None:
        """A ``keeps_values`` store: what the record now under ``key`` was held from, or None."""
        return None

    @abstractmethod
    def _commit_all(self, commits: Sequence[Commit]) -> list[int]:
        """Apply commits :func:`normalise_commit` checked and encoded, all or none.

        Every backend implements only this: argument checking and JSON
        encoding (or, with ``keeps_values``, checked copying) happen once, in
        :meth:`commit`/:meth:`commit_all`, before any lock is taken. Returns
        each record's new version, in order.
        """

    @abstractmethod
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
        """Records matching every filter given, most recently updated first.

        Records committed at the same clock reading come in key order.
        """

    def session_rows(
        self,
        *,
        kind: str | None = None,
        status: str | None = None,
        plan: str | None = None,
        search: str | None = None,
        exclude_kinds: Sequence[str] = (),
        offset: int = 0,
        limit: int = 50,
        count: bool = True,
    ) -> RowPage:
        """A page of the sessions table: each session's latest record per kind, newest first.

        Records without a session are rows of their own. ``status``/``plan``
        /``kind`` must equal the row's column; ``search`` is found in its
        session, plan or status, ignoring case. ``count=False`` skips the
        total and the counts per status, which read every row. See
        :mod:`waygraph.store.rows`; the SQL stores answer with indexed
        queries, this default lists all.
        """
        check_rows(offset, limit)
        return rows_by_listing(
            self,
            kind=kind,
            status=status,
            plan=plan,
            search=search,
            exclude_kinds=exclude_kinds,
            offset=offset,
            limit=limit,
            count=count,
        )

    def run_tallies(
        self, *, plan: str | None = None, since_minute: int | None = None, step: int = 60
    ) -> Tallies:
        """The summed facts of the guided runs finished from ``since_minute`` on (all: None).

        ``plan`` keeps one plan's runs; ``step``: 60 sums runs per hour (and
        per minute in the hour the period starts in), 1 per minute. Read by
        :func:`waygraph.learning.stats.plan_stats`; see :mod:`waygraph.store.stats`.
        This default reads every guided run and its events; the SQL stores
        answer from counters kept at each run's finishing commit.

        Example:
            >>> from waygraph.store import open_store
            >>> open_store("memory://").run_tallies().runs
            {}
        """
        return scan_tallies(self, plan=plan, since_minute=since_minute, step=step)

    # builtins.list: from here on `list` in the class body is the list() method above.
    @abstractmethod
    def events(
        self, key: str, after_seq: int = 0, limit: int | None = None
    ) -> builtins.list[StoredEvent]:
        """Events of ``key`` with ``seq > after_seq``, in ``seq`` order, at most ``limit``."""

    @abstractmethod
    def current(self, session: str) -> str | None:
        """The key a session currently points to, or None."""

    @abstractmethod
    def clear_current(self, session: str) -> None:
        """Drop the session's pointer; its records stay for inspection."""

    @abstractmethod
    def sessions(self) -> builtins.list[str]:
        """Every session with a current pointer or any record, sorted."""

    @abstractmethod
    def close(self) -> None:
        """Release files, connections and locks. Closing twice is harmless."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"


class MonotonicClock:
    """Wall-clock seconds that never repeat or go back within one store.

    ``list`` orders by ``updated_at``; two commits in the same clock tick, or
    a clock stepped back by NTP, would otherwise reorder them. Call it under
    the store's lock.
    """

    def __init__(self, source: Callable[[], float] = time.time) -> None:
        self._source = source
        self._last = 0.0

    def __call__(self) -> float:
        now = self._source()
        if now <= self._last:
            now = math.nextafter(self._last, math.inf)
        self._last = now
        return now


def decode(text: str | bytes) -> Any:
    """Parse JSON text written by :func:`encode`."""
    return json.loads(text)


def conflict(url: str, key: str, expected: int, actual: int | None) -> Conflict:
    """The Conflict for a version check that failed, saying what to do."""
    if expected == 0:
        return Conflict(
            f"{url}: key {key!r} already exists at version {actual}; "
            "expected_version=0 only creates new records (get it and pass its version)"
        )
    if actual is None:
        return Conflict(
            f"{url}: key {key!r} does not exist, so version {expected} cannot be updated; "
            "create it with expected_version=0"
        )
    return Conflict(
        f"{url}: key {key!r} is at version {actual}, not {expected}: "
        "another writer committed first; reload it and apply the change again"
    )


#: Stored kinds whose data :func:`read_record` migrates (the others are current).
_MIGRATED = frozenset({*LEGACY_KINDS, *(k.value for k in RunKind)})


def read_record(
    key: str,
    kind: str,
    data: dict[str, Any],
    version: int,
    session: str | None,
    status: str | None,
    plan: str | None,
    correlation_ids: tuple[str, ...],
    updated_at: float,
) -> StoredRecord:
    """The :class:`StoredRecord` of a stored row, in the current record schema.

    Every backend builds its records here, so a record written before the one
    run-record schema (:mod:`waygraph.model.record`) reads as a current one:
    its kind renamed, its data completed, an event run's ``plan`` column its
    plan id instead of its planner's name.

    Example:
        >>> old = {"plan_id": "p1", "planner": "a", "current_state": "start"}
        >>> rec = read_record("p1", "plan_context", old, 1, None, "running", "a", (), 0.0)
        >>> rec.kind, rec.plan, rec.data["planner"]
        ('event', 'p1', 'a')
    """
    if kind in _MIGRATED:
        stored_kind = kind
        kind, data = migrate(kind, data)
        if stored_kind != kind and kind == RunKind.EVENT:
            plan = data.get("plan", plan)
    return StoredRecord(
        key, kind, data, version, session, status, plan, correlation_ids, updated_at
    )


def kind_matches(wanted: str | None, kind: str) -> bool:
    """Whether a stored ``kind`` passes a ``kind=wanted`` filter (old names included).

    Example:
        >>> kind_matches("guided", "run"), kind_matches("dag", "run"), kind_matches(None, "x")
        (True, False, True)
    """
    return wanted is None or kind in kind_names(wanted)


def check_limit(limit: int | None) -> None:
    """Refuse a negative ``limit`` (None means no limit)."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
        raise TypeError(f"limit must be an int or None (got {limit!r})")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be 0 or more, or None (got {limit})")


#: The largest event number and limit a store takes (SQL's BIGINT); beyond it,
#: ``after_seq`` finds nothing and ``limit`` is no limit, on every backend.
MAX_SEQ = 2**63 - 1


def paging(after_seq: int, limit: int | None) -> tuple[int, int | None]:
    """``after_seq`` and ``limit`` as every store applies them.

    A negative ``after_seq`` reads from the first event; one past
    :data:`MAX_SEQ` finds nothing; a ``limit`` past it means no limit.

    Example:
        >>> paging(-5, None), paging(2**64, 2**64)
        ((0, None), (9223372036854775807, None))
    """
    if isinstance(after_seq, bool) or not isinstance(after_seq, int):
        raise TypeError(f"after_seq must be an int (got {after_seq!r})")
    check_limit(limit)
    after = min(max(after_seq, 0), MAX_SEQ)
    return after, (None if limit is not None and limit > MAX_SEQ else limit)


def redact_url(url: str) -> str:
    """``url`` with any password replaced by ``***``.

    Example:
        >>> redact_url("postgresql://app:s3cret@db:5432/runs")
        'postgresql://app:***@db:5432/runs'
    """
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))
