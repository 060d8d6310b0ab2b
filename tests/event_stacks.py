"""The bus + store stacks the event planner suite runs on.

``inprocess+sqlite``: one InProcessBus and a SQLite file under ``tmp_path``;
always available. ``nats+postgres``: NatsBus on the machine's NATS
(``WAYGRAPH_NATS_URL``, default ``nats://127.0.0.1:4222``) in streams of the
test's own, and PostgreSQL from the ``postgres_url`` fixture. It is skipped
with the reason when a service (or ``waygraph.events.nats_bus``) is missing,
and fails instead under ``WAYGRAPH_REQUIRE_SERVICES=1``.

Use the ``stack`` fixture (import it into the test module)::

    from tests.event_stacks import Stack, stack_fixture  # noqa: F401

    def test_something(stack: Stack) -> None: ...
"""

from __future__ import annotations

import importlib.util
import os
import uuid
from contextlib import suppress
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.conftest import require_service, unavailable
from waygraph.events import Bus, InProcessBus, Topic

STACKS = ("inprocess+sqlite", "nats+postgres")
DEFAULT_NATS_URL = "nats://127.0.0.1:4222"


class Stack:
    """One bus namespace and one store URL for a test.

    ``bus()`` returns a bus to start: on ``inprocess+sqlite`` always the same
    InProcessBus (one process shares one), on ``nats+postgres`` a new
    NatsBus connection in the test's own streams each time, as separate
    processes would have. ``close()`` closes every bus made and deletes the
    test's streams.
    """

    def __init__(self, kind: str, store_url: str, nats_url: str | None = None) -> None:
        self.kind = kind
        self.store_url = store_url
        self.nats_url = nats_url
        tag = uuid.uuid4().hex[:10]
        self.stream_prefix = f"EVT_{tag}"
        self.subject_prefix = f"evt_{tag}"
        self._buses: list[Bus] = []
        self._shared: InProcessBus | None = None

    def __repr__(self) -> str:
        return f"Stack({self.kind!r})"

    @property
    def uses_services(self) -> bool:
        return self.kind == "nats+postgres"

    def bus(self, **options: Any) -> Bus:
        if self.kind == "inprocess+sqlite":
            if self._shared is None:
                self._shared = InProcessBus(source="test", **options)
                self._buses.append(self._shared)
            return self._shared
        from waygraph.events.nats_bus import NatsBus

        options.setdefault("ack_wait", 5.0)
        bus = NatsBus(
            self.nats_url or DEFAULT_NATS_URL,
            source="test",
            stream_prefix=self.stream_prefix,
            subject_prefix=self.subject_prefix,
            **options,
        )
        self._buses.append(bus)
        return bus

    async def settle(self, seconds: float = 0.3) -> None:
        """Let deliveries in flight finish (drain in process; a short wait over NATS)."""
        import asyncio

        if self._shared is not None:
            await self._shared.drain()
        else:
            await asyncio.sleep(seconds)

    async def close(self) -> None:
        buses, self._buses = self._buses, []
        for bus in reversed(buses):
            await bus.close()
        if self.kind == "nats+postgres":
            await _delete_streams(self.nats_url or DEFAULT_NATS_URL, self.stream_prefix)


async def _delete_streams(url: str, stream_prefix: str) -> None:
    import nats

    nc = await nats.connect(url, connect_timeout=2, max_reconnect_attempts=1)
    try:
        js = nc.jetstream()
        for topic in Topic:
            with suppress(Exception):
                await js.delete_stream(f"{stream_prefix}_{topic.name}")
    finally:
        await nc.close()


def make_stack(kind: str, tmp_path: Path, *, postgres_url: str | None = None) -> Stack:
    """The stack ``kind`` names; skips (or fails, see the module docstring) when unavailable."""
    if kind == "inprocess+sqlite":
        return Stack(kind, f"sqlite:///{tmp_path / 'plans.db'}")
    if kind != "nats+postgres":
        raise ValueError(f"unknown stack {kind!r}; use one of {', '.join(STACKS)}")
    if importlib.util.find_spec("waygraph.events.nats_bus") is None:
        unavailable("waygraph.events.nats_bus (NatsBus) does not exist yet")
    nats_url = os.environ.get("WAYGRAPH_NATS_URL", "").strip() or DEFAULT_NATS_URL
    parts = urlsplit(nats_url.split(",")[0])
    require_service("NATS", parts.hostname or "127.0.0.1", parts.port or 4222)
    if postgres_url is None:
        unavailable("the nats+postgres stack needs the postgres_url fixture")
    return Stack(kind, postgres_url, nats_url)


@pytest.fixture(params=STACKS, name="stack")
def stack_fixture(request: pytest.FixtureRequest, tmp_path: Path) -> Stack:
    """Each test once per stack in :data:`STACKS`."""
    postgres = None
    if request.param == "nats+postgres":
        if importlib.util.find_spec("waygraph.events.nats_bus") is None:
            unavailable("waygraph.events.nats_bus (NatsBus) does not exist yet")
        postgres = request.getfixturevalue("postgres_url")
    return make_stack(request.param, tmp_path, postgres_url=postgres)
