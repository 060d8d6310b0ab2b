"""The bus interface: publish and subscribe envelopes; request, respond and ask on top.

A backend (:class:`~waygraph.events.InProcessBus`, :class:`~waygraph.events.NatsBus`)
implements :meth:`Bus.start`, :meth:`Bus.close`, :meth:`Bus.publish` and
:meth:`Bus.subscribe`; :meth:`Bus.request`, :meth:`Bus.respond` and
:meth:`Bus.ask` are written once, here, on top of those four, so every
backend behaves the same. ``tests/bus_contract.py`` is the suite a backend
must pass.

Default topics: ``request`` and ``ask`` publish on ``action-requests`` and
``ask`` awaits its answer on ``action-results`` (or the ``response_topic``
given); ``respond`` publishes on ``action-results``; ``publish`` of an
envelope with no topic uses ``business-facts``. Any of them takes
``topic=...`` to choose another.

Example:
    >>> import asyncio
    >>> from waygraph.events import InProcessBus, Topic
    >>> async def main():
    ...     async with InProcessBus() as bus:
    ...         async def double(event):
    ...             await bus.respond("math.doubled", {"n": event.data["n"] * 2},
    ...                               event.correlation_id)
    ...         await bus.subscribe(Topic.ACTION_REQUESTS, "math.double", double)
    ...         answer = await bus.ask("math.double", {"n": 21}, "math.doubled", timeout=5)
    ...         return answer.data
    >>> asyncio.run(main())
    {'n': 42}
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, Protocol, Self

from waygraph.errors import EventTimeoutError
from waygraph.events.envelope import Envelope, Topic, new_event_id

__all__ = ["DEFAULT_TOPIC", "Bus", "Handler", "Subscription", "first_delivery"]

Handler = Callable[[Envelope], Awaitable[None]]

#: The event a handler is running for and how many times the bus has delivered
#: it, set by a bus that knows (NATS JetStream counts deliveries per message).
DELIVERY: contextvars.ContextVar[tuple[str, int] | None] = contextvars.ContextVar(
    "waygraph_delivery", default=None
)


def first_delivery(event_id: str) -> bool:
    """True when the handler running now handles ``event_id`` and the bus says this is
    its first delivery; False when it is a redelivery or the bus cannot say.

    A planner skips looking for the plan a goal's earlier delivery made when
    this is True (no earlier delivery made one). A bus that cannot tell a
    redelivery from a second publish of the same event (the in-process bus)
    never says so.

    Example:
        >>> first_delivery("e1")
        False
    """
    delivery = DELIVERY.get()
    return delivery is not None and delivery == (event_id, 1)


#: The topic of an envelope published with no topic anywhere.
DEFAULT_TOPIC = Topic.BUSINESS_FACTS


class Subscription(Protocol):
    """What :meth:`Bus.subscribe` returns."""

    async def unsubscribe(self) -> None:
        """Stop delivering to this subscription's handler."""


class _Replies:
    """Pending ``ask`` calls: one subscription per (topic, response event), futures by id."""

    def __init__(self) -> None:
        self.waiters: dict[str, asyncio.Future[Envelope]] = {}
        self.routes: dict[tuple[str, str], Subscription] = {}
        self.lock = asyncio.Lock()


