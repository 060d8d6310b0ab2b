"""PostgreSQL commits sent as one pipeline (waygraph.store._pg_commit): all or nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.store_backends import empty_postgres
from waygraph.errors import Conflict, StoreError
from waygraph.store import Store, Write

pytestmark = pytest.mark.services


def _sql(url: str, statement: str) -> list[tuple[Any, ...]]:
    import psycopg

    from waygraph.store.postgres import split_schema

    conninfo, schema = split_schema(url)
    with psycopg.connect(conninfo, autocommit=True, options=f"-c search_path={schema}") as conn:
        cur = conn.execute(statement)
        return cur.fetchall() if cur.description else []


@pytest.fixture
def store(postgres_url: str) -> Iterator[Store]:
    store = empty_postgres(postgres_url)
    yield store
    store.close()
    _sql(postgres_url, "DROP FUNCTION IF EXISTS refuse_boom() CASCADE")


def _refuse_events_of_boom(url: str) -> None:
    """A trigger that fails the events insert of key 'boom': a failure mid-commit."""
    _sql(
        url,
        "CREATE OR REPLACE FUNCTION refuse_boom() RETURNS trigger LANGUAGE plpgsql AS $$"
        " BEGIN IF NEW.key = 'boom' THEN RAISE EXCEPTION 'no events for boom'; END IF;"
        " RETURN NEW; END $$",
    )
    _sql(
        url,
        "CREATE TRIGGER refuse_boom BEFORE INSERT ON events FOR EACH ROW"
        " EXECUTE FUNCTION refuse_boom()",
    )


def _written(url: str, key: str) -> list[int]:
    """How many rows of ``key`` each table holds, and the notices' pointer."""
    return [
        int(_sql(url, f"SELECT COUNT(*) FROM {table} WHERE key = '{key}'")[0][0])
        for table in ("records", "record_correlations", "events", "session_pointers")
    ]


def test_a_failure_in_the_middle_of_a_commit_writes_nothing(
    store: Store, postgres_url: str
) -> None:
    listener = store.listen()  # type: ignore[attr-defined]
    try:
        _refuse_events_of_boom(postgres_url)
        for expected in (0, 1):  # the one-round-trip create, then an update
            if expected:
                store.commit("boom", {"n": 0}, 0, [], session="s", correlation_ids=["c0"])
                [*listener.notifies(timeout=1, stop_after=1)]
            with pytest.raises(StoreError, match=r"committing 'boom' failed: .*no events for boom"):
                store.commit(
                    "boom",
                    {"n": 1},
                    expected,
                    [{"type": "e"}],
                    session="s",
                    status="running",
                    correlation_ids=["c1"],
                    make_current=True,
                )
            rec = store.get("boom")
            assert (rec is None) if not expected else (rec is not None and rec.data == {"n": 0})
            assert _written(postgres_url, "boom") == (
                [0, 0, 0, 0] if not expected else [1, 1, 0, 0]
            )
            assert store.list(correlation_id="c1") == []
            assert store.current("s") is None
            # No notice: the transaction never committed.
            assert [*listener.notifies(timeout=0.3, stop_after=1)] == []
        # The store's connections are fine afterwards (nothing left half open).
        for i in range(10):
            store.commit(f"ok{i}", {}, 0, [{"type": "e"}], session="s", make_current=True)
        assert store.current("s") == "ok9"
    finally:
        listener.close()


def test_a_failure_in_one_of_several_records_writes_none(store: Store, postgres_url: str) -> None:
    _refuse_events_of_boom(postgres_url)
    with pytest.raises(StoreError, match="no events for boom"):
        store.commit_all(
            [
                Write("fine", {}, 0, [{"type": "e"}], session="s", make_current=True),
                Write("boom", {}, 0, [{"type": "e"}], session="t"),
            ]
        )
    assert store.get("fine") is None and store.get("boom") is None
    assert _written(postgres_url, "fine") == [0, 0, 0, 0]


def test_a_conflict_writes_nothing_and_says_the_stored_version(store: Store) -> None:
    store.commit("k", {"n": 1}, 0, [{"type": "a"}], session="s", correlation_ids=["c1"])
    store.commit("k", {"n": 2}, 1, [{"type": "b"}], session="s", correlation_ids=["c1"])
    with pytest.raises(Conflict, match="at version 2, not 1"):
        store.commit(
            "k",
            {"n": 9},
            1,
            [{"type": "x"}],
            session="s",
            correlation_ids=["c9"],
            make_current=True,
        )
    with pytest.raises(Conflict, match="already exists at version 2"):
        store.commit("k", {"n": 9}, 0, [{"type": "x"}], session="s2", make_current=True)
    with pytest.raises(Conflict, match="does not exist"):
        store.commit("nope", {}, 3, [{"type": "x"}], session="s", make_current=True)
    rec = store.get("k")
    assert rec is not None and rec.data == {"n": 2} and rec.version == 2
    assert [e.data["type"] for e in store.events("k")] == ["a", "b"]
    assert [r.key for r in store.list(correlation_id="c1")] == ["k"]
    assert store.list(correlation_id="c9") == [] and store.get("nope") is None
    assert store.current("s") is None and store.current("s2") is None
    # And the next commit goes through on the same connections.
    assert store.commit("k", {"n": 3}, 2, [{"type": "c"}], session="s") == 3
    assert [e.seq for e in store.events("k")] == [1, 2, 3]


def test_correlation_rows_are_replaced_and_events_numbered(store: Store) -> None:
    store.commit("k", {}, 0, [{"i": 1}, {"i": 2}], correlation_ids=["a", "b"])
    store.commit("k", {}, 1, [], correlation_ids=["b", "c"])
    store.commit("k", {}, 2, [{"i": 3}, {"i": 4}, {"i": 5}], correlation_ids=["c", "b"])
    assert [r.key for r in store.list(correlation_id="b")] == ["k"]
    assert store.list(correlation_id="a") == []
    rec = store.get("k")
    assert rec is not None and rec.correlation_ids == ("c", "b")
    assert [(e.seq, e.data["i"]) for e in store.events("k")] == [
        (1, 1),
        (2, 2),
        (3, 3),
        (4, 4),
        (5, 5),
    ]
    store.commit("k", {}, 3, [])
    assert store.list(correlation_id="b") == [] and store.list(correlation_id="c") == []


def test_commits_go_on_after_the_prepared_statements_are_dropped(store: Store) -> None:
    store.commit("k", {"n": 1}, 0, [{"type": "a"}], session="s")
    with store._pool.connection() as conn:  # type: ignore[attr-defined]
        conn.execute("DEALLOCATE ALL")  # as psycopg does after some rollbacks
    for version in range(1, 6):
        assert store.commit("k", {"n": version + 1}, version, [{"type": "b"}], session="s") == (
            version + 1
        )
    assert [e.seq for e in store.events("k")] == [1, 2, 3, 4, 5, 6]
