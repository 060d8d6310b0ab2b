"""PostgreSQL stores behave the same whatever the database's default isolation, URL options
and dropped connections."""

from __future__ import annotations

import threading
import uuid
from typing import Any
from urllib.parse import quote

import pytest

from waygraph.errors import Conflict
from waygraph.store import open_store

pytestmark = pytest.mark.services


def _with_options(url: str, options: str) -> str:
    return f"{url}&options={quote(options)}"


def test_libpq_options_with_spaces_reach_the_server(postgres_own_url: str) -> None:
    # `+` is a plain character to libpq: re-encoding the query beside
    # ?schema= once turned this value into "-c+application_name=...".
    store = open_store(_with_options(postgres_own_url, "-c application_name=wg\\ probe"))
    try:
        rows = store._fetch("probe", "SHOW application_name", ())  # type: ignore[attr-defined]
        assert rows == [("wg probe",)]
    finally:
        store.close()


def test_contending_writers_see_conflicts_not_errors_under_repeatable_read(
    postgres_own_url: str,
) -> None:
    # A database whose default isolation is REPEATABLE READ: a commit that
    # waited for another writer's row failed "could not serialize access"
    # (a StoreError, which a Navigator does not retry) instead of Conflict.
    url = _with_options(postgres_own_url, "-c default_transaction_isolation=repeatable\\ read")
    store = open_store(url)
    try:
        store.commit("k", {"n": 0}, 0, [], session="s", status="running")
        errors: list[BaseException] = []

        def writer() -> None:
            for _ in range(25):
                while True:
                    stored = store.get("k")
                    assert stored is not None
                    try:
                        store.commit(
                            "k",
                            {"n": stored.data["n"] + 1},
                            stored.version,
                            [{"type": "bump"}],
                            session="s",
                            status="running",
                        )
                        break
                    except Conflict:
                        continue
                    except BaseException as exc:  # the test reports it
                        errors.append(exc)
                        return

        threads = [threading.Thread(target=writer) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        stored = store.get("k")
        assert stored is not None and stored.data == {"n": 150}
        assert len(store.events("k")) == 150
        assert store.session_rows().total == 1
    finally:
        store.close()


def test_after_the_server_drops_every_connection_one_call_fails_not_one_per_connection(
    postgres_own_url: str,
) -> None:
    import psycopg

    from waygraph.errors import StoreError
    from waygraph.store.postgres import PostgresStore, split_schema

    name = f"wg_drop_{uuid.uuid4().hex[:8]}"
    store = PostgresStore(f"{postgres_own_url}&application_name={name}", min_size=4, max_size=4)
    try:
        store.commit("k", {"n": 0}, 0, [], session="s")
        _fill_the_pool(store)
        conninfo, _ = split_schema(postgres_own_url)
        with psycopg.connect(conninfo, autocommit=True) as admin:
            dropped = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE application_name = %s",
                (name,),
            ).fetchone()
        assert dropped is not None and dropped[0] >= 4
        # A read is tried again on a fresh connection: nothing to see for the caller.
        stored = store.get("k")
        assert stored is not None and stored.version == 1
        _fill_the_pool(store)  # the replacements the read's check asked for, all idle
        _drop_again(conninfo, name)
        # A commit is not (it may have landed before the connection went): it
        # fails once, and the dead connections beside it are replaced.
        with pytest.raises(StoreError, match="committing 'k' failed"):
            store.commit("k", {"n": 1}, 1, [], session="s")
        for version in range(1, 5):
            assert store.commit("k", {"n": version}, version, [], session="s") == version + 1
    finally:
        store.close()


def _fill_the_pool(store: Any) -> None:
    """Hold every pooled connection at once, so each has been opened and is idle after."""
    store._pool.wait()  # the pool opens its connections in the background
    conns = [store._pool.getconn() for _ in range(4)]
    for conn in conns:
        store._pool.putconn(conn)


def _drop_again(conninfo: str, name: str) -> None:
    import psycopg

    with psycopg.connect(conninfo, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            (name,),
        )


def test_records_session_is_dropped_and_queries_by_session_read_records_rows(
    postgres_own_url: str,
) -> None:
    # An update is never HOT (it changes the indexed updated_at), so every
    # index of records gets an entry per update: records_session was one
    # more for nothing, since records_rows starts with the session.
    import psycopg

    from waygraph.store.postgres import split_schema

    open_store(postgres_own_url).close()
    conninfo, schema = split_schema(postgres_own_url)
    with psycopg.connect(conninfo, autocommit=True, options=f"-c search_path={schema}") as conn:
        conn.execute("CREATE INDEX records_session ON records (session)")  # as stores had it
        store = open_store(postgres_own_url)
        try:
            assert conn.execute("SELECT to_regclass('records_session')").fetchone() == (None,)
            for i in range(50):
                store.commit(f"k{i}", {}, 0, [], session=f"s{i % 5}")
            conn.execute("ANALYZE records")
            conn.execute("SET enable_seqscan = off")
            plan = " ".join(
                row[0]
                for row in conn.execute(
                    "EXPLAIN SELECT key FROM records WHERE session = 's1'"
                ).fetchall()
            )
            assert "records_rows" in plan
            assert [r.key for r in store.list(session="s1", limit=100)] != []
        finally:
            store.close()
