"""The file store: its layout, corrupt and torn files, and commits cut short completed on open."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from waygraph.store import Write, open_store
from waygraph.store.files import FileStore, file_name

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
