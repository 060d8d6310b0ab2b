"""NatsBus: the bus across processes and machines, on NATS JetStream.

Layout on the server: one stream per topic, ``<stream_prefix>_<TOPIC>``
(``WAYGRAPH_ACTION_REQUESTS``, ...), holding the subjects
``<subject_prefix>.<topic>.>``; an event travels on
``<subject_prefix>.<topic>.<event type>`` as a CloudEvents JSON document
(structured mode, header ``Content-Type: application/cloudevents+json``).
Streams use file storage, so a server restart keeps them.

Guarantees (see ``docs/services.md``):

- **Publish is confirmed and idempotent.** ``publish`` returns once the
  server has stored the event. Every message carries ``Nats-Msg-Id`` = the
  envelope id, so the server drops a second copy within ``duplicate_window``
  seconds; that makes retrying safe, and ``publish`` retries through a
  disconnect or server restart for up to ``publish_timeout`` seconds.
- **At-least-once delivery, explicit acks.** Each subscription is a push
  consumer with explicit acks. The ack is sent only after the handler
  returned; a handler that raises gets a nak (redelivery after a short
  backoff), a handler that dies with its process gets the event redelivered
  after ``ack_wait`` seconds (a running handler keeps its event with
  progress acks, however long it takes). After ``max_deliver`` deliveries
  the event is logged on the ``waygraph.events`` logger and dropped.
- **Queue groups are durable.** ``queue_group`` names a durable consumer
  (one per group and event type) that every member binds to; it keeps its
  position across client and server restarts. Without a group, the
  subscription gets a consumer of its own that starts at new events and is
  deleted on ``unsubscribe``/``close`` (or by the server after
  ``fanout_idle`` seconds without a subscriber, when the process died).
- **No event reaches a subscription's handler twice.** A redelivery of an
  event this subscription already handled (its id is among the last
  ``dedup_window`` ids) is acked and skipped; one whose first delivery is
  still running is left to that delivery's ack or nak. Across processes the
  planner's processed-event record does the same job.

Options can also be given in the URL query, so a URL alone configures a
bus: ``nats://127.0.0.1:4222?stream_prefix=T1&subject_prefix=t1&ack_wait=2``
(keywords win over the query).

Example:
    >>> bus = NatsBus("nats://127.0.0.1:4222?stream_prefix=DEMO&ack_wait=5")
    >>> bus.stream_name("action-requests"), bus.ack_wait, bus.subject_prefix
    ('DEMO_ACTION_REQUESTS', 5.0, 'waygraph')
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.api import (
    DiscardPolicy,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)

from waygraph.errors import BusClosedError, ConfigError, EventFormatError, EventTimeoutError
from waygraph.events._nats_options import DEFAULT_NATS_URL, UNSET, check_names, option, split_url
from waygraph.events._nats_subscription import NatsSubscription
from waygraph.events._payload import HEADER_ROOM, check_size
from waygraph.events.bus import DEFAULT_TOPIC, Bus, Handler
from waygraph.events.envelope import Envelope, Topic

__all__ = ["DEFAULT_NATS_URL", "NatsBus"]

log = logging.getLogger("waygraph.events")

#: Content type of a structured-mode CloudEvent (CloudEvents NATS binding).
CLOUDEVENTS_JSON = "application/cloudevents+json"

# Characters NATS forbids in a subject token; '*' and '>' are wildcards.
_BAD_SUBJECT_CHARS = re.compile(r"[\s*>]")

# Errors that mean "the server is away or busy right now": worth a retry.
_TRANSIENT: tuple[type[BaseException], ...] = (
    nats.errors.TimeoutError,
    nats.errors.NoRespondersError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.StaleConnectionError,
    nats.errors.OutboundBufferLimitError,
    nats.errors.FlushTimeoutError,
    nats.js.errors.NoStreamResponseError,
    nats.js.errors.ServiceUnavailableError,
    nats.js.errors.ServerError,
    asyncio.TimeoutError,
)

T = TypeVar("T")


class NatsBus(Bus):
    """A :class:`~waygraph.events.Bus` on NATS JetStream (see the module docstring).

    ``url`` is one server or a comma-separated list (``nats://a:4222,nats://b:4222``),
    optionally with options in its query string. ``stream_prefix`` and
    ``subject_prefix`` name the streams and subjects (tests use their own to
    stay apart); ``ack_wait`` is how long a delivered event may go without an
    ack or progress before the server redelivers it; ``max_deliver`` bounds
    deliveries of an event whose handler keeps failing.

    Example:
        >>> NatsBus(stream_prefix="T1", subject_prefix="t1").subject("business-facts", "a.b")
        't1.business-facts.a.b'
    """

    def __init__(
        self,
        url: str = DEFAULT_NATS_URL,
        *,
        source: str = "waygraph",
        stream_prefix: str = UNSET,
        subject_prefix: str = UNSET,
        ack_wait: float = UNSET,
        max_deliver: int = UNSET,
        duplicate_window: float = UNSET,
        max_age: float = UNSET,
        publish_timeout: float = 60.0,
        ack_timeout: float = 5.0,
        close_timeout: float = 5.0,
        dedup_window: int = 10_000,
        max_ack_pending: int = 4096,
        fanout_idle: float = 300.0,
        connect_timeout: float = 2.0,
    ) -> None:
        self.servers, query = split_url(url)
        self.url = url
        self.source = source
        self.stream_prefix = option(stream_prefix, query, "stream_prefix", "WAYGRAPH", str)
        self.subject_prefix = option(subject_prefix, query, "subject_prefix", "waygraph", str)
        self.ack_wait = float(option(ack_wait, query, "ack_wait", 30.0, float))
        self.max_deliver = int(option(max_deliver, query, "max_deliver", 5, int))
        self.duplicate_window = float(
            option(duplicate_window, query, "duplicate_window", 120.0, float)
        )
        self.max_age = float(option(max_age, query, "max_age", 7 * 24 * 3600.0, float))
        self.publish_timeout = publish_timeout
        self.ack_timeout = ack_timeout
        self.close_timeout = close_timeout
        self.dedup_window = dedup_window
        self.max_ack_pending = max_ack_pending
        self.fanout_idle = fanout_idle
        self.connect_timeout = connect_timeout
        self._check_options()
        self._nc: Client | None = None
        self._js: JetStreamContext | None = None
        self._streams: set[Topic] = set()
        self._subscriptions: list[NatsSubscription] = []
        self._inflight: set[asyncio.Task[None]] = set()
        self._closed = True
        self._start_lock = asyncio.Lock()
        self._repair: asyncio.Task[None] | None = None
        self._connecting = False
        # Tasks inside a request to the server (see _retry); a reconnect interrupts
        # them, so requests sent on the old connection are sent again at once.
        self._attempts: set[asyncio.Task[Any]] = set()
        self._interrupted: set[asyncio.Task[Any]] = set()
        # When the connection was lost: consumers re-created after the server
        # lost its store start there, so nothing published since is missed.
        self._lost_at: datetime | None = None

    def _check_options(self) -> None:
        check_names(self.stream_prefix, self.subject_prefix)
        for name in ("ack_wait", "duplicate_window", "max_age", "publish_timeout", "ack_timeout"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"{name} must be a positive number of seconds")
        if self.max_deliver < 1:
            raise ConfigError(f"max_deliver must be at least 1 (got {self.max_deliver})")
        if self.dedup_window < 1 or self.max_ack_pending < 1:
            raise ConfigError("dedup_window and max_ack_pending must be at least 1")

    def __repr__(self) -> str:
        return f"NatsBus({', '.join(self.servers)!r}, stream_prefix={self.stream_prefix!r})"

    # ------------------------------------------------------------------ names

    def stream_name(self, topic: Topic | str) -> str:
        """The JetStream stream holding ``topic``: ``<stream_prefix>_<TOPIC>``."""
        return f"{self.stream_prefix}_{Topic(topic).name}"

    def subject(self, topic: Topic | str, event_type: str) -> str:
        """The subject an event of ``event_type`` travels on over ``topic``.

        Raises :class:`~waygraph.errors.EventFormatError` for a type NATS
        cannot carry in a subject (empty parts, whitespace, ``*`` or ``>``).
        """
        if not event_type or _BAD_SUBJECT_CHARS.search(event_type) or "" in event_type.split("."):
            raise EventFormatError(
                "an event type for NATS is dot-separated words without spaces, '*' or '>'",
                attribute="type",
                value=event_type,
            )
        return f"{self.subject_prefix}.{Topic(topic).value}.{event_type}"

    def _topic_subjects(self, topic: Topic) -> str:
        return f"{self.subject_prefix}.{topic.value}.>"

    # ------------------------------------------------------------- life cycle

    async def start(self) -> None:
        async with self._start_lock:
            if self._nc is not None and not self._nc.is_closed:
                self._closed = False
                return
            self._connecting = True
            try:
                nc = await nats.connect(
                    servers=self.servers,
                    name=self.source,
                    connect_timeout=self.connect_timeout,
                    allow_reconnect=True,
                    # nats-py applies this to the first connection too: a few
                    # tries there, so a wrong URL fails fast ...
                    max_reconnect_attempts=2,
                    reconnect_time_wait=0.25,
                    error_cb=self._on_error,
                    disconnected_cb=self._on_disconnected,
                    reconnected_cb=self._on_reconnected,
                )
                # ... and once connected, a server restart must never end the bus.
                nc.options["max_reconnect_attempts"] = -1
                self._nc = nc
            except Exception as exc:  # nats-py raises several unrelated types here
                reason = str(exc) or type(exc).__name__
                raise ConfigError(
                    f"cannot connect to NATS at {', '.join(self.servers)}: {reason}; "
                    "start it (scripts/services.sh up) or set WAYGRAPH_NATS_URL"
                ) from None
            finally:
                self._connecting = False
            self._js = self._nc.jetstream(timeout=5.0)
            self._streams.clear()
            self._closed = False

    async def close(self) -> None:
        if self._closed and self._nc is None:
            return
        self._closed = True
        await self._drop_reply_routes()
        subscriptions, self._subscriptions = self._subscriptions, []
        for sub in subscriptions:
            await sub.stop_deliveries()
        # Handlers of subscriptions already unsubscribed count too: every
        # event handed to a handler is acked, nak'ed or left for redelivery.
        await _finish(
            [t for t in self._inflight if t is not asyncio.current_task()], self.close_timeout
        )
        for sub in subscriptions:
            await sub.forget()
        if self._repair is not None:
            self._repair.cancel()
            await asyncio.gather(self._repair, return_exceptions=True)
            self._repair = None
        nc, self._nc, self._js = self._nc, None, None
        if nc is not None and not nc.is_closed:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(nc.flush(), 1.0)
            await nc.close()

    @property
    def max_payload(self) -> int | None:
        """The server's ``max_payload`` (from its INFO) less room for the headers;
        None before :meth:`start`."""
        nc = self._nc
        return None if nc is None else max(1, nc.max_payload - HEADER_ROOM)

    def _jetstream(self) -> JetStreamContext:
        if self._closed or self._js is None:
            raise BusClosedError(f"{self!r} is not started; call start() (or use `async with`)")
        return self._js

    # --------------------------------------------------------------- publish

    async def publish(self, envelope: Envelope, topic: Topic | str | None = None) -> None:
        chosen = Topic(topic or envelope.topic or DEFAULT_TOPIC)
        subject = self.subject(chosen, envelope.type)
        payload = envelope.to_json()
        # Refused here, naming the event: nats-py's MaxPayloadError names nothing.
        what = f"event {envelope.id} ({envelope.type})"
        check_size(payload, limit=self.max_payload, what=what, event_type=envelope.type)
        stream = self.stream_name(chosen)
        await self._ensure_stream(chosen)

        async def attempt() -> None:
            # A fresh dict each time: nats-py adds the expected-stream header to it.
            headers = {"Nats-Msg-Id": envelope.id, "Content-Type": CLOUDEVENTS_JSON}
            try:
                await self._jetstream().publish(
                    subject, payload, timeout=self.ack_timeout, stream=stream, headers=headers
                )
            except nats.js.errors.NoStreamResponseError:
                # The stream may be gone (a server that lost its store): make it again.
                self._streams.discard(chosen)
                await self._ensure_stream(chosen)
                raise

        await self._retry(attempt, f"publish {envelope.type!r} (event {envelope.id}) on {chosen}")

    async def _ensure_stream(self, topic: Topic) -> None:
        if topic in self._streams:
            return
        name = self.stream_name(topic)
        config = StreamConfig(
            name=name,
            description=f"waygraph events on topic {topic.value}",
            subjects=[self._topic_subjects(topic)],
            storage=StorageType.FILE,
            retention=RetentionPolicy.LIMITS,
            discard=DiscardPolicy.OLD,
            max_age=self.max_age,
            duplicate_window=self.duplicate_window,
        )

        async def attempt() -> None:
            js = self._jetstream()
            try:
                await js.stream_info(name)
                return
            except nats.js.errors.NotFoundError:
                pass
            try:
                await js.add_stream(config)
            except nats.js.errors.BadRequestError as exc:
                try:  # another process created it first
                    await js.stream_info(name)
                except nats.js.errors.NotFoundError:
                    raise ConfigError(
                        f"cannot create NATS stream {name} for {self._topic_subjects(topic)}: "
                        f"{exc.description}; another stream may hold these subjects "
                        "(use another subject_prefix)"
                    ) from None

        await self._retry(attempt, f"create stream {name}")
        self._streams.add(topic)

    async def _retry(self, attempt: Callable[[], Awaitable[T]], what: str) -> T:
        """Run ``attempt`` until it succeeds, retrying transient failures for a while.

        Safe only for idempotent work (publishes carry their event id, stream
        and consumer creation check first).
        """
        deadline = time.monotonic() + self.publish_timeout
        delay = 0.05
        while True:
            # A request sent while reconnecting only sits in nats-py's buffer
            # until it times out: wait for the connection instead.
            nc = self._nc
            while nc is not None and nc.is_reconnecting and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            try:
                return await self._unless_reconnected(attempt)
            except _Reconnected:
                # A request sent on the old connection gets no answer: send it again now.
                log.debug("retrying %s on the new connection", what)
                continue
            except nats.errors.ConnectionClosedError:
                raise BusClosedError(f"{self!r} was closed during {what}") from None
            except _TRANSIENT as exc:
                if time.monotonic() + delay > deadline:
                    raise EventTimeoutError(
                        f"NATS at {', '.join(self.servers)} did not confirm {what} within "
                        f"{self.publish_timeout:g} s (last error: {exc!r})"
                    ) from None
                log.debug("retrying %s after %r", what, exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)

    async def _unless_reconnected(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """Await ``attempt()``; :class:`_Reconnected` if the connection is re-established first.

        The attempt runs in the calling task, which a reconnect cancels
        (:meth:`_on_reconnected`): a helper task per request and a watcher
        per reconnect event cost more than the publish itself.
        """
        task = asyncio.current_task()
        assert task is not None
        self._attempts.add(task)
        try:
            return await attempt()
        except asyncio.CancelledError:
            if task not in self._interrupted:
                raise
            self._interrupted.discard(task)
            if task.uncancel() > 0:
                raise  # cancelled from elsewhere too: that one wins
            raise _Reconnected from None
        finally:
            self._attempts.discard(task)
            self._interrupted.discard(task)

    # ------------------------------------------------------------- subscribe

    async def subscribe(
        self,
        topic: Topic | str,
        event_type: str,
        handler: Handler,
        queue_group: str | None = None,
    ) -> NatsSubscription:
        self._jetstream()
        chosen = Topic(topic)
        if not event_type:
            raise ValueError("event_type must be an event type or '*'")
        filter_subject = (
            self._topic_subjects(chosen) if event_type == "*" else self.subject(chosen, event_type)
        )
        await self._ensure_stream(chosen)
        if queue_group:
            name = _consumer_name(queue_group, event_type)
        else:
            name = f"fanout_{uuid.uuid4().hex[:16]}"
        sub = NatsSubscription(
            bus=self,
            topic=chosen,
            event_type=event_type,
            handler=handler,
            queue_group=queue_group or None,
            stream=self.stream_name(chosen),
            consumer=name,
            filter_subject=filter_subject,
        )
        await sub.open()
        self._subscriptions.append(sub)
        return sub

    # ------------------------------------------------------- connection events

    async def _on_error(self, exc: Exception) -> None:
        if self._connecting:
            return  # start() raises a ConfigError saying the same, once
        log.warning("NATS connection error (%s): %r", ", ".join(self.servers), exc)

    async def _on_disconnected(self) -> None:
        if self._lost_at is None:
            self._lost_at = datetime.now(UTC)
        if not self._closed:
            log.warning("disconnected from NATS at %s; reconnecting", ", ".join(self.servers))

    async def _on_reconnected(self) -> None:
        log.info("reconnected to NATS at %s", ", ".join(self.servers))
        for task in self._attempts - self._interrupted:
            self._interrupted.add(task)
            task.cancel()
        if self._closed:
            return
        # A server that came back without its store has lost streams and
        # consumers: check them all and make missing ones again.
        self._streams.clear()
        if self._repair is None or self._repair.done():
            self._repair = asyncio.create_task(self._restore_consumers())

    async def _restore_consumers(self) -> None:
        # A margin for clock skew between this machine and the server; events
        # delivered twice because of it are absorbed by the handled-id window.
        since = (self._lost_at or datetime.now(UTC)) - timedelta(seconds=5)
        failed = False
        for sub in list(self._subscriptions):
            try:
                await self._ensure_stream(sub.topic)
                await self._retry(
                    functools.partial(sub.ensure_consumer, since),
                    f"restore consumer {sub.consumer}",
                )
            except Exception as exc:  # keep the others going; the next reconnect tries again
                failed = True
                log.error("could not restore NATS consumer %s: %r", sub.consumer, exc)
        if not failed:
            self._lost_at = None


def _consumer_name(queue_group: str, event_type: str) -> str:
    """The durable consumer of ``queue_group`` for ``event_type``: readable and unique.

    Example:
        >>> _consumer_name("researcher", "web.search.requested")
        'researcher__web_search_requested'
        >>> _consumer_name("research planner", "*")[:20]
        'research_planner__al'
    """
    raw = f"{queue_group}__{'all' if event_type == '*' else event_type}"
    name = re.sub(r"[^A-Za-z0-9_-]", "_", raw)
    if name != raw.replace(".", "_") or len(name) > 200:
        # Sanitising merged distinct names ("a b" / "a_b"): a digest keeps them apart.
        digest = hashlib.sha1(raw.encode()).hexdigest()[:8]
        name = f"{name[:190]}_{digest}"
    return name


class _Reconnected(Exception):
    """The connection was re-established while a request was waiting for its answer."""


async def _finish(tasks: list[asyncio.Task[None]], timeout: float) -> None:
    if not tasks:
        return
    _, pending = await asyncio.wait(tasks, timeout=timeout)
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)
