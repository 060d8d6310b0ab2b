"""Outbox entries that did not go out: logged each time, with their plan, and tried again.

A change is committed with its outbox and then published. When publishing
fails (the bus is away longer than its own retries, a stream cannot be
made, ...), the change stays committed and the entries stay in the stored
outbox. The failure is logged as a warning naming the plan, the entries
and the error, and, while the planner runs, the plan's outbox is tried again
after :data:`FIRST_DELAY` seconds, doubling up to :data:`LONGEST_DELAY`,
each failure logged again, until it goes out. ``waygraph events outbox`` and
the dashboard list plans whose outbox stays unsent (``docs/events.md``).

Example:
    >>> retry = OutboxRetry()
    >>> retry.attempts("plan-1")
    0
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from waygraph.events.activity import describe

__all__ = ["FIRST_DELAY", "LONGEST_DELAY", "OutboxRetry"]

log = logging.getLogger("waygraph.events")

#: Seconds before an outbox that failed to go out is tried again (then doubling).
FIRST_DELAY = 1.0
#: The longest wait between two tries of one plan's outbox.
LONGEST_DELAY = 60.0

#: Sends what one plan's stored outbox holds; returns how many entries went out.
Resend = Callable[[str], Awaitable[int]]


@dataclass
class OutboxRetry:
    """Plans whose outbox failed to go out, and the tasks trying them again (one per plan)."""

    _attempts: dict[str, int] = field(default_factory=dict)
    _tasks: dict[str, asyncio.Task[None]] = field(default_factory=dict)

    def attempts(self, plan_id: str) -> int:
        """Failed tries of ``plan_id``'s outbox since it last went out."""
        return self._attempts.get(plan_id, 0)

    def failed(
        self,
        plan_id: str,
        entries: Sequence[dict[str, Any]],
        exc: BaseException,
        resend: Resend | None,
    ) -> None:
        """Log the failure (plan, entries, error) and, with ``resend``, try again later."""
        attempt = self._attempts.get(plan_id, 0) + 1
        self._attempts[plan_id] = attempt
        delay = min(FIRST_DELAY * 2 ** (attempt - 1), LONGEST_DELAY)
        what = ", ".join(f"{e['envelope'].get('type')} {e['id']}" for e in entries[:3])
        if len(entries) > 3:
            what += f" and {len(entries) - 3} more"
        again = f"trying again in {delay:g} s" if resend is not None else "left in its outbox"
        log.warning(
            "plan %s: outbox not sent (%s), try %d: %s; %s",
            plan_id,
            what,
            attempt,
            describe(exc),
            again,
        )
        if resend is None:
            return
        running = self._tasks.get(plan_id)
        if running is not None and not running.done() and running is not asyncio.current_task():
            return  # already waiting to try again
        task = asyncio.get_running_loop().create_task(self._later(plan_id, delay, resend))
        self._tasks[plan_id] = task
        task.add_done_callback(lambda done: self._forget_task(plan_id, done))

    def sent(self, plan_id: str) -> None:
        """The plan's outbox went out: forget its failures."""
        if self._attempts.pop(plan_id, None):
            log.info("plan %s: outbox sent after earlier failures", plan_id)

    async def _later(self, plan_id: str, delay: float, resend: Resend) -> None:
        await asyncio.sleep(delay)
        try:
            await resend(plan_id)
        except asyncio.CancelledError:
            raise
        except Exception:  # resend logged it and scheduled the next try
            pass

    def _forget_task(self, plan_id: str, task: asyncio.Task[None]) -> None:
        if self._tasks.get(plan_id) is task:
            del self._tasks[plan_id]

    async def stop(self) -> None:
        """Stop every waiting try and wait until they have stopped (the planner is
        closing; its next start sends the rest)."""
        tasks, self._tasks = self._tasks, {}
        for task in tasks.values():
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks.values(), return_exceptions=True)
