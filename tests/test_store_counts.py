"""The sessions table's counts kept by the SQL stores (schema 5) always equal a count of the rows.

Each check compares what ``session_rows`` answers from the kept counts with
two counts made from scratch: ``SELECT count(*)`` of the flagged records,
and :func:`rows_by_listing`, which reads every record and knows nothing of
flags or counters.
"""

from __future__ import annotations

import shutil
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.store_backends import empty_postgres
from waygraph import Navigator
from waygraph.model.record import kind_names
from waygraph.store import Store, Write, open_store
from waygraph.store._counts_sql import FOLD_EVERY
from waygraph.store.rows import rows_by_listing
from waygraph.store.sqlite import SCHEMA_VERSION

FIXTURES = Path(__file__).parent / "fixtures" / "records"

#: The filters the sessions page counts with (no search, no plan: those scan).
VIEWS: list[dict[str, Any]] = [
    {},
    {"exclude_kinds": ["plan"]},
    {"exclude_kinds": ["plan"], "kind": "guided"},
    {"kind": "event"},
    {"exclude_kinds": ["plan"], "status": "running"},
]


def _scan(store: Store, **view: Any) -> dict[str | None, int]:
    """The counts per status from the records themselves: count(*) of the flagged rows."""
    kinds = view.get("exclude_kinds", [])
    wanted = kind_names(view["kind"]) if view.get("kind") else None
    query = "SELECT kind, status, COUNT(*) FROM records WHERE latest = 1 GROUP BY kind, status"
    if hasattr(store, "_pool"):
        with store._pool.connection() as conn:
            found = conn.execute(query).fetchall()
    else:
        with store._lock:
            found = store._conn().execute(query).fetchall()
    counts: dict[str | None, int] = {}
    for kind, status, n in found:
        if kind in kinds or (wanted is not None and kind not in wanted):
            continue
        counts[status] = counts.get(status, 0) + n
    return counts


def assert_counts_exact(store: Store) -> None:
    """Every view's kept counts equal count(*) of the flagged rows and a listing of the records."""
    for view in VIEWS:
        page = store.session_rows(**view)
        listed = rows_by_listing(
            store,
            kind=view.get("kind"),
            status=view.get("status"),
            plan=None,
            search=None,
            exclude_kinds=view.get("exclude_kinds", ()),
            offset=0,
            limit=0,
        )
        assert page.counts == _scan(store, **view) == listed.counts, view
        assert page.total == listed.total, view


def _open(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Store:
    if backend == "sqlite":
        return open_store(f"sqlite:///{tmp_path / 'counts.db'}")
    return empty_postgres(request.getfixturevalue("postgres_url"))


BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.services)]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    opened = _open(request.param, tmp_path, request)
    yield opened
    opened.close()


# ---------------------------------------------------------------- migration


def test_a_schema_4_file_gets_its_counts_on_open(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "schema4.db", tmp_path / "old.db")
    with open_store(f"sqlite:///{tmp_path / 'old.db'}") as store:
        assert_counts_exact(store)
        page = store.session_rows(exclude_kinds=["plan"])
        # The fixture's rows: a row with no status and one with '' are both counted.
        assert page.counts == {"running": 4, "completed": 2, "aborted": 1, "": 1, None: 1}
        # The file carries on: a run finishing moves one count.
        run = next(r for r in store.list(session="s-a", kind="guided") if r.key == "a2")
        store.commit("a2", {}, run.version, [], session="s-a", status="completed")
        assert_counts_exact(store)
        assert store.session_rows(exclude_kinds=["plan"]).counts["completed"] == 3
    conn = sqlite3.connect(tmp_path / "old.db")
    try:
        assert conn.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone() == (
            str(SCHEMA_VERSION),
        )
        columns = [row[2] for row in conn.execute("PRAGMA index_info(records_rows)")]
        assert columns[-1] == "latest"  # a search reads this index alone
    finally:
        conn.close()


def test_a_schema_1_file_gets_its_counts_with_the_new_kind_names(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "old.db", tmp_path / "old.db")
    with open_store(f"sqlite:///{tmp_path / 'old.db'}") as store:
        assert_counts_exact(store)
        assert store.session_rows(kind="guided").total == 2


@pytest.mark.services
def test_postgres_tables_of_schema_4_get_their_counts_on_open(postgres_url: str) -> None:
    import psycopg

    from waygraph.store.postgres import split_schema

    store = empty_postgres(postgres_url)
    try:
        for key, session, status in (("a1", "s", "done"), ("a2", "s", "running"), ("n", None, "x")):
            store.commit(key, {}, 0, [], session=session, status=status)
    finally:
        store.close()
    conninfo, schema = split_schema(postgres_url)
    with psycopg.connect(conninfo, autocommit=True) as conn:  # as schema 4 left them
        conn.execute(f'DROP TABLE "{schema}".row_counts')
        conn.execute(f'DROP FUNCTION "{schema}".row_counts_keep CASCADE')
        conn.execute(f"UPDATE \"{schema}\".meta SET value = '4' WHERE name = 'schema_version'")
    with open_store(postgres_url) as store:
        assert store.session_rows().counts == {"running": 1, "x": 1}
        assert_counts_exact(store)


