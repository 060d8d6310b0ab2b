"""Read-only SQLite stores: a file on a read-only mount, without write permission, or ``?mode=ro``.

Such a store opens for reading, so its sessions can be listed and shown, and
a write to it is refused with one line that says it is read-only (it used to
fail to open at all: "unable to open database file").

A WAL-mode file is opened with ``mode=ro`` first, which reads the write-ahead
log too. Where SQLite cannot use the log's shared-memory file read-only (no
``-shm`` file and a folder it cannot create one in: a read-only mount), it is
opened ``immutable``: the main file alone, which holds every commit of a
store that was closed before the mount became read-only.

Example:
    >>> read_only_reason(":memory:", requested=True)
    'opened with ?mode=ro'
"""

from __future__ import annotations

import os
import sqlite3
from urllib.parse import quote

from waygraph.errors import StoreError
from waygraph.store._sqlite_schema import current_schema

__all__ = ["check_schema_read_only", "connect_read_only", "read_only_reason"]


def read_only_reason(path: str, *, requested: bool = False) -> str | None:
    """Why the store file at ``path`` must be opened read-only, or None when it can be written.

    ``requested``: the URL asked for it (``?mode=ro``). Otherwise the file
    (when it exists) and its folder must be writable: SQLite creates the
    write-ahead log and its index next to the file.

    Example:
        >>> read_only_reason(":memory:") is None
        True
    """
    if requested:
        return "opened with ?mode=ro"
    if path == ":memory:":
        return None
    folder = os.path.dirname(path) or "."
    for target in (path, folder):
        if not os.path.exists(target) or os.access(target, os.W_OK):
            continue
        # os.access says no even to root on a read-only mount (EROFS).
        if _on_read_only_mount(target):
            return f"{target} is on a read-only file system"
        return f"no permission to write {target}"
    return None


def _on_read_only_mount(target: str) -> bool:
    if not hasattr(os, "statvfs"):  # Windows: no mount flags to ask
        return False
    try:
        return bool(os.statvfs(target).f_flag & os.ST_RDONLY)
    except OSError:
        return False  # then it is said to be a permission, which is true enough


def connect_read_only(path: str, timeout: float) -> sqlite3.Connection:
    """A connection that can only read ``path`` (it must exist); raises ``sqlite3.Error``.

    Example:
        >>> connect_read_only("/nonexistent/w.db", 1.0)
        Traceback (most recent call last):
        ...
        sqlite3.OperationalError: unable to open database file
    """
    uri = f"file:{quote(path)}?mode=ro"
    try:
        conn = _probe(uri, timeout)
    except sqlite3.OperationalError:
        if not os.path.exists(path):
            raise
        # No -shm file and no way to make one in a folder that cannot be
        # written ("unable to open database file" on a read-only mount,
        # "attempt to write a readonly database" without permission): read
        # the main file alone. Nothing can write it, so SQLite need not lock it.
        conn = _probe(uri + "&immutable=1", timeout)
    return conn


def _probe(uri: str, timeout: float) -> sqlite3.Connection:
    # sqlite3.connect opens lazily: the first read is what finds a missing
    # file or an unusable write-ahead log.
    conn = sqlite3.connect(
        uri, uri=True, timeout=timeout, isolation_level=None, check_same_thread=False
    )
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    except BaseException:
        conn.close()
        raise
    return conn


def check_schema_read_only(conn: sqlite3.Connection, url: str, path: str, why: str) -> None:
    """Refuse a read-only file whose tables this waygraph cannot read as they are.

    A file of an older schema would be migrated on open, which is a write; a
    file that is not a store would get its tables made, also a write.

    Example:
        >>> conn = sqlite3.connect(":memory:")
        >>> check_schema_read_only(conn, "sqlite:///x.db", "x.db", "opened with ?mode=ro")
        Traceback (most recent call last):
        ...
        waygraph.errors.StoreError: sqlite:///x.db: x.db holds no waygraph store, and it is \
read-only (opened with ?mode=ro), so none can be made in it
    """
    problem = current_schema(conn, url, path)
    if problem == "empty":
        raise StoreError(
            f"{url}: {path} holds no waygraph store, and it is read-only ({why}), "
            "so none can be made in it"
        )
    if problem is not None:
        raise StoreError(
            f"{url}: {path} has {problem}; it is read-only ({why}), so it cannot be "
            "brought up to date: open it once where it can be written"
        )
