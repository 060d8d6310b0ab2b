"""``sqlite:///PATH``: the embedded default store.

One SQLite file in WAL mode holds every record and event; any number of
threads and processes may share it. Each commit is exactly one ``BEGIN
IMMEDIATE`` transaction, so the record, its index rows, its events and the
session pointer land together or not at all.

Durability (``?synchronous=``):

- ``normal`` (default): safe against the process dying at any instant
  (SIGKILL, crash, OOM); a power cut or kernel crash may lose the last few
  commits, never corrupting the file. No fsync per commit, so it is fast.
- ``full``: the WAL is fsynced at every commit, so a commit that returned
  survives power loss too, at the price of one fsync.

A file that cannot be written (a read-only mount, no write permission) or a
URL with ``?mode=ro`` opens read-only (``store._sqlite_readonly``): every
read works, and a write raises one :class:`StoreError` saying it is read-only.

Example:
    >>> store = SQLiteStore(":memory:")
    >>> store.commit("run_1", {"n": 1}, 0, [{"type": "plan_activated"}])
    1
    >>> [e.data["type"] for e in store.events("run_1")]
    ['plan_activated']
"""

from __future__ import annotations

import builtins
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from waygraph.errors import ConfigError, StoreError
from waygraph.store._checkpoint import Checkpointer
from waygraph.store._counts_sql import counts_sql
from waygraph.store._sql import commit_writes, sql_filters
from waygraph.store._sqlite_readonly import (
    check_schema_read_only,
    connect_read_only,
    read_only_reason,
)
from waygraph.store._sqlite_schema import MOVE_LATEST, SCHEMA_VERSION, ensure_schema
from waygraph.store._stats_sql import count_commits, query_tallies, runners
from waygraph.store.base import (
    Commit,
    MonotonicClock,
    Store,
    StoredEvent,
    StoredRecord,
    conflict,
    decode,
    encode,
    paging,
    read_record,
)
from waygraph.store.rows import RowPage, check_rows, keep_latest, page_of, rows_sql
from waygraph.store.stats import Tallies

__all__ = ["SCHEMA_VERSION", "SQLiteStore"]

SYNCHRONOUS_MODES = ("normal", "full")

_RECORD_COLUMNS = "key, kind, data, version, session, status, plan, correlation_ids, updated_at"

_INSERT = (
    "INSERT INTO records (key, kind, data, version, session, status, plan, correlation_ids,"
    " last_seq, updated_at, latest) VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (key) DO NOTHING"
)
#: What an update reads of the stored row first, under the write lock: the
#: version to check, the indexed columns to compare, the counters to carry on.
_READ_ROW = (
    "SELECT rowid, version, kind, session, status, plan, correlation_ids, last_seq, latest"
    " FROM records WHERE key = ?"
)
#: The columns an update writes only when their value changes: SQLite
#: rewrites the index entries of every column an UPDATE's SET names, equal
#: value or not, and each page they are on is one more page the commit
#: writes to the WAL. (The correlation ids are not indexed; their rows are.)
_CHANGING = ("kind", "session", "status", "plan", "correlation_ids")


#: A group (session, kind) whose flagged record moved away: its newest
#: remaining record is its row now (the order ``latest_sql`` flags by).
_REFILL_LATEST = (
    "UPDATE records SET latest = 1 WHERE key = (SELECT key FROM records"
    " WHERE session = ? AND kind = ? ORDER BY updated_at DESC, key ASC LIMIT 1)"
)


def _row_to_record(row: tuple[Any, ...]) -> StoredRecord:
    key, kind, data, version, session, status, plan, correlation_ids, updated_at = row
    return read_record(
        key,
        kind,
        decode(data),
        version,
        session,
        status,
        plan,
        tuple(decode(correlation_ids)) if correlation_ids != "[]" else (),
        updated_at,
    )


