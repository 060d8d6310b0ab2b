"""One NatsBus subscription: a JetStream push consumer and the handler behind it.

Deliveries run the handler as tasks the bus tracks; an event id already
handled (or being handled) is acknowledged without running it again; a
long handler keeps its message alive; a message delivered ``max_deliver``
times is terminated with a log line.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import Awaitable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import nats.errors
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription as CoreSubscription
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from waygraph.errors import ConfigError, EventFormatError
from waygraph.events.bus import DELIVERY, Handler
from waygraph.events.envelope import Envelope, Topic

if TYPE_CHECKING:
    from waygraph.events.nats_bus import NatsBus

__all__ = ["NatsSubscription"]

log = logging.getLogger("waygraph.events")


@dataclass(eq=False)
class NatsSubscription:
    """One subscription: a JetStream push consumer and the core subscription on its inbox."""

    bus: NatsBus
    topic: Topic
    event_type: str
    handler: Handler
    queue_group: str | None
    stream: str
    consumer: str
    filter_subject: str
    deliver_subject: str = ""
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _core: CoreSubscription | None = None
    _done: OrderedDict[str, None] = field(default_factory=OrderedDict)
    _running: set[str] = field(default_factory=set)
    _active: bool = True

    def _config(self, since: datetime | None = None) -> ConsumerConfig:
        bus = self.bus
        return ConsumerConfig(
            durable_name=self.consumer,
            description=(
                f"waygraph queue group {self.queue_group!r}"
                if self.queue_group
                else "waygraph fan-out subscription"
            ),
            deliver_subject=self.deliver_subject,
            deliver_group=self.consumer if self.queue_group else None,
            deliver_policy=DeliverPolicy.NEW if since is None else DeliverPolicy.BY_START_TIME,
            opt_start_time=since,
            ack_policy=AckPolicy.EXPLICIT,
            ack_wait=bus.ack_wait,
            max_deliver=bus.max_deliver,
            filter_subject=self.filter_subject,
            max_ack_pending=bus.max_ack_pending,
            inactive_threshold=None if self.queue_group else bus.fanout_idle,
        )

    async def ensure_consumer(self, since: datetime | None = None) -> None:
        """Bind to the durable consumer, creating it when it does not exist (idempotent).

        A consumer created here starts at new events, or at ``since`` when
        given (re-creating one a restarted server lost).
        """
        js = self.bus._jetstream()
        try:
            info = await js.consumer_info(self.stream, self.consumer)
        except nats.js.errors.NotFoundError:
            info = None
        if info is None:
            if not self.deliver_subject:
                self.deliver_subject = self._shared_deliver_subject()
            try:
                info = await js.add_consumer(self.stream, self._config(since))
            except nats.js.errors.BadRequestError:
                info = await js.consumer_info(self.stream, self.consumer)  # created meanwhile
        config = info.config
        if config.filter_subject != self.filter_subject:
            raise ConfigError(
                f"NATS consumer {self.consumer} on {self.stream} filters "
                f"{config.filter_subject!r}, not {self.filter_subject!r}; "
                "use another queue group name"
            )
        if not config.deliver_subject:
            raise ConfigError(
                f"NATS consumer {self.consumer} on {self.stream} is a pull consumer; "
                "waygraph's queue groups are push consumers: use another queue group name"
            )
        self.deliver_subject = config.deliver_subject

    def _shared_deliver_subject(self) -> str:
        """The inbox every member of this consumer would choose: named, not random.

        Members starting together all find no consumer and all create it. On
        NATS a create of an existing durable updates it, so with random inboxes
        the last member's inbox won and the others listened on one nothing
        reached: they got no event at all. Under the connection's inbox prefix,
        so accounts allowed ``_INBOX.>`` still may subscribe.
        """
        inbox_prefix = self.bus._nc.new_inbox().rpartition(".")[0]  # type: ignore[union-attr]
        return f"{inbox_prefix}.waygraph.{self.stream}.{self.consumer}"

    async def open(self) -> None:
        await self.bus._retry(self.ensure_consumer, f"create consumer {self.consumer}")
        nc = self.bus._nc
        assert nc is not None
        self._core = await nc.subscribe(
            self.deliver_subject, queue=self.consumer if self.queue_group else "", cb=self._on_msg
        )

    async def _on_msg(self, msg: Msg) -> None:
        if not self._active:
            return  # not acked: redelivered to another member after ack_wait
        task = asyncio.create_task(self._handle(msg))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        self.bus._inflight.add(task)
        task.add_done_callback(self.bus._inflight.discard)

    async def _handle(self, msg: Msg) -> None:
        try:
            envelope = Envelope.from_wire(msg.data, topic=self.topic)
        except EventFormatError as exc:
            # A malformed event never becomes valid: terminate it instead of redelivering.
            log.error("dropping a malformed event on %s: %s", msg.subject, exc)
            await _settle(msg.term())
            return
        if self.event_type not in ("*", envelope.type):
            await _settle(msg.ack())
            return
        if envelope.id in self._done:
            log.debug("event %s already handled here; acking the redelivery", envelope.id)
            await _settle(msg.ack())
            return
        if envelope.id in self._running:
            return  # the first delivery is still being handled; its ack or nak settles it
        self._running.add(envelope.id)
        keep_alive = _KeepAlive(msg, max(self.bus.ack_wait / 3, 0.05))
        # This task's own context: the handler may ask whether this is the first delivery.
        count = _delivery_count(msg)
        if count is not None:
            DELIVERY.set((envelope.id, count))
        try:
            await self.handler(envelope)
        except asyncio.CancelledError:
            await _settle(msg.nak())  # let another member have it now, not after ack_wait
            raise
        except Exception as exc:
            delivered = _delivered(msg)
            if delivered >= self.bus.max_deliver:
                log.error(
                    "dropping event %s (%s) on %s after %d failed deliveries: %r",
                    envelope.id,
                    envelope.type,
                    self.topic.value,
                    delivered,
                    exc,
                    exc_info=exc,
                )
                await _settle(msg.term())
            else:
                log.warning(
                    "handler failed on event %s (%s), delivery %d of %d; redelivering: %r",
                    envelope.id,
                    envelope.type,
                    delivered,
                    self.bus.max_deliver,
                    exc,
                )
                await _settle(msg.nak(delay=min(0.05 * 2 ** (delivered - 1), 5.0)))
        else:
            self._remember(envelope.id)
            await _settle(msg.ack())
        finally:
            keep_alive.cancel()
            self._running.discard(envelope.id)

    def _remember(self, event_id: str) -> None:
        self._done[event_id] = None
        if len(self._done) > self.bus.dedup_window:
            self._done.popitem(last=False)

    async def stop_deliveries(self) -> None:
        self._active = False
        core, self._core = self._core, None
        if core is not None:
            with contextlib.suppress(Exception):
                await core.unsubscribe()

    async def forget(self) -> None:
        """Delete a fan-out consumer; a queue group's durable consumer stays."""
        if self.queue_group is None and self.bus._js is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.bus._js.delete_consumer(self.stream, self.consumer), 2)

    async def unsubscribe(self) -> None:
        """Stop deliveries; events already handed to the handler still run and are acked."""
        await self.stop_deliveries()
        with contextlib.suppress(ValueError):
            self.bus._subscriptions.remove(self)
        await self.forget()