# ---------------------------------------------------------------- every way a count changes


def test_a_navigator_run_s_life_moves_its_count(store: Store) -> None:
    nav = Navigator(store=store, strict=True)
    bug = "The login test fails, please fix the bug"
    nav.turn("s1", user_message=bug)  # a new run: a new row
    nav.turn("s2", user_message=bug)
    assert store.session_rows(kind="guided").counts == {"running": 2}
    nav.turn("s1", tool_output="FAILED test_login.py::test_login", exit_code=1)  # no change
    assert_counts_exact(store)
    nav.reset("s1")  # aborted
    assert store.session_rows(kind="guided").counts == {"running": 1, "aborted": 1}
    nav.turn("s1", user_message=bug)  # s1's row is its new run now
    assert store.session_rows(kind="guided").counts == {"running": 2}
    nav.rewind("s2")
    assert_counts_exact(store)


_KINDS = ("guided", "event", "plan")
_STATUSES = ("running", "completed", "aborted", "", None)


def _write(store: Store, i: int, status: str | None) -> Write:
    """Record ``k{i}`` (its session and kind fixed by ``i``) with ``status``."""
    found = store.get(f"k{i}")
    return Write(
        f"k{i}",
        {},
        0 if found is None else found.version,
        [],
        kind=_KINDS[i % 3],
        session=None if i % 4 == 3 else f"s{i % 2}",
        status=status,
    )


_ops = st.lists(
    st.lists(st.tuples(st.integers(0, 11), st.sampled_from(_STATUSES)), min_size=1, max_size=3),
    min_size=1,
    max_size=12,
)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=_ops)
def test_counts_equal_a_count_after_any_commits(
    backend: str,
    ops: list[list[tuple[int, str | None]]],
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> None:
    # New records (a session's row moves to them), older ones written again
    # (the row moves back), status changes of rows and of records that are
    # not rows, alone or several in one commit_all.
    store = _open(backend, tmp_path_factory.mktemp("counts"), request)
    try:
        for batch in ops:
            writes: dict[str, Write] = {}
            for i, status in batch:
                writes[f"k{i}"] = _write(store, i, status)
            store.commit_all(list(writes.values()))
        assert_counts_exact(store)
    finally:
        store.close()


def test_sqlite_a_deleted_row_leaves_the_counts(tmp_path: Path) -> None:
    # No store method deletes a record today; the trigger is there for the one that will.
    with open_store(f"sqlite:///{tmp_path / 'd.db'}") as store:
        for i in range(4):
            store.commit_all([_write(store, i, "running")])
        with store._lock:  # type: ignore[attr-defined]
            store._conn().execute("DELETE FROM records WHERE key = 'k3'")  # type: ignore[attr-defined]
        assert_counts_exact(store)
        assert store.session_rows().total == 3


# ---------------------------------------------------------------- PostgreSQL under concurrency


def _deltas(store: Store) -> int:
    with store._pool.connection() as conn:  # type: ignore[attr-defined]
        return int(conn.execute("SELECT COUNT(*) FROM row_counts").fetchone()[0])


@pytest.mark.services
def test_postgres_folds_the_deltas_and_keeps_the_sum(postgres_url: str) -> None:
    store = empty_postgres(postgres_url)
    try:
        for n in range(FOLD_EVERY):  # each commit: a new row, and the session's old one moves
            store.commit_all([Write(f"r{n}", {}, 0, [], session=f"s{n % 5}", status="running")])
        assert _deltas(store) <= FOLD_EVERY  # folded: about 2 deltas a commit were written
        assert store.session_rows().counts == {"running": 5}
        assert_counts_exact(store)
    finally:
        store.close()


@pytest.mark.services
def test_postgres_concurrent_writers_keep_exact_counts(postgres_url: str) -> None:
    # Four processes' worth of connections finishing and starting runs in
    # the same few sessions: every commit moves counts, folds happen in the
    # middle of it, and none may wait on another's counts (no deadlock, no
    # lost update).
    stores = [empty_postgres(postgres_url)] + [open_store(postgres_url) for _ in range(3)]
    errors: list[BaseException] = []
    try:
        start = threading.Barrier(len(stores))

        def writer(n: int) -> None:
            try:
                start.wait()
                for i in range(60):
                    j = i // 2  # each record: created, then its status changed
                    key = f"w{n}-{j}"
                    found = stores[n].get(key)
                    stores[n].commit(
                        key,
                        {},
                        0 if found is None else found.version,
                        [],
                        kind=_KINDS[j % 2],
                        session=f"s{j % 3}",
                        status="running" if found is None else _STATUSES[(n + i) % 3],
                    )
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(len(stores))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert _deltas(stores[0]) < 4 * 60 * 2  # folded along the way
        assert_counts_exact(stores[0])
        assert stores[0].session_rows().total == 6  # three sessions, two kinds
    finally:
        for s in stores:
            s.close()
