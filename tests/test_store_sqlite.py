"""The SQLite store: its file, schema, indexes, transactions and refusals."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from waygraph.errors import StoreError
from waygraph.store import SQLiteStore, open_store
from waygraph.store.sqlite import SCHEMA_VERSION as SQLITE_SCHEMA

# ---------------------------------------------------------------- sqlite


def test_a_sqlite_file_made_before_the_sessions_index_gets_it_on_open(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with open_store(f"sqlite:///{path}") as store:
        store.commit("r1", {}, 0, [], session="s1", status="running")
    conn = sqlite3.connect(path)
    conn.execute("DROP INDEX records_rows")  # as waygraph wrote schema 1 before it
    conn.commit()
    conn.close()
    with open_store(f"sqlite:///{path}") as store:
        assert [r.key for r in store.session_rows().records] == ["r1"]
    conn = sqlite3.connect(path)
    try:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        assert "records_rows" in names
        version = conn.execute("SELECT value FROM meta WHERE name='schema_version'").fetchone()
        assert version == (str(SQLITE_SCHEMA),)  # the index alone changes no version
    finally:
        conn.close()


def test_sqlite_file_is_wal_with_versioned_schema_and_indexes(tmp_path: Path) -> None:
    path = tmp_path / "wg.db"
    with open_store(f"sqlite:///{path}") as store:
        store.commit("k", {}, 0, [{"e": 1}], correlation_ids=["c"])
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT value FROM meta WHERE name='schema_version'").fetchone() == (
            "6",
        )
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        assert {"records", "events", "record_correlations", "session_pointers", "meta"} <= names
        assert {"stats_runs", "stats_nodes", "stats_lines", "stats_counted"} <= names
        assert {"row_counts", "row_counts_insert", "row_counts_update"} <= names
        assert {"records_status", "records_plan", "records_kind", "records_rows"} <= names
        # Schema 6: no query needs them (records_rows starts with the session).
        assert not {"records_session", "record_correlations_key"} & names
    finally:
        conn.close()


def test_sqlite_synchronous_is_normal_unless_asked_for_full(tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path / 'a.db'}") as normal:
        assert normal.synchronous == "normal"  # type: ignore[attr-defined]
    for spelling in ("full", "FULL"):
        with open_store(f"sqlite:///{tmp_path / 'a.db'}?synchronous={spelling}") as full:
            assert full.synchronous == "full"  # type: ignore[attr-defined]


def test_sqlite_keeps_everything_across_reopening(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'wg.db'}"
    with open_store(url) as store:
        store.commit("run_1", {"n": 1}, 0, [{"e": 1}], session="s", make_current=True)
        store.commit("run_1", {"n": 2}, 1, [{"e": 2}], session="s")
    with open_store(url) as again:
        rec = again.get("run_1")
        assert rec is not None and (rec.version, rec.data) == (2, {"n": 2})
        assert [e.seq for e in again.events("run_1")] == [1, 2]
        assert again.current("s") == "run_1"


def test_sqlite_finds_a_correlation_by_its_index_not_by_scanning_a_kind(tmp_path: Path) -> None:
    # Bug: with kind= as well, SQLite chose the kind index and read every
    # record of that kind (every plan context) to answer one event.
    with open_store(f"sqlite:///{tmp_path / 'wg.db'}") as store:
        assert isinstance(store, SQLiteStore)
        for i in range(200):
            store.commit(f"ctx_{i}", {"i": i}, 0, [], kind="ctx", correlation_ids=[f"c{i}"])
        statements: list[str] = []
        store._conn().set_trace_callback(statements.append)
        found = store.list(correlation_id="c7", kind="ctx", status=None)
        store._conn().set_trace_callback(None)
        assert [r.key for r in found] == ["ctx_7"]
        assert store.list(correlation_id="c7", kind="other") == []
        (query,) = [q for q in statements if q.lstrip().upper().startswith("SELECT")]
        plan = " | ".join(
            row[3] for row in store._conn().execute(f"EXPLAIN QUERY PLAN {query}").fetchall()
        )
        assert "record_correlations USING PRIMARY KEY" in plan, plan
        assert "records_kind" not in plan and "SCAN records" not in plan, plan


def test_sqlite_commit_is_one_transaction(tmp_path: Path) -> None:
    path = tmp_path / "wg.db"
    with open_store(f"sqlite:///{path}") as store:
        store.commit("old", {}, 0, [], session="s", make_current=True)
        conn = sqlite3.connect(path)
        conn.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON events WHEN NEW.seq = 2 "
            "BEGIN SELECT RAISE(ABORT, 'refused by test'); END"
        )
        conn.commit()
        conn.close()
        with pytest.raises(StoreError, match="refused by test"):
            store.commit(
                "new",
                {},
                0,
                [{"e": 1}, {"e": 2}],
                session="s",
                make_current=True,
                correlation_ids=["c"],
            )
        assert store.get("new") is None
        assert store.events("new") == []
        assert store.current("s") == "old"
        assert store.list(correlation_id="c") == []


def test_sqlite_refuses_a_file_from_a_newer_waygraph(tmp_path: Path) -> None:
    path = tmp_path / "wg.db"
    open_store(f"sqlite:///{path}").close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = '99' WHERE name = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match=r"schema version 99.*upgrade waygraph"):
        open_store(f"sqlite:///{path}")


def test_sqlite_names_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("these are my notes, not a database\n" * 100)
    with pytest.raises(StoreError) as err:
        open_store(f"sqlite:///{path}")
    assert str(path) in str(err.value) and "not a database" in str(err.value)
