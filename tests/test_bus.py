"""The bus contract on InProcessBus, and what only the in-process bus promises."""

from __future__ import annotations

import asyncio

import pytest

from tests.bus_contract import BusContract, BusFactory, async_test
from waygraph.errors import BusClosedError, ConfigError, EventFormatError
from waygraph.events import Envelope, InProcessBus, Topic, open_bus


class TestInProcessBus(BusContract):
    @pytest.fixture
    def bus_factory(self) -> BusFactory:
        # One shared bus stands for "the same namespace": in one process every
        # InProcessBus user shares the object.
        shared = InProcessBus(source="test", max_deliver=4)
        return lambda: _SharedHandle(shared)


class _SharedHandle(InProcessBus):
    """A view of one InProcessBus whose close() only unsubscribes its own subscriptions."""

    def __init__(self, shared: InProcessBus) -> None:
        super().__init__(source=shared.source, max_deliver=shared.max_deliver)
        self._shared = shared
        self._mine: list = []

    async def start(self) -> None:
        await self._shared.start()

    async def close(self) -> None:
        await self._drop_reply_routes()
        for sub in self._mine:
            await sub.unsubscribe()
        self._mine.clear()
        await self._shared.drain()

    async def publish(self, envelope: Envelope, topic: Topic | str | None = None) -> None:
        await self._shared.publish(envelope, topic)

    async def subscribe(self, topic, event_type, handler, queue_group=None):  # type: ignore[no-untyped-def]
        sub = await self._shared.subscribe(topic, event_type, handler, queue_group)
        self._mine.append(sub)
        return sub

    async def drain(self, timeout: float | None = 10.0) -> None:
        await self._shared.drain(timeout)


@async_test()
async def test_queue_group_members_take_turns() -> None:
    async with InProcessBus() as bus:
        counts = {"a": 0, "b": 0}

        def member(name: str):  # type: ignore[no-untyped-def]
            async def handler(event: Envelope) -> None:
                counts[name] += 1

            return handler

        await bus.subscribe(Topic.ACTION_REQUESTS, "job", member("a"), queue_group="g")
        await bus.subscribe(Topic.ACTION_REQUESTS, "job", member("b"), queue_group="g")
        for _ in range(10):
            await bus.publish(bus.envelope("job"), Topic.ACTION_REQUESTS)
        await bus.drain()
        assert counts == {"a": 5, "b": 5}


@async_test()
async def test_a_redelivery_in_a_queue_group_goes_to_the_next_member() -> None:
    async with InProcessBus(max_deliver=2) as bus:
        calls: list[str] = []

        async def broken(event: Envelope) -> None:
            calls.append("broken")
            raise RuntimeError("crash")

        async def healthy(event: Envelope) -> None:
            calls.append("healthy")

        await bus.subscribe(Topic.ACTION_REQUESTS, "job", broken, queue_group="g")
        await bus.subscribe(Topic.ACTION_REQUESTS, "job", healthy, queue_group="g")
        await bus.publish(bus.envelope("job"), Topic.ACTION_REQUESTS)
        await bus.drain()
        assert calls == ["broken", "healthy"]


@async_test()
async def test_each_delivery_gets_its_own_data() -> None:
    async with InProcessBus() as bus:
        seen: list[dict] = []

        async def mutate(event: Envelope) -> None:
            event.data["touched"] = True
            seen.append(event.data)

        async def look(event: Envelope) -> None:
            seen.append(dict(event.data))

        await bus.subscribe(Topic.BUSINESS_FACTS, "x", mutate)
        await bus.subscribe(Topic.BUSINESS_FACTS, "x", look)
        sent = bus.envelope("x", {"n": 1})
        await bus.publish(sent)
        await bus.drain()
        assert {"n": 1} in seen and sent.data == {"n": 1}


@async_test()
async def test_data_that_is_not_json_fails_at_publish() -> None:
    async with InProcessBus() as bus:
        with pytest.raises(EventFormatError, match="'data'"):
            await bus.publish(bus.envelope("x", {"when": object()}))


@async_test()
async def test_a_closed_bus_refuses_work_and_cancels_handlers_that_overrun() -> None:
    bus = InProcessBus(close_timeout=0.05)
    await bus.start()
    cancelled = asyncio.Event()

    async def slow(event: Envelope) -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    await bus.subscribe(Topic.BUSINESS_FACTS, "slow", slow)
    await bus.publish(bus.envelope("slow"))
    await asyncio.sleep(0)
    await bus.close()
    assert cancelled.is_set()
    with pytest.raises(BusClosedError, match="closed"):
        await bus.publish(bus.envelope("late"))
    await bus.start()  # a closed bus can start again
    await bus.publish(bus.envelope("late"))
    await bus.close()


@async_test()
async def test_drain_waits_for_chains_of_handlers() -> None:
    async with InProcessBus() as bus:
        hops: list[int] = []

        async def relay(event: Envelope) -> None:
            hops.append(event.data["n"])
            if event.data["n"] < 5:
                await asyncio.sleep(0.001)
                await bus.publish(bus.envelope("hop", {"n": event.data["n"] + 1}))

        await bus.subscribe(Topic.BUSINESS_FACTS, "hop", relay)
        await bus.publish(bus.envelope("hop", {"n": 0}))
        await bus.drain()
        assert hops == [0, 1, 2, 3, 4, 5]


@async_test()
async def test_ask_routes_many_concurrent_answers_through_one_subscription() -> None:
    async with InProcessBus() as bus:

        async def echo(event: Envelope) -> None:
            await bus.respond("echoed", event.data, event.correlation_id)

        await bus.subscribe(Topic.ACTION_REQUESTS, "echo", echo)
        answers = await asyncio.gather(
            *(bus.ask("echo", {"i": i}, "echoed", timeout=5) for i in range(50))
        )
        assert [a.data["i"] for a in answers] == list(range(50))
        replies = bus.__dict__["_bus_replies"]
        assert len(replies.routes) == 1 and not replies.waiters


def test_open_bus_chooses_by_url(monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(open_bus("memory://"), InProcessBus)
    monkeypatch.delenv("WAYGRAPH_NATS_URL", raising=False)
    assert isinstance(open_bus(), InProcessBus)
    with pytest.raises(ConfigError, match="unknown scheme 'amqp'"):
        open_bus("amqp://localhost")
    with pytest.raises(ConfigError, match="takes no host"):
        open_bus("memory://somewhere")
    monkeypatch.setenv("WAYGRAPH_NATS_URL", "redis://x")
    with pytest.raises(ConfigError, match="redis"):
        open_bus()


def test_max_deliver_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_deliver"):
        InProcessBus(max_deliver=0)
