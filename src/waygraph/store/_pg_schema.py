"""PostgreSQL store tables: creating them, and bringing older ones up to date on open.

Example (needs a server, so it is not a doctest)::

    with psycopg.connect(url, autocommit=True) as conn:
        ensure_schema(conn, "postgresql://...", "runs")
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from waygraph.errors import StoreError
from waygraph.model.record import BEFORE, RunKind
from waygraph.store._counts_sql import counts_schema
from waygraph.store._sql import migrate_data
from waygraph.store._stats_sql import tables
from waygraph.store.rows import latest_sql

__all__ = ["REGISTER", "SCHEMA_VERSION", "ensure_schema"]

SCHEMA_VERSION = 5

#: Schema 2 renamed the run kinds (waygraph.model.record): tables of schema 1
#: get the new names, and event runs their plan id in ``plan``, on open;
#: their data is migrated as it is read.
_GUIDED, _EVENT = RunKind.GUIDED.value, RunKind.EVENT.value
_RENAME_KINDS = (
    f"UPDATE records SET kind = '{_GUIDED}' WHERE kind = '{BEFORE[_GUIDED]}'",
    f"UPDATE records SET kind = '{_EVENT}', plan = data->>'plan_id'"
    f" WHERE kind = '{BEFORE[_EVENT]}'",
)

_FILL_LATEST, _ = latest_sql("%s", collate=' COLLATE "C"')

# Serialises table creation between processes starting at once: CREATE TABLE
# IF NOT EXISTS is not safe against a concurrent twin.
_SCHEMA_LOCK = 0x5761_7967_7261_7068  # "Waygraph"

_TABLES = (
    "CREATE TABLE IF NOT EXISTS meta (name text PRIMARY KEY, value text NOT NULL)",
    """CREATE TABLE IF NOT EXISTS records (
        key text PRIMARY KEY,
        kind text NOT NULL,
        data json NOT NULL,
        version bigint NOT NULL,
        session text,
        status text,
        plan text,
        correlation_ids text[] NOT NULL,
        last_seq bigint NOT NULL,
        updated_at double precision NOT NULL,
        latest integer NOT NULL DEFAULT 0
    )""",
    # records_session is gone: records_rows starts with the session, so every
    # query by session reads that one, and an update (never a HOT update: it
    # changes the indexed updated_at) wrote an entry into it for nothing.
    "DROP INDEX IF EXISTS records_session",
    "CREATE INDEX IF NOT EXISTS records_status ON records (status)",
    "CREATE INDEX IF NOT EXISTS records_plan ON records (plan)",
    "CREATE INDEX IF NOT EXISTS records_kind ON records (kind)",
    "CREATE INDEX IF NOT EXISTS records_updated_at ON records (updated_at)",
    # The sessions table (session_rows): its newer-record probe reads only this.
    "CREATE INDEX IF NOT EXISTS records_rows"
    ' ON records (session, kind, updated_at, key COLLATE "C", status, plan)',
    # Schema 4: the rows are the records flagged latest (rows.latest_sql);
    # the counts per status read this index alone.
    "CREATE INDEX IF NOT EXISTS records_latest ON records (latest, status, kind)",
    """CREATE TABLE IF NOT EXISTS record_correlations (
        correlation_id text NOT NULL,
        key text NOT NULL,
        PRIMARY KEY (correlation_id, key)
    )""",
    "CREATE INDEX IF NOT EXISTS record_correlations_key ON record_correlations (key)",
    """CREATE TABLE IF NOT EXISTS events (
        key text NOT NULL,
        seq bigint NOT NULL,
        data json NOT NULL,
        PRIMARY KEY (key, seq)
    )""",
    """CREATE TABLE IF NOT EXISTS session_pointers (
        session text PRIMARY KEY,
        key text NOT NULL
    )""",
    # Schema 3: run statistics kept as counters (waygraph.store._stats_sql).
    *tables("bigint", "text", "double precision", ""),
    # Schema 5: the sessions table's rows per kind and status (store._counts_sql).
    *counts_schema("postgres"),
    # The connections LISTENing (PostgresStore.listen): commits notify only
    # while one of them lives. Added without a schema bump, like records_rows:
    # older waygraphs ignore the table and keep notifying on every commit.
    """CREATE TABLE IF NOT EXISTS listeners (
        channel text NOT NULL,
        pid integer NOT NULL,
        started timestamptz,
        PRIMARY KEY (channel, pid)
    )""",
)

# A listener's backend is alive when PostgreSQL knows its pid and, where the
# role may see it, the same start time (a pid can be reused). The commit
# statement (store._pg_commit) asks the same of every row of its channel.
ALIVE = (
    "SELECT 1 FROM pg_stat_get_activity(listeners.pid) a"
    " WHERE a.backend_start IS NULL OR a.backend_start = listeners.started"
)
REGISTER = (
    f"DELETE FROM listeners WHERE channel = %s AND NOT EXISTS ({ALIVE})",
    "INSERT INTO listeners (channel, pid, started)"
    " SELECT %s, pid, backend_start FROM pg_stat_get_activity(pg_backend_pid())"
    " ON CONFLICT (channel, pid) DO UPDATE SET started = excluded.started",
)


def ensure_schema(conn: psycopg.Connection[Any], url: str, schema: str | None) -> None:
    """Create the tables in ``schema`` (or the search path), or migrate older ones.

    ``url`` (redacted) names the store in errors. Processes starting at once
    take turns (an advisory lock); a store of a newer schema is refused.
    """
    # records_rows and listeners came without a bump; tables made before
    # them get them on open.
    if _schema_version(conn) == SCHEMA_VERSION and _has_late_tables(conn):
        return
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        if schema is not None:
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
            conn.execute(sql.SQL("SET LOCAL search_path TO {}").format(sql.Identifier(schema)))
        found = _schema_version(conn)
        if found is not None and found > SCHEMA_VERSION:
            raise StoreError(
                f"{url}: the tables have schema version {found}, newer than the "
                f"{SCHEMA_VERSION} this waygraph reads; upgrade waygraph"
            )
        if found is not None and found < 4:
            exists = conn.execute("SELECT to_regclass('records')").fetchone()
            if exists is not None and exists[0] is not None:
                conn.execute(
                    "ALTER TABLE records ADD COLUMN IF NOT EXISTS latest integer NOT NULL DEFAULT 0"
                )
                conn.execute(_FILL_LATEST)
        for statement in _TABLES:
            conn.execute(statement)
        migrate_data(
            conn, found, SCHEMA_VERSION, renames=_RENAME_KINDS, dialect="postgres", mark="%s"
        )


def _has_late_tables(conn: psycopg.Connection[Any]) -> bool:
    # Changes made without a bump: both sessions-table indexes (records_rows
    # came after schema 1), the listeners table, records_session dropped.
    found = conn.execute(
        "SELECT to_regclass('records_rows'), to_regclass('records_latest'),"
        " to_regclass('listeners'),"
        " CASE WHEN to_regclass('records_session') IS NULL THEN 'dropped' END"
    ).fetchone()
    return found is not None and None not in found


def _schema_version(conn: psycopg.Connection[Any]) -> int | None:
    exists = conn.execute("SELECT to_regclass('meta')").fetchone()
    if exists is None or exists[0] is None:
        return None
    row = conn.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()
    return None if row is None else int(row[0])
