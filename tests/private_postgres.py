"""A PostgreSQL server of a test's own, for faults no shared server may suffer.

Stopping (``SIGSTOP``) or killing the machine's shared PostgreSQL would fail
every other test using it, so a test that needs a server to freeze starts
its own: ``initdb`` into a temporary folder and ``postgres`` on a free
port, and :meth:`PrivatePostgres.stop` freezes this server's processes (its
postmaster and the postmaster's children) and no other. As root, the server runs as
the ``postgres`` user (PostgreSQL refuses to run as root).

Example::

    with private_postgres() as server:
        store = PostgresStore(server.url + "?timeout=1")
        server.stop()       # every process of this server, SIGSTOP
        server.cont()
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import unavailable

__all__ = ["PrivatePostgres", "private_postgres"]


@dataclass
class PrivatePostgres:
    """A running server of this test alone: its URL and its postmaster process."""

    url: str
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        """Freeze every process of this server: the postmaster first, then its children."""
        self._signal(signal.SIGSTOP)

    def cont(self) -> None:
        """Let the frozen server run again."""
        self._signal(signal.SIGCONT)

    def _signal(self, sig: int) -> None:
        # Each backend leads a process group of its own (PostgreSQL's
        # InitPostmasterChild), so killpg would reach the postmaster alone.
        os.kill(self.process.pid, sig)
        for pid in _children(self.process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)


def _children(parent: int) -> list[int]:
    """The pids whose parent is ``parent`` (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # The command may hold spaces and parentheses: fields after the last ')'.
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[1]) == parent:
            found.append(int(stat.parent.name))
    return found


def _binary(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        for folder in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
            if (folder / name).exists():
                return str(folder / name)
        unavailable(f"{name} (PostgreSQL's server binaries) is not installed")
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _as_server_user(folder: Path) -> dict[str, Any]:
    """Popen arguments that run the server as a user PostgreSQL accepts."""
    if os.geteuid() != 0:
        return {}
    try:
        user = pwd.getpwnam("postgres")
    except KeyError:
        unavailable("running as root and there is no 'postgres' user to run a server as")
    for path in (folder, *folder.rglob("*")):
        os.chown(path, user.pw_uid, user.pw_gid)
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


@contextlib.contextmanager
def private_postgres(*, ready_within: float = 60.0) -> Iterator[PrivatePostgres]:
    """Start a PostgreSQL server in a new temporary folder; on exit stop it and remove it.

    The folder is not pytest's ``tmp_path``: as root, the server's user must
    reach it, and pytest's base folder is the owner's alone.
    """
    initdb, postgres = _binary("initdb"), _binary("postgres")
    folder = Path(tempfile.mkdtemp(prefix="waygraph-pg-"))
    user = _as_server_user(folder)
    data = folder / "data"
    made = subprocess.run(
        [initdb, "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"],
        capture_output=True,
        check=False,
        **user,
    )
    if made.returncode:
        shutil.rmtree(folder, ignore_errors=True)
        raise RuntimeError(f"initdb failed: {made.stderr.decode(errors='replace').strip()}")
    port = _free_port()
    process = subprocess.Popen(
        [
            postgres,
            "-D",
            str(data),
            "-p",
            str(port),
            "-k",
            str(folder),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "fsync=off",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        **user,
    )
    server = PrivatePostgres(f"postgresql://postgres@127.0.0.1:{port}/postgres", process)
    try:
        _wait_ready(server, ready_within)
        yield server
    finally:
        with contextlib.suppress(ProcessLookupError):
            server.cont()
            process.send_signal(signal.SIGINT)  # fast shutdown
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            for pid in (*_children(process.pid), process.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            process.wait()
        shutil.rmtree(folder, ignore_errors=True)


def _wait_ready(server: PrivatePostgres, within: float) -> None:
    import psycopg

    ends = time.monotonic() + within
    while True:
        try:
            with psycopg.connect(server.url, connect_timeout=2):
                return
        except psycopg.OperationalError as exc:
            if server.process.poll() is not None or time.monotonic() > ends:
                raise RuntimeError(f"the test's own PostgreSQL did not start: {exc}") from exc
            time.sleep(0.1)
