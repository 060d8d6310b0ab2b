"""Retrying a store write that another writer beat: the one shell every driver uses.

Every change is applied to the state as loaded and committed version-checked;
a :class:`~waygraph.errors.Conflict` means another writer committed first, so
the caller forgets what it loaded and tries again after a jittered, growing
pause (writers that collided once do not collide again in lock step), until
a deadline. :func:`retry_conflicts` is the synchronous shell (the Navigator),
:func:`retry_conflicts_async` the asynchronous one (event-driven plans).

Example:
    >>> retry_conflicts(lambda: 42, what="session 's'")
    42
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from waygraph.errors import Conflict

__all__ = ["CONFLICT_TIMEOUT", "retry_conflicts", "retry_conflicts_async"]

T = TypeVar("T")

#: Seconds a write keeps retrying before its Conflict reaches the caller.
CONFLICT_TIMEOUT = 10.0
#: Backoff between retries: full jitter, doubling from the first to the last bound.
_BACKOFF_FIRST, _BACKOFF_MAX = 0.002, 0.1


class _Schedule:
    """The deadline and the pauses of one retried write (shared by both shells)."""

    def __init__(self, timeout: float, what: str) -> None:
        self.timeout = timeout
        self.what = what
        self.deadline = time.monotonic() + timeout
        self.bound = _BACKOFF_FIRST
        self.tries = 0

    def pause(self) -> float:
        """Seconds to wait before the next try; raises Conflict past the deadline."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise Conflict(
                f"{self.what}: other writers committed first for {self.timeout:g}s "
                f"({self.tries} tries)"
            ) from None
        wait = min(left, random.uniform(0, self.bound))
        self.bound = min(self.bound * 2, _BACKOFF_MAX)
        return wait


def retry_conflicts(
    attempt: Callable[[], T],
    *,
    timeout: float = CONFLICT_TIMEOUT,
    what: str,
    forget: Callable[[], None] | None = None,
) -> T:
    """Run ``attempt`` until no other writer beats it, or ``timeout`` seconds pass.

    Each :class:`Conflict` calls ``forget`` (drop what was cached) and waits;
    after ``timeout`` a Conflict naming ``what`` and how long it tried is raised.
    """
    schedule = _Schedule(timeout, what)
    while True:
        schedule.tries += 1
        try:
            return attempt()
        except Conflict:
            if forget is not None:
                forget()
            time.sleep(schedule.pause())


async def retry_conflicts_async(
    attempt: Callable[[], Awaitable[T]],
    *,
    timeout: float = CONFLICT_TIMEOUT,
    what: str,
    forget: Callable[[], Awaitable[object]] | None = None,
) -> T:
    """:func:`retry_conflicts` for coroutines: ``forget`` (a reload) is awaited.

    Example:
        >>> async def write() -> str:
        ...     return "committed"
        >>> asyncio.run(retry_conflicts_async(write, what="plan 'p'"))
        'committed'
    """
    schedule = _Schedule(timeout, what)
    while True:
        schedule.tries += 1
        try:
            return await attempt()
        except Conflict:
            if forget is not None:
                await forget()
            await asyncio.sleep(schedule.pause())
