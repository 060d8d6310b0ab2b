"""SQLite checkpoints run in a thread of the store's, not inside a commit (store._checkpoint)."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from waygraph.store import _checkpoint
from waygraph.store.sqlite import SQLiteStore


def _in_the_file(path: Path) -> int:
    """Records in the database file itself, the log ignored: what checkpoints copied there."""
    conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM records").fetchone()[0])
    except sqlite3.OperationalError as exc:
        assert "no such table" in str(exc)  # even the tables are still in the log
        return 0
    finally:
        conn.close()


def _checkpoint_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "waygraph-checkpoint"]


def _wait_for(condition: object, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.02)


def test_commits_never_checkpoint_and_a_thread_copies_the_log_into_the_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "wg.db"
    store = SQLiteStore(path)
    try:
        conn = store._conn()
        assert conn.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)
        for i in range(_checkpoint.EVERY - 1):
            store.commit(f"k{i}", {"i": i}, 0, [{"type": "e"}])
        assert store._checkpoints is not None and store._checkpoints.checkpoints == 0
        assert _in_the_file(path) == 0  # all of it still in the log
        store.commit("last", {}, 0, [])
        _wait_for(lambda: store._checkpoints.checkpoints >= 1)  # type: ignore[union-attr]
        assert _in_the_file(path) == _checkpoint.EVERY
        assert len(_checkpoint_threads()) >= 1
    finally:
        store.close()
    assert _checkpoint_threads() == []  # close joins it


def test_a_thread_that_falls_behind_leaves_the_checkpoint_to_the_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_checkpoint, "EVERY", 10**9)  # the thread is never woken
    monkeypatch.setattr(_checkpoint, "LAG", 30)
    path = tmp_path / "wg.db"
    store = SQLiteStore(path)
    try:
        for i in range(29):
            store.commit(f"k{i}", {}, 0, [])
        assert _in_the_file(path) == 0
        store.commit("k29", {}, 0, [])  # the 30th: checkpointed inline, before it returns
        assert _in_the_file(path) == 30
        assert store._checkpoints is not None and store._checkpoints.checkpoints == 1
        assert _checkpoint_threads() == []
    finally:
        store.close()


def test_a_store_that_never_filled_a_batch_starts_no_thread(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "wg.db")
    store.commit("k", {}, 0, [])
    assert _checkpoint_threads() == []
    store.close()
    # What the log held reaches the file when the last connection closes, as before.
    assert _in_the_file(tmp_path / "wg.db") == 1


def test_a_failing_background_checkpoint_is_logged_and_commits_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(self: object, conn: sqlite3.Connection) -> int:
        if threading.current_thread().name == "waygraph-checkpoint":
            raise sqlite3.OperationalError("disk I/O error")
        return 0

    monkeypatch.setattr(_checkpoint.Checkpointer, "_checkpoint", refuse)
    store = SQLiteStore(tmp_path / "wg.db")
    try:
        with caplog.at_level("WARNING", logger="waygraph.store"):
            for i in range(_checkpoint.EVERY + 5):
                store.commit(f"k{i}", {}, 0, [])
            _wait_for(lambda: "background checkpoint failed" in caplog.text)
        assert "background checkpoint failed: disk I/O error" in caplog.text
        assert len(store.list(limit=1000)) == _checkpoint.EVERY + 5
    finally:
        store.close()


def test_a_steady_stream_of_commits_still_lets_the_log_start_over(tmp_path: Path) -> None:
    # Commits landing while every background checkpoint copies would keep the
    # log from ever being all copied: it grew to 85 MB in 3,000 commits.
    path = tmp_path / "wg.db"
    store = SQLiteStore(path)
    try:
        for i in range(3000):
            store.commit(f"k{i % 300}", {"text": "x" * 2000, "i": i}, i // 300, [{"type": "e"}])
        frames = (path.with_name("wg.db-wal").stat().st_size - 32) // (24 + 4096)
        # About 21,000 frames are written in all (7 a commit): a log that never
        # starts over holds them all. However the checkpoint thread is scheduled
        # (starved on a loaded machine it does nothing), the committing thread
        # copies the log itself once LAG commits wait, so the log never holds
        # more than about LAG commits' frames (14,000): a bound that holds on
        # any machine (10,000 failed under load: 12,361 with the thread starved).
        assert frames < (_checkpoint.LAG + _checkpoint.EVERY) * 8 < 21_000
    finally:
        store.close()


def test_a_bulk_write_counts_by_its_records(tmp_path: Path) -> None:
    # A bulk load of few commits left its every page in the log, which slowed
    # every read after it (a sessions list over 1,000 runs: 60 ms, not 2.5).
    from waygraph.store import Write

    path = tmp_path / "wg.db"
    store = SQLiteStore(path)
    try:
        store.commit_all([Write(f"k{i}", {"i": i}, 0, ()) for i in range(_checkpoint.EVERY)])
        _wait_for(lambda: store._checkpoints.checkpoints >= 1)  # type: ignore[union-attr]
        assert _in_the_file(path) == _checkpoint.EVERY
    finally:
        store.close()


def test_a_store_dropped_unclosed_takes_its_thread_along(tmp_path: Path) -> None:
    import gc

    store = SQLiteStore(tmp_path / "wg.db")
    for i in range(_checkpoint.EVERY):
        store.commit(f"k{i}", {}, 0, [])
    assert store._checkpoints is not None
    thread = store._checkpoints._thread
    assert thread is not None and thread.is_alive()
    del store
    gc.collect()
    thread.join(timeout=10)
    assert not thread.is_alive()
