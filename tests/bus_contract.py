"""The contract every bus backend keeps: one suite, run against each backend.

Subclass :class:`BusContract` and provide a ``bus_factory`` fixture: a
callable that returns a new, not yet started bus each time it is called.
Buses from one factory (one test) must share one namespace (NATS: the same
stream and subject prefixes), so two of them talk to each other, and be
isolated from every other test::

    class TestMyBus(BusContract):
        durable = True          # queue groups keep their position across restarts

        @pytest.fixture
        def bus_factory(self):
            prefix = f"T{uuid.uuid4().hex[:8]}"
            return lambda: MyBus(stream_prefix=prefix, subject_prefix=prefix.lower())

Each test starts the buses it makes and closes them at the end.
``tests/test_bus.py`` runs it on the in-process bus.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AsyncExitStack
from typing import Any, ParamSpec, TypeVar

import pytest

from waygraph.errors import EventTimeoutError
from waygraph.events import Bus, Envelope, Topic

P = ParamSpec("P")
T = TypeVar("T")

BusFactory = Callable[[], Bus]


def async_test(
    timeout: float = 30.0,
) -> Callable[[Callable[P, Coroutine[Any, Any, T]]], Callable[P, T]]:
    """Run an ``async def`` test in a fresh event loop, failing it after ``timeout`` seconds."""

    def decorate(fn: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, T]:
        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
            return asyncio.run(asyncio.wait_for(fn(*args, **kwargs), timeout))

        return wrapper

    return decorate


async def eventually(
    check: Callable[[], bool], timeout: float = 5.0, what: str = "the condition"
) -> None:
    """Poll ``check`` until it is true; fail the test after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        if loop.time() > deadline:
            pytest.fail(f"{what} did not hold within {timeout} s")
        await asyncio.sleep(0.01)


async def settle(bus: Bus, seconds: float = 0.3) -> None:
    """Let deliveries finish: ``drain`` when the bus has it, else wait ``seconds``."""
    drain: Callable[[], Awaitable[None]] | None = getattr(bus, "drain", None)
    if drain is not None:
        await drain()
    else:
        await asyncio.sleep(seconds)


