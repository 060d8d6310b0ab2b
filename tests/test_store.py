"""The store backends: the shared contract on each, then what is particular to each."""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.store_contract import StoreContract, bump
from waygraph.errors import ConfigError, Conflict, StoreError
from waygraph.store import MemoryStore, SQLiteStore, Store, Write, open_store
from waygraph.store.base import redact_url
from waygraph.store.files import FileStore, file_name
from waygraph.store.sqlite import SCHEMA_VERSION as SQLITE_SCHEMA

BACKENDS = ["memory", "file", "sqlite", "sqlite-full", "postgres"]


def _empty_postgres(url: str) -> Store:
    """A store on the session's schema with every table emptied."""
    import psycopg

    from waygraph.store.postgres import split_schema

    store = open_store(url)
    conninfo, schema = split_schema(url)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(
            f'TRUNCATE "{schema}".records, "{schema}".record_correlations, '
            f'"{schema}".events, "{schema}".session_pointers, "{schema}".stats_runs, '
            f'"{schema}".stats_values, "{schema}".stats_nodes, "{schema}".stats_lines, '
            f'"{schema}".stats_counted, "{schema}".row_counts'
        )
    return store


def _open(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Store:
    if backend == "memory":
        return open_store("memory://")
    if backend == "file":
        return open_store(f"file://{tmp_path / 'files'}")
    if backend == "sqlite":
        return open_store(f"sqlite:///{tmp_path / 'wg.db'}")
    if backend == "sqlite-full":
        return open_store(f"sqlite:///{tmp_path / 'wg.db'}?synchronous=full")
    return _empty_postgres(request.getfixturevalue("postgres_url"))


@pytest.fixture(
    params=[
        pytest.param(name, marks=[pytest.mark.services] if name == "postgres" else [])
        for name in BACKENDS
    ]
)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    opened = _open(request.param, tmp_path, request)
    yield opened
    opened.close()


class TestContract(StoreContract):
    """The shared contract, once per backend."""


# ---------------------------------------------------------------- open_store


def test_open_store_understands_every_url_form(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    memory = open_store("memory://")
    assert isinstance(memory, MemoryStore) and memory.url == "memory://"
    assert open_store("memory://") is not memory, "each memory:// is a private store"
    assert open_store(memory) is memory

    relative = open_store("sqlite:///rel.db")
    assert isinstance(relative, SQLiteStore) and relative.path == str(tmp_path / "rel.db")
    assert relative.url == "sqlite:///rel.db"
    absolute = open_store(f"sqlite:///{tmp_path / 'deep' / 'er' / 'abs.db'}")
    assert isinstance(absolute, SQLiteStore)
    assert absolute.path == str(tmp_path / "deep" / "er" / "abs.db")
    assert (tmp_path / "deep" / "er" / "abs.db").exists(), "parent folders are created"
    assert isinstance(open_store("sqlite:///:memory:"), SQLiteStore)
    plain = open_store("plain.db")
    assert isinstance(plain, SQLiteStore) and plain.path == str(tmp_path / "plain.db")
    as_path = open_store(tmp_path / "pathlike.db")
    assert isinstance(as_path, SQLiteStore) and as_path.path == str(tmp_path / "pathlike.db")

    rel_dir = open_store("file://rel/dir")
    assert isinstance(rel_dir, FileStore) and rel_dir.directory == tmp_path / "rel" / "dir"
    abs_dir = open_store(f"file://{tmp_path / 'abs'}")
    assert isinstance(abs_dir, FileStore) and abs_dir.directory == tmp_path / "abs"
    slashes = open_store(f"file:///{tmp_path / 'abs2'}")
    assert isinstance(slashes, FileStore) and slashes.directory == tmp_path / "abs2"
    for opened in (memory, relative, absolute, plain, as_path, rel_dir, abs_dir, slashes):
        opened.close()


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("ftp://host/x", "unknown scheme 'ftp'"),
        ("", "empty"),
        ("memory://named", "memory:// takes no path"),
        ("sqlite://host/x.db", "three slashes"),
        ("sqlite:x.db", "sqlite URLs start with sqlite://"),
        ("sqlite:///x.db?synchronous=sometimes", "synchronous must be one of normal, full"),
        ("sqlite:///x.db?bogus=1", "unknown option(s) bogus (known: synchronous, timeout, mode)"),
        ("sqlite:///x.db?timeout=soon", "timeout must be a number"),
        ("file://", "names its folder"),
        ("file:///tmp/x?fsync=0", "unknown option(s) fsync"),
        ("postgresql://u@h/db?schema=Bad-Name", "schema must be"),
    ],
)
def test_bad_urls_are_config_errors_that_say_why(
    url: str, says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as err:
        open_store(url)
    assert says in str(err.value)
    assert isinstance(err.value, ValueError)


def test_an_unknown_scheme_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError) as err:
        open_store("redis://localhost")
    for scheme in ("memory://", "file://DIR", "sqlite:///PATH", "postgresql://"):
        assert scheme in str(err.value)
    with pytest.raises(ConfigError, match="URL string, a path or a Store"):
        open_store(42)  # type: ignore[arg-type]


