"""Thread pools of the server's own, so blocking work never takes the request threads.

Plain ``def`` routes (the reads: plans, sessions, events, drawings, the
dashboard's pages) run in anyio's default thread pool (40 threads). Work that
may block for long runs apart from it, each kind in a bounded pool:

- ``work`` (:data:`WORK_THREADS`): turns, answers and resets. They write to
  the store and may run command gates (``--allow-commands``), which run in
  slots of their own (:mod:`waygraph.verify.gates`): a gate that gets no slot in time
  is unknown, and its turn answers.
- ``streams`` (:data:`STREAM_THREADS`): the event streams' store reads, so
  hundreds of open streams on a slow store cannot starve the reads.

``/api/health`` takes no thread at all. A request over a pool's size waits
for a thread of that pool only.

Example:
    >>> import anyio
    >>> pools = Pools()
    >>> anyio.run(pools.run, "work", sum, [1, 2])
    3
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from anyio import CapacityLimiter, to_thread

__all__ = ["STREAM_THREADS", "WORK_THREADS", "Pools"]

T = TypeVar("T")

#: Threads for turns, answers and resets (each may wait for a command gate).
WORK_THREADS = 16
#: Threads for the event streams' store reads.
STREAM_THREADS = 16

PoolName = Literal["work", "streams"]


class Pools:
    """The server's bounded pools by name (``work``, ``streams``), made in the running loop."""

    def __init__(self, work: int = WORK_THREADS, streams: int = STREAM_THREADS) -> None:
        self.sizes: dict[str, int] = {"work": work, "streams": streams}
        self._limiters: dict[str, CapacityLimiter] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def limiter(self, name: PoolName) -> CapacityLimiter:
        """The pool ``name`` of the running event loop (a new loop gets new pools)."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._limiters, self._loop = {}, loop
        found = self._limiters.get(name)
        if found is None:
            found = self._limiters[name] = CapacityLimiter(self.sizes[name])
        return found

    async def run(self, name: PoolName, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` in a thread of the pool ``name``."""
        call = functools.partial(fn, *args, **kwargs)
        return await to_thread.run_sync(call, limiter=self.limiter(name))