class SQLiteStore(Store):
    """A store in one SQLite file (or ``":memory:"``), shared by threads and processes.

    ``synchronous``: ``"normal"`` (default) or ``"full"``, see the module
    docstring. ``timeout``: seconds to wait for another process's write lock
    before raising :class:`StoreError`. Parent directories are created.
    ``read_only``: open for reading only (``?mode=ro``); a file that cannot be
    written opens so anyway, and :attr:`read_only` says why.

    One connection serves every thread behind a lock: SQLite runs one writer
    at a time anyway, single-threaded use pays only an uncontended lock, and
    ``close`` can close it from any thread. A child made by ``fork`` opens its
    own connection on first use (SQLite connections must not cross a fork).

    Example:
        >>> store = SQLiteStore(":memory:", synchronous="full")
        >>> store.synchronous
        'full'
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: str = "normal",
        timeout: float = 10.0,
        url: str | None = None,
        clock: Callable[[], float] = time.time,
        read_only: bool = False,
    ) -> None:
        given = os.fspath(path)
        self.url = url if url is not None else f"sqlite:///{given}"
        # Absolute, so a later chdir or a reconnect after fork finds the same file.
        self.path = given if given == ":memory:" else os.path.abspath(os.path.expanduser(given))
        mode = synchronous.lower()
        if mode not in SYNCHRONOUS_MODES:
            raise ConfigError(
                f"{self.url}: synchronous must be one of {', '.join(SYNCHRONOUS_MODES)} "
                f"(got {synchronous!r})"
            )
        if timeout < 0:
            raise ConfigError(f"{self.url}: timeout must be 0 or more seconds (got {timeout})")
        self._synchronous = mode
        self._timeout = timeout
        self._lock = threading.Lock()
        self._clock = MonotonicClock(clock)
        self._closed = False
        self._memory = self.path == ":memory:"
        if self._memory and read_only:
            raise ConfigError(f"{self.url}: an in-memory store cannot be read-only")
        #: Why the store is read-only ("opened with ?mode=ro", "... is on a
        #: read-only file system"), or None when it can be written.
        self.read_only: str | None = read_only_reason(self.path, requested=read_only)
        if not self._memory and self.read_only is None:
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(
                    f"{self.url}: cannot create the folder for {self.path}: {exc}"
                ) from exc
        self._pid = os.getpid()
        self._checkpoints: Checkpointer | None = None
        self._connection = self._connect()

    # ------------------------------------------------------------ connection

    @property
    def synchronous(self) -> str:
        """The durability mode in force: ``"normal"`` or ``"full"``."""
        with self._lock, self._errors("reading PRAGMA synchronous"):
            value = self._conn().execute("PRAGMA synchronous").fetchone()[0]
        return {1: "normal", 2: "full"}.get(value, str(value))

    def _connect(self) -> sqlite3.Connection:
        if self.read_only is not None:
            return self._connect_read_only(self.read_only)
        with self._errors(f"opening {self.path}"):
            conn = sqlite3.connect(
                self.path,
                timeout=self._timeout,
                isolation_level=None,  # we issue BEGIN/COMMIT ourselves
                check_same_thread=False,  # guarded by self._lock
            )
            try:
                if not self._memory:
                    conn.execute("PRAGMA journal_mode = WAL")
                    # A thread of the store's checkpoints (store._checkpoint).
                    conn.execute("PRAGMA wal_autocheckpoint = 0")
                    self._checkpoints = Checkpointer(
                        self.path, synchronous=self._synchronous, timeout=self._timeout
                    )
                    # A store dropped unclosed must not leave its thread (and the
                    # thread's connection) behind: stop it, not join (the
                    # collector may run on that very thread).
                    weakref.finalize(self, self._checkpoints.stop)
                conn.execute(f"PRAGMA synchronous = {self._synchronous}")
                ensure_schema(conn, self.url, self.path)
            except BaseException:
                conn.close()
                raise
        return conn

    def _connect_read_only(self, why: str) -> sqlite3.Connection:
        # No WAL switch, no checkpoints, no schema migration: each is a write.
        with self._errors(f"opening {self.path} read-only ({why})"):
            conn = connect_read_only(self.path, self._timeout)
            try:
                check_schema_read_only(conn, self.url, self.path, why)
            except BaseException:
                conn.close()
                raise
        return conn

    def _refuse_write(self, doing: str) -> None:
        if self.read_only is not None:
            raise StoreError(
                f"{self.url}: cannot {doing}: the store is read-only ({self.read_only})"
            )

    def _conn(self) -> sqlite3.Connection:
        """The connection; call with ``self._lock`` held."""
        if self._closed:
            raise StoreError(f"{self.url}: the store is closed")
        if self._pid != os.getpid() and not self._memory:
            # Forked child: the inherited connection belongs to the parent; it
            # is abandoned, not closed, so the parent's locks are untouched.
            self._pid = os.getpid()
            self._connection = self._connect()
        return self._connection

    @contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            hint = ""
            if "locked" in str(exc) or "busy" in str(exc):
                hint = f" (another process held the write lock for over {self._timeout:g}s)"
            raise StoreError(f"{self.url}: {doing} failed: {exc}{hint}") from exc

    # ------------------------------------------------------------ writes

    def _commit_all(self, commits: Sequence[Commit]) -> list[int]:
        what = ", ".join(repr(c.key) for c in commits)
        self._refuse_write(f"commit {what}")
        with self._lock, self._errors(f"committing {what}"):
            conn = self._conn()
            conn.execute("BEGIN IMMEDIATE")
            try:
                times: list[float] = []  # each commit's store time, for the statistics
                versions = [self._apply(conn, c, times) for c in commits]
                count_commits(commits, times, *runners(conn), "?")
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            if self._checkpoints is not None:
                self._checkpoints.committed(conn, len(commits))
        return versions

    def _apply(self, conn: sqlite3.Connection, c: Commit, times: list[float]) -> int:
        """One record's writes inside the caller's transaction; its new version."""
        key = c.key
        ids = encode(list(c.correlation_ids)) if c.correlation_ids else "[]"
        n = len(c.events)
        now = self._clock()
        if c.expected_version == 0:
            alone = 1 if c.session is None else 0  # a record without a session is a row
            cur = conn.execute(
                _INSERT, (key, c.kind, c.data, c.session, c.status, c.plan, ids, n, now, alone)
            )
            if cur.rowcount == 0:
                raise conflict(self.url, key, 0, self._version(conn, key))
            version, last_seq, latest = 1, n, alone
            had: tuple[str, ...] = ()
        else:
            version, last_seq, latest, had = self._update(conn, c, ids, now)
        # Committed last, the record is its session's row of its kind now.
        keep_latest(
            conn.execute,
            MOVE_LATEST,
            "?",
            key=key,
            session=c.session,
            kind=c.kind,
            flagged=bool(latest),
        )
        for statement, params in commit_writes(c, last_seq, "?", had=had):
            conn.executemany(statement, params)
        times.append(now)
        return int(version)

    def _update(
        self, conn: sqlite3.Connection, c: Commit, ids: str, now: float
    ) -> tuple[int, int, int, tuple[str, ...]]:
        """Update a record at its expected version: (version, last_seq, latest, ids it had).

        The stored row is read first (under the write lock, so nothing
        changes in between) and only the indexed columns whose values
        change are written (see ``_CHANGING``).
        """
        row = conn.execute(_READ_ROW, (c.key,)).fetchone()
        if row is None or row[1] != c.expected_version:
            raise conflict(self.url, c.key, c.expected_version, None if row is None else row[1])
        rowid, old, stored, last_seq, latest = row[0], row[1], row[2:7], row[7], row[8]
        values = (c.kind, c.session, c.status, c.plan, ids)
        changed = [i for i, value in enumerate(values) if value != stored[i]]
        sets = "".join(f", {_CHANGING[i]} = ?" for i in changed)
        conn.execute(
            f"UPDATE records SET data = ?, version = ?, last_seq = ?, updated_at = ?{sets}"
            " WHERE rowid = ?",
            (c.data, old + 1, last_seq + len(c.events), now, *(values[i] for i in changed), rowid),
        )
        # The ids the record had: their rows are the ones in record_correlations.
        had = c.correlation_ids if stored[4] == ids else tuple(decode(stored[4]))
        if (stored[0], stored[1]) != (c.kind, c.session):
            # Moved to another session or kind: its flag was its old group's row.
            if latest and stored[1] is not None:
                conn.execute(_REFILL_LATEST, (stored[1], stored[0]))
            latest = 0  # and the new group's row moves to it (keep_latest)
        return old + 1, last_seq + len(c.events), latest, had

    @staticmethod
    def _version(conn: sqlite3.Connection, key: str) -> int | None:
        row = conn.execute("SELECT version FROM records WHERE key = ?", (key,)).fetchone()
        return None if row is None else int(row[0])

    def clear_current(self, session: str) -> None:
        self._refuse_write(f"clear the pointer of session {session!r}")
        with self._lock, self._errors(f"clearing the pointer of session {session!r}"):
            self._conn().execute("DELETE FROM session_pointers WHERE session = ?", (session,))

    # ------------------------------------------------------------ reads

    def get(self, key: str) -> StoredRecord | None:
        with self._lock, self._errors(f"reading {key!r}"):
            row = (
                self._conn()
                .execute(f"SELECT {_RECORD_COLUMNS} FROM records WHERE key = ?", (key,))
                .fetchone()
            )
        return None if row is None else _row_to_record(row)

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
        where, params = sql_filters(
            "?", kind=kind, session=session, status=status, plan=plan, correlation_id=None
        )
        if correlation_id is None:
            sql = f"SELECT {_RECORD_COLUMNS} FROM records{where}"
        else:
            # Left to itself SQLite picks the kind/status index and scans every
            # record of that kind; CROSS JOIN fixes the order: the correlation's
            # few rows by primary key first, then their records by key.
            sql = (
                f"SELECT {_RECORD_COLUMNS} FROM record_correlations CROSS JOIN records USING (key)"
                " WHERE correlation_id = ?"
            )
            sql += where.replace(" WHERE ", " AND ", 1)
            params.insert(0, correlation_id)
        sql += " ORDER BY updated_at DESC, key ASC LIMIT ?"
        params.append(-1 if limit is None else limit)
        with self._lock, self._errors("listing records"):
            rows = self._conn().execute(sql, params).fetchall()
        return [_row_to_record(row) for row in rows]

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
        check_rows(offset, limit)
        filters = {"kind": kind, "plan": plan, "search": search, "exclude_kinds": exclude_kinds}
        counts_query, params, page_sql, page_params = _session_rows_sql(
            filters, status, offset, limit
        )
        with self._lock, self._errors("listing sessions"):
            conn = self._conn()
            # One read transaction, so the counts and the page agree.
            conn.execute("BEGIN")
            try:
                counts = conn.execute(counts_query, params).fetchall() if count else None
                found = conn.execute(page_sql, page_params).fetchall()
            finally:
                conn.execute("COMMIT")
        return page_of([_row_to_record(row) for row in found], counts, status)

    def run_tallies(
        self, *, plan: str | None = None, since_minute: int | None = None, step: int = 60
    ) -> Tallies:
        with self._lock, self._errors("reading the run statistics"):
            conn = self._conn()
            conn.execute("BEGIN")  # one snapshot for every part
            try:
                return query_tallies(
                    runners(conn)[0], "?", plan=plan, since_minute=since_minute, step=step
                )
            finally:
                conn.execute("COMMIT")

    def events(
        self, key: str, after_seq: int = 0, limit: int | None = None
    ) -> builtins.list[StoredEvent]:
        after_seq, limit = paging(after_seq, limit)
        with self._lock, self._errors(f"reading the events of {key!r}"):
            rows = (
                self._conn()
                .execute(
                    "SELECT seq, data FROM events WHERE key = ? AND seq > ? ORDER BY seq LIMIT ?",
                    (key, after_seq, -1 if limit is None else limit),
                )
                .fetchall()
            )
        return [StoredEvent(key=key, seq=seq, data=decode(data)) for seq, data in rows]

    def current(self, session: str) -> str | None:
        with self._lock, self._errors(f"reading the pointer of session {session!r}"):
            row = (
                self._conn()
                .execute("SELECT key FROM session_pointers WHERE session = ?", (session,))
                .fetchone()
            )
        return None if row is None else row[0]

    def sessions(self) -> builtins.list[str]:
        with self._lock, self._errors("listing sessions"):
            rows = (
                self._conn()
                .execute(
                    "SELECT session FROM session_pointers UNION "
                    "SELECT session FROM records WHERE session IS NOT NULL ORDER BY 1"
                )
                .fetchall()
            )
        return [row[0] for row in rows]

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._pid == os.getpid():
                if self._checkpoints is not None:
                    self._checkpoints.close()
                with self._errors("closing"):
                    self._connection.close()


def _session_rows_sql(
    filters: dict[str, Any], status: str | None, offset: int, limit: int
) -> tuple[str, list[Any], str, list[Any]]:
    """The counts query and the page query of :meth:`SQLiteStore.session_rows`, with their
    parameters.

    The rows are the records flagged latest, counted in row_counts (schema 5)
    unless a search or a plan filter narrows them; a page walks the records
    newest first, keeps the flagged ones and stops once it has its rows (in a
    fleet the newest records are nearly all rows); a search or a plan filter,
    whose rows are few and far apart, reads every record's entry in the
    covering records_rows, never a record.
    """

    def query(index: str, columns: str) -> tuple[str, list[Any]]:
        return rows_sql(
            "?", like="LIKE", scan_index=f" INDEXED BY {index}", columns=columns, **filters
        )

    narrow = not filters["search"] and filters["plan"] is None
    if narrow:
        # The kept counts (schema 5): a few rows, whatever the store's size.
        counts_query, params = counts_sql(
            "?", "sqlite", kind=filters["kind"], exclude_kinds=filters["exclude_kinds"]
        )
    else:
        rows, params = query("records_rows", "r.status")
        counts_query = f"SELECT status, COUNT(*) FROM ({rows}) GROUP BY status"
    newest, page_params = query(
        "records_updated_at" if narrow else "records_rows", "r.key, r.status, r.updated_at"
    )
    keys_sql = f"SELECT key FROM ({newest})"
    if status is not None:
        keys_sql += " WHERE status = ?"
        page_params.append(status)
    keys_sql += " ORDER BY updated_at DESC, key ASC LIMIT ? OFFSET ?"
    page_params += [limit, offset]
    page_sql = (
        f"SELECT {_RECORD_COLUMNS} FROM records WHERE key IN ({keys_sql})"
        " ORDER BY updated_at DESC, key ASC"
    )
    return counts_query, params, page_sql, page_params