def test_passwords_never_appear_in_urls_or_errors() -> None:
    assert redact_url("postgresql://app:s3cret@db:5432/runs?x=1") == (
        "postgresql://app:***@db:5432/runs?x=1"
    )
    assert redact_url("postgresql://app@db/runs") == "postgresql://app@db/runs"
    # Port 1 refuses at once: the error must name the server without the secret.
    with pytest.raises(StoreError) as err:
        open_store("postgresql://app:s3cret@127.0.0.1:1/runs")
    assert "s3cret" not in str(err.value) and "127.0.0.1:1" in str(err.value)


def test_io_trouble_is_a_store_error_naming_the_place(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreError) as err:
        open_store(f"file://{blocker}/store")
    assert str(blocker) in str(err.value)
    folder = tmp_path / "a-folder.db"
    folder.mkdir()
    with pytest.raises(StoreError) as err:
        open_store(f"sqlite:///{folder}")
    assert str(folder) in str(err.value)


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


# ---------------------------------------------------------------- file store


def _record_files(root: Path) -> list[Path]:
    return sorted((root / "records").glob("*.json"))


def test_file_store_layout(tmp_path: Path) -> None:
    root = tmp_path / "store"
    with open_store(f"file://{root}") as store:
        store.commit("run_1", {"n": 1}, 0, [{"e": 1}, {"e": 2}], session="s1", make_current=True)
        store.commit("run/2", {"n": 2}, 0, [], session="s2", make_current=True)
    assert [p.name for p in _record_files(root)] == sorted(
        [f"{file_name('run_1')}.json", f"{file_name('run/2')}.json"]
    )
    doc = json.loads((root / "records" / f"{file_name('run_1')}.json").read_text())
    assert doc["key"] == "run_1" and doc["version"] == 1 and doc["data"] == {"n": 1}
    assert doc["events"]["count"] == 2
    lines = (root / "events" / f"{file_name('run_1')}.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [
        {"seq": 1, "data": {"e": 1}},
        {"seq": 2, "data": {"e": 2}},
    ]
    assert json.loads((root / "sessions.json").read_text()) == {"s1": "run_1", "s2": "run/2"}
    assert not (root / "journal.json").exists()
    assert not list(root.rglob("*.tmp"))
    assert (root / ".lock").exists()


def test_file_names_never_collide_and_stay_short() -> None:
    keys = ["a/b", "a_b", "A_b", "a?b", "a:b", "..", ".", "x" * 1000, "x" * 1001, "ключ", "🎉"]
    names = [file_name(key) for key in keys]
    assert len(set(names)) == len(keys)
    assert len({name.lower() for name in names}) == len(keys), "case-insensitive file systems"
    for name in names:
        assert len(name.encode()) < 100 and "/" not in name and not name.startswith(".")


