"""What a SQLite commit writes: only the index entries and correlation rows that change.

Each index entry or row a commit rewrites is one more page SQLite writes to
the WAL at commit, and the pages are what a commit costs (issue 19). These
tests read the WAL's frame headers to see which b-trees a commit wrote, and
the tables to see that the rows are still exactly right.
"""

from __future__ import annotations

import sqlite3
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from waygraph.errors import Conflict
from waygraph.store import SQLiteStore, open_store
from waygraph.store.sqlite import SCHEMA_VERSION


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = open_store(f"sqlite:///{tmp_path / 'wg.db'}")
    assert isinstance(opened, SQLiteStore)
    # No checkpoint moves the frames out of the WAL while a test reads them.
    opened._conn().execute("PRAGMA wal_autocheckpoint = 0")
    yield opened
    opened.close()


def _frames(path: Path) -> int:
    return max(0, (path.stat().st_size - 32)) // (24 + 4096)


def _written(store: SQLiteStore, commit: object) -> set[str]:
    """The b-trees (tables and indexes) whose pages the commit wrote to the WAL."""
    wal = Path(f"{store.path}-wal")
    before = _frames(wal)
    assert callable(commit)
    commit()
    data = wal.read_bytes()
    pages = {
        struct.unpack(">I", data[32 + i * (24 + 4096) : 36 + i * (24 + 4096)])[0]
        for i in range(before, _frames(wal))
    }
    conn = store._conn()
    try:
        names = dict(conn.execute("SELECT pageno, name FROM dbstat").fetchall())
    except sqlite3.OperationalError:
        pytest.skip("this SQLite has no dbstat table")
    return {names[p] for p in pages if p in names and p != 1}


def _correlations(store: SQLiteStore, key: str) -> list[str]:
    rows = store._conn().execute(
        "SELECT correlation_id FROM record_correlations WHERE key = ? ORDER BY 1", (key,)
    )
    return [cid for (cid,) in rows]


def test_a_turn_that_changes_no_indexed_column_leaves_their_indexes_alone(
    store: SQLiteStore,
) -> None:
    # Bug: every update named kind, session, status and plan in its SET, so
    # SQLite rewrote their index entries (and the pages holding them) even
    # when the values were the same.
    for i in range(20):  # other records, so the indexes have more than one page
        store.commit(f"r{i}", {"i": i}, 0, [], session=f"s{i}", status="running", plan="p")
    store.commit("k", {"n": 0}, 0, [], session="s", status="running", plan="p", kind="guided")
    written = _written(
        store,
        lambda: store.commit(
            "k", {"n": 1}, 1, [{"e": 1}], session="s", status="running", plan="p", kind="guided"
        ),
    )
    assert {"records", "events"} <= written
    assert not {"records_kind", "records_status", "records_plan", "records_latest"} & written
    # What did change is written: a new status moves its entries and counts.
    written = _written(
        store,
        lambda: store.commit("k", {"n": 2}, 2, [], session="s", status="completed", plan="p"),
    )
    assert {"records_status", "records_latest", "row_counts"} <= written
    assert not {"records_kind", "records_plan"} & written
    rec = store.get("k")
    assert rec is not None and (rec.version, rec.status, rec.data) == (3, "completed", {"n": 2})
    assert store.session_rows().counts == {"running": 20, "completed": 1}


def test_an_update_rewrites_only_the_correlation_rows_that_change(store: SQLiteStore) -> None:
    for i in range(300):  # enough rows for several pages of record_correlations
        store.commit(f"o{i}", {}, 0, [], correlation_ids=[f"c{i:03d}"])
    store.commit("k", {}, 0, [], correlation_ids=["a", "m", "z"])
    written = _written(store, lambda: store.commit("k", {}, 1, [], correlation_ids=["a", "m", "z"]))
    assert "record_correlations" not in written  # same ids: no row touched
    store.commit("k", {}, 2, [], correlation_ids=["z", "b", "a"])
    assert _correlations(store, "k") == ["a", "b", "z"]
    assert [r.key for r in store.list(correlation_id="m")] == []
    assert [r.key for r in store.list(correlation_id="b")] == ["k"]
    rec = store.get("k")
    assert rec is not None and rec.correlation_ids == ("z", "b", "a")
    store.commit("k", {}, 3, [])
    assert _correlations(store, "k") == []
    assert store.get("k").correlation_ids == ()  # type: ignore[union-attr]
    store.commit("k", {}, 4, [], correlation_ids=["a"])
    assert _correlations(store, "k") == ["a"]


