"""Live updates: a session's events as server-sent events, as they are committed.

How the server learns of a commit depends on the store:

- **PostgreSQL**: while the server listens, every commit sends a ``NOTIFY``
  in its own transaction (:meth:`waygraph.store.postgres.PostgresStore.listen`
  registers the listener); one listener thread wakes exactly the streams of
  the session that changed, and an idle stream reads nothing. Every stream
  re-reads when the listener (re)connects, which covers notifications lost
  meanwhile; while it is down, streams poll.
- **SQLite, files, memory**: each stream asks the store for events after the
  last one it sent (one indexed query; other processes' commits are seen
  too), ``poll_interval`` seconds after a read that found some, backing off
  to :data:`MAX_POLL` while the session is quiet (:func:`poll_delay`).

Either way, a write this server served wakes its session's streams at once
(:class:`waygraph.server.streams.StreamGuard`).

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
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any, TypeVar

import anyio
from anyio import to_thread

from waygraph.server.errors import ApiError
from waygraph.server.pools import Pools
from waygraph.server.service import Service
from waygraph.store import Store

__all__ = [
    "MAX_POLL",
    "ChangeFeed",
    "PollingFeed",
    "PostgresFeed",
    "Watch",
    "open_feed",
    "poll_delay",
    "session_stream",
    "sse",
]

log = logging.getLogger("waygraph.server")

T = TypeVar("T")

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


#: The longest pause between an idle stream's store reads when nothing notifies.
MAX_POLL = 4.0


def poll_delay(idle: int, base: float = 0.5, longest: float = MAX_POLL) -> float:
    """Seconds before a stream reads the store again, after ``idle`` reads that found nothing.

    ``base`` after a read that found events, doubling while the session stays
    quiet, up to ``longest``: a busy session is followed closely and an idle
    one costs a read every few seconds, not every ``base``.

    Example:
        >>> [poll_delay(n) for n in range(6)]
        [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    """
    if base >= longest:
        return base
    return min(longest, base * 2.0 ** min(max(idle, 0), 32))


class Watch:
    """One stream's view of the feed: when to read its session's events again.

    Before each read the stream calls :meth:`reading`; a change signalled
    during the read is kept, so the following :meth:`wait` returns at once
    (no commit slips between a read and the wait).
    """

    def __init__(self, feed: ChangeFeed, session_id: str) -> None:
        self.feed = feed
        self.session_id = session_id
        #: Reads in a row that found nothing (the backoff of polling feeds).
        self.idle = 0
        self._woken = asyncio.Event()
        self._due = 0.0

    def wake(self) -> None:
        """The session may have changed: read at once (call on the event loop)."""
        self._woken.set()

    def reading(self) -> None:
        """Say a read starts: later changes wake the next wait."""
        self._woken.clear()

    def read(self, found: bool) -> None:
        """Say what the read found; sets when the next poll is due."""
        self.idle = 0 if found else self.idle + 1
        self._due = time.monotonic() + poll_delay(self.idle, self.feed.interval, self.feed.longest)

    async def wait(self, timeout: float) -> bool:
        """True when the store should be read now; False when ``timeout`` passed first.

        While the feed is notified of every commit (PostgreSQL listening), only
        a notification makes it True: an idle stream costs no reads at all.
        """
        pause = timeout if self.feed.listening else min(timeout, self._due - time.monotonic())
        if pause > 0:
            with anyio.move_on_after(pause):
                await self._woken.wait()
        if self._woken.is_set():
            return True
        return not self.feed.listening and time.monotonic() >= self._due


class ChangeFeed:
    """Tells streams when their session may have changed.

    This base polls: a stream reads the store ``interval`` seconds after a
    read that found events, backing off to ``longest`` while its session
    stays quiet (:func:`poll_delay`). :meth:`touch` wakes the streams of a
    session at once (the server calls it after a write it served itself).
    """

    #: True while every commit is notified, so streams need not poll.
    listening = False

    def __init__(self, interval: float = 0.5, longest: float = MAX_POLL) -> None:
        self.interval = interval
        self.longest = max(longest, interval)
        self._watches: dict[str, set[Watch]] = {}

    def start(self) -> None:
        """Begin watching (called once the event loop runs)."""

    def stop(self) -> None:
        """Stop watching; waiting streams fall back to polling."""

    @contextmanager
    def watch(self, session_id: str) -> Iterator[Watch]:
        """A :class:`Watch` on ``session_id`` for as long as the ``with`` block runs."""
        watch = Watch(self, session_id)
        self._watches.setdefault(session_id, set()).add(watch)
        try:
            yield watch
        finally:
            watches = self._watches.get(session_id)
            if watches is not None:
                watches.discard(watch)
                if not watches:
                    self._watches.pop(session_id, None)

    def touch(self, session_id: str | None) -> None:
        """Wake the streams of ``session_id`` (None: every stream); call on the event loop."""
        targets = (
            list(self._watches.values())
            if session_id is None
            else [self._watches.get(session_id, set())]
        )
        for watches in targets:
            for watch in list(watches):
                watch.wake()


class PollingFeed(ChangeFeed):
    """For stores without notifications: streams poll, backing off while idle."""


class PostgresFeed(ChangeFeed):
    """LISTENs on the store's channel in a thread and wakes the streams of a changed session.

    While the LISTEN connection is up, streams read only when notified; while
    it is down (or cannot be registered) they poll as without notifications.
    """

    #: Seconds after (re)connecting when every stream re-reads a second time.
    SETTLE = 1.0

    def __init__(self, store: Any, poll_interval: float = 0.5) -> None:
        super().__init__(poll_interval)
        self.poll_interval = poll_interval
        self.store = store
        self.listening = False
        self._loop: asyncio.AbstractEventLoop | None = None
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
        self.listening = False

    def _signal(self, session_id: str | None) -> None:
        if self._loop is not None and not self._loop.is_closed():
            # The loop may close meanwhile: then nobody waits any more.
            with suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self.touch, session_id)

    def _listen(self) -> None:
        failures = 0
        while not self._stopping.is_set():
            try:
                conn = self.store.listen()
            except Exception as exc:
                if not failures:
                    log.warning(
                        "live updates: cannot LISTEN (%s); streams poll meanwhile (every %s s "
                        "to %s s)",
                        exc,
                        self.poll_interval,
                        self.longest,
                    )
                failures += 1
                # A role that may not register stays refused: retry ever more slowly.
                self._stopping.wait(min(30.0, float(failures)))
                continue
            if failures:
                log.warning("live updates: listening again")
            failures = 0
            self.listening = True
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
                # Streams waiting for a notification now poll instead.
                self.listening = False
                self._signal(None)
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
    pools: Pools | None = None,
) -> AsyncIterator[str]:
    """The event stream of ``session_id`` from ``after`` on; runs until the client leaves.

    ``pools``: the server's pools; the stream reads in its ``streams`` pool
    (None: anyio's default pool)."""

    async def run(fn: Callable[..., T], *args: Any) -> T:
        if pools is None:
            return await to_thread.run_sync(fn, *args)
        return await pools.run("streams", fn, *args)

    key = await run(service.session_key, session_id)
    yield "retry: 2000\n" + sse({"session_id": session_id, "key": key}, event="run")
    last_beat = time.monotonic()
    with feed.watch(session_id) as watch:
        while True:
            watch.reading()
            # One trip to the thread pool a read: the run it follows and its new events.
            current, events = await run(_read, service, session_id, key, after)
            if current != key:
                key, after = current, 0
                yield sse({"session_id": session_id, "key": key}, event="run", event_id=0)
                continue
            for stored in events:
                after = stored.seq
                yield sse({"seq": stored.seq, "key": key, **stored.data}, event_id=stored.seq)
            watch.read(bool(events))
            if len(events) == BATCH:
                continue  # more backlog: no waiting
            while True:
                now = time.monotonic()
                if now - last_beat >= heartbeat:
                    last_beat = now
                    yield ": keep-alive\n\n"
                if await watch.wait(max(0.01, heartbeat - (now - last_beat))):
                    break


def _read(service: Service, session_id: str, key: str, after: int) -> tuple[str, list[Any]]:
    try:
        current = service.session_key(session_id)
    except ApiError:
        current = key  # the session's records vanished (a wiped store): keep waiting
    if current != key:
        return current, []
    return key, service.store.events(key, after, BATCH)
