"""A PostgreSQL server that stops answering is a bounded error (issue 39, item 2).

Each test starts a server of its own (tests/private_postgres.py) and freezes
it with SIGSTOP under a turn: the turn must come back with ``Guidance.error``
(lenient) or raise ``StoreError`` (strict) at the store's deadline
(``?timeout=1`` here), where it used to block until the server was
continued. The bound asserted is "returned, not hung" (a generous multiple
of the deadline), never a machine-speed timing.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.private_postgres import PrivatePostgres, private_postgres
from waygraph.errors import ConfigError, StoreError
from waygraph.navigator import Navigator
from waygraph.store.postgres import PostgresStore

pytestmark = pytest.mark.slow

# Far above the 1 s deadline, far below "blocked until continued".
_HUNG = 45.0


@pytest.fixture
def server() -> Iterator[PrivatePostgres]:
    pytest.importorskip("psycopg")
    with private_postgres() as running:
        yield running


def _within(seconds: float, call: Callable[[], Any]) -> Any:
    """``call()``'s result or exception, or a test failure if it has neither after ``seconds``."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = call()
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"the call hung: no answer after {seconds:g}s with the server stopped")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


def _recovers(call: Callable[[], Any], ok: Callable[[Any], bool] = lambda _: True) -> Any:
    """``call()``'s first good result once the server runs again.

    The pool opens its new connection with backoff (psycopg_pool: 1 s,
    doubling up to 10 s), so the first calls after a long stop may still
    meet the deadline; within ``_HUNG`` one must succeed.
    """
    ends = time.monotonic() + _HUNG
    while True:
        try:
            result = _within(_HUNG, call)
            if ok(result):
                return result
        except StoreError:
            pass
        if time.monotonic() > ends:
            pytest.fail(f"the store did not recover within {_HUNG:g}s of the server continuing")
        time.sleep(0.2)


def test_a_lenient_turn_on_a_stopped_server_returns_an_error_then_works_once_continued(
    server: PrivatePostgres,
) -> None:
    nav = Navigator(store=f"{server.url}?timeout=1")
    try:
        assert nav.start("s", "bugfix_workflow").error is None
        server.stop()
        try:
            guidance = _within(_HUNG, lambda: nav.turn("s", tool_output="ok", tool_name="x"))
        finally:
            server.cont()
        assert guidance.error is not None
        assert "no answer within 1s" in guidance.error
        # The store recovers: the broken connection was dropped, not reused.
        after = _recovers(lambda: nav.turn("s", user_message="go on"), lambda g: g.error is None)
        assert after.run is not None
    finally:
        nav.close()


def test_a_strict_turn_on_a_stopped_server_raises_store_error(server: PrivatePostgres) -> None:
    nav = Navigator(store=f"{server.url}?timeout=1", strict=True)
    try:
        nav.start("s", "bugfix_workflow")
        server.stop()
        try:
            with pytest.raises(StoreError, match=r"no answer within 1s.*\?timeout="):
                _within(_HUNG, lambda: nav.turn("s", tool_output="ok", tool_name="x"))
        finally:
            server.cont()
    finally:
        nav.close()


def test_every_store_call_is_bounded_reads_and_a_full_pool_included(
    server: PrivatePostgres,
) -> None:
    store = PostgresStore(f"{server.url}?timeout=1", max_size=1)
    try:
        store.commit("k", {"n": 1}, 0, [])
        server.stop()
        try:
            for call in (
                lambda: store.get("k"),
                lambda: store.list(session="s"),
                lambda: store.commit("k", {"n": 2}, 1, []),
            ):
                with pytest.raises(StoreError, match="no answer within 1s"):
                    _within(_HUNG, call)
        finally:
            server.cont()
        assert _recovers(lambda: store.get("k")).data == {"n": 1}
    finally:
        store.close()


def test_a_bad_timeout_in_the_url_is_refused_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"timeout must be a number of seconds.*'soon'"):
        PostgresStore("postgresql://postgres@127.0.0.1:1/none?timeout=soon")


class _Conn:
    """What the watchdog reads of a psycopg connection: ``pgconn.socket``."""

    def __init__(self, fd: int) -> None:
        self.pgconn = type("PGconn", (), {"socket": fd})()


def test_the_watchdog_cuts_a_late_call_and_never_a_connection_handed_back() -> None:
    from waygraph.store._pg_deadline import Watchdog

    watch = Watchdog(0.2)
    late, late_peer = socket.socketpair()
    back, back_peer = socket.socketpair()
    try:
        cut = watch.start(None)
        watch.attach(cut, _Conn(late.fileno()))
        handed = watch.start(None)
        watch.attach(handed, _Conn(back.fileno()))
        watch.detach(handed)  # back in the pool: another call may hold it now
        time.sleep(1.0)
        assert late.recv(1) == b""  # shut down: a wait on it returns at once
        assert watch.expired(cut) and watch.finish(cut)
        assert not watch.expired(handed) and not watch.finish(handed)
        back_peer.sendall(b"x")
        assert back.recv(1) == b"x"  # untouched
    finally:
        watch.close()
        for sock in (late, late_peer, back, back_peer):
            sock.close()