def test_a_corrupt_record_file_is_moved_aside_and_treated_as_missing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "store"
    store = open_store(f"file://{root}")
    store.commit("run_1", {"n": 1}, 0, [{"e": 1}])
    (record_file,) = _record_files(root)
    record_file.write_text('{"key": "run_1", "vers')  # torn by hand
    with caplog.at_level(logging.WARNING, logger="waygraph.store"):
        assert store.get("run_1") is None
    assert any("damaged" in r.getMessage() for r in caplog.records)
    assert not record_file.exists()
    aside = list((root / "records").glob(f"{record_file.name}.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_text() == '{"key": "run_1", "vers'
    assert list((root / "events").glob("*.corrupt-*")), "its events are kept beside it"
    # The key can be created afresh; its events start again at 1.
    assert store.commit("run_1", {"n": "again"}, 0, [{"e": "new"}]) == 1
    assert [(e.seq, e.data) for e in store.events("run_1")] == [(1, {"e": "new"})]
    store.close()


def test_list_skips_and_moves_a_corrupt_record(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "store"
    with open_store(f"file://{root}") as store:
        store.commit("good", {}, 0, [])
        store.commit("bad", {}, 0, [])
        (root / "records" / f"{file_name('bad')}.json").write_bytes(b"\x00\x00garbage")
        with caplog.at_level(logging.WARNING, logger="waygraph.store"):
            assert [rec.key for rec in store.list()] == ["good"]
        assert "damaged" in caplog.text
        assert len(_record_files(root)) == 1


def test_a_torn_last_event_line_is_ignored_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "store"
    with open_store(f"file://{root}") as store:
        store.commit("k", {}, 0, [{"i": 1}, {"i": 2}, {"i": 3}])
        events_file = root / "events" / f"{file_name('k')}.jsonl"
        events_file.write_bytes(events_file.read_bytes()[:-6])  # the disk lost the tail
        with caplog.at_level(logging.WARNING, logger="waygraph.store"):
            assert [e.data for e in store.events("k")] == [{"i": 1}, {"i": 2}]
        assert "torn line" in caplog.text


def test_event_lines_of_an_unfinished_commit_stay_invisible(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "store"
    with open_store(f"file://{root}") as store:
        store.commit("k", {"n": 1}, 0, [{"i": 1}])
        events_file = root / "events" / f"{file_name('k')}.jsonl"
        # A writer killed after appending events but before renaming the record:
        with events_file.open("ab") as f:
            f.write(b'{"seq":2,"data":{"i":"ghost"}}\n{"seq":3,"da')
        with caplog.at_level(logging.WARNING, logger="waygraph.store"):
            assert [e.data for e in store.events("k")] == [{"i": 1}]
        assert not caplog.records, "uncommitted bytes are expected after a crash"
        store.commit("k", {"n": 2}, 1, [{"i": 2}])
        assert [(e.seq, e.data) for e in store.events("k")] == [(1, {"i": 1}), (2, {"i": 2})]
        assert b"ghost" not in events_file.read_bytes()


def test_a_make_current_commit_cut_short_is_completed_on_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "store"
    store = FileStore(root)
    store.commit("old", {}, 0, [], session="s", make_current=True)
    real_write = FileStore._atomic_write
    writes: list[Path] = []

    def die_after_the_journal(self: FileStore, path: Path, data: bytes) -> None:
        writes.append(path)
        if len(writes) > 1:
            raise KeyboardInterrupt("simulated death after the journal landed")
        real_write(self, path, data)

    monkeypatch.setattr(FileStore, "_atomic_write", die_after_the_journal)
    with pytest.raises(KeyboardInterrupt):
        store.commit("new", {"n": 1}, 0, [{"e": 1}], session="s", make_current=True)
    monkeypatch.undo()
    assert writes[0].name == "journal.json"
    assert (root / "journal.json").exists()
    store.close()
    with FileStore(root) as reopened:
        assert not (root / "journal.json").exists()
        assert reopened.current("s") == "new"
        rec = reopened.get("new")
        assert rec is not None and rec.data == {"n": 1}
        assert [e.data for e in reopened.events("new")] == [{"e": 1}]


def test_a_commit_all_cut_short_after_its_journal_is_completed_on_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "store"
    store = FileStore(root)
    store.commit("old", {"status": "running"}, 0, [{"e": 1}], session="s", make_current=True)
    real_write = FileStore._atomic_write
    writes: list[Path] = []

    def die_after_the_journal(self: FileStore, path: Path, data: bytes) -> None:
        writes.append(path)
        if len(writes) > 2:  # the journal and the first record landed
            raise KeyboardInterrupt("simulated death in the middle of the commit")
        real_write(self, path, data)

    monkeypatch.setattr(FileStore, "_atomic_write", die_after_the_journal)
    with pytest.raises(KeyboardInterrupt):
        store.commit_all(
            [
                Write("old", {"status": "aborted"}, 1, [{"e": 2}], session="s"),
                Write("new", {"status": "running"}, 0, [{"e": 1}], session="s", make_current=True),
            ]
        )
    monkeypatch.undo()
    assert writes[0].name == "journal.json"
    store.close()
    with FileStore(root) as reopened:
        assert not (root / "journal.json").exists()
        assert reopened.current("s") == "new"
        old, new = reopened.get("old"), reopened.get("new")
        assert old is not None and old.data == {"status": "aborted"} and old.version == 2
        assert new is not None and new.data == {"status": "running"}
        assert [e.data for e in reopened.events("old")] == [{"e": 1}, {"e": 2}]


def test_a_corrupt_sessions_file_is_moved_aside(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "store"
    with open_store(f"file://{root}") as store:
        store.commit("k", {}, 0, [], session="s", make_current=True)
        (root / "sessions.json").write_text("[not, json")
        with caplog.at_level(logging.WARNING, logger="waygraph.store"):
            assert store.current("s") is None
        assert list(root.glob("sessions.json.corrupt-*"))
        assert store.sessions() == ["s"], "the record still names its session"
        store.commit("k2", {}, 0, [], session="s", make_current=True)
        assert store.current("s") == "k2"


def test_opening_removes_temporary_files_left_by_a_dead_writer(tmp_path: Path) -> None:
    root = tmp_path / "store"
    FileStore(root).close()
    leftover = root / "records" / "x.json.tmp"
    leftover.write_text("half")
    FileStore(root).close()
    assert not leftover.exists()


# ---------------------------------------------------------------- processes


def _bump_in_child(url: str, key: str, times: int) -> None:
    with open_store(url) as store:
        bump(store, key, times)


@pytest.mark.parametrize("backend", ["sqlite", "file"])
def test_two_processes_never_lose_an_increment(backend: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'wg.db'}" if backend == "sqlite" else f"file://{tmp_path}/fs"
    with open_store(url) as store:
        store.commit("counter", {"count": 0}, 0, [])
    ctx = multiprocessing.get_context("spawn")
    per_process = 40
    workers = [
        ctx.Process(target=_bump_in_child, args=(url, "counter", per_process)) for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    with open_store(url) as store:
        rec = store.get("counter")
        assert rec is not None and rec.data["count"] == 2 * per_process
        assert rec.version == 2 * per_process + 1
        assert len(store.events("counter")) == 2 * per_process


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.parametrize("backend", ["sqlite", "file"])
def test_a_forked_child_gets_its_own_connection_and_lock(backend: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'wg.db'}" if backend == "sqlite" else f"file://{tmp_path}/fs"
    store = open_store(url)
    store.commit("counter", {"count": 0}, 0, [])
    ctx = multiprocessing.get_context("fork")
    child = ctx.Process(target=bump, args=(store, "counter", 30))
    child.start()
    conflicts = bump(store, "counter", 30)
    child.join(timeout=60)
    assert child.exitcode == 0
    rec = store.get("counter")
    assert rec is not None and rec.data["count"] == 60, f"{conflicts} conflicts met"
    store.close()


# ---------------------------------------------------------------- crash safety

# Starting Python and importing waygraph takes a few hundred milliseconds, so
# one launcher process imports once and forks a fresh writer per kill. Each
# writer opens the store itself after the fork, as an independent process.
_CRASH_LAUNCHER = textwrap.dedent(
    """
    import os, sys
    from waygraph.store import open_store

    url = sys.argv[1]
    pad = "x" * 2000

    def write(generation, ready):
        store = open_store(url)
        i = 0
        while True:
            rec = store.get("shared")
            version = 0 if rec is None else rec.version
            store.commit("shared", {"count": version + 1, "pad": pad}, version,
                         [{"n": version + 1}, {"n": version + 1}], session="shared")
            if i % 3 == 0:
                store.commit(f"g{generation}-{i}", {"count": 1, "pad": pad}, 0,
                             [{"n": 1}, {"n": 1}], session="s", make_current=True)
            if i == 0:
                os.write(ready, b"r")
            i += 1

    for line in sys.stdin:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(r)
                write(line.strip(), w)
            finally:
                os._exit(1)
        os.close(w)
        started = os.read(r, 1) == b"r"
        os.close(r)
        print(pid if started else "failed", flush=True)
        os.waitpid(pid, 0)
        print("reaped", flush=True)
    """
)


def _check_after_crash(url: str) -> int:
    """Open the store a killed writer left and read everything; return the shared count."""
    with open_store(url) as store:
        records = store.list()
        for rec in records:
            events = store.events(rec.key)
            assert rec.data["count"] == rec.version
            assert [e.seq for e in events] == list(range(1, 2 * rec.version + 1)), rec.key
            assert all(e.data["n"] == (e.seq + 1) // 2 for e in events)
        pointer = store.current("s")
        assert pointer is None or store.get(pointer) is not None
        shared = store.get("shared")
        return 0 if shared is None else shared.version


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork and SIGKILL")
@pytest.mark.parametrize("backend", ["sqlite", "file"])
def test_sigkill_at_random_moments_never_breaks_the_store(backend: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'wg.db'}" if backend == "sqlite" else f"file://{tmp_path}/fs"
    rng = random.Random(1234)
    src = str(Path(__file__).resolve().parents[1] / "src")
    paths = [src, *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    launcher = subprocess.Popen(
        [sys.executable, "-c", _CRASH_LAUNCHER, url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    assert launcher.stdin is not None and launcher.stdout is not None
    progress = []
    try:
        for generation in range(30):
            launcher.stdin.write(f"{generation}\n")
            launcher.stdin.flush()
            answer = launcher.stdout.readline().strip()
            assert answer.isdigit(), f"the writer did not start: {answer!r}"
            time.sleep(rng.uniform(0.0, 0.05))  # let it get anywhere in a commit
            os.kill(int(answer), signal.SIGKILL)
            assert launcher.stdout.readline().strip() == "reaped"
            progress.append(_check_after_crash(url))
    finally:
        launcher.stdin.close()
        launcher.wait(timeout=30)
    assert progress == sorted(progress) and progress[-1] >= 30, "every writer made progress"


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
    first, second = _empty_postgres(postgres_url), open_store(postgres_url)
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


# ---------------------------------------------------------------- service helper


def test_an_unreachable_service_skips_unless_services_are_required(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.conftest import require_service

    monkeypatch.delenv("WAYGRAPH_REQUIRE_SERVICES", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"NATS is not reachable at 127\.0\.0\.1:1"):
        require_service("NATS", "127.0.0.1", 1)
    monkeypatch.setenv("WAYGRAPH_REQUIRE_SERVICES", "1")
    with pytest.raises(pytest.fail.Exception, match="WAYGRAPH_REQUIRE_SERVICES=1"):
        require_service("NATS", "127.0.0.1", 1)


# ---------------------------------------------------------------- the sessions table's flag


def _flagged(store: Store) -> list[str]:
    return sorted(r.key for r in store.session_rows(limit=1000).records)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_row_of_a_session_is_the_record_it_committed_last(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = _open(backend, tmp_path, request)
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

    stores = [_empty_postgres(postgres_url)] + [open_store(postgres_url) for _ in range(3)]
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
