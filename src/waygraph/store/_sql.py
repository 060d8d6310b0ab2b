"""A list query's filters (both SQL stores) and the writes after a SQLite commit's record row.

Example:
    >>> sql_filters("?", kind="dag", session=None, status="running", plan=None,
    ...             correlation_id=None)
    (' WHERE kind = ? AND status = ?', ['dag', 'running'])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from waygraph.model.record import kind_names
from waygraph.store._commits import Commit
from waygraph.store._counts_sql import Dialect, recount
from waygraph.store._stats_sql import fill, runners

__all__ = ["commit_writes", "migrate_data", "sql_filters"]


def sql_filters(
    placeholder: str,
    *,
    kind: str | None,
    session: str | None,
    status: str | None,
    plan: str | None,
    correlation_id: str | None,
) -> tuple[str, list[Any]]:
    """The WHERE clause (empty, or starting with `` WHERE ``) and parameters of a list query.

    For the SQL backends; ``placeholder`` is the driver's parameter mark.

    Example:
        >>> sql_filters("?", kind="dag", session=None, status="running", plan=None,
        ...             correlation_id=None)
        (' WHERE kind = ? AND status = ?', ['dag', 'running'])
    """
    where: list[str] = []
    params: list[Any] = []
    if kind is not None:
        names = kind_names(kind)
        where.append(
            f"kind IN ({', '.join(placeholder for _ in names)})"
            if len(names) > 1
            else f"kind = {placeholder}"
        )
        params.extend(names)
    for column, value in (("session", session), ("status", status), ("plan", plan)):
        if value is not None:
            where.append(f"{column} = {placeholder}")
            params.append(value)
    if correlation_id is not None:
        where.append(
            f"key IN (SELECT key FROM record_correlations WHERE correlation_id = {placeholder})"
        )
        params.append(correlation_id)
    return (" WHERE " + " AND ".join(where) if where else ""), params


def commit_writes(
    c: Commit, last_seq: int, mark: str, *, had: Sequence[str] = ()
) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """The writes that follow a commit's record row (SQLite; PostgreSQL has its own).

    Returns ``(statement, rows)`` pairs to run with ``executemany`` in the
    commit's transaction, in order: the correlation rows the record no longer
    has deleted (``had``: the ids it had before, none for a new record) and
    its new ones inserted, the events appended (the last of which gets
    ``last_seq``), the session pointer moved. Correlation rows the record
    keeps are not touched: rewriting an unchanged row still writes its page.
    ``mark`` is the driver's parameter mark.

    Example:
        >>> from waygraph.store._commits import normalise_commit
        >>> c = normalise_commit("k", {}, 1, [{"e": 1}], kind="guided", session=None,
        ...                      status=None, plan=None, correlation_ids=["c", "d"],
        ...                      make_current=False)
        >>> [(s.split()[0], rows) for s, rows in commit_writes(c, 7, "?", had=["b", "c"])]
        [('DELETE', [('b', 'k')]), ('INSERT', [('d', 'k')]), ('INSERT', [('k', 7, '{"e":1}')])]
    """
    key, n = c.key, len(c.events)
    writes: list[tuple[str, list[tuple[Any, ...]]]] = []
    gone = [cid for cid in had if cid not in c.correlation_ids]
    if gone:
        writes.append(
            (
                f"DELETE FROM record_correlations WHERE correlation_id = {mark} AND key = {mark}",
                [(cid, key) for cid in gone],
            )
        )
    added = [cid for cid in c.correlation_ids if cid not in had]
    if added:
        writes.append(
            (
                f"INSERT INTO record_correlations (correlation_id, key) VALUES ({mark}, {mark})",
                [(cid, key) for cid in added],
            )
        )
    if n:
        first = last_seq - n + 1
        writes.append(
            (
                f"INSERT INTO events (key, seq, data) VALUES ({mark}, {mark}, {mark})",
                [(key, first + i, text) for i, text in enumerate(c.events)],
            )
        )
    if c.make_current and c.session is not None:
        writes.append(
            (
                f"INSERT INTO session_pointers (session, key) VALUES ({mark}, {mark}) "
                "ON CONFLICT (session) DO UPDATE SET key = excluded.key",
                [(c.session, key)],
            )
        )
    return writes


def migrate_data(
    conn: Any,
    found: int | None,
    version: int,
    *,
    renames: Sequence[str],
    dialect: Dialect,
    mark: str,
) -> None:
    """The data steps of opening tables of schema ``found`` (None: new), once they all exist.

    Both SQL stores run them inside their schema transaction: schema 2's
    kind names (``renames``), schema 3's counted runs, schema 5's kept row
    counts, then ``meta.schema_version`` set to ``version``. ``conn`` is the
    driver's connection (``execute(sql, params)``), ``mark`` its placeholder.
    """
    if found is not None and found < 2:
        for statement in renames:
            conn.execute(statement)
    if found is not None and found < 3:
        # Runs finished before schema 3 are counted once, here.
        fill(*runners(conn), mark)
    if found is None or found < 5:
        for statement in recount(dialect):  # rows flagged until now, counted once
            conn.execute(statement)
    conn.execute(
        f"INSERT INTO meta (name, value) VALUES ('schema_version', {mark}) "
        "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        (str(version),),
    )
