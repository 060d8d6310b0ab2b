"""The sessions table's flag: the row of a session is the record it committed last, on
SQLite (files of older schemas included) and PostgreSQL.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.store_backends import empty_postgres, open_backend
from waygraph.store import Store, open_store

# ---------------------------------------------------------------- the sessions table's flag


def _flagged(store: Store) -> list[str]:
    return sorted(r.key for r in store.session_rows(limit=1000).records)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_row_of_a_session_is_the_record_it_committed_last(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = open_backend(backend, tmp_path, request)
    try:
        store.commit("old", {}, 0, [], session="s", status="running")
        store.commit("new", {}, 0, [], session="s", status="running")
        store.commit("evt", {}, 0, [], kind="event", session="s", status="running")
        store.commit("solo", {}, 0, [], status="running")  # no session: a row of its own
        assert _flagged(store) == ["evt", "new", "solo"]
        # An older run written again is the session's row again, and only it.
        store.commit("old", {}, 1, [], session="s", status="aborted")
        page = store.session_rows(limit=1000)
        assert sorted(r.key for r in page.records) == ["evt", "old", "solo"]
        assert page.total == 3 and page.counts == {"aborted": 1, "running": 2}
        assert [r.key for r in store.session_rows(status="aborted").records] == ["old"]
    finally:
        store.close()


def test_a_sqlite_file_of_schema_3_gets_the_flag_on_open(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with open_store(f"sqlite:///{path}") as store:
        for key, session in (("a1", "s1"), ("a2", "s1"), ("b1", "s2"), ("n1", None)):
            store.commit(key, {}, 0, [], session=session, status="running")
        store.commit("a1", {}, 1, [], session="s1", status="completed")  # newest of s1 now
    conn = sqlite3.connect(path)
    for name in ("insert", "update", "delete"):  # schema 5's counts
        conn.execute(f"DROP TRIGGER row_counts_{name}")
    conn.execute("DROP TABLE row_counts")
    conn.execute("DROP INDEX records_latest")
    conn.execute("DROP INDEX records_rows")  # schema 5 added latest to it
    conn.execute("ALTER TABLE records DROP COLUMN latest")  # as schema 3 left the table
    conn.execute(
        "CREATE INDEX records_rows ON records (session, kind, updated_at, key, status, plan)"
    )
    conn.execute("UPDATE meta SET value = '3' WHERE name = 'schema_version'")
    conn.commit()
    conn.close()
    with open_store(f"sqlite:///{path}") as store:
        page = store.session_rows()
        assert sorted(r.key for r in page.records) == ["a1", "b1", "n1"]
        assert page.counts == {"completed": 1, "running": 2}
        store.commit("a2", {}, 1, [], session="s1", status="completed")
        assert _flagged(store) == ["a2", "b1", "n1"]
        assert [r.key for r in store.session_rows(search="S1").records] == ["a2"]
    conn = sqlite3.connect(path)
    try:
        # Made again with the flag, so a search reads the index alone.
        columns = [row[2] for row in conn.execute("PRAGMA index_info(records_rows)")]
        assert columns[-1] == "latest"
    finally:
        conn.close()


@pytest.mark.services
def test_postgres_commits_racing_in_one_session_leave_one_row(postgres_url: str) -> None:
    import threading

    stores = [empty_postgres(postgres_url)] + [open_store(postgres_url) for _ in range(3)]
    try:
        stores[0].commit("seed", {}, 0, [], session="s", status="running")
        start = threading.Barrier(len(stores))

        def writer(n: int) -> None:
            start.wait()
            for i in range(15):
                stores[n].commit(f"w{n}-{i}", {}, 0, [], session="s", status="running")

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(len(stores))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        page = stores[0].session_rows(limit=1000)
        assert len(page.records) == 1 and page.total == 1
    finally:
        for store in stores:
            store.close()