class _KeepAlive:
    """Progress acks every ``interval`` seconds while a handler runs, so a slow
    handler's event is not redelivered elsewhere.

    A timer rather than a task per delivery: most handlers finish long before
    the first progress ack is due, and a task costs its creation, a first step
    and a cancellation on every message.
    """

    __slots__ = ("_interval", "_msg", "_sending", "_timer")

    def __init__(self, msg: Msg, interval: float) -> None:
        self._msg = msg
        self._interval = interval
        self._sending: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = asyncio.get_running_loop().call_later(
            interval, self._due
        )

    def _due(self) -> None:
        self._sending = asyncio.ensure_future(self._send())

    async def _send(self) -> None:
        await _settle(self._msg.in_progress())
        if self._timer is not None:  # not cancelled meanwhile
            self._timer = asyncio.get_running_loop().call_later(self._interval, self._due)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._sending is not None:
            self._sending.cancel()


def _delivered(msg: Msg) -> int:
    count = _delivery_count(msg)
    return 1 if count is None else count


def _delivery_count(msg: Msg) -> int | None:
    """How many times JetStream has delivered ``msg`` (1: first), None when it cannot say."""
    try:
        return int(msg.metadata.num_delivered)
    except Exception:
        return None


async def _settle(call: Awaitable[None]) -> None:
    """Send an ack/nak/term/progress; while disconnected nats-py buffers it or it is lost.

    A lost ack only means a redelivery, which the duplicate checks absorb.
    """
    try:
        await call
    except (nats.errors.Error, OSError) as exc:
        log.debug("could not settle a NATS message: %r", exc)
