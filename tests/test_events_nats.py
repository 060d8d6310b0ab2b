"""NatsBus: the shared bus contract on NATS JetStream, and what only NATS promises.

Every test works in streams and subjects of its own (a unique
``stream_prefix``/``subject_prefix``) and deletes its streams afterwards, so
tests never see each other's events on the shared server. Tests that stop a
server use a private ``nats-server`` (:class:`PrivateNatsServer`) on a free
port, never the machine's shared one.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack, suppress
from pathlib import Path
from urllib.parse import urlsplit

import nats
import pytest

from tests.bus_contract import BusContract, BusFactory, async_test, eventually
from tests.conftest import require_service, unavailable
from waygraph.events import Envelope, Topic
from waygraph.events.nats_bus import DEFAULT_NATS_URL, NatsBus

# ------------------------------------------------------------------ helpers


def shared_nats_url() -> str:
    """The machine's NATS (``WAYGRAPH_NATS_URL``), skipping the test when it is unreachable."""
    url = os.environ.get("WAYGRAPH_NATS_URL", "").strip() or DEFAULT_NATS_URL
    parts = urlsplit(url.split(",")[0])
    require_service("NATS", parts.hostname or "127.0.0.1", parts.port or 4222)
    return url


def unique_prefixes() -> tuple[str, str]:
    tag = uuid.uuid4().hex[:10]
    return f"TEST_{tag}", f"test_{tag}"


