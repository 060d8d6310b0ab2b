"""SQLite WAL checkpoints, their bulk in a thread of their own, off the commit path.

In WAL mode every commit appends the pages it changed to the log; a
checkpoint copies them into the database file and fsyncs it. SQLite's
automatic checkpoint runs inside the commit that fills the log to 1,000
pages, so every hundredth turn or so paid 3-6 ms (the copy and its fsyncs)
while it held the store's lock (docs/benchmarks.md). Here the store's
connection has ``wal_autocheckpoint`` off, and after every :data:`EVERY`
records written a thread with a connection of its own runs a ``PASSIVE``
checkpoint, which never waits for writers or readers. Durability is
unchanged: a commit is as safe once it is in the log as before; only where
the copy into the file happens moves.

The log starts over from its beginning only when a commit finds all of it
copied, and under a steady stream of commits a background checkpoint never
leaves it so: commits land while it copies (left alone, the log grew to
85 MB in 3,000 commits). So once a background checkpoint finds the log past
:data:`RESET_FRAMES`, the next commit copies the few frames left itself,
under the store's lock, and the commit after it starts the log over. (A
``FULL`` checkpoint in the thread instead held writers back through
SQLite's busy handler, which sleeps in steps of milliseconds: 9-19 ms
stalls.)

Should the thread fall :data:`LAG` commits behind (starved, or failing), the
committing thread checkpoints itself, as SQLite would have.

Example:
    >>> import os, sqlite3, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "x.db")
    >>> sqlite3.connect(path).execute("PRAGMA journal_mode = WAL").fetchone()
    ('wal',)
    >>> checkpoints = Checkpointer(path, synchronous="normal", timeout=1.0)
    >>> checkpoints.committed(sqlite3.connect(path))  # the first of EVERY records
    >>> checkpoints.close()
"""

from __future__ import annotations

import logging
import sqlite3
import threading

__all__ = ["EVERY", "LAG", "RESET_FRAMES", "Checkpointer"]

log = logging.getLogger("waygraph.store")

#: Records written between background checkpoints: at the 8-20 pages a
#: record's write takes, about the 1,000 pages SQLite's own automatic
#: checkpoint waits for.
EVERY = 100

#: Records written since the last finished checkpoint at which the committing
#: thread checkpoints itself (the thread has fallen behind, or fails).
LAG = 20 * EVERY

#: Frames in the log past which the commit after a background checkpoint
#: copies what that checkpoint left, so the log can start over.
RESET_FRAMES = 1000


class Checkpointer:
    """Checkpoints ``path``'s log every :data:`EVERY` commits, in a thread started on first need.

    The store calls :meth:`committed` after each commit (under its own lock)
    and :meth:`close` when it closes; a store forked into a child makes a new
    one with its new connection. The thread is a daemon: a checkpoint cut
    short by the interpreter's exit is one SQLite finishes later.
    """

    def __init__(self, path: str, *, synchronous: str, timeout: float) -> None:
        self.path = path
        self._synchronous = synchronous
        self._timeout = timeout
        self._commits = 0  # since the last wake
        self._behind = 0  # since the last finished checkpoint
        self._finish = False  # the thread asks the next commit to copy the rest
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._done = threading.Lock()  # guards _behind and _finish against the thread
        self._thread: threading.Thread | None = None
        self.checkpoints = 0  # finished, by the thread or inline (tests read it)

    def committed(self, conn: sqlite3.Connection, records: int = 1) -> None:
        """One more commit on ``conn`` (the store's connection, its lock held) of ``records``.

        Commits are counted by the records they wrote: a record's write is
        what fills the log (8-20 pages), and a batch of many (a bulk load)
        must not leave thousands of pages in the log, which slows every read
        (a sessions list over 1,000 runs left in the log: 60 ms, 2.5 ms
        checkpointed).
        """
        self._commits += records
        with self._done:
            self._behind += records
            inline = self._behind >= LAG or self._finish
            self._finish = False
        if inline:
            # Few frames are left after a background checkpoint; a thread
            # LAG commits behind left them all, as SQLite's own would have.
            self._checkpoint(conn)
            return
        if self._commits >= EVERY:
            self._commits = 0
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="waygraph-checkpoint", daemon=True
                )
                self._thread.start()
            self._wake.set()

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stop.is_set():
                    return
                try:
                    if conn is None:
                        conn = sqlite3.connect(
                            self.path, timeout=self._timeout, isolation_level=None
                        )
                        # The checkpoint's fsyncs follow the store's durability mode.
                        conn.execute(f"PRAGMA synchronous = {self._synchronous}")
                    frames = self._checkpoint(conn)
                    if frames > RESET_FRAMES:
                        with self._done:
                            self._finish = True
                except Exception as exc:
                    # The next wake tries again; LAG bounds the log meanwhile.
                    log.warning("%s: background checkpoint failed: %s", self.path, exc)
        finally:
            if conn is not None:
                conn.close()

    def _checkpoint(self, conn: sqlite3.Connection) -> int:
        """A PASSIVE checkpoint on ``conn``; the frames the log held when it began."""
        with self._done:
            started_behind = self._behind
        busy, frames, _ = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()[0]
        if not busy:
            with self._done:
                # Commits made while it ran may not be in it: they stay counted.
                self._behind -= started_behind
                self.checkpoints += 1
        return int(frames)

    def stop(self) -> None:
        """Tell the thread to end after the checkpoint under way, without waiting for it."""
        self._stop.set()
        self._wake.set()

    def close(self) -> None:
        """Stop the thread (waiting for a checkpoint under way)."""
        self.stop()
        if self._thread is not None:
            self._thread.join()
        self._thread = None
