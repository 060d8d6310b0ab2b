"""Waiting for the bus and the store when a planner or worker process starts.

Once running, planners and workers ride out NATS and PostgreSQL outages (the
bus reconnects for ever, store calls retry). At start they used to try once
and exit, so a process started together with its services (a compose file, a
boot) lost the race. :func:`wait_for_services` tries again on the schedule
:func:`retry_delays` gives (0.25 s, doubling, at most 5 s apart) until the
service answers or ``wait`` seconds have passed, with one line per failed try;
after the wait, the last failure is raised as one
:class:`~waygraph.errors.ConfigError`. A URL that cannot work (a bad scheme
or option) is refused at once: only reaching the service is retried.

Example:
    >>> list(retry_delays(10.0))
    [0.25, 0.5, 1.0, 2.0, 4.0, 2.25]
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator

from waygraph.errors import ConfigError, StoreError

__all__ = ["DEFAULT_WAIT", "retry_delays", "wait_for_bus", "wait_for_store"]

#: Seconds ``waygraph planner`` and ``worker`` wait for NATS and PostgreSQL at start.
DEFAULT_WAIT = 60.0
#: The first pause between tries; each next one doubles, up to ``MAX_DELAY``.
FIRST_DELAY = 0.25
MAX_DELAY = 5.0


def retry_delays(
    wait: float, *, first: float = FIRST_DELAY, longest: float = MAX_DELAY
) -> Iterator[float]:
    """The pauses between tries within ``wait`` seconds (the time tries take aside).

    They double from ``first`` up to ``longest``; the last one is cut so the
    pauses add up to ``wait`` exactly. ``wait`` 0: no pause, one try.

    Example:
        >>> list(retry_delays(3.0))
        [0.25, 0.5, 1.0, 1.25]
        >>> list(retry_delays(0))
        []
    """
    left = max(0.0, float(wait))
    delay = first
    while left > 1e-9:
        pause = min(delay, left)
        yield round(pause, 6)
        left -= pause
        delay = min(delay * 2, longest)


Say = Callable[[str], None]


async def _wait_for(
    what: str,
    attempt: Callable[[], Awaitable[None]],
    retryable: tuple[type[BaseException], ...],
    wait: float,
    say: Say,
    stop: asyncio.Event | None,
) -> bool:
    """Run ``attempt`` until it succeeds (True), ``stop`` is set (False) or ``wait`` runs out."""
    deadline = time.monotonic() + max(0.0, wait)
    delays = retry_delays(wait)
    tries = 0
    errors: tuple[type[BaseException], ...] = (*retryable, TimeoutError)
    while True:
        tries += 1
        try:
            # A try that hangs (a host dropping packets) must not outlast the wait.
            await asyncio.wait_for(attempt(), timeout=max(1.0, deadline - time.monotonic()))
        except errors as exc:
            # One line, whatever the driver says (libpq adds a hint on a second line).
            reason = " ".join(str(exc).split()) or f"no answer from {what}"
            pause = next(delays, None)
            left = deadline - time.monotonic()
            if pause is None or left <= 0:
                waited = f"; gave up after {tries} tries in {wait:g} s (--wait)" if wait else ""
                raise ConfigError(reason + waited) from None
            pause = min(pause, left)
            say(f"waiting for {what} ({reason}); trying again in {pause:.2g} s, {left:.1f} s left")
            if stop is None:
                await asyncio.sleep(pause)
                continue
            try:
                await asyncio.wait_for(stop.wait(), timeout=pause)
            except TimeoutError:
                continue
            return False
        if tries > 1:
            say(f"{what} is up")
        return True


async def wait_for_bus(url: str, wait: float, say: Say, stop: asyncio.Event | None = None) -> bool:
    """Connect to the bus ``url`` names (and close again), trying for up to ``wait`` seconds.

    True once it answered (an in-process bus always does); False when
    ``stop`` was set meanwhile. Raises ConfigError for a bad URL at once, and
    with the last reason once ``wait`` has passed.

    Example:
        >>> asyncio.run(wait_for_bus("memory://", 5.0, print))
        True
    """
    from waygraph.events import open_bus

    if url.startswith("memory://"):
        return True
    bus = open_bus(url, source="waygraph-wait")  # a bad URL fails here, not retried

    async def attempt() -> None:
        try:
            await bus.start()
        finally:
            await bus.close()

    return await _wait_for(
        f"the bus at {url.partition('?')[0]}", attempt, (ConfigError,), wait, say, stop
    )


async def wait_for_store(
    url: str, wait: float, say: Say, stop: asyncio.Event | None = None
) -> bool:
    """Open (and close) the PostgreSQL store ``url`` names, trying for up to ``wait`` seconds.

    Other stores are files or memory: nothing to wait for (True at once).

    Example:
        >>> asyncio.run(wait_for_store("memory://", 5.0, print))
        True
    """
    from waygraph.store import open_store
    from waygraph.store.base import redact_url

    if not url.lower().startswith(("postgresql://", "postgres://")):
        return True

    def probe() -> None:
        open_store(url).close()

    async def attempt() -> None:
        await asyncio.to_thread(probe)

    return await _wait_for(
        f"the store at {redact_url(url)}", attempt, (StoreError,), wait, say, stop
    )
