"""The sessions table as a store answers it: one page of rows, their total, counts per status.

A *row* is a session's latest record of one kind (a guided run and an
event-driven plan in one session are two rows); a record with no session is
a row of its own. :meth:`Store.session_rows` returns a :class:`RowPage`; the
SQL stores answer with indexed queries (:func:`rows_sql`) and counts they keep
(``waygraph.store._counts_sql``), the others with
:func:`rows_by_listing`, which reads every record (fine for the memory and
file stores, which are not for fleets).

Example:
    >>> from waygraph.store import open_store
    >>> store = open_store("memory://")
    >>> for key, status in (("r1", "completed"), ("r2", "running")):
    ...     _ = store.commit(key, {}, 0, [], session="s1", status=status)
    >>> page = store.session_rows()
    >>> [r.key for r in page.records], page.total, page.counts
    (['r2'], 1, {'running': 1})
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from waygraph.model.record import kind_names

if TYPE_CHECKING:
    from waygraph.store.base import Store, StoredRecord

__all__ = [
    "RowPage",
    "check_rows",
    "keep_latest",
    "kind_where",
    "latest_sql",
    "like_pattern",
    "matches",
    "page_of",
    "rows_by_listing",
    "rows_sql",
]


@dataclass(frozen=True, slots=True)
class RowPage:
    """One page of sessions-table rows, newest activity first.

    ``total``: rows matching every filter. ``counts``: rows per status
    matching every filter but ``status`` (None for rows with no status), so
    a status filter's chips can say how many each would show. The SQL
    stores keep them unless a search or a plan filter narrows the rows;
    otherwise they need every row read. Asked with ``count=False`` a store
    skips them (``total`` None, ``counts`` empty).
    """

    records: list[StoredRecord]
    total: int | None
    counts: dict[str | None, int] = field(default_factory=dict)


def page_of(
    records: list[StoredRecord],
    counts: Iterable[tuple[str | None, Any]] | None,
    status: str | None,
) -> RowPage:
    """The page of ``records`` with the totals of ``counts`` (status, rows) pairs.

    ``counts`` None: the caller skipped counting (``total`` None).

    Example:
        >>> page_of([], [("running", 2), ("completed", 3)], "running").total
        2
    """
    if counts is None:
        return RowPage(records, None)
    by_status: dict[str | None, int] = {s: int(n) for s, n in counts}
    total = by_status.get(status, 0) if status is not None else sum(by_status.values())
    return RowPage(records, total, by_status)


def check_rows(offset: int, limit: int) -> None:
    """Refuse a negative or non-int ``offset``/``limit`` (caller bugs, not store trouble)."""
    for name, value in (("offset", offset), ("limit", limit)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int (got {value!r})")
        if value < 0:
            raise ValueError(f"{name} must be 0 or more (got {value})")


def matches(search: str | None, *values: str | None) -> bool:
    """Whether ``search`` is part of any value, ignoring case (no search: True).

    Example:
        >>> matches("LOGIN", "chat-login-7", None), matches("x", "abc")
        (True, False)
    """
    if not search:
        return True
    needle = search.lower()
    return any(needle in value.lower() for value in values if value)


def like_pattern(search: str) -> str:
    r"""A LIKE pattern finding ``search`` anywhere, its ``%``, ``_`` and ``\`` taken literally.

    Example:
        >>> like_pattern("50%_off")
        '%50\\%\\_off%'
    """
    escaped = search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def rows_by_listing(
    store: Store,
    *,
    kind: str | None,
    status: str | None,
    plan: str | None,
    search: str | None,
    exclude_kinds: Sequence[str],
    offset: int,
    limit: int,
    count: bool = True,
) -> RowPage:
    """:meth:`Store.session_rows` for a store that can only list: reads every record once."""
    rows: list[StoredRecord] = []
    seen: set[tuple[str, str]] = set()
    counts: dict[str | None, int] = {}
    for record in store.list(kind=kind):  # newest first
        if record.kind in exclude_kinds:
            continue
        if record.session is not None:
            group = (record.session, record.kind)
            if group in seen:
                continue
            seen.add(group)
        if plan is not None and record.plan != plan:
            continue
        if not matches(search, record.session, record.plan, record.status):
            continue
        counts[record.status] = counts.get(record.status, 0) + 1
        if status is None or record.status == status:
            rows.append(record)
    if not count:
        return RowPage(rows[offset : offset + limit], None)
    return RowPage(rows[offset : offset + limit], len(rows), counts)


def rows_sql(
    mark: str,
    *,
    like: str,
    kind: str | None,
    plan: str | None,
    search: str | None,
    exclude_kinds: Sequence[str],
    scan_index: str = "",
    columns: str = "r.*",
) -> tuple[str, list[Any]]:
    """The SQL stores' query of every row (before status, order and paging), and its parameters.

    A record is a row when its ``latest`` flag is set: the store keeps it on
    the record of each session and kind that was committed last
    (:func:`latest_sql`), and on every record without a session. So a page
    reads its own rows and the count one index, never a probe per row.
    ``mark`` is the driver's parameter mark; ``like`` its case-insensitive
    LIKE (``LIKE`` in SQLite, ``ILIKE`` in PostgreSQL); ``scan_index`` pins
    the index the scan reads (SQLite); with a covering index and ``columns``
    naming only indexed columns, no record's data is read.

    Example:
        >>> sql, params = rows_sql("?", like="LIKE", kind=None, plan="p", search=None,
        ...                        exclude_kinds=["plan"])
        >>> params
        ['plan', 'p']
    """
    where, params = kind_where(mark, kind=kind, exclude_kinds=exclude_kinds, column="r.kind")
    where.insert(0, "r.latest = 1")
    if plan is not None:
        where.append(f"r.plan = {mark}")
        params.append(plan)
    if search:
        where.append(
            "("
            + " OR ".join(f"r.{c} {like} {mark} ESCAPE '\\'" for c in ("session", "plan", "status"))
            + ")"
        )
        params.extend([like_pattern(search)] * 3)
    return f"SELECT {columns} FROM records r{scan_index} WHERE " + " AND ".join(where), params


def kind_where(
    mark: str, *, kind: str | None, exclude_kinds: Sequence[str], column: str
) -> tuple[list[str], list[Any]]:
    """The conditions (to join with AND) and parameters that keep a row's kind.

    Example:
        >>> kind_where("?", kind="guided", exclude_kinds=["plan"], column="kind")
        (['kind NOT IN (?)', 'kind IN (?, ?)'], ['plan', 'guided', 'run'])
    """
    where: list[str] = []
    params: list[Any] = []
    if exclude_kinds:
        where.append(f"{column} NOT IN ({', '.join(mark for _ in exclude_kinds)})")
        params.extend(exclude_kinds)
    if kind is not None:
        names = kind_names(kind)
        where.append(f"{column} IN ({', '.join(mark for _ in names)})")
        params.extend(names)
    return where, params


def keep_latest(
    execute: Callable[[str, Sequence[Any]], object],
    move: str,
    mark: str,
    *,
    key: str,
    session: str | None,
    kind: str,
    flagged: bool,
) -> None:
    """Inside a commit's transaction: make ``key``, just written, its session's row.

    ``flagged``: whether the record carries the ``latest`` flag already (what
    the write returned); ``move`` is the second statement of
    :func:`latest_sql` and ``execute`` the driver's. A record with the flag
    costs nothing.
    """
    if flagged:
        return
    if session is None:
        execute(f"UPDATE records SET latest = 1 WHERE key = {mark}", (key,))
    else:
        execute(move, (key, session, kind, key))


def latest_sql(mark: str, *, collate: str = "") -> tuple[str, str]:
    """The two statements that keep the ``latest`` flag (see :func:`rows_sql`).

    The first, run once when a store's tables get the flag, sets it on each
    session's newest record per kind (later ``updated_at``, then smaller key,
    as ``list`` orders them) and on every record without a session. The
    second, run in a commit whose record (parameters: key, session, kind,
    key) did not carry the flag, moves it there from the session's other
    record of that kind. A running run's turn commits the record that
    already has it, so it pays neither.

    Example:
        >>> fill, move = latest_sql("?")
        >>> move.startswith("UPDATE records SET latest = CASE WHEN key = ?")
        True
    """
    newer = (
        "SELECT 1 FROM records n WHERE n.session = records.session AND n.kind = records.kind"
        " AND (n.updated_at > records.updated_at OR (n.updated_at = records.updated_at"
        f" AND n.key{collate} < records.key{collate}))"
    )
    fill = (
        "UPDATE records SET latest = CASE WHEN session IS NULL OR NOT EXISTS"
        f" ({newer}) THEN 1 ELSE 0 END"
    )
    move = (
        f"UPDATE records SET latest = CASE WHEN key = {mark} THEN 1 ELSE 0 END"
        f" WHERE session = {mark} AND kind = {mark} AND (latest = 1 OR key = {mark})"
    )
    return fill, move