class Bus(ABC):
    """Publish/subscribe of :class:`~waygraph.events.Envelope` over topics.

    Semantics every backend keeps (see ``docs/events.md``):

    - ``subscribe(topic, event_type, handler)``: ``event_type`` ``"*"`` is
      every type on the topic. Without ``queue_group`` every subscriber gets
      every event (fan-out); with one, each event goes to one member of the
      group (load-balancing). Handlers may run concurrently.
    - A handler that raises has not processed the event: it is redelivered,
      up to ``max_deliver`` deliveries in all, then logged and dropped.
    - A subscription without ``queue_group`` gets only events published after
      it was made; a queue group's position survives restarts (NATS).
    """

    #: CloudEvents ``source`` of the envelopes this bus builds.
    source: str

    @property
    def max_payload(self) -> int | None:
        """The largest event this bus carries, in bytes of its CloudEvents JSON (None: no limit).

        ``publish`` refuses a larger one with
        :class:`~waygraph.errors.PayloadTooLargeError`; planners check what they
        send against it before they commit it (``docs/services.md``).
        """
        return None

    @abstractmethod
    async def start(self) -> None:
        """Connect. Calling it again is harmless."""

    @abstractmethod
    async def close(self) -> None:
        """Disconnect; in-flight handlers finish or are cancelled cleanly. Idempotent."""

    @abstractmethod
    async def publish(self, envelope: Envelope, topic: Topic | str | None = None) -> None:
        """Publish ``envelope`` on ``topic``, else ``envelope.topic``, else ``business-facts``."""

    @abstractmethod
    async def subscribe(
        self,
        topic: Topic | str,
        event_type: str,
        handler: Handler,
        queue_group: str | None = None,
    ) -> Subscription:
        """Call ``handler`` with every matching envelope (with ``.topic`` set)."""

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # ------------------------------------------------------------ built on top

    def envelope(
        self,
        event_type: str,
        data: dict[str, Any] | None = None,
        **attributes: Any,
    ) -> Envelope:
        """An envelope from this bus's ``source`` (override with ``source=...``).

        Example:
            >>> from waygraph.events import InProcessBus
            >>> InProcessBus(source="svc").envelope("x.happened", {"n": 1}).source
            'svc'
        """
        attributes.setdefault("source", self.source)
        return Envelope(type=event_type, data=dict(data or {}), **attributes)

    async def request(
        self,
        event_type: str,
        data: dict[str, Any] | None,
        response_event: str | None,
        correlation_id: str | None = None,
        **attributes: Any,
    ) -> Envelope:
        """Publish a request (on ``action-requests`` unless ``topic=`` says otherwise).

        A new correlation id is made when none is given. Returns the envelope
        as published.
        """
        attributes.setdefault("topic", Topic.ACTION_REQUESTS)
        envelope = self.envelope(
            event_type,
            data,
            response_event=response_event,
            correlation_id=correlation_id or new_event_id(),
            **attributes,
        )
        await self.publish(envelope)
        return envelope

    async def respond(
        self,
        event_type: str,
        data: dict[str, Any] | None,
        correlation_id: str | None,
        **attributes: Any,
    ) -> Envelope:
        """Publish a response (on ``action-results`` unless ``topic=`` says otherwise)."""
        attributes.setdefault("topic", Topic.ACTION_RESULTS)
        envelope = self.envelope(event_type, data, correlation_id=correlation_id, **attributes)
        await self.publish(envelope)
        return envelope

    async def ask(
        self,
        event_type: str,
        data: dict[str, Any] | None,
        response_event: str,
        timeout: float,
        **attributes: Any,
    ) -> Envelope:
        """Publish a goal or request and wait for the response event with its correlation id.

        The request goes on ``action-requests`` (or ``topic=``); the answer is
        awaited on ``response_topic`` (default ``action-results``), and the
        request carries that ``responsetopic``. Raises
        :class:`~waygraph.errors.EventTimeoutError` after ``timeout`` seconds.
        """
        attributes.setdefault("topic", Topic.ACTION_REQUESTS)
        response_topic = Topic(attributes.pop("response_topic", None) or Topic.ACTION_RESULTS)
        correlation_id = attributes.pop("correlation_id", None) or new_event_id()
        replies = self._replies()
        if correlation_id in replies.waiters:
            raise ValueError(f"an ask with correlation id {correlation_id!r} is already waiting")
        future: asyncio.Future[Envelope] = asyncio.get_running_loop().create_future()
        replies.waiters[correlation_id] = future
        try:
            # Subscribe before publishing: a fast responder must not answer into the void.
            await self._route_replies(response_topic, response_event)
            await self.request(
                event_type,
                data,
                response_event,
                correlation_id,
                response_topic=response_topic.value,
                **attributes,
            )
            try:
                return await asyncio.wait_for(asyncio.shield(future), timeout)
            except TimeoutError:
                raise EventTimeoutError(
                    f"no {response_event!r} on {response_topic.value} for {event_type!r} "
                    f"(correlation id {correlation_id}) within {timeout:g} s"
                ) from None
        finally:
            replies.waiters.pop(correlation_id, None)
            if not future.done():
                future.cancel()

    def _replies(self) -> _Replies:
        # Lazily made, so backends need not call Bus.__init__.
        replies = self.__dict__.get("_bus_replies")
        if replies is None:
            replies = self.__dict__["_bus_replies"] = _Replies()
        return replies

    async def _route_replies(self, topic: Topic, response_event: str) -> None:
        replies = self._replies()
        key = (topic.value, response_event)
        if key in replies.routes:
            return
        async with replies.lock:
            if key in replies.routes:
                return

            async def deliver(envelope: Envelope) -> None:
                waiter = replies.waiters.get(envelope.correlation_id or "")
                if waiter is not None and not waiter.done():
                    waiter.set_result(envelope)

            replies.routes[key] = await self.subscribe(topic, response_event, deliver)

    async def _drop_reply_routes(self) -> None:
        """Unsubscribe the routes ``ask`` made; backends call this from ``close``."""
        replies = self.__dict__.pop("_bus_replies", None)
        if replies is None:
            return
        for future in replies.waiters.values():
            if not future.done():
                future.cancel()
        for subscription in replies.routes.values():
            # The connection may already be gone; closing goes on.
            with contextlib.suppress(Exception):
                await subscription.unsubscribe()
