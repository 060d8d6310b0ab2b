"""``postgresql://...``: one database shared by many processes and machines.

Needs the ``postgres`` extra (``pip install 'waygraph[postgres]'``: psycopg 3
and psycopg_pool). The tables are created on first use. A version check is
a single statement (``UPDATE ... WHERE key = %s AND version = %s`` or
``INSERT ... ON CONFLICT DO NOTHING``); zero rows means another writer won,
and the whole transaction is rolled back with :class:`~waygraph.errors.Conflict`.

``?schema=NAME`` (lowercase letters, digits, ``_``) keeps the tables in that
schema, creating it if needed; ``?timeout=SECONDS`` (10 by default) is every
call's deadline, past which it raises :class:`~waygraph.errors.StoreError`
even when the server stops answering (store._pg_deadline); other query
options go to libpq unchanged (``sslmode``, ``connect_timeout``, ...).

A commit also sends a ``NOTIFY`` on :attr:`PostgresStore.channel` (one
channel per schema) in the same transaction while a listener registered by
:meth:`PostgresStore.listen` lives (the HTTP server's live updates), so it
hears of the commit exactly when it becomes visible; ``?notify=always``
sends it on every commit.

Example (needs a server, so it is not a doctest)::

    store = PostgresStore("postgresql://postgres@127.0.0.1:5432/test?schema=demo")
    store.commit("run_1", {"n": 1}, 0, [])      # -> 1
    store.get("run_1").data                     # -> {'n': 1}
"""

from __future__ import annotations

import builtins
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

from waygraph.errors import ConfigError, StoreError
from waygraph.store._counts_sql import counts_sql
from waygraph.store._pg_commit import PREPARES, commit_call
from waygraph.store._pg_deadline import Watchdog, socket_options
from waygraph.store._pg_schema import REGISTER, SCHEMA_VERSION, ensure_schema
from waygraph.store._pg_url import call_deadline, notify_channel, notify_mode, split_schema
from waygraph.store._sql import sql_filters
from waygraph.store._stats_sql import (
    count_commits,
    needs_count,
    query_tallies,
    runners,
)
from waygraph.store.base import (
    Commit,
    MonotonicClock,
    Store,
    StoredEvent,
    StoredRecord,
    Write,
    conflict,
    paging,
    read_record,
    redact_url,
)
from waygraph.store.rows import RowPage, check_rows, page_of, rows_sql
from waygraph.store.stats import Tallies

__all__ = ["SCHEMA_VERSION", "PostgresStore", "notify_channel", "split_schema"]


# Two commits moving a session's flag at once would each miss the other's
# row (READ COMMITTED): a transaction first takes a lock per session and
# kind it writes, in one order, before any row lock, so they queue instead
# (and never deadlock on each other's locks).
_LATEST_LOCK = "SELECT pg_advisory_xact_lock(hashtext(%s), hashtext(%s))"

# The locks above, the version check's FOR UPDATE and the counters' fold
# (store._counts_sql) are all READ COMMITTED designs: under a database whose
# default is REPEATABLE READ, a commit that waited for a concurrent writer's
# row would fail with a serialisation error instead of a Conflict.
_BEGIN = "BEGIN ISOLATION LEVEL READ COMMITTED"

_OPEN = (psycopg.pq.TransactionStatus.INTRANS, psycopg.pq.TransactionStatus.INERROR)

T = TypeVar("T")

_RECORD_COLUMNS = "key, kind, data, version, session, status, plan, correlation_ids, updated_at"

# The records indexed under some ids, each with the id, ordered as list() orders them.
_AFTER = (
    "SELECT c.correlation_id, r.key, r.kind, r.data, r.version, r.session, r.status,"
    " r.plan, r.correlation_ids, r.updated_at FROM record_correlations c"
    " JOIN records r ON r.key = c.key WHERE c.correlation_id = ANY(%s)"
    ' ORDER BY r.updated_at DESC, r.key COLLATE "C" ASC'
)


def _prepare(conn: psycopg.Connection[Any]) -> None:
    """Prepare the commit statements a connection lacks (a pool's ``configure``)."""
    have = {row[0] for row in conn.execute("SELECT name FROM pg_prepared_statements")}
    for name, statement in PREPARES.items():
        if name not in have:
            conn.execute(statement)


