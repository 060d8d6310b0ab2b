"""PostgreSQL stores behave the same whatever the database's default isolation and URL options."""

from __future__ import annotations

import threading
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
