"""PostgreSQL: every store call ends by its deadline, even when the server stops answering.

A server that is stopped (``SIGSTOP``, a frozen VM, a host gone from the
network) leaves libpq waiting on its socket for ever: ``connect_timeout``
covers new connections only, and ``statement_timeout`` is the server's own
clock, which stops with it. Keepalives and ``tcp_user_timeout`` catch a peer
whose kernel is gone, but a stopped process on a live host still has its
kernel acknowledge every packet. So each call registers its connection here
with a deadline, and one thread per store, waking a few times a deadline,
shuts down the socket of a call past its own: libpq's wait returns at once
with a broken connection, the pool drops it, and the call raises
:class:`~waygraph.errors.StoreError` saying the deadline passed.

Registering is a dict insert under a lock (no thread or timer per call), so
a call that answers in time costs about a microsecond more.

Example:
    >>> watch = Watchdog(2.0)
    >>> token = watch.start(None)
    >>> watch.expired(token), watch.finish(token)
    (False, False)
    >>> watch.close()
"""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import Any

__all__ = ["Watchdog", "socket_options"]


def socket_options(params: dict[str, Any], deadline: float) -> dict[str, Any]:
    """libpq's socket-level timeouts for ``deadline`` seconds, except those ``params`` set.

    ``tcp_user_timeout`` drops a connection whose sent data stays
    unacknowledged that long; keepalives notice an idle connection's peer
    gone (the LISTEN connection waits idle for minutes).

    Example:
        >>> socket_options({"keepalives_idle": "30"}, 2.0)["tcp_user_timeout"]
        2000
        >>> "keepalives_idle" in socket_options({"keepalives_idle": "30"}, 2.0)
        False
    """
    whole = max(1, round(deadline))
    wanted: dict[str, Any] = {
        "connect_timeout": max(2, whole),
        "tcp_user_timeout": max(1, round(deadline * 1000)),
        "keepalives": 1,
        "keepalives_idle": whole,
        "keepalives_interval": max(1, whole // 3),
        "keepalives_count": 3,
    }
    return {name: value for name, value in wanted.items() if name not in params}


class Watchdog:
    """Shuts down the socket of a connection whose call outlived ``deadline`` seconds.

    :meth:`start` before a call's first wait (the pool's included), with the
    connection once there is one (:meth:`attach`) until it goes back to the
    pool (:meth:`detach`: a connection another call may hold is never cut),
    :meth:`finish` after it; :meth:`finish` says whether the deadline cut
    the call.
    """

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self._lock = threading.Lock()
        self._calls: dict[int, list[Any]] = {}  # token -> [ends_at, connection, cut]
        self._next = 0
        self._stop = threading.Event()
        # A few looks a deadline: a cut call ends within a quarter of it late.
        self._tick = min(0.5, max(0.02, deadline / 4))
        self._thread = threading.Thread(
            target=self._run, name="waygraph.store.deadline", daemon=True
        )
        self._thread.start()

    def start(self, conn: Any) -> int:
        """A token for a call starting now on ``conn`` (``None``: no connection yet)."""
        with self._lock:
            self._next += 1
            self._calls[self._next] = [time.monotonic() + self.deadline, conn, False]
            return self._next

    def left(self, token: int) -> float:
        """Seconds the call still has (0 when past its deadline)."""
        with self._lock:
            call = self._calls.get(token)
        return 0.0 if call is None else max(0.0, call[0] - time.monotonic())

    def attach(self, token: int, conn: Any) -> None:
        """The connection the call got from the pool: cut it at the deadline."""
        with self._lock:
            call = self._calls[token]
            call[1] = conn
            if call[2] or time.monotonic() < call[0]:
                return
            call[2] = True
        _shut(conn)

    def detach(self, token: int) -> None:
        """The call is done with its connection (about to go back to the pool): never cut it."""
        with self._lock:
            call = self._calls.get(token)
            if call is not None:
                call[1] = None

    def expired(self, token: int) -> bool:
        """True when the deadline passed for this call (its socket was shut down)."""
        with self._lock:
            call = self._calls.get(token)
            return call is not None and call[2]

    def finish(self, token: int) -> bool:
        """The call is over (its connection may go back to the pool); True if it was cut."""
        with self._lock:
            call = self._calls.pop(token, None)
        return call is not None and call[2]

    def close(self) -> None:
        """Stop the thread (calls still running are no longer cut)."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._tick):
            now = time.monotonic()
            with self._lock:
                for call in self._calls.values():
                    if not call[2] and call[0] <= now and call[1] is not None:
                        call[2] = True
                        # Under the lock: the call cannot hand the connection
                        # back to the pool (finish) while it is being cut.
                        _shut(call[1])


def _shut(conn: Any) -> None:
    """Shut down ``conn``'s socket both ways: a libpq wait on it returns at once."""
    try:
        fd = conn.pgconn.socket
    except Exception:  # already closed or broken: nothing waits on it
        return
    try:
        with socket.socket(fileno=os.dup(fd)) as sock:
            sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
