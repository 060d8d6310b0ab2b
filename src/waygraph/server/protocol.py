"""HTTP connections that slow clients cannot hold hostage.

Uvicorn waits for a request's headers as long as a client keeps sending a
byte now and then, so a thousand slow clients (slowloris) used to take every
file descriptor and lock everyone else out. :func:`guarded_protocol` builds
uvicorn's h11 protocol with two rules added:

- **a header deadline**: a connection whose request headers are not complete
  ``header_timeout`` seconds after it opened (or after its previous response)
  is closed;
- **a connection limit below the file limit**: when ``max_connections`` are
  open, a new connection closes the one that has waited longest for its
  headers, so clients that send whole requests are always served.

Request bodies are bounded by the security middleware (size and time).

Example:
    >>> protocol = guarded_protocol(header_timeout=5, max_connections=100)
    >>> protocol.header_timeout, protocol.max_connections
    (5.0, 100)
"""

from __future__ import annotations

import asyncio
import resource
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["DEFAULT_HEADER_TIMEOUT", "connection_limit", "guarded_protocol"]

#: Seconds a client has to send a request's headers.
DEFAULT_HEADER_TIMEOUT = 10.0
#: File descriptors kept free for the store, logs and the listening socket.
_RESERVED_FDS = 64


def connection_limit(wanted: int = 1000) -> int:
    """``wanted``, lowered to stay below this process's open-file limit.

    Example:
        >>> 0 < connection_limit(10) <= 10
        True
    """
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(1, min(wanted, soft - _RESERVED_FDS))


class _GuardedH11Protocol(H11Protocol):
    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    max_connections: int = 1000

    _waiting_since: float | None = None
    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_headers()
        if len(self.connections) > self.max_connections:
            self._evict_slowest()

    def handle_events(self) -> None:
        super().handle_events()
        if self._waiting_since is not None and self.conn.their_state is not h11.IDLE:
            self._headers_done()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._await_headers()  # the next request on this connection

    def connection_lost(self, exc: Exception | None) -> None:
        self._headers_done()
        super().connection_lost(exc)

    def _await_headers(self) -> None:
        self._headers_done()
        self._waiting_since = self.loop.time()
        self._header_timer = self.loop.call_later(self.header_timeout, self._too_slow)

    def _headers_done(self) -> None:
        self._waiting_since = None
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _too_slow(self) -> None:
        self._header_timer = None
        if self._waiting_since is not None and not self.transport.is_closing():
            self.transport.close()

    def _evict_slowest(self) -> None:
        waiting = [
            c
            for c in self.connections
            if isinstance(c, _GuardedH11Protocol)
            and c._waiting_since is not None
            and c is not self
            and not c.transport.is_closing()
        ]
        if waiting:
            slowest = min(waiting, key=lambda c: c._waiting_since or 0.0)
            slowest.transport.close()


def guarded_protocol(
    *, header_timeout: float = DEFAULT_HEADER_TIMEOUT, max_connections: int = 1000
) -> Any:
    """Uvicorn's h11 protocol with a header deadline and a connection limit (``http=``)."""
    return type(
        "GuardedH11Protocol",
        (_GuardedH11Protocol,),
        {"header_timeout": float(header_timeout), "max_connections": int(max_connections)},
    )
