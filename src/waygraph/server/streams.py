"""Event streams get their own limits, so the API stays reachable.

A stream (``GET /api/sessions/{id}/stream``) holds its connection for as
long as the client likes and never waits for headers, so the connection cap
(:mod:`waygraph.server.protocol`) cannot close it: a thousand idle streams
used to lock every other client out. :class:`StreamGuard` counts open
streams, in all and per client address, and answers one over either limit
at once, before any route runs:

- over the limit in all (``--max-streams``): **503** ``too_many_streams``;
- over the limit of its client (``--max-streams-per-client``): **429**
  ``too_many_streams``;

both with ``Retry-After``. The limit in all stays at most half the
connection limit (:func:`stream_limit`), so ``/api/health`` and the API
always have connections left. Behind a proxy every stream comes from the
proxy's address, so the per-client limit then caps them all.

The guard also wakes the streams of a session right after a write to it
that this server served (a turn, an answer, a reset), so they need not wait
for their next poll.

Example:
    >>> slots = StreamSlots(total=2, per_client=1)
    >>> slots.take("10.0.0.1"), slots.take("10.0.0.1"), slots.take("10.0.0.2")
    (None, 'client', None)
    >>> slots.take("10.0.0.3")
    'total'
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Literal

from waygraph.server.errors import error_response
from waygraph.server.live import ChangeFeed

__all__ = [
    "DEFAULT_MAX_STREAMS",
    "DEFAULT_MAX_STREAMS_PER_CLIENT",
    "RETRY_AFTER",
    "StreamGuard",
    "StreamSlots",
    "stream_limit",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Event streams open at once, in all (then at most half the connection limit).
DEFAULT_MAX_STREAMS = 256
#: Event streams open at once from one client address.
DEFAULT_MAX_STREAMS_PER_CLIENT = 32
#: Seconds a refused stream is told to wait before trying again.
RETRY_AFTER = 5

_STREAM = re.compile(r"^/api/sessions/([^/]+)/stream/?$")
_WRITE = re.compile(r"^/api/sessions/([^/]+)(?:/turn|/answer)?/?$")
_WRITES = frozenset({"POST", "DELETE"})


def stream_limit(wanted: int, connections: int) -> int:
    """``wanted`` streams, lowered to half of ``connections`` (at least 1).

    Example:
        >>> stream_limit(256, 1000), stream_limit(256, 192), stream_limit(5, 1)
        (256, 96, 1)
    """
    return max(1, min(wanted, connections // 2))


class StreamSlots:
    """Counts open streams in all and per client; :meth:`take` says which limit refuses."""

    def __init__(
        self,
        total: int = DEFAULT_MAX_STREAMS,
        per_client: int = DEFAULT_MAX_STREAMS_PER_CLIENT,
    ) -> None:
        if total < 1 or per_client < 1:
            raise ValueError("stream limits must be at least 1")
        self.total = total
        self.per_client = per_client
        self.open = 0
        self._by_client: dict[str, int] = {}

    def take(self, client: str) -> Literal["total", "client"] | None:
        """Take a slot for ``client``: None when taken, else the limit that refuses it."""
        if self.open >= self.total:
            return "total"
        held = self._by_client.get(client, 0)
        if held >= self.per_client:
            return "client"
        self.open += 1
        self._by_client[client] = held + 1
        return None

    def give_back(self, client: str) -> None:
        """Free a slot :meth:`take` gave ``client``."""
        self.open = max(0, self.open - 1)
        held = self._by_client.get(client, 0) - 1
        if held > 0:
            self._by_client[client] = held
        else:
            self._by_client.pop(client, None)

    def held(self, client: str) -> int:
        """Streams ``client`` has open."""
        return self._by_client.get(client, 0)


class StreamGuard:
    """ASGI middleware: caps event streams and wakes them after writes served here."""

    def __init__(self, app: ASGIApp, *, slots: StreamSlots, feed: ChangeFeed) -> None:
        self.app = app
        self.slots = slots
        self.feed = feed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path, method = scope["path"], scope["method"]
        if method == "GET" and _STREAM.match(path):
            await self._stream(scope, receive, send)
            return
        await self.app(scope, receive, send)
        written = _WRITE.match(path) if method in _WRITES else None
        if written is not None:
            # The commit is done once the answer is sent: its streams read now.
            self.feed.touch(written.group(1))

    async def _stream(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = str((scope.get("client") or ("unknown",))[0])
        refused = self.slots.take(client)
        if refused is not None:
            await self._refusal(refused, client)(scope, receive, send)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            # Whatever ends the stream (the client leaving, a cancel, an error).
            self.slots.give_back(client)

    def _refusal(self, refused: str, client: str) -> Any:
        headers = {"Retry-After": str(RETRY_AFTER)}
        if refused == "total":
            return error_response(
                503,
                "too_many_streams",
                f"{self.slots.open} event streams are open, the server's limit "
                "(--max-streams); try again later",
                headers=headers,
            )
        return error_response(
            429,
            "too_many_streams",
            f"this client has {self.slots.held(client)} event streams open, the limit per "
            "client (--max-streams-per-client); close one or try again later",
            headers=headers,
        )
