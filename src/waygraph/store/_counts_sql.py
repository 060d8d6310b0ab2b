"""The sessions table's counts in the SQL stores: rows per kind and status, kept by triggers.

A sessions-table row is a record flagged ``latest`` (:mod:`waygraph.store.rows`).
Schema 5 keeps how many there are of each kind and status in ``row_counts``,
changed by triggers on ``records`` in the transaction of every write that
changes a flagged record's kind or status or moves the flag, so the counts a
page shows cost the same with 100 or 100,000 rows and stay exact.

Triggers rather than statements in the commit path: the flag moves in one
UPDATE that touches two records, a migration renames kinds, and a process
still running an older waygraph goes on writing a file it opened before the
migration; a trigger sees every one of those writes, and a running run's
turn (neither status nor flag changes) is not even queued.

- SQLite (one writer at a time): one row per kind and status, upserted.
- PostgreSQL: concurrent commits would queue on those few rows (every
  finishing run moves two), and two transactions taking two rows in
  opposite orders would deadlock. So a trigger only inserts delta rows
  (+1/-1), which lock nothing another transaction wants; a read sums them.
  Every ``FOLD_EVERY``-th delta its transaction folds them into one row per
  kind and status (one at a time: the others skip, they do not wait), so a
  read sums a few hundred rows at most, whatever the store's size.

Example:
    >>> sql, params = counts_sql("?", "sqlite", kind=None, exclude_kinds=["plan"])
    >>> sql.startswith("SELECT CASE WHEN status_null = 1"), params
    (True, ['plan'])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from waygraph.store.rows import kind_where

__all__ = ["FOLD_EVERY", "counts_schema", "counts_sql", "recount"]

Dialect = Literal["sqlite", "postgres"]

#: PostgreSQL: a transaction whose delta row's id is a multiple of this folds them.
FOLD_EVERY = 256

# SQLite: None is not a key value ON CONFLICT can match (NULLs are distinct),
# so a row without status is '' with status_null = 1 ('' itself is a status).
_SQLITE_TABLE = """CREATE TABLE IF NOT EXISTS row_counts (
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    status_null INTEGER NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (kind, status, status_null)
) WITHOUT ROWID"""


def _sqlite_add(row: str, n: int) -> str:
    """SQLite: add ``n`` to the count of ``row`` (``old``/``new``) if it is flagged."""
    return (
        "INSERT INTO row_counts (kind, status, status_null, n)"
        f" SELECT {row}.kind, ifnull({row}.status, ''), {row}.status IS NULL, {n}"
        f" WHERE {row}.latest = 1"
        " ON CONFLICT (kind, status, status_null) DO UPDATE SET n = n + excluded.n;"
    )


# Fired only when a flagged record's counted attributes change (the WHEN),
# so a running run's turn evaluates one condition and writes nothing more.
_CHANGED = (
    "(old.latest = 1 OR new.latest = 1) AND (old.latest IS NOT new.latest"
    " OR old.kind IS NOT new.kind OR old.status IS NOT new.status)"
)

_SQLITE_TRIGGERS = (
    "CREATE TRIGGER IF NOT EXISTS row_counts_insert AFTER INSERT ON records"
    f" WHEN new.latest = 1 BEGIN {_sqlite_add('new', 1)} END",
    "CREATE TRIGGER IF NOT EXISTS row_counts_update AFTER UPDATE OF kind, status, latest"
    f" ON records WHEN {_CHANGED}"
    f" BEGIN {_sqlite_add('old', -1)} {_sqlite_add('new', 1)} END",
    "CREATE TRIGGER IF NOT EXISTS row_counts_delete AFTER DELETE ON records"
    f" WHEN old.latest = 1 BEGIN {_sqlite_add('old', -1)} END",
)

# PostgreSQL: no key, no index: rows are only ever appended, summed or folded.
_POSTGRES_TABLE = """CREATE TABLE IF NOT EXISTS row_counts (
    id bigserial NOT NULL,
    kind text NOT NULL,
    status text,
    n bigint NOT NULL
)"""

# The fold deletes the deltas its statement sees and inserts their sums in
# one statement, so every snapshot sums to the same counts before and after.
# Only under READ COMMITTED: under REPEATABLE READ a row another fold
# deleted since the snapshot would fail the writer's commit. waygraph's own
# commits are READ COMMITTED whatever the database's default (postgres._BEGIN);
# the check keeps writers of other programs from failing.
_FOLD = (
    "WITH gone AS (DELETE FROM row_counts RETURNING kind, status, n)"
    " INSERT INTO row_counts (kind, status, n)"
    " SELECT kind, status, SUM(n) FROM gone GROUP BY kind, status HAVING SUM(n) <> 0"
)

# SET search_path FROM CURRENT: the function finds the tables of the schema
# it was made in, whatever the writing connection's search_path.
_POSTGRES_FUNCTION = f"""CREATE OR REPLACE FUNCTION row_counts_keep() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    delta bigint;
BEGIN
    IF TG_OP <> 'INSERT' AND OLD.latest = 1 THEN
        INSERT INTO row_counts (kind, status, n) VALUES (OLD.kind, OLD.status, -1)
            RETURNING row_counts.id INTO delta;
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.latest = 1 THEN
        INSERT INTO row_counts (kind, status, n) VALUES (NEW.kind, NEW.status, 1)
            RETURNING row_counts.id INTO delta;
    END IF;
    IF delta % {FOLD_EVERY} = 0
        AND current_setting('transaction_isolation') = 'read committed'
        AND pg_try_advisory_xact_lock(hashtext('waygraph.row_counts.' || TG_TABLE_SCHEMA))
    THEN
        {_FOLD};
    END IF;
    RETURN NULL;
