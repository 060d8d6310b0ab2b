"""What the SQL stores (SQLite, PostgreSQL) share: a list query's filters and a commit's writes.

Example:
    >>> sql_filters("?", kind="dag", session=None, status="running", plan=None,
    ...             correlation_id=None)
    (' WHERE kind = ? AND status = ?', ['dag', 'running'])
"""

from __future__ import annotations

from typing import Any

from waygraph.model.record import kind_names
from waygraph.store.base import Commit

__all__ = ["commit_writes", "sql_filters"]


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
    c: Commit, last_seq: int, mark: str, *, json_cast: str = ""
) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """The writes that follow a commit's record row, for the SQL backends.

    Returns ``(statement, rows)`` pairs to run with ``executemany`` in the
    commit's transaction, in order: replace the correlation rows, append the
    events (the last of which gets ``last_seq``), move the session pointer.
    ``mark`` is the driver's parameter mark; ``json_cast`` is appended to the
    event data's mark (PostgreSQL: ``::json``).

    Example:
        >>> from waygraph.store.base import normalise_commit
        >>> c = normalise_commit("k", {}, 1, [{"e": 1}], kind="guided", session=None,
        ...                      status=None, plan=None, correlation_ids=["c"], make_current=False)
        >>> [(statement.split()[0], rows) for statement, rows in commit_writes(c, 7, "?")]
        [('DELETE', [('k',)]), ('INSERT', [('c', 'k')]), ('INSERT', [('k', 7, '{"e":1}')])]
    """
    key, n = c.key, len(c.events)
    writes: list[tuple[str, list[tuple[Any, ...]]]] = []
    if c.expected_version != 0:
        writes.append((f"DELETE FROM record_correlations WHERE key = {mark}", [(key,)]))
    if c.correlation_ids:
        writes.append(
            (
                f"INSERT INTO record_correlations (correlation_id, key) VALUES ({mark}, {mark})",
                [(cid, key) for cid in c.correlation_ids],
            )
        )
    if n:
        first = last_seq - n + 1
        writes.append(
            (
                f"INSERT INTO events (key, seq, data) VALUES ({mark}, {mark}, {mark}{json_cast})",
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
