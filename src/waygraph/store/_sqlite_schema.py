"""SQLite store tables: creating them, and bringing older files up to date on open.

Example:
    >>> import sqlite3
    >>> conn = sqlite3.connect(":memory:", isolation_level=None)
    >>> ensure_schema(conn, "sqlite:///:memory:", ":memory:")
    >>> conn.execute("SELECT value FROM meta").fetchone() == (str(SCHEMA_VERSION),)
    True
"""

from __future__ import annotations

import sqlite3

from waygraph.errors import StoreError
from waygraph.model.record import BEFORE, RunKind
from waygraph.store._counts_sql import counts_schema
from waygraph.store._sql import migrate_data
from waygraph.store._stats_sql import tables
from waygraph.store.rows import latest_sql

__all__ = [
    "LATEST_INDEX",
    "MOVE_LATEST",
    "ROWS_INDEX",
    "SCHEMA_VERSION",
    "current_schema",
    "ensure_schema",
]

#: Bumped whenever the tables change; ``meta.schema_version`` records it so a
#: later waygraph can migrate old files and an old one refuses newer files.
SCHEMA_VERSION = 6

#: Schema 2 renamed the run kinds (waygraph.model.record): records of
#: schema 1 get the new names, and event runs their plan id in ``plan``, when
#: the file is opened; their data is migrated as it is read.
_GUIDED, _EVENT = RunKind.GUIDED.value, RunKind.EVENT.value
_RENAME_KINDS = (
    f"UPDATE records SET kind = '{_GUIDED}' WHERE kind = '{BEFORE[_GUIDED]}'",
    f"UPDATE records SET kind = '{_EVENT}', plan = json_extract(data, '$.plan_id')"
    f" WHERE kind = '{BEFORE[_EVENT]}'",
)

#: Schema 6 drops two indexes no query needs, each one more page a commit
#: writes: ``records_session`` (``records_rows`` starts with the session, so
#: every query by session reads that one) and ``record_correlations_key``
#: (a commit deletes the correlation rows a record lost by their primary
#: key, from the ids its row kept, instead of every row of the record by key).
_DROPPED_INDEXES = (
    "DROP INDEX IF EXISTS records_session",
    "DROP INDEX IF EXISTS record_correlations_key",
)

#: The sessions table's index (``session_rows``): the newer-record probe and
#: a search read it alone, never a record's data. Added to files of schema
#: 1 on open without a version bump: older waygraphs keep reading them.
#: Schema 5 adds ``latest``, so a search finds the rows in it too (schema 4
#: looked each flagged record up: 18-38x slower at 10,000 runs).
ROWS_INDEX = (
    "CREATE INDEX IF NOT EXISTS records_rows"
    " ON records (session, kind, updated_at, key, status, plan, latest)"
)

#: Schema 4: the sessions table's rows are the records flagged ``latest``
#: (waygraph.store.rows.latest_sql). The counts per status read this index
#: alone, in status order; it changes only when a row's status does or the
#: flag moves, so a running run's turn leaves it as it is.
LATEST_INDEX = "CREATE INDEX IF NOT EXISTS records_latest ON records (latest, status, kind)"
_FILL_LATEST, MOVE_LATEST = latest_sql("?")

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS records (
        key TEXT PRIMARY KEY NOT NULL,
        kind TEXT NOT NULL,
        data TEXT NOT NULL,
        version INTEGER NOT NULL,
        session TEXT,
        status TEXT,
        plan TEXT,
        correlation_ids TEXT NOT NULL,
        last_seq INTEGER NOT NULL,
        updated_at REAL NOT NULL,
        latest INTEGER NOT NULL DEFAULT 0
    )""",
    "CREATE INDEX IF NOT EXISTS records_status ON records (status)",
    "CREATE INDEX IF NOT EXISTS records_plan ON records (plan)",
    "CREATE INDEX IF NOT EXISTS records_kind ON records (kind)",
    "CREATE INDEX IF NOT EXISTS records_updated_at ON records (updated_at)",
    ROWS_INDEX,
    LATEST_INDEX,
    # WITHOUT ROWID: these rows are small and always found by their primary
    # key, so the key index can hold the row itself.
    """CREATE TABLE IF NOT EXISTS record_correlations (
        correlation_id TEXT NOT NULL,
        key TEXT NOT NULL,
        PRIMARY KEY (correlation_id, key)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS events (
        key TEXT NOT NULL,
        seq INTEGER NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (key, seq)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS session_pointers (
        session TEXT PRIMARY KEY NOT NULL,
        key TEXT NOT NULL
    ) WITHOUT ROWID""",
    # Schema 3: run statistics kept as counters (waygraph.store._stats_sql).
    *tables("INTEGER", "TEXT", "REAL", " WITHOUT ROWID"),
    # Schema 5: the sessions table's rows per kind and status (store._counts_sql).
    *counts_schema("sqlite"),
)


def ensure_schema(conn: sqlite3.Connection, url: str, path: str) -> None:
    """Create the tables, or migrate an older file's; ``url`` and ``path`` name it in errors."""
    # The common case (an existing, current file) needs one read and no
    # write lock, so opening many stores at once does not queue.
    if _schema_version(conn) == SCHEMA_VERSION and _has_latest_index(conn):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = _schema_version(conn)
        _refuse_newer(found, url, path)
        if found is not None and found < 4 and not _has_latest_column(conn):
            conn.execute("ALTER TABLE records ADD COLUMN latest INTEGER NOT NULL DEFAULT 0")
            conn.execute(_FILL_LATEST)
        if found is not None and found < 5:
            conn.execute("DROP INDEX IF EXISTS records_rows")  # made again with latest
        if found is not None and found < 6:
            for statement in _DROPPED_INDEXES:
                conn.execute(statement)
        for statement in _SCHEMA:
            conn.execute(statement)
        migrate_data(conn, found, SCHEMA_VERSION, renames=_RENAME_KINDS, dialect="sqlite", mark="?")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def current_schema(conn: sqlite3.Connection, url: str, path: str) -> str | None:
    """None when the file's tables are this waygraph's as they are (no write needed).

    Otherwise ``"empty"`` (no store in it yet) or what is out of date; a
    newer schema raises :class:`StoreError` as :func:`ensure_schema` does.
    """
    found = _schema_version(conn)
    if found is None:
        return "empty"
    _refuse_newer(found, url, path)
    if found < SCHEMA_VERSION:
        return f"schema version {found}, older than the {SCHEMA_VERSION} this waygraph reads"
    if not _has_latest_index(conn):
        return "no index for the sessions table"
    return None


def _refuse_newer(found: int | None, url: str, path: str) -> None:
    if found is not None and found > SCHEMA_VERSION:
        raise StoreError(
            f"{url}: {path} has schema version {found}, newer than the "
            f"{SCHEMA_VERSION} this waygraph reads; upgrade waygraph"
        )


def _has_latest_index(conn: sqlite3.Connection) -> bool:
    # Both sessions-table indexes (records_rows came after schema 1 without a bump).
    (found,) = conn.execute(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index'"
        " AND name IN ('records_rows', 'records_latest')"
    ).fetchone()
    return bool(found == 2)


def _has_latest_column(conn: sqlite3.Connection) -> bool:
    return any(row[1] == "latest" for row in conn.execute("PRAGMA table_info(records)"))


def _schema_version(conn: sqlite3.Connection) -> int | None:
    try:
        row = conn.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return None
        raise
    return None if row is None else int(row[0])