END
$$"""

_POSTGRES_TRIGGERS = (
    "DROP TRIGGER IF EXISTS row_counts_insert ON records",
    "CREATE TRIGGER row_counts_insert AFTER INSERT ON records FOR EACH ROW"
    " WHEN (NEW.latest = 1) EXECUTE FUNCTION row_counts_keep()",
    "DROP TRIGGER IF EXISTS row_counts_update ON records",
    "CREATE TRIGGER row_counts_update AFTER UPDATE OF kind, status, latest ON records"
    " FOR EACH ROW WHEN ((OLD.latest = 1 OR NEW.latest = 1) AND (OLD.latest <> NEW.latest"
    " OR OLD.kind IS DISTINCT FROM NEW.kind OR OLD.status IS DISTINCT FROM NEW.status))"
    " EXECUTE FUNCTION row_counts_keep()",
    "DROP TRIGGER IF EXISTS row_counts_delete ON records",
    "CREATE TRIGGER row_counts_delete AFTER DELETE ON records FOR EACH ROW"
    " WHEN (OLD.latest = 1) EXECUTE FUNCTION row_counts_keep()",
)


def counts_schema(dialect: Dialect) -> tuple[str, ...]:
    """The counts table and its triggers, to run after ``records`` exists.

    Example:
        >>> [s.split()[1] for s in counts_schema("sqlite")]
        ['TABLE', 'TRIGGER', 'TRIGGER', 'TRIGGER']
    """
    if dialect == "sqlite":
        return (_SQLITE_TABLE, *_SQLITE_TRIGGERS)
    return (_POSTGRES_TABLE, _POSTGRES_FUNCTION, *_POSTGRES_TRIGGERS)


def recount(dialect: Dialect) -> tuple[str, str]:
    """The two statements that set the counts from the flagged records (on migration).

    Example:
        >>> recount("postgres")[0]
        'DELETE FROM row_counts'
    """
    if dialect == "sqlite":
        fill = (
            "INSERT INTO row_counts (kind, status, status_null, n)"
            " SELECT kind, ifnull(status, ''), status IS NULL, COUNT(*) FROM records"
            " WHERE latest = 1 GROUP BY kind, ifnull(status, ''), status IS NULL"
        )
    else:
        fill = (
            "INSERT INTO row_counts (kind, status, n)"
            " SELECT kind, status, COUNT(*) FROM records WHERE latest = 1 GROUP BY kind, status"
        )
    return "DELETE FROM row_counts", fill


def counts_sql(
    mark: str, dialect: Dialect, *, kind: str | None, exclude_kinds: Sequence[str]
) -> tuple[str, list[Any]]:
    """The query of the rows per status (status, count), with ``kind``/``exclude_kinds``.

    Reads the counts table only: a few rows per kind and status (and, in
    PostgreSQL, the deltas since the last fold).

    Example:
        >>> counts_sql("%s", "postgres", kind="dag", exclude_kinds=[])
        ('SELECT status, SUM(n) FROM row_counts WHERE kind IN (%s) GROUP BY status HAVING SUM(n) <> 0', ['dag'])
    """  # noqa: E501
    where, params = kind_where(mark, kind=kind, exclude_kinds=exclude_kinds, column="kind")
    status = (
        "CASE WHEN status_null = 1 THEN NULL ELSE status END" if dialect == "sqlite" else "status"
    )
    group = "status, status_null" if dialect == "sqlite" else "status"
    condition = f" WHERE {' AND '.join(where)}" if where else ""
    return (
        f"SELECT {status}, SUM(n) FROM row_counts{condition} GROUP BY {group} HAVING SUM(n) <> 0",
        params,
    )
