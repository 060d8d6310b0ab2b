"""NatsBus settings: URL options, what it refuses, and a bus not yet (or never) connected."""

from __future__ import annotations

import pytest

from tests.bus_contract import async_test
from tests.test_events_nats import free_port, record
from waygraph.errors import BusClosedError, ConfigError, EventFormatError
from waygraph.events import Topic, open_bus
from waygraph.events.nats_bus import NatsBus


def test_url_options_configure_the_bus_and_keywords_win() -> None:
    bus = NatsBus("nats://h:1?stream_prefix=A&subject_prefix=a.b&ack_wait=2.5&max_deliver=3")
    assert (bus.stream_prefix, bus.subject_prefix, bus.ack_wait, bus.max_deliver) == (
        "A",
        "a.b",
        2.5,
        3,
    )
    assert bus.servers == ["nats://h:1"]
    assert NatsBus("nats://h:1?ack_wait=2", ack_wait=9).ack_wait == 9
    assert bus.stream_name(Topic.NOTIFICATION_EVENTS) == "A_NOTIFICATION_EVENTS"
    assert isinstance(open_bus("nats://h:1?stream_prefix=Q"), NatsBus)


@pytest.mark.parametrize(
    ("url", "options", "message"),
    [
        ("http://h:1", {}, "not a NATS URL"),
        ("nats://h:1?color=red", {}, "unknown option"),
        ("nats://h:1?ack_wait=soon", {}, "ack_wait='soon'"),
        ("nats://h:1", {"stream_prefix": "a.b"}, "stream_prefix"),
        ("nats://h:1", {"subject_prefix": "a.>"}, "subject_prefix"),
        ("nats://h:1", {"max_deliver": 0}, "max_deliver"),
        ("nats://h:1", {"ack_wait": 0}, "ack_wait"),
    ],
)
def test_bad_settings_are_config_errors(url: str, options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        NatsBus(url, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("event_type", ["a b", "a.*", "a.>", "a..b", ".a", ""])
def test_event_types_nats_cannot_carry_are_refused(event_type: str) -> None:
    with pytest.raises(EventFormatError, match="type"):
        NatsBus().subject(Topic.BUSINESS_FACTS, event_type)


@async_test()
async def test_an_unreachable_server_is_a_clear_config_error() -> None:
    bus = NatsBus(f"nats://127.0.0.1:{free_port()}", connect_timeout=0.5)
    with pytest.raises(ConfigError, match=r"cannot connect to NATS .*scripts/services.sh up"):
        await bus.start()


@async_test()
async def test_publish_and_subscribe_before_start_say_so() -> None:
    bus = NatsBus()
    with pytest.raises(BusClosedError, match="start"):
        await bus.publish(bus.envelope("x"))
    with pytest.raises(BusClosedError, match="start"):
        await bus.subscribe(Topic.BUSINESS_FACTS, "*", record([]))
