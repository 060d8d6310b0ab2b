"""Live updates: a session's events as server-sent events, as they are committed.

How the server learns of a commit depends on the store:

- **PostgreSQL**: while the server listens, every commit sends a ``NOTIFY``
  in its own transaction (:meth:`waygraph.store.postgres.PostgresStore.listen`
  registers the listener); one listener thread wakes exactly the streams of
  the session that changed. A slow fallback poll
  covers notifications lost while the listener reconnects.
- **SQLite, files, memory**: each stream asks the store for events after the
  last one it sent, every ``poll_interval`` seconds (one indexed query; other
  processes' commits are seen too).

Wire format (``text/event-stream``): a plan event is a default ``message``
with ``id: <seq>`` and the event as JSON data, so a reconnecting browser
resumes with ``Last-Event-ID``. ``event: run`` says which run (store key) the
stream follows; it comes first without an id, and again with ``id: 0`` when
the session starts a new run (sequence numbers restart at 1 per run). A
comment line (``: keep-alive``) every ``heartbeat`` seconds keeps proxies from
closing an idle stream.

Example:
    >>> sse({"type": "node_entered"}, event_id=3)
    'id: 3\\ndata: {"type": "node_entered"}\\n\\n'
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
from anyio import to_thread

from waygraph.server.errors import ApiError
from waygraph.server.service import Service
from waygraph.store import Store

__all__ = ["ChangeFeed", "PollingFeed", "PostgresFeed", "open_feed", "session_stream", "sse"]

log = logging.getLogger("waygraph.server")

#: Events sent per store read; a longer backlog is sent in several reads.
BATCH = 500


def sse(data: Any, *, event: str | None = None, event_id: int | None = None) -> str:
    """One server-sent event: optional ``event:`` and ``id:`` lines, then JSON ``data:``."""
    lines = []
    if event is not None:
        lines.append(f"event: {event}")
    if event_id is not None:
        lines.append(f"id: {event_id}")
    # ASCII JSON never contains a newline, so one data line holds it all.
    lines.append("data: " + json.dumps(data, ensure_ascii=True))
    return "\n".join(lines) + "\n\n"


class ChangeFeed:
    """Tells streams when a session may have changed: here, simply after ``interval``."""

    def __init__(self, interval: float = 0.5) -> None:
        self.interval = interval

    def start(self) -> None:
        """Begin watching (called once the event loop runs)."""

    def stop(self) -> None:
        """Stop watching; waiting streams fall back to their timeouts."""

    async def wait(self, session_id: str, timeout: float) -> None:
        """Return when ``session_id`` may have changed, or after ``timeout`` seconds."""
        await anyio.sleep(min(self.interval, timeout))


class PollingFeed(ChangeFeed):
    """For stores without notifications: streams re-read every ``interval`` seconds."""


class PostgresFeed(ChangeFeed):
    """LISTENs on the store's channel in a thread and wakes the streams of a changed session."""

    #: Seconds between re-reads even without a notification (one may be lost on reconnect).
    FALLBACK = 5.0
    #: Seconds after (re)connecting when every stream re-reads a second time.
    SETTLE = 1.0

    def __init__(self, store: Any, poll_interval: float = 0.5) -> None:
        # Until the LISTEN connection is up (and whenever it is down), streams
        # poll as they would without notifications.
        super().__init__(poll_interval)
        self.poll_interval = poll_interval
        self.store = store
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiters: dict[str, set[asyncio.Event]] = {}
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping.clear()
        self._thread = threading.Thread(target=self._listen, name="waygraph-listen", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=3)
            self._thread = None

    async def wait(self, session_id: str, timeout: float) -> None:
        event = asyncio.Event()
        self._waiters.setdefault(session_id, set()).add(event)
        try:
            with anyio.move_on_after(min(self.interval, timeout)):
                await event.wait()
        finally:
            waiters = self._waiters.get(session_id)
            if waiters is not None:
                waiters.discard(event)
                if not waiters:
                    self._waiters.pop(session_id, None)

    def _wake(self, session_id: str | None) -> None:
        # Runs on the event loop. None: anything may have changed.
        targets = (
            list(self._waiters.values())
            if session_id is None
            else [self._waiters.get(session_id, set())]
        )
        for waiters in targets:
            for event in list(waiters):
                event.set()

    def _signal(self, session_id: str | None) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._wake, session_id)

    def _listen(self) -> None:
        failures = 0
        while not self._stopping.is_set():
            try:
                conn = self.store.listen()
            except Exception as exc:
                self.interval = self.poll_interval
                if not failures:
                    log.warning(
                        "live updates: cannot LISTEN (%s); streams poll every %s s meanwhile",
                        exc,
                        self.poll_interval,
                    )
                failures += 1
                # A role that may not register stays refused: retry ever more slowly.
                self._stopping.wait(min(30.0, float(failures)))
                continue
            if failures:
                log.warning("live updates: listening again")
            failures = 0
            self.interval = self.FALLBACK
            try:
                self._signal(None)  # whatever happened while not listening
                # Commits whose statement began before the listener was
                # registered do not notify (PostgresStore.listen): re-read
                # once more when they are surely done.
                again: float | None = time.monotonic() + self.SETTLE
                while not self._stopping.is_set():
                    for notice in conn.notifies(timeout=0.5):
                        self._signal(_session_of(notice.payload))
                    if again is not None and time.monotonic() >= again:
                        again = None
                        self._signal(None)
            except Exception as exc:
                log.warning("live updates: the LISTEN connection failed (%s); reconnecting", exc)
            finally:
                self.interval = self.poll_interval
                conn.close()


def _session_of(payload: str) -> str | None:
    try:
        session = json.loads(payload).get("session")
    except (ValueError, AttributeError):
        return None
    return session if isinstance(session, str) else None


def open_feed(store: Store, poll_interval: float) -> ChangeFeed:
    """The feed that suits ``store``: LISTEN/NOTIFY for PostgreSQL, polling otherwise."""
    if hasattr(store, "listen") and hasattr(store, "channel"):
        return PostgresFeed(store, poll_interval)
    return PollingFeed(poll_interval)


async def session_stream(
    service: Service,
    feed: ChangeFeed,
    session_id: str,
    *,
    after: int = 0,
    heartbeat: float = 15.0,
) -> AsyncIterator[str]:
    """The event stream of ``session_id`` from ``after`` on; runs until the client leaves."""
    key = await to_thread.run_sync(service.session_key, session_id)
    yield "retry: 2000\n" + sse({"session_id": session_id, "key": key}, event="run")
    last_beat = time.monotonic()
    while True:
        try:
            current = await to_thread.run_sync(service.session_key, session_id)
        except ApiError:
            current = key  # the session's records vanished (a wiped store): keep waiting
        if current != key:
            key, after = current, 0
            yield sse({"session_id": session_id, "key": key}, event="run", event_id=0)
        events = await to_thread.run_sync(service.store.events, key, after, BATCH)
        for stored in events:
            after = stored.seq
            yield sse({"seq": stored.seq, "key": key, **stored.data}, event_id=stored.seq)
        if len(events) == BATCH:
            continue  # more backlog: no waiting
        now = time.monotonic()
        if now - last_beat >= heartbeat:
            last_beat = now
            yield ": keep-alive\n\n"
        await feed.wait(session_id, max(0.01, heartbeat - (now - last_beat)))
