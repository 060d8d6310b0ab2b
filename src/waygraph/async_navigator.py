"""The Navigator for async agent loops: the same core, run off the event loop.

Example:
    >>> import asyncio, waygraph
    >>> nav = waygraph.AsyncNavigator(store="memory://")
    >>> asyncio.run(nav.turn("s", user_message="hello")).text is None
    True
"""

from __future__ import annotations

import asyncio
from typing import Any

from waygraph.guided.turns import Guidance
from waygraph.navigator import Navigator

__all__ = ["AsyncNavigator"]


class AsyncNavigator:
    """A :class:`~waygraph.navigator.Navigator` whose calls are coroutines.

    It runs the same core in a worker thread (``asyncio.to_thread``), so there
    is one implementation, not two; ``sync`` is that Navigator. It takes the
    Navigator's arguments, ``tools=``, ``guidance=`` and ``matching=`` among them.

    Example:
        >>> import asyncio
        >>> nav = AsyncNavigator(store="memory://")
        >>> asyncio.run(nav.sessions())
        []
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.sync = Navigator(*args, **kwargs)

    async def turn(self, session_id: str, **kwargs: Any) -> Guidance:
        """Navigator.turn in a worker thread: record what happened, get the guidance."""
        return await asyncio.to_thread(self.sync.turn, session_id, **kwargs)

    async def answer(self, session_id: str, answer: str, *, by: str | None = None) -> Guidance:
        """Navigator.answer in a worker thread: a person's answer to what the session waits for."""
        return await asyncio.to_thread(self.sync.answer, session_id, answer, by=by)

    async def start(self, session_id: str, plan_id: str) -> Guidance:
        """Navigator.start in a worker thread: begin ``plan_id`` for the session."""
        return await asyncio.to_thread(self.sync.start, session_id, plan_id)

    async def state(self, session_id: str) -> dict[str, Any] | None:
        """Navigator.state in a worker thread: the session's run record, or None."""
        return await asyncio.to_thread(self.sync.state, session_id)

    async def reset(self, session_id: str) -> None:
        """Navigator.reset in a worker thread: abort and forget the session's run."""
        await asyncio.to_thread(self.sync.reset, session_id)

    async def rewind(self, session_id: str) -> Guidance:
        """Navigator.rewind in a worker thread: back to the run's last checkpoint."""
        return await asyncio.to_thread(self.sync.rewind, session_id)

    async def sessions(self) -> list[str]:
        """Navigator.sessions in a worker thread: every session id in the store."""
        return await asyncio.to_thread(self.sync.sessions)

    async def close(self) -> None:
        """Navigator.close in a worker thread: release the store."""
        await asyncio.to_thread(self.sync.close)
