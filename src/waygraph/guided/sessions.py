"""The sessions of guided runs as a store keeps them: what a Navigator reads and writes.

:class:`GuidedSessions` holds the store, the live library and the runs this
process committed last; it starts a plan by id, reads a session (its record,
guidance, summary, events), resets and rewinds it. :class:`~waygraph.navigator.Navigator`
adds the turn: matching, judging evidence, a person's answers.

Example:
    >>> sessions = GuidedSessions(None, "memory://")
    >>> sessions.start("s", "bugfix_workflow").run["current_node"]
    'reproduce'
    >>> sessions.state("s")["status"]
    'running'
"""

from __future__ import annotations

import logging
import os
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Self, TypeVar

from waygraph import engine, render
from waygraph.errors import WaygraphError
from waygraph.guided.live_library import LiveLibrary
from waygraph.guided.turns import Event, Guidance, check_turn, retry_conflicts, run_write
from waygraph.guided.versions import PlanVersions
from waygraph.library import Library, load_library
from waygraph.match import Matcher
from waygraph.model import Plan
from waygraph.render.style import FULL, GuidanceStyle
from waygraph.store import Store, default_store_url, open_store
from waygraph.store.retry import CONFLICT_TIMEOUT

__all__ = ["CACHE_SESSIONS", "GuidedSessions"]

log = logging.getLogger("waygraph.navigator")

#: Sessions whose running run is kept in memory (least recently used go).
CACHE_SESSIONS = 4096

T = TypeVar("T")