def _snapshot(
    work: Callable[[psycopg.Connection[Any]], T],
) -> Callable[[psycopg.Connection[Any]], T]:
    """``work`` in one REPEATABLE READ transaction: every query it makes sees one snapshot."""

    def run(conn: psycopg.Connection[Any]) -> T:
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        try:
            with conn.transaction():
                return work(conn)
        finally:
            conn.isolation_level = None

    return run


def _row_to_record(row: tuple[Any, ...]) -> StoredRecord:
    key, kind, data, version, session, status, plan, correlation_ids, updated_at = row
    return read_record(
        key,
        kind,
        data,
        int(version),
        session,
        status,
        plan,
        tuple(correlation_ids),
        float(updated_at),
    )


def _versions(
    url: str,
    conn: psycopg.Connection[Any],
    commits: Sequence[Commit],
    rows: Sequence[tuple[Any, ...] | None],
) -> list[int]:
    """Each record's new version; Conflict for the first whose version check failed."""
    versions = []
    for c, row in zip(commits, rows, strict=True):
        if row is None:
            found = conn.execute("SELECT version FROM records WHERE key = %s", (c.key,)).fetchone()
            raise conflict(url, c.key, c.expected_version, None if found is None else int(found[0]))
        versions.append(int(row[0]))
    return versions


def _listed(rows: Sequence[tuple[Any, ...]], found: dict[str, list[StoredRecord]]) -> None:
    """Put the rows of :data:`_AFTER` (a correlation id, then a record) in ``found``."""
    for row in rows:
        found[row[0]].append(_row_to_record(row[1:]))


