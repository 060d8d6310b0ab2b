"""PostgreSQL commits NOTIFY only while a registered listener lives (``?notify=``)."""

from __future__ import annotations

import time
import uuid
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from waygraph.errors import ConfigError
from waygraph.store import open_store

pytestmark = pytest.mark.services


@pytest.fixture
def url(postgres_own_url: str) -> str:
    """No other test's listener in this schema."""
    return postgres_own_url


def _raw_listener(url: str) -> Any:
    """A plain ``LISTEN`` on the store's channel, not registered with the store."""
    import psycopg

    from waygraph.store.postgres import notify_channel, split_schema

    conninfo, schema = split_schema(url)
    conn = psycopg.connect(conninfo, autocommit=True, options=f"-c search_path={schema}")
    conn.execute(f'LISTEN "{notify_channel(schema)}"')
    return conn


def _wait_until_gone(conn: Any, pid: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if conn.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone() is None:
            return
        time.sleep(0.01)
    raise AssertionError(f"backend {pid} still runs 10 s after its connection closed")


def _heard(conn: Any) -> list[str]:
    return [n.payload for n in conn.notifies(timeout=0.4, stop_after=1)]


def test_commits_notify_only_while_a_registered_listener_lives(url: str) -> None:
    store = open_store(url)
    raw = _raw_listener(url)
    try:
        store.commit("k", {"n": 0}, 0, [], session="s")
        assert _heard(raw) == []  # nobody registered: no notice

        listener = store.listen()  # type: ignore[attr-defined]
        store.commit("k", {"n": 1}, 1, [], session="s")
        notice = '{"key": "k", "session": "s"}'
        assert _heard(listener) == [notice]
        assert _heard(raw) == [notice]  # a notice goes to every LISTEN on the channel

        pid = listener.execute("SELECT pg_backend_pid()").fetchone()[0]
        listener.close()
        _wait_until_gone(raw, pid)  # a backend ends a moment after its client leaves
        store.commit("k", {"n": 2}, 2, [], session="s")
        assert _heard(raw) == []  # its connection is gone: notices stop with it
    finally:
        raw.close()
        store.close()


def test_notify_always_notifies_every_commit(url: str) -> None:
    store = open_store(f"{url}&notify=always")
    raw = _raw_listener(url)
    try:
        store.commit("k", {}, 0, [], session="s")
        assert _heard(raw) == ['{"key": "k", "session": "s"}']
    finally:
        raw.close()
        store.close()


def test_a_row_of_a_reused_pid_does_not_count_and_listen_removes_it(url: str) -> None:
    store = open_store(url)
    raw = _raw_listener(url)
    try:
        # A listener that died, whose pid a newer backend (the raw connection's) now has.
        pid = raw.execute("SELECT pg_backend_pid()").fetchone()[0]
        raw.execute(
            "INSERT INTO listeners (channel, pid, started) VALUES (%s, %s, '2000-01-01')",
            (store.channel, pid),  # type: ignore[attr-defined]
        )
        raw.execute(
            "INSERT INTO listeners (channel, pid, started) VALUES (%s, 2147483000, now())",
            (store.channel,),  # type: ignore[attr-defined]
        )
        store.commit("k", {}, 0, [], session="s")
        assert _heard(raw) == []

        listener = store.listen()  # type: ignore[attr-defined]
        rows = raw.execute("SELECT pid FROM listeners ORDER BY pid").fetchall()
        own = listener.execute("SELECT pg_backend_pid()").fetchone()[0]
        assert rows == [(own,)]
        listener.close()
    finally:
        raw.close()
        store.close()


def test_a_store_without_the_listeners_table_gets_it_on_open(url: str) -> None:
    open_store(url).close()
    raw = _raw_listener(url)
    try:
        raw.execute("DROP TABLE listeners")
        store = open_store(url)  # a store made before the table (same schema version)
        listener = store.listen()  # type: ignore[attr-defined]
        store.commit("k", {}, 0, [], session="s")
        assert _heard(listener) == ['{"key": "k", "session": "s"}']
        listener.close()
        store.close()
    finally:
        raw.close()


@pytest.mark.parametrize("value", ["sometimes", ""])
def test_an_unknown_notify_mode_is_refused_naming_it(postgres_url: str, value: str) -> None:
    refused = f"notify must be one of listeners, always .got '{value}'"
    with pytest.raises(ConfigError, match=refused):
        open_store(f"{postgres_url}&notify={value}")


def test_a_role_that_may_not_register_gets_a_clear_error_and_the_feed_polls(url: str) -> None:
    import asyncio

    import psycopg

    from waygraph.errors import StoreError
    from waygraph.server.live import PostgresFeed
    from waygraph.store.postgres import split_schema

    writer = open_store(url)  # makes the tables
    conninfo, schema = split_schema(url)
    role = f"wg_reader_{uuid.uuid4().hex[:8]}"
    admin = psycopg.connect(conninfo, autocommit=True)
    admin.execute(f'CREATE ROLE "{role}" LOGIN')
    admin.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"')
    admin.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO "{role}"')
    parts = urlsplit(url)
    reader = open_store(urlunsplit(parts._replace(netloc=f"{role}@{parts.hostname}:{parts.port}")))
    try:
        with pytest.raises(StoreError, match="needs INSERT and DELETE on the listeners table"):
            reader.listen()  # type: ignore[attr-defined]

        async def watch() -> float:
            feed = PostgresFeed(reader, poll_interval=0.25)
            feed.start()
            try:
                await asyncio.sleep(0.5)  # its first LISTEN has failed by now
                return feed.interval
            finally:
                feed.stop()

        # The streams of a dashboard with a read-only role poll as without NOTIFY.
        assert asyncio.run(watch()) == 0.25
    finally:
        reader.close()
        writer.close()
        admin.execute(f'DROP OWNED BY "{role}"')
        admin.execute(f'DROP ROLE "{role}"')
        admin.close()
