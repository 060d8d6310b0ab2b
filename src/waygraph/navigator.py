"""The guided driver: ``Navigator.turn`` is the one call an agent loop needs.

Call it before every model call (with the user's message, if any) and after
every tool result (with the output). It matches plans, verifies results,
follows edges, persists the run in a store with one atomic commit per turn,
and returns the guidance text to inject into the model's context.

Example:
    >>> import waygraph
    >>> nav = waygraph.Navigator(waygraph.load_library(), store="memory://")
    >>> g = nav.turn("chat-1", user_message="I need to fix a bug in the login module",
    ...              domain="bugfix")
    >>> g.run["plan_id"], g.run["current_node"]
    ('bugfix_workflow', 'reproduce')
    >>> g = nav.turn("chat-1", tool_output="AssertionError: login failed", exit_code=1)
    >>> g.run["current_node"]
    'isolate'
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from waygraph import engine, gates, render, tracing
from waygraph.chaining import start_next_plan
from waygraph.errors import Conflict, InputError, WaygraphError
from waygraph.library import Library, load_library
from waygraph.match import Matcher
from waygraph.model import Plan
from waygraph.retry import CONFLICT_TIMEOUT
from waygraph.store import Store, default_store_url, open_store
from waygraph.turns import (
    MAX_ID_CHARS,
    MAX_MESSAGE_CHARS,
    Event,
    Guidance,
    call_digest,
    check_turn,
    evidence_of,
    retry_conflicts,
    run_write,
)
from waygraph.verify import SOURCES, Observation, VerifyContext, judge_for
from waygraph.versions import PlanVersions

__all__ = [
    "MAX_ID_CHARS",
    "MAX_MESSAGE_CHARS",
    "Event",
    "Guidance",
    "Navigator",
    "call_digest",
    "default_store_url",
]

log = logging.getLogger("waygraph.navigator")

#: How often (seconds) the Navigator looks at the library files for changes.
RELOAD_CHECK_SECONDS = 1.0
#: Characters of the activating user message kept on the ``plan_activated`` event.
ACTIVATION_MESSAGE_CHARS = 500
#: Sessions whose running run a Navigator keeps in memory (least recently used go).
CACHE_SESSIONS = 4096

T = TypeVar("T")


class Navigator:
    """Guides agents through plans, one session at a time.

    ``library``: a :class:`Library`, a path, or None for the shipped plans.
    ``store``: a store URL (``memory://``, ``file://DIR``, ``sqlite:///PATH``,
    ``postgresql://...``) or a store; default :func:`default_store_url`.
    ``workspace``: where relative paths of ``file_exists`` checks resolve and
    command gates run (default: the current directory).
    ``strict``: raise errors instead of logging them and returning no guidance.
    ``confine``: ``file_exists`` refuses paths outside the workspace instead of
    looking at them. ``allow_commands``: command gates in plans may run (off by
    default: a plan file is data). ``tools_run_elsewhere``: the agent's tools
    run on another machine, so local file checks are unknown, never a pass.
    ``conflict_timeout``: seconds a turn keeps retrying (with jittered
    backoff) while other writers of the same session commit first; after it
    the turn raises :class:`Conflict` (strict) or returns a Guidance whose
    ``error`` says the observation was not applied.
    """

    def __init__(
        self,
        library: Library | str | os.PathLike[str] | None = None,
        store: str | Store | None = None,
        workspace: str | os.PathLike[str] | None = None,
        strict: bool = False,
        *,
        max_tokens: int | None = None,
        confine: bool = False,
        allow_commands: bool = False,
        tools_run_elsewhere: bool = False,
        conflict_timeout: float = CONFLICT_TIMEOUT,
    ) -> None:
        self.strict = strict
        self.conflict_timeout = conflict_timeout
        self.max_tokens = max_tokens
        self.workspace = Path(workspace) if workspace is not None else None
        self.allow_commands = allow_commands
        self._verify_context = VerifyContext(
            workspace=self.workspace,
            confine=confine,
            tools_run_elsewhere=tools_run_elsewhere,
            run_command=self._run_gate if allow_commands else None,
        )
        self._library_source = None if isinstance(library, Library) else library
        self.library = library if isinstance(library, Library) else load_library(library)
        self.store: Store = open_store(store if store is not None else default_store_url())
        self._lock = threading.Lock()
        self.versions = PlanVersions(self.store)
        # session -> (running run, stored version) as this Navigator last wrote
        # it; least recently used first, bounded so 100,000 sessions fit.
        self._cache: OrderedDict[str, tuple[engine.Run, int]] = OrderedDict()
        self._index_library(self.library)
        self._mtimes = self.library.mtimes()
        #: Why the library on disk does not load (the last good one keeps
        #: guiding); None while it loads. Hosts show it where people look.
        self.library_error: str | None = None
        self._next_reload_check = time.monotonic() + RELOAD_CHECK_SECONDS

    # ------------------------------------------------------------ library

    def _index_library(self, library: Library) -> None:
        self.matcher = Matcher(library)
        self.versions.index(library)

    def _maybe_reload(self) -> None:
        if not self.library.files or time.monotonic() < self._next_reload_check:
            return
        self._next_reload_check = time.monotonic() + RELOAD_CHECK_SECONDS
        mtimes = self.library.mtimes()
        if mtimes == self._mtimes:
            return
        self._mtimes = mtimes
        try:
            library = load_library(self.library.path)
        except WaygraphError as exc:
            # Keep guiding with the last good library rather than stopping.
            log.warning("library changed on disk but does not load; keeping the old one: %s", exc)
            self.library_error = str(exc)
            return
        with self._lock:
            self.library = library
            self._index_library(library)
            self.library_error = None
        log.info("reloaded plan library from %s (%d plans)", library.path, len(library))

    def reload(self) -> None:
        """Reload the library from disk now (running runs keep their plan version)."""
        self._next_reload_check = 0.0
        self._mtimes = {}
        self._maybe_reload()

    def _plan_of(self, run: engine.Run) -> Plan:
        return self.versions.plan_of(run, self.library)

    # ------------------------------------------------------------ the turn

    def turn(
        self,
        session_id: str,
        *,
        user_message: str | None = None,
        domain: str | None = None,
        allowed_plans: list[str] | tuple[str, ...] | set[str] | None = None,
        tool_output: str | None = None,
        tool_name: str | None = None,
        exit_code: int | None = None,
        observation_id: str | None = None,
        tool_args: Any = None,
        source: str = "tool",
        final: bool = False,
    ) -> Guidance:
        """Process one turn of ``session_id`` and return the guidance.

        A turn may carry a user message, a tool result, or both (the result is
        applied first). With no running plan, a user message may activate one.

        ``source`` says what ``tool_output`` is: ``"tool"`` (a tool's real
        result, the default), ``"model"`` (words the model wrote: a reply, a
        claim; recorded, never judged) or ``"host"`` (a check the host ran).
        ``final`` marks model words that tell the user the work is done.
        ``tool_args`` (the command or arguments) is shown back to the model in
        the list of what it already tried, and tells repeats apart.
        """
        try:
            check_turn(
                session_id,
                user_message,
                domain,
                allowed_plans,
                tool_output,
                tool_name,
                exit_code,
                observation_id,
            )
            if source not in SOURCES:
                message = f"source must be one of {', '.join(SOURCES)}, not {source!r}"
                if self.strict:
                    raise InputError(message)
                log.warning("waygraph: %s; treating the result as a tool result", message)
                source = "tool"
            if user_message is not None and len(user_message) > MAX_MESSAGE_CHARS:
                # Matching reads every word; a pasted log must not stall the turn.
                user_message = user_message[:MAX_MESSAGE_CHARS]
            with tracing.turn_span(session_id, tool_name, observation_id) as span:
                return span.done(
                    self._turn(
                        session_id,
                        user_message=user_message,
                        domain=domain,
                        allowed_plans=allowed_plans,
                        tool_output=tool_output,
                        tool_name=tool_name,
                        exit_code=exit_code,
                        observation_id=observation_id,
                        tool_args=tool_args,
                        source=source,
                        final=final,
                    )
                )
        except Conflict as exc:
            if self.strict:
                raise
            log.warning("waygraph: the turn was not applied for session %r: %s", session_id, exc)
            return Guidance(error=f"the observation was not applied: {exc}")
        except Exception as exc:
            if self.strict:
                if isinstance(exc, WaygraphError):
                    raise
                raise WaygraphError(f"session {session_id!r}: the turn failed: {exc}") from exc
            log.warning("waygraph turn failed for session %r: %s", session_id, exc, exc_info=True)
            return Guidance(error=f"the turn was not applied: {exc}")

    def _retry(self, session_id: str, attempt: Callable[[], T]) -> T:
        def forget() -> None:
            # Another writer moved the session on: the cached run is stale.
            self._cache.pop(session_id, None)

        return retry_conflicts(
            attempt, timeout=self.conflict_timeout, what=f"session {session_id!r}", forget=forget
        )

    def _turn(
        self,
        session_id: str,
        *,
        user_message: str | None,
        domain: str | None,
        allowed_plans: Any,
        tool_output: str | None,
        tool_name: str | None,
        exit_code: int | None,
        observation_id: str | None,
        tool_args: Any = None,
        source: str = "tool",
        final: bool = False,
    ) -> Guidance:
        self._maybe_reload()
        has_result = tool_output is not None or exit_code is not None
        observation = (
            Observation(
                output=tool_output or "",
                tool_name=tool_name,
                exit_code=exit_code,
                id=observation_id,
                source=source,
                call=call_digest(tool_args),
            )
            if has_result
            else None
        )
        evidence = evidence_of(observation) if observation is not None else None

        def attempt() -> Guidance:
            run, version = self._load(session_id)
            events: list[Mapping[str, Any]] = []
            plan: Plan | None = None
            record: dict[str, Any] | None = None
            turn_no = run.turn + 1 if run is not None else 1
            if run is not None and run.status == "running":
                plan = self._plan_of(run)
                judge = self._judge(observation) if observation is not None else None
                run, events = engine.advance(
                    plan,
                    run,
                    turn=turn_no,
                    judge=judge,
                    observation_id=observation_id,
                    tool_name=tool_name,
                    evidence=evidence,
                    final=final,
                )
                chained = start_next_plan(self, plan, run, version, events, turn_no)
                if chained is not None:
                    return chained
                record = self._commit(run, plan, version, events, new=False)
            if (run is None or run.status != "running") and user_message and not events:
                started = self._activate(session_id, user_message, domain, allowed_plans, turn_no)
                if started is not None:
                    plan, run, events, record = started
            if plan is None or run is None or (not events and run.status != "running"):
                return Guidance(run=None if run is None else engine.to_record(plan, run))
            return Guidance(
                text=render.context(plan, run, max_tokens=self.max_tokens),
                events=[Event(e) for e in events],
                run=record if record is not None else engine.to_record(plan, run),
            )

        return self._retry(session_id, attempt)

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

    def _judge(self, observation: Observation) -> engine.Judge:
        return judge_for(observation, self._verify_context)

    def _run_gate(self, command: str, timeout: float) -> Observation:
        return gates.run_command(command, cwd=self.workspace, timeout=timeout)

    def _activate(
        self,
        session_id: str,
        message: str,
        domain: str | None,
        allowed_plans: Any,
        turn_no: int,
    ) -> tuple[Plan, engine.Run, list[Mapping[str, Any]], dict[str, Any]] | None:
        allowed = list(allowed_plans) if allowed_plans is not None else None
        best = self.matcher.best(message, domain or None, allowed)
        if best is None:
            return None
        plan = self.library[best.plan_id]
        run, events = self._begin(
            plan,
            session_id=session_id,
            turn=turn_no,
            triggers=list(best.hits),
            score=best.score,
            # What activated the plan: `waygraph tune` weighs triggers against
            # the messages they caught, and the statistics show what activated
            # a run that went nowhere (its start only: a pasted log must not
            # bloat every run's first event).
            message=message[:ACTIVATION_MESSAGE_CHARS],
        )
        record = self._commit(run, plan, 0, events, new=True)
        return plan, run, events, record

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

    # ------------------------------------------------------------ sessions

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
                text=render.context(plan, run, max_tokens=self.max_tokens),
                events=[Event(e) for e in events],
                run=dict(writes[-1].record),
            )

        return self._retry(session_id, attempt)

    def plan_for(self, record: Mapping[str, Any]) -> Plan | None:
        """The plan a run record follows: the exact version it started with, else the library's.

        None when neither is known (a record from another library, say).

        Example:
            >>> from waygraph.library import load_library
            >>> nav = Navigator(load_library(), store="memory://")
            >>> g = nav.turn("s", user_message="I need to fix a bug in the login module")
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
        return render.context(plan, run, max_tokens=self.max_tokens)

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
                text=render.context(plan, run, max_tokens=self.max_tokens),
                events=[Event(e) for e in events],
                run=engine.to_record(plan, run),
            )

        return self._retry(session_id, attempt)

    def sessions(self) -> list[str]:
        """Every session the store knows."""
        return self.store.sessions()

    def close(self) -> None:
        """Release the store (files, connections, locks)."""
        self.store.close()

    def __enter__(self) -> Navigator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def __getattr__(name: str) -> Any:
    # AsyncNavigator lives in its own module; this name stays importable from here.
    if name == "AsyncNavigator":
        from waygraph.async_navigator import AsyncNavigator

        return AsyncNavigator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