class PostgresStore(Store):
    """A store in PostgreSQL tables, reached through a psycopg connection pool.

    ``min_size``/``max_size``: pool bounds. ``timeout``: every call's
    deadline in seconds, a free pooled connection's wait included (default:
    the URL's ``?timeout=``, else 10). The store is thread-safe; open it
    after ``fork`` (connections must not cross a fork).

    Example (needs a server)::

        with PostgresStore("postgresql://postgres@127.0.0.1/test") as store:
            store.sessions()                    # -> ['s1', ...]
    """

    def __init__(
        self,
        url: str,
        *,
        min_size: int = 1,
        max_size: int = 8,
        timeout: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.url = redact_url(url)
        conninfo, self.schema = split_schema(url)
        #: Notify on every commit, not only while a listener is registered.
        self.notify_always = notify_mode(url) == "always"
        try:
            params = conninfo_to_dict(conninfo)
        except psycopg.ProgrammingError as exc:
            raise ConfigError(f"{self.url}: not a valid PostgreSQL URL: {exc}") from exc
        # autocommit: reads need no BEGIN/COMMIT round trips; commits open an
        # explicit transaction.
        kwargs: dict[str, Any] = {"autocommit": True}
        if self.schema is not None:
            options = f"{params.get('options') or ''} -c search_path={self.schema}"
            kwargs["options"] = options.strip()
        #: Seconds any call may take before it raises StoreError.
        self.deadline = call_deadline(url) if timeout is None else timeout
        if not self.deadline > 0:
            raise ConfigError(f"{self.url}: timeout must be more than 0 seconds (got {timeout})")
        kwargs.update(socket_options(params, self.deadline))
        # The server cancels a statement at the deadline itself when it still
        # runs (a lock wait, a slow plan), keeping the connection; pooled
        # connections only: a migration on open may take longer.
        pooled = dict(kwargs)
        if "statement_timeout" not in str(params.get("options") or ""):
            limit = f"-c statement_timeout={max(1, round(self.deadline * 1000))}"
            given = kwargs.get("options") or params.get("options") or ""
            pooled["options"] = f"{given} {limit}".strip()
        self.channel = notify_channel(self.schema)
        self._conninfo, self._connect_kwargs = conninfo, kwargs
        self._clock = MonotonicClock(clock)
        self._clock_lock = threading.Lock()
        self._closed = False
        # One direct connection first: an unreachable server fails here at
        # once with libpq's reason, instead of as a pool timeout later.
        self._watch = Watchdog(self.deadline)
        with self._errors("connecting and creating the tables"):
            with psycopg.connect(conninfo, **kwargs) as conn:
                ensure_schema(conn, self.url, self.schema)
            self._pool: ConnectionPool = ConnectionPool(
                conninfo,
                kwargs=pooled,
                min_size=min_size,
                max_size=max_size,
                timeout=self.deadline,
                open=True,
                name="waygraph.store",
                configure=_prepare,
            )

    @contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        if self._closed:
            raise StoreError(f"{self.url}: the store is closed")
        try:
            yield
        except psycopg.Error as exc:
            raise StoreError(f"{self.url}: {doing} failed: {exc}") from exc

    def _now(self) -> float:
        with self._clock_lock:
            return self._clock()

    def _use(self, doing: str, work: Callable[[psycopg.Connection[Any]], T], *, read: bool) -> T:
        """``work`` on a pooled connection; errors as StoreError naming ``doing``.

        When the server dropped the connection (a restart, a failover, an
        idle timeout), the pool's other idle connections are most likely
        gone too: they are checked and replaced at once, so one call fails
        rather than one per pooled connection. A read is then tried once
        more; a commit is not, as it may have committed before the
        connection went.

        The whole call, the wait for a pooled connection and the retry
        included, ends by :attr:`deadline`: past it the call raises
        StoreError (store._pg_deadline), and nothing is tried again.
        """
        token = self._watch.start(None)
        try:
            with self._errors(doing):
                for attempt in (0, 1):
                    lost = False
                    try:
                        with self._pool.connection(timeout=self._watch.left(token)) as conn:
                            self._watch.attach(token, conn)
                            try:
                                return work(conn)
                            except psycopg.OperationalError:
                                lost = conn.broken
                                raise
                            finally:
                                self._watch.detach(token)
                    except psycopg.OperationalError as exc:
                        if self._watch.expired(token) or isinstance(exc, PoolTimeout):
                            raise self._late(doing) from exc
                        if not lost:
                            raise
                        self._pool.check()
                        if not read or attempt:
                            raise
        finally:
            self._watch.finish(token)
        raise AssertionError("unreachable")  # pragma: no cover

    def _late(self, doing: str) -> StoreError:
        return StoreError(
            f"{self.url}: {doing} failed: no answer within {self.deadline:g}s, the store's "
            "deadline (?timeout=SECONDS); the server may be stopped or overloaded"
        )

    # ------------------------------------------------------------ writes

    def _commit_all(
        self,
        commits: Sequence[Commit],
        found: dict[str, builtins.list[StoredRecord]] | None = None,
    ) -> builtins.list[int]:
        what = ", ".join(repr(c.key) for c in commits)

        def write(conn: psycopg.Connection[Any]) -> list[int]:
            try:
                return self._write(conn, commits, found)
            except psycopg.errors.InvalidSqlStatementName:
                # Something ran DEALLOCATE ALL on this connection (psycopg does
                # after a rollback when it prepared statements of its own):
                # nothing was written; prepare again and write once more.
                _prepare(conn)
                return self._write(conn, commits, found)

        return self._use(f"committing {what}", write, read=False)

    def commit_and_list(
        self, writes: Sequence[Write], correlation_ids: Sequence[str]
    ) -> tuple[list[int], dict[str, builtins.list[StoredRecord]]]:
        """:func:`waygraph.store.commit_then_list`: the lists run after the commit's
        ``COMMIT`` in the same query string, one round trip."""
        found: dict[str, builtins.list[StoredRecord]] = {c: [] for c in correlation_ids}
        commits = self._normalise_all(writes)
        return (self._commit_all(commits, found) if commits else []), found

    def _write(
        self,
        conn: psycopg.Connection[Any],
        commits: Sequence[Commit],
        found: dict[str, builtins.list[StoredRecord]] | None = None,
    ) -> builtins.list[int]:
        """Write ``commits`` in one transaction on ``conn``; their new versions.

        Each record's writes are one prepared statement (store._pg_commit),
        sent in one query string with BEGIN, the session locks and COMMIT:
        one round trip. Only a commit the statistics count (a finished guided
        run, a rewind) or several records, where a conflict on one must undo
        the others, look at the results before COMMIT.
        """
        counted = len(commits) > 1 or needs_count(commits)
        locks = sorted({(c.session, c.kind) for c in commits if c.session})
        parts: builtins.list[str] = [_BEGIN]
        values: builtins.list[Any] = []
        for session, kind in locks:
            parts.append(_LATEST_LOCK)
            values += [session, kind]
        times = []
        for c in commits:
            now = self._now()
            times.append(now)
            call, args = commit_call(c, now, self.channel, always=self.notify_always)
            parts.append(call)
            values += args
        if not counted:
            parts.append("COMMIT")
            if found:  # read after the commit, in a transaction of its own: it sees it
                parts.append(_AFTER)
                values.append(builtins.list(found))
        cur = psycopg.ClientCursor(conn)
        try:
            cur.execute("; ".join(parts), values)
            for _ in range(1 + len(locks)):  # BEGIN, the locks
                cur.nextset()
            rows = []
            for _ in commits:
                rows.append(cur.fetchone())
                cur.nextset()
            if counted:
                versions = _versions(self.url, conn, commits, rows)
                count_commits(commits, times, *runners(conn), "%s")
                conn.execute("COMMIT")
                if found:
                    _listed(conn.execute(_AFTER, (builtins.list(found),)).fetchall(), found)
                return versions
            if found:
                cur.nextset()  # past COMMIT
                _listed(cur.fetchall(), found)
        except BaseException:
            # A failed statement skipped the rest, COMMIT included: undo it all.
            if conn.info.transaction_status in _OPEN:
                conn.execute("ROLLBACK")
            raise
        finally:
            cur.close()
        # A version check that failed wrote nothing: the empty transaction
        # committed, and the conflict is raised here.
        return _versions(self.url, conn, commits, rows)

    def listen(self) -> psycopg.Connection[Any]:
        """A new connection (not from the pool) that LISTENs on :attr:`channel`.

        Each notification's payload is JSON ``{"key": ..., "session": ...}``
        of a commit (``{}`` when too long to send). The caller reads
        ``conn.notifies()`` and closes the connection.

        The connection is registered in the ``listeners`` table (after its
        ``LISTEN``, so no commit that sees it goes unheard): commits notify
        only while a registered connection lives, since notifying commits
        queue one by one on PostgreSQL's notification lock. A commit whose
        statement began just before the registration does not notify, so a
        listener re-reads what it watches once it is registered (the HTTP
        server does, at once and a second later). Registration ends with
        the connection; rows of connections gone are removed by the next
        ``listen``. A store opened with ``?notify=always`` notifies on every
        commit, for listeners that ``LISTEN`` on their own connections.

        Example (needs a server)::

            conn = store.listen()
            for notice in conn.notifies(timeout=5):
                print(notice.payload)           # {"key": "run_1", "session": "s1"}
            conn.close()
        """
        with self._errors(f"listening on channel {self.channel!r}"):
            conn = psycopg.connect(self._conninfo, **self._connect_kwargs)
            try:
                conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
                for statement in REGISTER:
                    conn.execute(statement, (self.channel,))
            except psycopg.errors.InsufficientPrivilege as exc:
                conn.close()
                # Without its row no commit would notify: listening would hear nothing.
                raise StoreError(
                    f"{self.url}: listening on channel {self.channel!r} needs INSERT and "
                    f"DELETE on the listeners table ({exc}); grant them, or open the "
                    "writers' stores with ?notify=always and LISTEN on your own connection"
                ) from exc
            except BaseException:
                conn.close()
                raise
        return conn

    def clear_current(self, session: str) -> None:
        # Deleting twice is deleting once: it may be tried again like a read.
        self._use(
            f"clearing the pointer of session {session!r}",
            lambda conn: conn.execute(
                "DELETE FROM session_pointers WHERE session = %s", (session,)
            ),
            read=True,
        )

    # ------------------------------------------------------------ reads

    def _fetch(self, doing: str, query: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return self._use(doing, lambda conn: conn.execute(query, params).fetchall(), read=True)

    def get(self, key: str) -> StoredRecord | None:
        rows = self._fetch(
            f"reading {key!r}", f"SELECT {_RECORD_COLUMNS} FROM records WHERE key = %s", (key,)
        )
        return _row_to_record(rows[0]) if rows else None

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
            "%s",
            kind=kind,
            session=session,
            status=status,
            plan=plan,
            correlation_id=correlation_id,
        )
        query = f"SELECT {_RECORD_COLUMNS} FROM records{where}"
        # COLLATE "C": key order must not depend on the database's locale.
        query += ' ORDER BY updated_at DESC, key COLLATE "C" ASC LIMIT %s'
        params.append(limit)
        return [_row_to_record(row) for row in self._fetch("listing records", query, params)]

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
        counts_query, counts_params, page_sql, page_params = _session_rows_sql(
            filters, status, offset, limit
        )

        def read(conn: psycopg.Connection[Any]) -> tuple[list[Any] | None, list[Any]]:
            # The count's plan costs over jit_above_cost from a few thousand
            # rows on, and compiling it took ~260 ms of ~800 at 100,000 runs
            # (bench/scale.py): more than it saves.
            conn.execute("SET LOCAL jit = off")
            counts = conn.execute(counts_query, counts_params).fetchall() if count else None
            return counts, conn.execute(page_sql, page_params).fetchall()

        # One snapshot for both queries, so the counts and the page agree.
        counts, found = self._use("listing sessions", _snapshot(read), read=True)
        return page_of([_row_to_record(row) for row in found], counts, status)

    def run_tallies(
        self, *, plan: str | None = None, since_minute: int | None = None, step: int = 60
    ) -> Tallies:

        def read(conn: psycopg.Connection[Any]) -> Tallies:
            return query_tallies(
                runners(conn)[0], "%s", plan=plan, since_minute=since_minute, step=step
            )

        # One snapshot for every part.
        return self._use("reading the run statistics", _snapshot(read), read=True)

    def events(
        self, key: str, after_seq: int = 0, limit: int | None = None
    ) -> builtins.list[StoredEvent]:
        after_seq, limit = paging(after_seq, limit)
        rows = self._fetch(
            f"reading the events of {key!r}",
            "SELECT seq, data FROM events WHERE key = %s AND seq > %s ORDER BY seq LIMIT %s",
            (key, after_seq, limit),
        )
        return [StoredEvent(key=key, seq=int(seq), data=data) for seq, data in rows]

    def current(self, session: str) -> str | None:
        rows = self._fetch(
            f"reading the pointer of session {session!r}",
            "SELECT key FROM session_pointers WHERE session = %s",
            (session,),
        )
        return rows[0][0] if rows else None

    def sessions(self) -> builtins.list[str]:
        rows = self._fetch(
            "listing sessions",
            "SELECT session FROM (SELECT session FROM session_pointers UNION "
            "SELECT session FROM records WHERE session IS NOT NULL) AS s "
            'ORDER BY session COLLATE "C"',
            (),
        )
        return [row[0] for row in rows]

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._pool.close()
        self._watch.close()


def _session_rows_sql(
    filters: dict[str, Any], status: str | None, offset: int, limit: int
) -> tuple[str, list[Any], str, list[Any]]:
    """The counts query and the page query of :meth:`PostgresStore.session_rows`, with their
    parameters: the kept counts (schema 5) unless a search or a plan filter narrows the rows."""
    rows, params = rows_sql("%s", like="ILIKE", **filters)
    page_sql = f"SELECT {_RECORD_COLUMNS} FROM ({rows}) AS rows"
    page_params = list(params)
    if status is not None:
        page_sql += " WHERE status = %s"
        page_params.append(status)
    page_sql += ' ORDER BY updated_at DESC, key COLLATE "C" ASC LIMIT %s OFFSET %s'
    page_params += [limit, offset]
    if not filters["search"] and filters["plan"] is None:
        # The kept counts (schema 5): a few hundred rows at most, whatever the size.
        counts_query, counts_params = counts_sql(
            "%s", "postgres", kind=filters["kind"], exclude_kinds=filters["exclude_kinds"]
        )
    else:
        counts_query = f"SELECT status, COUNT(*) FROM ({rows}) AS rows GROUP BY status"
        counts_params = params
    return counts_query, counts_params, page_sql, page_params