async def delete_streams(url: str, stream_prefix: str) -> None:
    nc = await nats.connect(url.partition("?")[0], connect_timeout=2, max_reconnect_attempts=1)
    try:
        js = nc.jetstream()
        for topic in Topic:
            with suppress(nats.js.errors.NotFoundError):
                await js.delete_stream(f"{stream_prefix}_{topic.name}")
    finally:
        await nc.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PrivateNatsServer:
    """A nats-server of the test's own (JetStream, file store in ``store_dir``) it may kill.

    ``stop()`` then ``start()`` restarts it on the same port and store, as a
    server restart in production would.

    Example::

        with PrivateNatsServer(tmp_path) as server:
            bus = NatsBus(server.url)
    """

    def __init__(self, store_dir: Path, port: int | None = None) -> None:
        binary = shutil.which("nats-server") or (
            "/usr/sbin/nats-server" if Path("/usr/sbin/nats-server").exists() else None
        )
        if binary is None:
            unavailable("nats-server is not installed (Debian: apt-get install nats-server)")
        self.binary = str(binary)
        self.store_dir = store_dir
        self.port = port or free_port()
        self.url = f"nats://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 10.0) -> None:
        self.store_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.store_dir.parent / f"nats-{self.port}.log", "ab")  # noqa: SIM115
        self.process = subprocess.Popen(
            [
                self.binary,
                "-js",
                "-a",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-sd",
                str(self.store_dir),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError as exc:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"private nats-server on port {self.port} did not start"
                    ) from exc
                time.sleep(0.05)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def __enter__(self) -> PrivateNatsServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop(signal.SIGKILL)


@pytest.fixture
def private_nats(tmp_path: Path) -> Iterator[PrivateNatsServer]:
    with PrivateNatsServer(tmp_path / "nats-store") as server:
        yield server


@pytest.fixture
def nats_prefixes() -> Iterator[tuple[str, str, str]]:
    """(url, stream_prefix, subject_prefix) on the shared server; the streams are deleted after."""
    url = shared_nats_url()
    stream_prefix, subject_prefix = unique_prefixes()
    yield url, stream_prefix, subject_prefix
    asyncio.run(delete_streams(url, stream_prefix))


def bus_maker(url: str, stream_prefix: str, subject_prefix: str, **options: object) -> BusFactory:
    def make() -> NatsBus:
        return NatsBus(
            url,
            source="test",
            stream_prefix=stream_prefix,
            subject_prefix=subject_prefix,
            **options,  # type: ignore[arg-type]
        )

    return make


# ----------------------------------------------------------------- contract


class TestNatsBus(BusContract):
    durable = True

    @pytest.fixture
    def bus_factory(self, nats_prefixes: tuple[str, str, str]) -> BusFactory:
        return bus_maker(*nats_prefixes, max_deliver=4, ack_wait=5)


# ------------------------------------------------------------ NATS specific


def record(into: list[Envelope]) -> Callable[[Envelope], object]:
    async def handler(event: Envelope) -> None:
        into.append(event)

    return handler


@async_test()
async def test_streams_are_per_topic_file_backed_with_the_prefixed_subjects(
    nats_prefixes: tuple[str, str, str],
) -> None:
    url, stream_prefix, subject_prefix = nats_prefixes
    async with bus_maker(url, stream_prefix, subject_prefix)() as bus:
        await bus.publish(bus.envelope("order.placed", {"n": 1}), Topic.BUSINESS_FACTS)
        nc = await nats.connect(url)
        try:
            info = await nc.jetstream().stream_info(f"{stream_prefix}_BUSINESS_FACTS")
            messages = await nc.jetstream().get_msg(f"{stream_prefix}_BUSINESS_FACTS", 1)
        finally:
            await nc.close()
    assert info.config.subjects == [f"{subject_prefix}.business-facts.>"]
    assert info.config.storage == nats.js.api.StorageType.FILE
    assert info.state.messages == 1
    assert messages.subject == f"{subject_prefix}.business-facts.order.placed"
    # Structured-mode CloudEvents JSON, the event id as the server's dedup id.
    assert messages.headers is not None
    assert messages.headers["Content-Type"] == "application/cloudevents+json"
    wire = Envelope.from_wire(messages.data)
    assert messages.headers["Nats-Msg-Id"] == wire.id
    assert wire.type == "order.placed" and wire.data == {"n": 1}


@async_test()
async def test_a_duplicate_publish_with_the_same_id_is_stored_and_delivered_once(
    nats_prefixes: tuple[str, str, str],
) -> None:
    url, stream_prefix, subject_prefix = nats_prefixes
    async with bus_maker(url, stream_prefix, subject_prefix)() as bus:
        got: list[Envelope] = []
        await bus.subscribe(Topic.ACTION_REQUESTS, "job.run", record(got), queue_group="jobs")
        event = bus.envelope("job.run", {"n": 1})
        for _ in range(3):
            await bus.publish(event, Topic.ACTION_REQUESTS)
        await bus.publish(bus.envelope("job.run", {"n": 2}), Topic.ACTION_REQUESTS)
        await eventually(lambda: len(got) == 2, what="two distinct events")
        await asyncio.sleep(0.3)
        info = await bus._jetstream().stream_info(f"{stream_prefix}_ACTION_REQUESTS")
    assert sorted(e.data["n"] for e in got) == [1, 2]
    assert info.state.messages == 2


@async_test()
async def test_an_event_handled_once_is_not_handled_again_when_it_comes_back(
    nats_prefixes: tuple[str, str, str],
) -> None:
    # The server's duplicate window is bypassed here (a raw publish without the
    # msg-id header), as after a window expiry or a redelivery of an acked event:
    # the subscription's own window of handled ids must absorb it.
    url, stream_prefix, subject_prefix = nats_prefixes
    async with bus_maker(url, stream_prefix, subject_prefix)() as bus:
        got: list[Envelope] = []
        await bus.subscribe(Topic.ACTION_RESULTS, "*", record(got), queue_group="planner")
        event = bus.envelope("web.search.completed", {"count": 3})
        await bus.publish(event, Topic.ACTION_RESULTS)
        await eventually(lambda: len(got) == 1, what="the first delivery")
        await bus._jetstream().publish(
            bus.subject(Topic.ACTION_RESULTS, event.type), event.to_json()
        )
        other = bus.envelope("web.search.completed", {"count": 4})
        await bus.publish(other, Topic.ACTION_RESULTS)
        await eventually(lambda: len(got) == 2, what="the second event")
        await asyncio.sleep(0.3)
    assert [e.id for e in got] == [event.id, other.id]


@async_test()
async def test_a_failed_handler_gets_a_prompt_redelivery_not_one_after_ack_wait(
    nats_prefixes: tuple[str, str, str],
) -> None:
    url, stream_prefix, subject_prefix = nats_prefixes
    async with bus_maker(url, stream_prefix, subject_prefix, ack_wait=30)() as bus:
        deliveries: list[float] = []

        async def flaky(event: Envelope) -> None:
            deliveries.append(time.monotonic())
            if len(deliveries) == 1:
                raise RuntimeError("first try fails")

        await bus.subscribe(Topic.ACTION_REQUESTS, "job.flaky", flaky, queue_group="w")
        await bus.publish(bus.envelope("job.flaky"), Topic.ACTION_REQUESTS)
        await eventually(lambda: len(deliveries) == 2, timeout=5, what="the redelivery")
        await asyncio.sleep(0.3)
    assert len(deliveries) == 2
    assert deliveries[1] - deliveries[0] < 5  # a nak, not the 30 s ack_wait


@async_test()
async def test_a_handler_slower_than_ack_wait_keeps_its_event_with_progress_acks(
    nats_prefixes: tuple[str, str, str],
) -> None:
    url, stream_prefix, subject_prefix = nats_prefixes
    make = bus_maker(url, stream_prefix, subject_prefix, ack_wait=1)
    async with make() as first, make() as second:
        taken: list[str] = []

        async def slow(event: Envelope) -> None:
            taken.append(event.id)
            await asyncio.sleep(3.5)

        # Two members: without progress acks the server would hand the event to the
        # other one after each ack_wait (a redelivery to the same member is skipped).
        for bus in (first, second):
            await bus.subscribe(Topic.ACTION_REQUESTS, "job.slow", slow, queue_group="workers")
        sent = first.envelope("job.slow")
        await first.publish(sent, Topic.ACTION_REQUESTS)
        await eventually(lambda: taken == [sent.id], timeout=5, what="the delivery")
        await asyncio.sleep(4.5)
    assert taken == [sent.id]


@async_test()
async def test_an_event_whose_worker_vanished_is_redelivered_to_another_member_after_ack_wait(
    nats_prefixes: tuple[str, str, str],
) -> None:
    url, stream_prefix, subject_prefix = nats_prefixes
    make = bus_maker(url, stream_prefix, subject_prefix, ack_wait=1)
    async with AsyncExitStack() as stack:
        doomed = make()
        await doomed.start()
        survivor = make()
        await survivor.start()
        stack.push_async_callback(survivor.close)
        taken = asyncio.Event()
        finished: list[tuple[str, int]] = []

        async def hang(event: Envelope) -> None:
            taken.set()
            await asyncio.sleep(3600)

        async def work(event: Envelope) -> None:
            finished.append((event.id, event.data["n"]))

        await doomed.subscribe(Topic.ACTION_REQUESTS, "job.long", hang, queue_group="workers")
        sent = doomed.envelope("job.long", {"n": 7})
        await doomed.publish(sent, Topic.ACTION_REQUESTS)
        await asyncio.wait_for(taken.wait(), 5)
        # The worker's connection dies with the handler still running: no ack, no nak.
        assert doomed._nc is not None
        await doomed._nc.close()
        await survivor.subscribe(Topic.ACTION_REQUESTS, "job.long", work, queue_group="workers")
        await eventually(lambda: finished == [(sent.id, 7)], timeout=10, what="the redelivery")
        for sub in doomed._subscriptions:
            for task in sub.tasks:
                task.cancel()


@async_test()
async def test_members_that_create_their_group_at_once_all_get_events(
    nats_prefixes: tuple[str, str, str],
) -> None:
    """Two planners started together both found no consumer and both created it;
    the second create re-pointed it at the second's inbox and the first got nothing."""
    url, stream_prefix, subject_prefix = nats_prefixes
    make = bus_maker(url, stream_prefix, subject_prefix)
    async with make() as first, make() as second:
        got: dict[str, list[int]] = {"first": [], "second": []}

        def take(name: str) -> Callable[[Envelope], object]:
            async def handler(event: Envelope) -> None:
                got[name].append(event.data["n"])

            return handler

        js = second._jetstream()
        looked_up = js.consumer_info

        async def not_there_yet(stream: str, consumer: str, *args: object) -> object:
            # The second member looked before the first had created the consumer.
            js.consumer_info = looked_up  # type: ignore[method-assign]
            raise nats.js.errors.NotFoundError

        assert first._nc is not None
        listen = first._nc.subscribe

        async def second_creates_before_first_listens(*args: object, **kwargs: object) -> object:
            if "queue" not in kwargs:  # nats-py's own inbox for replies, not the consumer's
                return await listen(*args, **kwargs)  # type: ignore[arg-type]
            first._nc.subscribe = listen  # type: ignore[method-assign, union-attr]
            js.consumer_info = not_there_yet  # type: ignore[method-assign]
            await second.subscribe(Topic.ACTION_REQUESTS, "job.race", take("second"), "racers")
            return await listen(*args, **kwargs)  # type: ignore[arg-type]

        first._nc.subscribe = second_creates_before_first_listens  # type: ignore[method-assign]
        await first.subscribe(Topic.ACTION_REQUESTS, "job.race", take("first"), "racers")
        [one], [two] = first._subscriptions, second._subscriptions
        info = await js.consumer_info(one.stream, one.consumer)
        assert one.deliver_subject == two.deliver_subject == info.config.deliver_subject
        for n in range(40):
            await first.publish(first.envelope("job.race", {"n": n}), Topic.ACTION_REQUESTS)
        await eventually(
            lambda: sorted(got["first"] + got["second"]) == list(range(40)),
            timeout=10,
            what="every event",
        )
    # NATS picks a member at random per event: all 40 to one member is a 2**-39 chance.
    assert got["first"] and got["second"]


@async_test()
async def test_close_cancels_a_handler_past_close_timeout_and_its_event_moves_on_at_once(
    nats_prefixes: tuple[str, str, str],
) -> None:
    url, stream_prefix, subject_prefix = nats_prefixes
    make = bus_maker(url, stream_prefix, subject_prefix, ack_wait=30, close_timeout=0.3)
    async with AsyncExitStack() as stack:
        closing = make()
        await closing.start()
        other = make()
        await other.start()
        stack.push_async_callback(other.close)
        taken = asyncio.Event()
        done: list[str] = []

        async def hang(event: Envelope) -> None:
            taken.set()
            await asyncio.sleep(3600)

        async def work(event: Envelope) -> None:
            done.append(event.id)

        sub = await closing.subscribe(Topic.ACTION_REQUESTS, "job.x", hang, queue_group="g")
        sent = closing.envelope("job.x")
        await closing.publish(sent, Topic.ACTION_REQUESTS)
        await asyncio.wait_for(taken.wait(), 5)
        await sub.unsubscribe()  # as Worker.close does before the bus closes
        await other.subscribe(Topic.ACTION_REQUESTS, "job.x", work, queue_group="g")
        # Close does not wait for the hanging handler (it would wait forever).
        await asyncio.wait_for(closing.close(), 30)
        # Nak'ed on cancel: the other member has it long before the 30 s ack_wait.
        await eventually(lambda: done == [sent.id], timeout=5, what="the handed-on event")


@async_test()
async def test_a_malformed_message_is_dropped_and_the_subscription_goes_on(
    nats_prefixes: tuple[str, str, str],
) -> None:
    url, stream_prefix, subject_prefix = nats_prefixes
    async with bus_maker(url, stream_prefix, subject_prefix)() as bus:
        got: list[Envelope] = []
        await bus.subscribe(Topic.BUSINESS_FACTS, "*", record(got), queue_group="g")
        js = bus._jetstream()
        subject = bus.subject(Topic.BUSINESS_FACTS, "junk")
        await js.publish(subject, b"not json")
        await js.publish(
            subject, b'{"id": "1", "source": "s", "type": "junk", "specversion": "0.3"}'
        )
        await bus.publish(bus.envelope("good", {"ok": True}))
        await eventually(lambda: len(got) == 1, what="the good event")
        await asyncio.sleep(0.3)
    assert [e.type for e in got] == ["good"]


@async_test()
async def test_a_reconnect_sends_a_request_in_flight_again_at_once_and_cancels_nothing() -> None:
    # No server needed: a request whose answer was due on the old connection
    # never gets one, so the reconnect itself must interrupt it.
    bus = NatsBus(stream_prefix="UNIT", subject_prefix="unit")
    tries: list[int] = []

    async def request() -> str:
        tries.append(1)
        if len(tries) == 1:
            await asyncio.sleep(3600)  # sent on the connection that was lost
        return "confirmed"

    sending = asyncio.create_task(bus._retry(request, "a test request"))
    await eventually(lambda: tries == [1], what="the first try")
    await bus._on_reconnected()
    assert await asyncio.wait_for(sending, 2) == "confirmed"
    assert tries == [1, 1]
    assert not bus._attempts and not bus._interrupted

    async def never() -> str:
        await asyncio.sleep(3600)
        return "never"

    # Cancelled from outside, a request is cancelled, with or without a reconnect too.
    for reconnect_too in (False, True):
        waiting = asyncio.create_task(bus._retry(never, "another test request"))
        await asyncio.sleep(0.01)
        waiting.cancel()
        if reconnect_too:
            await bus._on_reconnected()
        with pytest.raises(asyncio.CancelledError):
            await waiting
    assert not bus._attempts and not bus._interrupted


@async_test(timeout=60)
async def test_queue_group_fanout_and_ask_survive_a_server_restart(
    private_nats: PrivateNatsServer,
) -> None:
    make = bus_maker(private_nats.url, "R", "r", ack_wait=2)
    async with AsyncExitStack() as stack:
        worker = make()
        await worker.start()
        stack.push_async_callback(worker.close)
        client = make()
        await client.start()
        stack.push_async_callback(client.close)
        jobs: list[int] = []
        watched: list[int] = []

        async def square(event: Envelope) -> None:
            jobs.append(event.data["n"])
            await worker.respond("math.squared", {"n": event.data["n"] ** 2}, event.correlation_id)

        async def watch(event: Envelope) -> None:
            watched.append(event.data["n"])

        await worker.subscribe(Topic.ACTION_REQUESTS, "math.square", square, queue_group="math")
        await client.subscribe(Topic.ACTION_REQUESTS, "math.square", watch)
        first = await client.ask("math.square", {"n": 3}, "math.squared", timeout=10)
        assert first.data == {"n": 9}

        private_nats.restart()
        # publish retries until the client has reconnected; the durable and the
        # fan-out consumers, kept in the server's file store, deliver again.
        second = await client.ask("math.square", {"n": 4}, "math.squared", timeout=20)
        assert second.data == {"n": 16}
        await eventually(lambda: sorted(watched) == [3, 4], timeout=10, what="fan-out after")
        assert sorted(jobs) == [3, 4]


@async_test(timeout=60)
async def test_events_published_while_the_group_is_disconnected_arrive_after_reconnect(
    private_nats: PrivateNatsServer,
) -> None:
    make = bus_maker(private_nats.url, "R", "r", ack_wait=2)
    async with AsyncExitStack() as stack:
        worker = make()
        await worker.start()
        stack.push_async_callback(worker.close)
        got: list[int] = []

        async def handler(event: Envelope) -> None:
            got.append(event.data["n"])

        await worker.subscribe(Topic.ACTION_REQUESTS, "job.run", handler, queue_group="jobs")
        private_nats.stop()
        publish_later = asyncio.create_task(
            worker.publish(worker.envelope("job.run", {"n": 1}), Topic.ACTION_REQUESTS)
        )
        await asyncio.sleep(0.5)
        assert not publish_later.done()  # waiting for the server, not failing
        private_nats.start()
        await asyncio.wait_for(publish_later, 20)
        await eventually(lambda: got == [1], timeout=10, what="the event after reconnect")


@async_test(timeout=60)
async def test_a_server_that_lost_its_store_gets_streams_and_consumers_back(
    tmp_path: Path,
) -> None:
    # Not a restart that keeps data: a new, empty server on the same address.
    first = PrivateNatsServer(tmp_path / "a")
    first.start()
    make = bus_maker(first.url, "L", "l", ack_wait=2)
    try:
        async with make() as bus:
            got: list[int] = []

            async def handler(event: Envelope) -> None:
                got.append(event.data["n"])

            await bus.subscribe(Topic.ACTION_REQUESTS, "job.run", handler, queue_group="jobs")
            await bus.publish(bus.envelope("job.run", {"n": 1}), Topic.ACTION_REQUESTS)
            await eventually(lambda: got == [1], what="the first event")
            first.stop()
            first.store_dir = tmp_path / "b"
            first.start()
            await bus.publish(bus.envelope("job.run", {"n": 2}), Topic.ACTION_REQUESTS)
            await eventually(lambda: got == [1, 2], timeout=15, what="the event on the new server")
    finally:
        first.stop(signal.SIGKILL)