class BusContract:
    """Behaviour every :class:`~waygraph.events.Bus` must show."""

    #: Whether a queue group keeps its position while no member is running.
    durable = False

    async def _started(self, stack: AsyncExitStack, factory: BusFactory) -> Bus:
        bus = factory()
        await bus.start()
        stack.push_async_callback(bus.close)
        return bus

    @async_test()
    async def test_publish_delivers_to_a_subscriber_with_topic_and_attributes(
        self, bus_factory: BusFactory
    ) -> None:
        async with AsyncExitStack() as stack:
            bus = await self._started(stack, bus_factory)
            got: list[Envelope] = []

            async def handler(event: Envelope) -> None:
                got.append(event)

            await bus.subscribe(Topic.BUSINESS_FACTS, "order.placed", handler)
            sent = bus.envelope(
                "order.placed",
                {"order": 7, "items": ["a", "b"], "nested": {"x": 1.5, "ok": True}},
                subject="order-7",
                correlation_id="corr-1",
                response_event="order.accepted",
                response_topic="action-results",
                session_id="s1",
                tenant_id="t1",
                user_id="u1",
                goal_id="g1",
                plan_id="p1",
                parent_event_id="e0",
                traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            )
            await bus.publish(sent, Topic.BUSINESS_FACTS)
            await eventually(lambda: len(got) == 1, what="one delivery")
            event = got[0]
            assert event.topic is Topic.BUSINESS_FACTS
            assert event.to_wire() == sent.to_wire()
            assert event.id == sent.id and event.time == sent.time

    @async_test()
    async def test_topic_comes_from_the_argument_then_the_envelope_then_business_facts(
        self, bus_factory: BusFactory
    ) -> None:
        async with AsyncExitStack() as stack:
            bus = await self._started(stack, bus_factory)
            got: list[tuple[str, str]] = []

            async def handler(event: Envelope) -> None:
                assert event.topic is not None
                got.append((event.topic.value, event.type))

            for topic in (Topic.BUSINESS_FACTS, Topic.SYSTEM_EVENTS, Topic.PLAN_EVENTS):
                await bus.subscribe(topic, "*", handler)
            await bus.publish(bus.envelope("a.x"), Topic.SYSTEM_EVENTS)
            await bus.publish(bus.envelope("b.x", topic=Topic.PLAN_EVENTS))
            await bus.publish(bus.envelope("c.x"))
            await bus.publish(bus.envelope("d.x", topic=Topic.PLAN_EVENTS), "system-events")
            await eventually(lambda: len(got) == 4, what="four deliveries")
            assert sorted(got) == [
                ("business-facts", "c.x"),
                ("plan-events", "b.x"),
                ("system-events", "a.x"),
                ("system-events", "d.x"),
            ]

    @async_test()
    async def test_event_type_filters_and_star_takes_every_type_of_one_topic(
        self, bus_factory: BusFactory
    ) -> None:
        async with AsyncExitStack() as stack:
            bus = await self._started(stack, bus_factory)
            exact: list[str] = []
            star: list[str] = []

            async def on_exact(event: Envelope) -> None:
                exact.append(event.type)

            async def on_star(event: Envelope) -> None:
                star.append(event.type)

            await bus.subscribe(Topic.ACTION_RESULTS, "web.search.completed", on_exact)
            await bus.subscribe(Topic.ACTION_RESULTS, "*", on_star)
            await bus.publish(bus.envelope("web.search.completed"), Topic.ACTION_RESULTS)
            await bus.publish(bus.envelope("web.search.failed"), Topic.ACTION_RESULTS)
            await bus.publish(bus.envelope("web.search.completed"), Topic.ACTION_REQUESTS)
            await eventually(lambda: len(star) == 2, what="two deliveries to '*'")
            await settle(bus)
            assert exact == ["web.search.completed"]
            assert sorted(star) == ["web.search.completed", "web.search.failed"]

    @async_test()
    async def test_without_queue_group_every_subscriber_gets_every_event(
        self, bus_factory: BusFactory
    ) -> None:
        async with AsyncExitStack() as stack:
            bus = await self._started(stack, bus_factory)
            first: list[int] = []
            second: list[int] = []

            async def one(event: Envelope) -> None:
                first.append(event.data["n"])

            async def two(event: Envelope) -> None:
                second.append(event.data["n"])

            await bus.subscribe(Topic.BUSINESS_FACTS, "tick", one)
            await bus.subscribe(Topic.BUSINESS_FACTS, "tick", two)
            for n in range(5):
                await bus.publish(bus.envelope("tick", {"n": n}))
            await eventually(lambda: len(first) == len(second) == 5, what="fan-out")
            assert sorted(first) == sorted(second) == [0, 1, 2, 3, 4]

    @async_test()
    async def test_a_queue_group_gets_each_event_once(self, bus_factory: BusFactory) -> None:
        async with AsyncExitStack() as stack:
            one = await self._started(stack, bus_factory)
            two = await self._started(stack, bus_factory)
            seen: dict[str, list[int]] = {"a": [], "b": [], "watcher": []}

            def record(name: str) -> Callable[[Envelope], Awaitable[None]]:
                async def handler(event: Envelope) -> None:
                    seen[name].append(event.data["n"])

                return handler

            await one.subscribe(Topic.ACTION_REQUESTS, "job.run", record("a"), queue_group="jobs")
            await two.subscribe(Topic.ACTION_REQUESTS, "job.run", record("b"), queue_group="jobs")
            await one.subscribe(Topic.ACTION_REQUESTS, "job.run", record("watcher"))
            for n in range(20):
                await one.publish(one.envelope("job.run", {"n": n}), Topic.ACTION_REQUESTS)
            await eventually(
                lambda: len(seen["a"]) + len(seen["b"]) >= 20 and len(seen["watcher"]) == 20,
                what="20 jobs handled",
            )
            await settle(one)
            await settle(two)
            assert sorted(seen["a"] + seen["b"]) == list(range(20))
            assert sorted(seen["watcher"]) == list(range(20))

    @async_test()
    async def test_a_handler_that_raises_gets_the_event_again(
        self, bus_factory: BusFactory
    ) -> None:
        async with AsyncExitStack() as stack:
            bus = await self._started(stack, bus_factory)
            attempts: list[str] = []
            done: list[str] = []

            async def flaky(event: Envelope) -> None:
                attempts.append(event.id)
                if len(attempts) < 3:
                    raise RuntimeError("not yet")
                done.append(event.id)

            await bus.subscribe(Topic.ACTION_REQUESTS, "job.flaky", flaky, queue_group="flaky")
            sent = bus.envelope("job.flaky", {"n": 1})
            await bus.publish(sent, Topic.ACTION_REQUESTS)
            await eventually(lambda: done == [sent.id], timeout=10, what="the third delivery")
            await settle(bus)
            assert attempts == [sent.id] * 3

    @async_test()
    async def test_an_event_that_keeps_failing_is_dropped_after_max_deliver(
        self, bus_factory: BusFactory
    ) -> None:
        async with AsyncExitStack() as stack:
            bus = await self._started(stack, bus_factory)
            max_deliver = int(getattr(bus, "max_deliver", 5))
            attempts: list[int] = []

            async def broken(event: Envelope) -> None:
                attempts.append(event.data["n"])
                raise RuntimeError("always")

            await bus.subscribe(Topic.SYSTEM_EVENTS, "job.broken", broken, queue_group="broken")
            await bus.publish(bus.envelope("job.broken", {"n": 1}), Topic.SYSTEM_EVENTS)
            await eventually(
                lambda: len(attempts) >= max_deliver, timeout=20, what="max_deliver deliveries"
            )
            await asyncio.sleep(0.3)
            await settle(bus)
            assert attempts == [1] * max_deliver

    @async_test()
    async def test_handlers_run_concurrently(self, bus_factory: BusFactory) -> None:
        async with AsyncExitStack() as stack:
            bus = await self._started(stack, bus_factory)
            second_arrived = asyncio.Event()
            finished: list[str] = []

            async def handler(event: Envelope) -> None:
                if event.data["first"]:
                    # Would wait forever if the bus ran handlers one at a time.
                    await asyncio.wait_for(second_arrived.wait(), 10)
                else:
                    second_arrived.set()
                finished.append(event.type)

            await bus.subscribe(Topic.BUSINESS_FACTS, "*", handler)
            await bus.publish(bus.envelope("one", {"first": True}))
            await bus.publish(bus.envelope("two", {"first": False}))
            await eventually(lambda: len(finished) == 2, timeout=10, what="both handlers")
            assert finished == ["two", "one"]

    @async_test()
    async def test_only_events_published_after_subscribe_arrive_and_unsubscribe_stops(
        self, bus_factory: BusFactory
    ) -> None:
        async with AsyncExitStack() as stack:
            bus = await self._started(stack, bus_factory)
            got: list[int] = []

            async def handler(event: Envelope) -> None:
                got.append(event.data["n"])

            await bus.publish(bus.envelope("count", {"n": 0}))
            await settle(bus)
            subscription = await bus.subscribe(Topic.BUSINESS_FACTS, "count", handler)
            await bus.publish(bus.envelope("count", {"n": 1}))
            await eventually(lambda: got == [1], what="the event after subscribe")
            await subscription.unsubscribe()
            await bus.publish(bus.envelope("count", {"n": 2}))
            await settle(bus)
            await asyncio.sleep(0.2)
            assert got == [1]

    @async_test()
    async def test_request_and_respond_set_correlation_and_default_topics(
        self, bus_factory: BusFactory
    ) -> None:
        async with AsyncExitStack() as stack:
            bus = await self._started(stack, bus_factory)
            results: list[Envelope] = []
            requests: list[Envelope] = []

            async def worker(event: Envelope) -> None:
                requests.append(event)
                await bus.respond(
                    event.response_event or "missing", {"echo": event.data}, event.correlation_id
                )

            async def collect(event: Envelope) -> None:
                results.append(event)

            await bus.subscribe(Topic.ACTION_REQUESTS, "echo.requested", worker)
            await bus.subscribe(Topic.ACTION_RESULTS, "echo.completed", collect)
            sent = await bus.request("echo.requested", {"x": 1}, "echo.completed")
            assert sent.correlation_id and sent.response_event == "echo.completed"
            assert sent.topic is Topic.ACTION_REQUESTS and sent.source == bus.source
            await eventually(lambda: len(results) == 1, what="the response")
            assert requests[0].topic is Topic.ACTION_REQUESTS
            assert results[0].topic is Topic.ACTION_RESULTS
            assert results[0].correlation_id == sent.correlation_id
            assert results[0].data == {"echo": {"x": 1}}
            chosen = await bus.request("echo.requested", {}, "echo.completed", "my-id")
            assert chosen.correlation_id == "my-id"

    @async_test()
    async def test_ask_returns_the_response_with_its_correlation_id(
        self, bus_factory: BusFactory
    ) -> None:
        async with AsyncExitStack() as stack:
            server = await self._started(stack, bus_factory)
            client = await self._started(stack, bus_factory)

            async def square(event: Envelope) -> None:
                await asyncio.sleep(0.01 * (5 - event.data["n"] % 5))
                await server.respond(
                    "math.squared", {"n": event.data["n"] ** 2}, event.correlation_id
                )

            await server.subscribe(Topic.ACTION_REQUESTS, "math.square", square, queue_group="m")
            answers = await asyncio.gather(
                *(client.ask("math.square", {"n": n}, "math.squared", timeout=10) for n in range(8))
            )
            assert [a.data["n"] for a in answers] == [n * n for n in range(8)]
            assert all(a.type == "math.squared" for a in answers)
            assert len({a.correlation_id for a in answers}) == 8

    @async_test()
    async def test_ask_times_out_with_event_timeout_error(self, bus_factory: BusFactory) -> None:
        async with AsyncExitStack() as stack:
            bus = await self._started(stack, bus_factory)
            with pytest.raises(EventTimeoutError, match=r"nobody\.answers"):
                await bus.ask("nobody.answers", {}, "nobody.answered", timeout=0.2)
            with pytest.raises(TimeoutError):  # it is also the built-in
                await bus.ask("nobody.answers", {}, "nobody.answered", timeout=0.05)

    @async_test()
    async def test_start_and_close_are_idempotent(self, bus_factory: BusFactory) -> None:
        bus = bus_factory()
        await bus.start()
        await bus.start()
        got: list[str] = []

        async def handler(event: Envelope) -> None:
            got.append(event.type)

        await bus.subscribe(Topic.BUSINESS_FACTS, "once", handler)
        await bus.publish(bus.envelope("once"))
        await eventually(lambda: got == ["once"], what="one delivery")
        await bus.close()
        await bus.close()

    @async_test(timeout=60)
    async def test_a_queue_group_keeps_its_position_across_restarts(
        self, bus_factory: BusFactory
    ) -> None:
        if not self.durable:
            pytest.skip("this bus keeps no events while no member of a group runs")
        got: list[int] = []

        async def handler(event: Envelope) -> None:
            got.append(event.data["n"])

        first = bus_factory()
        await first.start()
        await first.subscribe(Topic.ACTION_REQUESTS, "job.kept", handler, queue_group="keeper")
        await first.publish(first.envelope("job.kept", {"n": 1}), Topic.ACTION_REQUESTS)
        await eventually(lambda: got == [1], what="the first job")
        await first.close()
        async with AsyncExitStack() as stack:
            publisher = await self._started(stack, bus_factory)
            await publisher.publish(publisher.envelope("job.kept", {"n": 2}), Topic.ACTION_REQUESTS)
            second = await self._started(stack, bus_factory)
            await second.subscribe(Topic.ACTION_REQUESTS, "job.kept", handler, queue_group="keeper")
            await eventually(lambda: got == [1, 2], timeout=10, what="the job sent while down")