def test_ids_another_encoder_wrote_are_read_as_ids(store: SQLiteStore) -> None:
    # The stored list is compared as ids, not as text: spaces after the
    # commas (another JSON encoder) must not make the same ids look new.
    store.commit("k", {}, 0, [], correlation_ids=["a", "b"])
    store._conn().execute("UPDATE records SET correlation_ids = '[\"a\", \"b\"]' WHERE key = 'k'")
    store.commit("k", {}, 1, [], correlation_ids=["b", "c"])
    assert _correlations(store, "k") == ["b", "c"]
    assert store.get("k").correlation_ids == ("b", "c")  # type: ignore[union-attr]


def test_a_failed_version_check_writes_nothing_and_names_the_stored_version(
    store: SQLiteStore,
) -> None:
    store.commit("k", {"n": 1}, 0, [{"e": 1}], status="running", correlation_ids=["a"])
    with pytest.raises(Conflict) as err:
        store.commit("k", {"n": 2}, 5, [{"e": 2}], status="done", correlation_ids=["b"])
    assert "is at version 1, not 5" in str(err.value)
    with pytest.raises(Conflict) as err:
        store.commit("missing", {}, 1, [])
    assert "does not exist" in str(err.value)
    rec = store.get("k")
    assert rec is not None and (rec.version, rec.status, rec.data) == (1, "running", {"n": 1})
    assert [e.seq for e in store.events("k")] == [1]
    assert _correlations(store, "k") == ["a"]


def test_a_schema_5_file_loses_the_two_unused_indexes_on_open(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with open_store(f"sqlite:///{path}") as store:
        store.commit("k", {}, 0, [], session="s", correlation_ids=["a", "b"])
    conn = sqlite3.connect(path)
    conn.execute("CREATE INDEX records_session ON records (session)")  # as schema 5 had them
    conn.execute("CREATE INDEX record_correlations_key ON record_correlations (key)")
    conn.execute("UPDATE meta SET value = '5' WHERE name = 'schema_version'")
    conn.commit()
    conn.close()
    with open_store(f"sqlite:///{path}") as store:
        store.commit("k", {}, 1, [], session="s", correlation_ids=["b", "c"])
        assert [r.key for r in store.list(correlation_id="c")] == ["k"]
        assert store.list(correlation_id="a") == []
        assert [r.key for r in store.list(session="s")] == ["k"]
    conn = sqlite3.connect(path)
    try:
        names = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
        assert not {"records_session", "record_correlations_key"} & names
        version = conn.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()
        assert version == (str(SCHEMA_VERSION),) == ("6",)
    finally:
        conn.close()


def test_queries_by_session_read_the_rows_index(store: SQLiteStore) -> None:
    # records_session is gone: the queries by session must not scan instead.
    for i in range(50):
        store.commit(f"r{i}", {}, 0, [], session=f"s{i % 5}", status="running")
    conn = store._conn()
    for query, params in (
        ("SELECT key FROM records WHERE session = ? ORDER BY updated_at DESC", ("s1",)),
        ("SELECT session FROM records WHERE session IS NOT NULL ORDER BY 1", ()),
    ):
        plan = " | ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {query}", params))
        assert "records_rows" in plan, plan
    assert [r.key for r in store.list(session="s1")][:2] == ["r46", "r41"]
    assert store.sessions() == ["s0", "s1", "s2", "s3", "s4"]
