"""The one retry shell: sync for the Navigator, async for event-driven plans."""

from __future__ import annotations

import asyncio

import pytest

from waygraph.errors import Conflict
from waygraph.store.retry import retry_conflicts, retry_conflicts_async


def test_a_write_that_loses_twice_is_retried_and_forgets_each_time():
    tries, forgotten = [], []

    def attempt() -> str:
        tries.append(1)
        if len(tries) < 3:
            raise Conflict("another writer")
        return "done"

    assert (
        retry_conflicts(attempt, what="session 's'", forget=lambda: forgotten.append(1)) == "done"
    )
    assert len(tries) == 3 and len(forgotten) == 2


def test_the_async_shell_awaits_the_reload_and_gives_up_at_the_deadline():
    reloads = []

    async def attempt() -> None:
        raise Conflict("another writer")

    async def reload() -> None:
        reloads.append(1)

    with pytest.raises(Conflict, match=r"plan 'p': other writers committed first for 0\.05s"):
        asyncio.run(retry_conflicts_async(attempt, timeout=0.05, what="plan 'p'", forget=reload))
    assert len(reloads) >= 2


def test_the_async_shell_returns_what_the_write_returns():
    calls = []

    async def attempt() -> int:
        calls.append(1)
        if len(calls) == 1:
            raise Conflict("once")
        return 7

    assert asyncio.run(retry_conflicts_async(attempt, what="plan 'p'")) == 7


def test_conflict_retry_is_written_once():
    # The table: "conflict retry: written four times". Every retry loop
    # in the package goes through waygraph.store.retry.
    from pathlib import Path

    import waygraph

    src = Path(waygraph.__file__).parent
    loops = [
        str(p.relative_to(src))
        for p in src.rglob("*.py")
        if "except Conflict" in p.read_text(encoding="utf-8") and p.name != "retry.py"
    ]
    # Places that catch Conflict to report it, never to loop: the outbox
    # marks' give-up log (and a batch of marks falling back to one plan at a
    # time), create_from_goal's "already exists",
    # a failed goal another delivery answered first, a run resumed elsewhere first.
    assert sorted(loops) == [
        "events/_outbox_marks.py",
        "events/_plan_records.py",
        "events/failures.py",
        "planning/_agent.py",
    ]
