"""The PostgreSQL store: its schema option and two stores racing on one key."""

from __future__ import annotations

import pytest

from tests.store_backends import empty_postgres
from waygraph.errors import Conflict
from waygraph.store import open_store

# ---------------------------------------------------------------- postgres


@pytest.mark.services
def test_postgres_schema_option_keeps_tables_in_that_schema(postgres_url: str) -> None:
    import psycopg

    from waygraph.store.postgres import split_schema

    with open_store(postgres_url) as store:
        store.commit("schema-check", {}, 0, [])
    conninfo, schema = split_schema(postgres_url)
    with psycopg.connect(conninfo) as conn:
        tables = {
            row[0]
            for row in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                (schema,),
            )
        }
    assert {"records", "events", "record_correlations", "session_pointers", "meta"} <= tables


@pytest.mark.services
def test_postgres_two_stores_race_on_one_key(postgres_url: str) -> None:
    first, second = empty_postgres(postgres_url), open_store(postgres_url)
    try:
        first.commit("k", {"n": 1}, 0, [])
        second.commit("k", {"n": 2}, 1, [])
        with pytest.raises(Conflict):
            first.commit("k", {"n": 3}, 1, [])
        rec = first.get("k")
        assert rec is not None and rec.data == {"n": 2}
    finally:
        first.close()
        second.close()
