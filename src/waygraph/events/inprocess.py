"""InProcessBus: the bus for one process, on asyncio; also the test double.

Every delivery runs as its own task, so handlers run concurrently and a slow
handler never holds up publishers. Envelopes are encoded to the CloudEvents
JSON format on publish and decoded for each delivery, exactly as over NATS:
data that is not JSON-ready fails at ``publish``, and no two handlers share a
mutable ``data`` dict.

Example:
    >>> import asyncio
    >>> from waygraph.events import InProcessBus, Topic
    >>> async def main():
    ...     seen = []
    ...     async with InProcessBus() as bus:
    ...         async def record(event):
    ...             seen.append((event.topic.value, event.type, event.data["n"]))
    ...         await bus.subscribe(Topic.BUSINESS_FACTS, "*", record)
    ...         await bus.publish(bus.envelope("order.placed", {"n": 1}))
    ...         await bus.drain()
    ...     return seen
    >>> asyncio.run(main())
    [('business-facts', 'order.placed', 1)]
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from dataclasses import dataclass, field

from waygraph.errors import BusClosedError
from waygraph.events._payload import DEFAULT_MAX_PAYLOAD, check_size
from waygraph.events.bus import DEFAULT_TOPIC, Bus, Handler
from waygraph.events.envelope import Envelope, Topic

__all__ = ["InProcessBus"]

log = logging.getLogger("waygraph.events")


@dataclass(eq=False)
class _Subscription:
    bus: InProcessBus
    topic: Topic
    event_type: str
    handler: Handler
    queue_group: str | None
    active: bool = field(default=True)

    def matches(self, topic: Topic, event_type: str) -> bool:
        return self.active and self.topic is topic and self.event_type in ("*", event_type)

    async def unsubscribe(self) -> None:
        """Stop deliveries to this handler; events already handed to it still run."""
        self.active = False
        with contextlib.suppress(ValueError):
            self.bus._subscriptions.remove(self)


class InProcessBus(Bus):
    """An asyncio bus inside one process, with the semantics of the NATS bus.

    ``max_deliver`` bounds deliveries of an event whose handler keeps
    raising (redelivered after ``retry_delay`` seconds, doubling, then logged
    on the ``waygraph.events`` logger and dropped); ``close_timeout`` is how
    long :meth:`close` lets in-flight handlers finish before cancelling them.
    Queue groups take turns (round robin); a redelivery goes to the group's
    next member. ``max_payload``: the largest event it carries, in bytes of
    its JSON (default: what a NATS server with its default 1 MiB
    ``max_payload`` carries; None: no limit), so what works in process fits
    NATS too.

    Example:
        >>> InProcessBus(source="svc", max_deliver=3).max_deliver
        3
    """

    def __init__(
        self,
        source: str = "waygraph",
        max_deliver: int = 5,
        *,
        retry_delay: float = 0.01,
        close_timeout: float = 5.0,
        max_payload: int | None = DEFAULT_MAX_PAYLOAD,
    ) -> None:
        if max_deliver < 1:
            raise ValueError(f"max_deliver must be at least 1 (got {max_deliver})")
        if max_payload is not None and max_payload < 1:
            raise ValueError(f"max_payload must be a positive number of bytes (got {max_payload})")
        self._max_payload = max_payload
        self.source = source
        self.max_deliver = max_deliver
        self.retry_delay = retry_delay
        self.close_timeout = close_timeout
        self._subscriptions: list[_Subscription] = []
        self._turns: dict[tuple[Topic, str], itertools.count[int]] = {}
        self._inflight: set[asyncio.Task[None]] = set()
        self._closed = False

    def __repr__(self) -> str:
        return f"InProcessBus(source={self.source!r})"

    @property
    def max_payload(self) -> int | None:
        return self._max_payload

    async def start(self) -> None:
        self._closed = False

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self._drop_reply_routes()
        self._subscriptions.clear()
        tasks = [t for t in self._inflight if t is not asyncio.current_task()]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=self.close_timeout)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)

    async def publish(self, envelope: Envelope, topic: Topic | str | None = None) -> None:
        if self._closed:
            raise BusClosedError(f"{self!r} is closed; publish before close() or start() again")
        chosen = Topic(topic or envelope.topic or DEFAULT_TOPIC)
        wire = envelope.to_json()  # fails here, as NATS would, when data is not JSON-ready
        what = f"event {envelope.id} ({envelope.type})"
        check_size(wire, limit=self._max_payload, what=what, event_type=envelope.type)
        matching = [s for s in self._subscriptions if s.matches(chosen, envelope.type)]
        groups: dict[str, list[_Subscription]] = {}
        for sub in matching:
            if sub.queue_group is None:
                self._deliver(sub, wire, chosen, [sub])
            else:
                groups.setdefault(sub.queue_group, []).append(sub)
        for group, members in groups.items():
            turn = next(self._turns.setdefault((chosen, group), itertools.count()))
            self._deliver(members[turn % len(members)], wire, chosen, members, turn)

    async def subscribe(
        self,
        topic: Topic | str,
        event_type: str,
        handler: Handler,
        queue_group: str | None = None,
    ) -> _Subscription:
        if self._closed:
            raise BusClosedError(f"{self!r} is closed; subscribe after start()")
        if not event_type:
            raise ValueError("event_type must be an event type or '*'")
        sub = _Subscription(self, Topic(topic), event_type, handler, queue_group or None)
        self._subscriptions.append(sub)
        return sub

    async def drain(self, timeout: float | None = 10.0) -> None:
        """Wait until every delivery (and every redelivery) has finished.

        Handlers that publish start new deliveries; those are waited for too.
        Raises TimeoutError when work is still running after ``timeout``.
        """
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        current = asyncio.current_task()
        while True:
            tasks = [t for t in self._inflight if t is not current]
            if not tasks:
                return
            left = None if deadline is None else deadline - loop.time()
            if left is not None and left <= 0:
                raise TimeoutError(f"{len(tasks)} deliveries still running after {timeout} s")
            await asyncio.wait(tasks, timeout=left)

    def _deliver(
        self,
        sub: _Subscription,
        wire: bytes,
        topic: Topic,
        members: list[_Subscription],
        turn: int = 0,
    ) -> None:
        task = asyncio.get_running_loop().create_task(self._run(sub, wire, topic, members, turn))
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)

    async def _run(
        self,
        sub: _Subscription,
        wire: bytes,
        topic: Topic,
        members: list[_Subscription],
        turn: int,
    ) -> None:
        delay = self.retry_delay
        for attempt in range(1, self.max_deliver + 1):
            envelope = Envelope.from_wire(wire, topic)
            try:
                await sub.handler(envelope)
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                if attempt == self.max_deliver:
                    log.exception(
                        "dropping event %s (%s on %s) after %d failed deliveries",
                        envelope.id,
                        envelope.type,
                        topic.value,
                        attempt,
                    )
                    return
                log.warning(
                    "handler failed on event %s (%s on %s), delivery %d of %d; redelivering",
                    envelope.id,
                    envelope.type,
                    topic.value,
                    attempt,
                    self.max_deliver,
                    exc_info=True,
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)
            if self._closed:
                return
            # A queue group's redelivery goes to its next member still subscribed.
            alive = [m for m in members if m.active]
            if sub.queue_group is not None and alive:
                sub = alive[(turn + attempt) % len(alive)]
            elif not sub.active:
                return