class GuidedSessions:
    """The guided runs of a store, session by session (the Navigator's base).

    ``library``: a :class:`Library`, a path, or None for the shipped plans;
    ``store``: a store URL or a store (default :func:`default_store_url`).
    ``strict``: raise errors instead of logging them. ``max_tokens`` bounds
    the guidance text. ``conflict_timeout``: seconds a write keeps retrying
    while other writers of the same session commit first.
    """

    #: How guidance is worded (the Navigator's ``tools=`` and ``guidance=``).
    style: GuidanceStyle = FULL

    def __init__(
        self,
        library: Library | str | os.PathLike[str] | None = None,
        store: str | Store | None = None,
        *,
        strict: bool = False,
        max_tokens: int | None = None,
        conflict_timeout: float = CONFLICT_TIMEOUT,
    ) -> None:
        self.strict = strict
        self.conflict_timeout = conflict_timeout
        self.max_tokens = max_tokens
        # The library first: one that does not load must leave no store open.
        loaded = library if isinstance(library, Library) else load_library(library)
        self.store: Store = open_store(store if store is not None else default_store_url())
        self.live = LiveLibrary(loaded, self.store)
        # session -> (running run, stored version) as this process last wrote
        # it; least recently used first, bounded so 100,000 sessions fit.
        self._cache: OrderedDict[str, tuple[engine.Run, int]] = OrderedDict()

    @property
    def library(self) -> Library:
        """The library guiding new runs (reloaded when its files change)."""
        return self.live.library

    @property
    def matcher(self) -> Matcher:
        """The matcher of the current library."""
        return self.live.matcher

    @property
    def versions(self) -> PlanVersions:
        """Every plan version a run of this store started with."""
        return self.live.versions

    @property
    def library_error(self) -> str | None:
        """Why the library on disk does not load (the last good one keeps guiding), or None."""
        return self.live.error

    def reload(self) -> None:
        """Reload the library from disk now (running runs keep their plan version)."""
        self.live.reload()

    def _plan_of(self, run: engine.Run) -> Plan:
        return self.versions.plan_of(run, self.library)

    def _retry(self, session_id: str, attempt: Callable[[], T]) -> T:
        def forget() -> None:
            # Another writer moved the session on: the cached run is stale.
            self._cache.pop(session_id, None)

        return retry_conflicts(
            attempt, timeout=self.conflict_timeout, what=f"session {session_id!r}", forget=forget
        )

    def _load(self, session_id: str) -> tuple[engine.Run | None, int]:
        """The session's current run and its stored version.

        A running run this Navigator committed last is taken from memory: if
        anyone else wrote it since, the commit's version check fails and the
        turn is retried from the store, so the cache can never go stale
        silently.
        """
        cached = self._cache.get(session_id)
        if cached is not None:
            self._cache.move_to_end(session_id)
            return cached
        key = self.store.current(session_id)
        stored = self.store.get(key) if key else None
        if stored is None:
            return None, 0
        return engine.from_record(stored.data), stored.version

    def _begin(
        self, plan: Plan, *, session_id: str | None, turn: int, **activation: Any
    ) -> engine.Result:
        """A new run of the library's current version of ``plan``, that version kept in the store.

        Every way a run starts (a matched message, a plan by id, a chained
        plan) goes through here, so each run can find the plan it started with.
        """
        version = self.versions.current[plan.id]
        self.versions.remember(plan, version)
        return engine.start(
            plan,
            run_id=f"run_{uuid.uuid4().hex[:16]}",
            turn=turn,
            session_id=session_id,
            plan_version=version,
            **activation,
        )

    def _commit(
        self,
        run: engine.Run,
        plan: Plan | None,
        version: int,
        events: list[Mapping[str, Any]],
        *,
        new: bool,
    ) -> dict[str, Any]:
        """Write the run and its events in one transaction; return the record."""
        record = engine.to_record(plan, run)
        new_version = self.store.commit_all(
            [run_write(run, plan, version, events, new=new, record=record)]
        )[0]
        self._cached(run, new_version)
        # Every store copies or encodes what it keeps: the record is the caller's.
        return record

    def _cached(self, run: engine.Run, new_version: int) -> None:
        """Remember a running run this Navigator just committed (forget a finished one)."""
        if run.session_id is not None:
            if run.status == "running":
                self._cache[run.session_id] = (run, new_version)
                self._cache.move_to_end(run.session_id)
                if len(self._cache) > CACHE_SESSIONS:
                    self._cache.popitem(last=False)
            else:
                self._cache.pop(run.session_id, None)

    def start(self, session_id: str, plan_id: str) -> Guidance:
        """Start ``plan_id`` in ``session_id`` by id (no trigger matching needed).

        A running plan in the session is aborted in the same commit that
        starts the new one, so a crash leaves either the old run running or
        the new one current, never a session with neither.
        """
        check_turn(session_id, None, None, None, None, None, None, None)
        plan = self.library[plan_id]
        self._cache.pop(session_id, None)

        def attempt() -> Guidance:
            key = self.store.current(session_id)
            stored = self.store.get(key) if key else None
            writes = []
            turn_no = 1
            if stored is not None:
                old = engine.from_record(stored.data)
                turn_no = old.turn + 1
                try:
                    old_plan: Plan | None = self._plan_of(old)
                except WaygraphError:
                    old_plan = None
                reason = f"replaced by plan {plan.id!r}"
                old, aborted = engine.abort(old_plan, old, turn=old.turn, reason=reason)
                if aborted:
                    writes.append(run_write(old, old_plan, stored.version, aborted, new=False))
            run, events = self._begin(plan, session_id=session_id, turn=turn_no, started_by="id")
            writes.append(run_write(run, plan, 0, events, new=True))
            self._cached(run, self.store.commit_all(writes)[-1])
            return Guidance(
                text=render.context(plan, run, max_tokens=self.max_tokens, style=self.style),
                events=Event.copies(events),
                run=dict(writes[-1].record),
            )

        return self._retry(session_id, attempt)

    def plan_for(self, record: Mapping[str, Any]) -> Plan | None:
        """The plan a run record follows: the exact version it started with, else the library's.

        None when neither is known (a record from another library, say).

        Example:
            >>> from waygraph.library import load_library
            >>> nav = GuidedSessions(load_library(), store="memory://")
            >>> g = nav.start("s", "bugfix_workflow")
            >>> nav.plan_for(nav.state("s")).id
            'bugfix_workflow'
        """
        plan_id = record.get("plan_id")
        if not isinstance(plan_id, str):
            return None
        try:
            return self._plan_of(engine.from_record(dict(record)))
        except (WaygraphError, KeyError, TypeError, ValueError):
            return self.library.get(plan_id)

    def state(self, session_id: str) -> dict[str, Any] | None:
        """The session's latest run record (running or finished), or None."""
        key = self.store.current(session_id)
        stored = self.store.get(key) if key else None
        return dict(stored.data) if stored is not None else None

    def context(self, session_id: str) -> str | None:
        """The current guidance text for the session without taking a turn."""
        key = self.store.current(session_id)
        stored = self.store.get(key) if key else None
        if stored is None:
            return None
        run = engine.from_record(stored.data)
        plan = self._plan_of(run)
        if run.status != "running":
            return render.finished_message(plan, run)
        return render.context(plan, run, max_tokens=self.max_tokens, style=self.style)

    def summary(self, session_id: str) -> str | None:
        """A one-paragraph progress summary for resuming after an interruption."""
        key = self.store.current(session_id)
        stored = self.store.get(key) if key else None
        if stored is None:
            return None
        run = engine.from_record(stored.data)
        return render.progress_summary(self._plan_of(run), run)

    def events(self, session_id: str, after_seq: int = 0) -> list[dict[str, Any]]:
        """Every stored event of the session's latest run, oldest first."""
        key = self.store.current(session_id)
        if not key:
            return []
        return [{"seq": e.seq, **e.data} for e in self.store.events(key, after_seq)]

    def reset(self, session_id: str) -> None:
        """Forget the session's plan: a running run is aborted, the pointer cleared.

        Finished runs stay in the store for inspection.
        """
        self._cache.pop(session_id, None)

        def attempt() -> None:
            key = self.store.current(session_id)
            stored = self.store.get(key) if key else None
            if stored is None:
                return
            run = engine.from_record(stored.data)
            try:
                plan: Plan | None = self._plan_of(run)
            except WaygraphError:
                plan = None
            # The engine trims the record's event projection, as on every path.
            run, events = engine.abort(plan, run, turn=run.turn, reason="reset")
            if events:
                self._commit(run, plan, stored.version, events, new=False)

        self._retry(session_id, attempt)
        self.store.clear_current(session_id)

    def rewind(self, session_id: str) -> Guidance:
        """Go back to the last checkpoint the session's run passed."""

        def attempt() -> Guidance:
            key = self.store.current(session_id)
            stored = self.store.get(key) if key else None
            if stored is None:
                return Guidance()
            run = engine.from_record(stored.data)
            plan = self._plan_of(run)
            run, events = engine.rewind(plan, run, turn=run.turn)
            if not events:
                return Guidance(
                    text=f"{render.HEADER} No checkpoint to rewind to.",
                    run=engine.to_record(plan, run),
                )
            self._commit(run, plan, stored.version, events, new=False)
            return Guidance(
                text=render.context(plan, run, max_tokens=self.max_tokens, style=self.style),
                events=Event.copies(events),
                run=engine.to_record(plan, run),
            )

        return self._retry(session_id, attempt)

    def sessions(self) -> list[str]:
        """Every session the store knows."""
        return self.store.sessions()

    def close(self) -> None:
        """Release the store (files, connections, locks)."""
        self.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
