"""Issue 33, item 7: a SQLite store that cannot be written opens for reading.

On a read-only mount a store could not even be listed ("unable to open
database file", not a word about read-only). Now it opens read-only (SQLite
``mode=ro``, or ``immutable`` where the write-ahead log cannot be used), so
its sessions can be listed and shown, and a write says it is read-only in
one line. ``?mode=ro`` asks for the same on any file.

Tests run as root here, where ``chmod`` stops no write: the read-only mount
is a real one, made in a user and mount namespace (``unshare -Urm``), and
the permission case runs as ``nobody`` (``setpriv``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from waygraph.errors import ConfigError, StoreError
from waygraph.store import open_store
from waygraph.store.sqlite import SQLiteStore


def make_store(path: Path) -> None:
    store = SQLiteStore(path)
    store.commit(
        "run_1",
        {"status": "running"},
        0,
        [{"type": "plan_activated"}],
        session="s1",
        status="running",
        plan="deploy",
        make_current=True,
    )
    store.close()


def test_mode_ro_reads_everything_and_refuses_writes_in_one_line(tmp_path: Path):
    path = tmp_path / "w.db"
    make_store(path)
    store = open_store(f"sqlite:///{path}?mode=ro")
    assert isinstance(store, SQLiteStore)
    assert store.read_only == "opened with ?mode=ro"
    assert store.sessions() == ["s1"]
    assert store.current("s1") == "run_1"
    assert [r.key for r in store.session_rows().records] == ["run_1"]
    assert [e.data["type"] for e in store.events("run_1")] == ["plan_activated"]
    with pytest.raises(StoreError) as info:
        store.commit("run_2", {}, 0, [], session="s2")
    message = str(info.value)
    assert "\n" not in message
    assert message.endswith("cannot commit 'run_2': the store is read-only (opened with ?mode=ro)")
    with pytest.raises(StoreError, match="cannot clear the pointer of session 's1': the store is"):
        store.clear_current("s1")
    store.close()
    # Nothing was written: a writer sees the store as it was.
    writer = SQLiteStore(path)
    assert writer.sessions() == ["s1"] and writer.current("s1") == "run_1"
    writer.close()


def test_a_read_only_store_sees_what_a_writer_commits_meanwhile(tmp_path: Path):
    path = tmp_path / "w.db"
    make_store(path)
    writer = SQLiteStore(path)
    reader = SQLiteStore(path, read_only=True)
    writer.commit("run_2", {}, 0, [], session="s2", make_current=True)
    # mode=ro reads the write-ahead log too, not only the main file.
    assert reader.sessions() == ["s1", "s2"]
    reader.close()
    writer.close()


def test_a_file_that_is_no_store_is_refused_read_only_not_made_one(tmp_path: Path):
    path = tmp_path / "empty.db"
    path.touch()
    with pytest.raises(StoreError, match="holds no waygraph store, and it is read-only"):
        open_store(f"sqlite:///{path}?mode=ro")
    missing = tmp_path / "missing.db"
    with pytest.raises(StoreError, match="read-only"):
        open_store(f"sqlite:///{missing}?mode=ro")
    assert not missing.exists()


def test_bad_read_only_options_are_config_errors(tmp_path: Path):
    with pytest.raises(ConfigError, match="mode must be ro or rw"):
        open_store(f"sqlite:///{tmp_path / 'w.db'}?mode=wo")
    with pytest.raises(ConfigError, match="in-memory store cannot be read-only"):
        SQLiteStore(":memory:", read_only=True)


# ---------------------------------------------------------------- real read-only files

PROBE = """
import sys
from waygraph.errors import StoreError
from waygraph.store import open_store
store = open_store(sys.argv[1])
print("sessions", store.sessions())
print("reason", store.read_only)
try:
    store.commit("run_2", {}, 0, [], session="s2")
except StoreError as exc:
    print("refused", exc)
"""


def _can_mount_read_only(folder: Path) -> bool:
    if not shutil.which("unshare") or sys.platform != "linux":
        return False
    done = subprocess.run(
        ["unshare", "-Urm", "sh", "-c", f"mount --bind {folder} {folder}"],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def test_a_store_on_a_read_only_mount_lists_sessions_and_refuses_writes(tmp_path: Path):
    folder = tmp_path / "mnt"
    folder.mkdir()
    make_store(folder / "w.db")
    if not _can_mount_read_only(folder):
        pytest.skip("no user and mount namespaces here (unshare -Urm)")
    url = f"sqlite:///{folder / 'w.db'}"
    script = (
        f"mount --bind {folder} {folder} && mount -o remount,bind,ro {folder} && "
        f'"$0" -c "$1" {url} && "$0" -m waygraph sessions list --store {url}'
    )
    done = subprocess.run(
        ["unshare", "-Urm", "sh", "-c", script, sys.executable, PROBE],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "sessions ['s1']"
    assert lines[1] == f"reason {folder / 'w.db'} is on a read-only file system"
    assert lines[2] == (
        f"refused {url}: cannot commit 'run_2': the store is read-only "
        f"({folder / 'w.db'} is on a read-only file system)"
    )
    assert "s1" in done.stdout.split("\n", 3)[3]  # waygraph sessions list shows it


@pytest.mark.skipif(
    sys.platform != "linux" or not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="runs the reader as nobody, which needs root",
)
def test_a_store_its_user_may_not_write_opens_read_only():
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    if not shutil.which("setpriv"):
        pytest.skip("no setpriv")
    if subprocess.run([*nobody, sys.executable, "-c", "import waygraph"], check=False).returncode:
        pytest.skip("nobody cannot run this interpreter or import waygraph")
    # Not under tmp_path: nobody cannot pass pytest's private temporary folder.
    with tempfile.TemporaryDirectory() as temporary:
        _read_as_nobody(Path(temporary), nobody)


def _read_as_nobody(tmp_path: Path, nobody: list[str]) -> None:
    folder = tmp_path / "owned"
    folder.mkdir()
    make_store(folder / "w.db")
    # Readable by everyone, writable by root alone (the folder too).
    for path in (tmp_path, folder):
        path.chmod(0o755)
    (folder / "w.db").chmod(0o644)
    done = subprocess.run(
        [*nobody, sys.executable, "-c", PROBE, f"sqlite:///{folder / 'w.db'}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "sessions ['s1']",
        f"reason no permission to write {folder / 'w.db'}",
        f"refused sqlite:///{folder / 'w.db'}: cannot commit 'run_2': the store is read-only "
        f"(no permission to write {folder / 'w.db'})",
    ]


def test_a_mount_that_cannot_be_asked_is_taken_for_a_permission(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from waygraph.store import _sqlite_readonly

    def refuse(target: str) -> os.statvfs_result:
        raise PermissionError(13, "Permission denied", target)

    make_store(tmp_path / "w.db")
    monkeypatch.setattr(_sqlite_readonly.os, "access", lambda target, mode: False)
    monkeypatch.setattr(_sqlite_readonly.os, "statvfs", refuse)
    store = SQLiteStore(tmp_path / "w.db")
    assert store.read_only == f"no permission to write {tmp_path / 'w.db'}"
    assert store.sessions() == ["s1"]
    store.close()
