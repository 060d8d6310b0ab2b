"""``SessionPlanner``: the hooks an agent loop calls, around the engine's pure rules.

Each hook loads the session's plan.json as a frozen
:class:`~waygraph.engine.session_plan_run.SessionPlanRun`, applies its rule
from :mod:`waygraph.engine.session_plan` (:func:`~waygraph.engine.session_plan.hear`,
:func:`~waygraph.engine.session_plan.take_reply`,
:func:`~waygraph.engine.session_plan.at_limit`), and writes the new value
atomically; what it keeps itself is I/O: the files, the store records, the
texts, and per-session memory (the last user message, its language). A read or
write failure is logged on ``waygraph.sessions`` and the hook carries on as if
the session had no plan: the host agent never crashes because of a plan file.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from waygraph.engine import session_plan as rules
from waygraph.engine.session_plan import SessionPlanRun
from waygraph.engine.session_plan_text import (
    detect_language,
    goal_from_reply,
    is_continue_intent,
    is_correction,
)
from waygraph.errors import ConfigError
from waygraph.sessions import _files, _render
from waygraph.sessions._records import SessionRecords
from waygraph.store import Store, open_store
from waygraph.verify.questions import asks_user as _asks_user

__all__ = ["SessionPlanner"]

log = logging.getLogger("waygraph.sessions")

#: Sessions whose last user message is remembered in memory; the oldest are
#: forgotten first so a long-running host does not grow without bound.
MEMORY_SESSIONS = 4096
LANGUAGES = ("en", "zh")


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _iso(moment: datetime) -> str:
    # One reading of the clock per hook: every timestamp a hook writes agrees.
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def _asks(flag: object, text: str) -> bool:
    # The host's word wins; None (or a value that is not a yes or no) leaves
    # it to the reply's last sentence.
    if flag is None:
        return _asks_user(text)
    if isinstance(flag, bool | int):
        return bool(flag)
    log.warning("asks_user must be True, False or None, got %r; deciding by the reply", flag)
    return _asks_user(text)


def _tool_call_count(tool_calls: int | Sequence[object] | None) -> int:
    # Hosts hold either a count or the list of calls; both mean the same.
    if tool_calls is None:
        return 0
    if isinstance(tool_calls, int):
        return max(0, int(tool_calls))
    try:
        return len(tool_calls)
    except TypeError:
        return 0


class _Memory:
    """Per-session facts that live only in this process (bounded LRU)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.goal: OrderedDict[str, str] = OrderedDict()
        self.language: OrderedDict[str, str] = OrderedDict()
        self.fresh: OrderedDict[str, bool] = OrderedDict()

    def put(self, table: OrderedDict[str, Any], key: str, value: Any) -> None:
        table[key] = value
        table.move_to_end(key)
        while len(table) > self.limit:
            table.popitem(last=False)


class SessionPlanner:
    """Keeps a plan on disk per session for agents that declare their own steps.

    ``workspace``: plans live in ``<workspace>/.sessions/<folder>/plan.json``.
    ``max_iterations``: model replies per stretch of running before the plan
    pauses (resuming gives a fresh stretch). ``unattended``: fail the plan at
    the limit instead of pausing it (nobody is there to say "continue").
    ``language``: ``"en"`` or ``"zh"`` fixes the language of every text
    waygraph writes; None (the default) takes it from the goal's script, then
    from the user's latest message, else English. ``clock``: returns
    the current time (tests pass a fixed one). ``store``: a store URL or
    :class:`~waygraph.store.Store`; when given, every plan.json write is also
    committed there as a run record of kind ``session`` with the events of
    the change, so ``waygraph sessions`` and the dashboard show the plan like
    any other run (plan.json stays what the hooks read; a store that fails is
    logged and caught up by the next write).

    Example:
        >>> import tempfile
        >>> planner = SessionPlanner(tempfile.mkdtemp())
        >>> planner.on_user_message("chat-1", "Tidy the docs folder")
        'Tidy the docs folder'
        >>> planner.after_model_reply("chat-1", "[Step] List files\\n[Step] Fix links", 1)
        >>> planner.plan("chat-1")["steps"][0]["status"]
        'running'
        >>> planner.on_iteration_limit("chat-1")
        "Task in progress (0/2 steps completed). Type 'continue' to resume."
        >>> planner.on_user_message("chat-1", "continue").splitlines()[0]
        '[Resuming task] Current task: Tidy the docs folder'
    """

    def __init__(
        self,
        workspace: str | os.PathLike[str],
        max_iterations: int = 20,
        unattended: bool = False,
        language: str | None = None,
        *,
        clock: Callable[[], datetime] | None = None,
        store: str | Store | None = None,
    ) -> None:
        if isinstance(max_iterations, bool) or not isinstance(max_iterations, int):
            raise ConfigError(f"max_iterations must be a whole number, got {max_iterations!r}")
        if max_iterations < 1:
            raise ConfigError(
                f"max_iterations must be at least 1, got {max_iterations}; "
                "use a large number for a loop without a practical limit"
            )
        normal = None if language in (None, "auto") else str(language).lower()[:2]
        if normal is not None and normal not in LANGUAGES:
            raise ConfigError(f"language must be 'en', 'zh' or None (auto), got {language!r}")
        self.workspace = Path(workspace)
        self.max_iterations = max_iterations
        self.unattended = unattended
        self.language = normal
        self._clock = clock or _utc_now
        self._lock = threading.RLock()
        self._memory = _Memory(MEMORY_SESSIONS)
        self._warned: set[Path] = set()
        self._owns_store = isinstance(store, str)
        self.records = (
            SessionRecords(open_store(store), MEMORY_SESSIONS) if store is not None else None
        )

    def close(self) -> None:
        """Close the store this planner opened from a URL (a store passed in stays open)."""
        if self.records is not None and self._owns_store:
            self.records.store.close()

    # ------------------------------------------------------------ hooks

    def on_user_message(self, session_id: str, text: str) -> str:
        """Call with each user message; returns the message to give the model.

        A continue intent on a paused plan resumes it and comes back with the
        progress summary in front; a correction ("not done yet") reopens the
        step completed last. On a plan waiting on the user (the model asked a
        question), the message is the answer: the same plan goes on, with a
        fresh budget, and the message comes back with the summary and the
        question in front. Anything else passes through unchanged.

        Example:
            >>> import tempfile
            >>> SessionPlanner(tempfile.mkdtemp()).on_user_message("s", "hello")
            'hello'
        """
        session_id = str(session_id)
        text = "" if text is None else str(text)
        with self._lock:
            self._remember(session_id, text)
            try:
                return self._on_user_message(session_id, text, self._clock())
            except Exception as exc:
                self._degrade("on_user_message", session_id, exc)
                return text

    def after_model_reply(
        self,
        session_id: str,
        text: str,
        tool_calls: int | Sequence[object] | None,
        *,
        asks_user: bool | None = None,
    ) -> None:
        """Call after every model reply with its text and how many tool calls it made.

        Creates the plan on the first reply that calls a tool, appends
        ``[Step]`` lines, checks the current step for completion, records
        ``[Progress]`` and ``[Failed]``, and completes the plan on a reply
        without tool calls, unless that reply asks the user something: then
        the plan stays running and waits on the user (``awaiting`` is
        ``"user"``) until the next user message answers. ``asks_user``: True
        or False when the host knows whether the reply asks the user; None
        (the default) decides by :func:`waygraph.verify.questions.asks_user` (the
        last sentence ends with ``?`` or ``？``). It matters only for replies
        without tool calls.

        Example:
            >>> import tempfile
            >>> planner = SessionPlanner(tempfile.mkdtemp())
            >>> planner.after_model_reply("s", "Hi! How can I help?", 0)
            >>> planner.plan("s") is None
            True
            >>> planner.after_model_reply("s", "[Step] Export\\n[Step] Convert", 1)
            >>> planner.after_model_reply("s", "Markdown or HTML?", 0)
            >>> planner.plan("s")["status"], planner.plan("s")["awaiting"]
            ('running', 'user')
        """
        session_id = str(session_id)
        text = "" if text is None else str(text)
        calls = _tool_call_count(tool_calls)
        with self._lock:
            try:
                asks = calls == 0 and _asks(asks_user, text)
                self._after_model_reply(session_id, text, calls, asks, self._clock())
            except Exception as exc:
                self._degrade("after_model_reply", session_id, exc)

    def on_iteration_limit(self, session_id: str) -> str:
        """Call when the host's loop stopped at its limit; returns the message for the user.

        Pauses the running plan (fails it when unattended) and returns "Task in
        progress (k/n steps completed). Type 'continue' to resume." (document
        001's "任务执行中（k/n 步已完成）。输入'继续'以恢复执行。" in Chinese).
        A plan waiting on the user's answer is not paused (the answer, not
        "continue", carries it on): the message says it waits for the answer.

        Example:
            >>> import tempfile
            >>> SessionPlanner(tempfile.mkdtemp()).on_iteration_limit("s")
            "Task in progress. Type 'continue' to resume."
        """
        session_id = str(session_id)
        with self._lock:
            try:
                return self._on_iteration_limit(session_id, self._clock())
            except Exception as exc:
                self._degrade("on_iteration_limit", session_id, exc)
                return _render.limit_message(None, self._user_language(session_id, None))

    def context(self, session_id: str) -> str | None:
        """The plan block for the system prompt, or None (no plan, or it finished).

        Before a plan exists, put :func:`~waygraph.sessions.step_instructions`
        in the system prompt so the first reply can declare its steps.

        Example:
            >>> import tempfile
            >>> SessionPlanner(tempfile.mkdtemp()).context("s") is None
            True
        """
        with self._lock:
            plan = self._read(str(session_id), "context")
            if plan is None:
                return None
            language = self._user_language(str(session_id), plan)
            return _render.context_block(plan.to_dict(), language)

    def plan(self, session_id: str) -> dict[str, Any] | None:
        """plan.json of the session as a dict (a copy), or None before the plan exists.

        Example:
            >>> import tempfile
            >>> SessionPlanner(tempfile.mkdtemp()).plan("s") is None
            True
        """
        with self._lock:
            plan = self._read(str(session_id), "plan")
            return None if plan is None else plan.to_dict()

    # ------------------------------------------------------------ rules applied

    def _on_user_message(self, session_id: str, text: str, now: datetime) -> str:
        slot = self._locate(session_id)
        plan = slot.plan
        if plan is None:
            return text
        language = self._user_language(session_id, plan)
        heard = rules.hear(plan, text, now=_iso(now))
        if heard.plan is not plan:
            self._save(slot, heard.plan, now)
        if heard.handed == "answer":
            # The message shows the question answered and the stretch that ended.
            shown = dict(
                heard.plan.to_dict(),
                question=plan.question,
                resumed_at_iteration=plan.resumed_at_iteration,
            )
            return _render.answer_message(shown, text, language, self.max_iterations)
        if heard.handed == "resume":
            # The summary counts the iterations of the stretch that just ended;
            # resuming has already reset that count.
            shown = dict(heard.plan.to_dict(), resumed_at_iteration=plan.resumed_at_iteration)
            return _render.resume_message(shown, text, language, self.max_iterations)
        if heard.handed == "finished":
            # The next tool-calling reply starts a fresh plan for this message.
            self._memory.put(self._memory.fresh, session_id, True)
        return text

    def _after_model_reply(
        self, session_id: str, text: str, calls: int, asks: bool, now: datetime
    ) -> None:
        slot = self._locate(session_id)
        before = slot.plan

        def start() -> SessionPlanRun:
            goal = self._goal(session_id, text)
            plan_id = f"plan_{uuid.uuid4().hex[:12]}"
            return rules.new_plan(session_id, goal, now=_iso(now), plan_id=plan_id)

        plan = rules.take_reply(
            before,
            text,
            calls,
            now=_iso(now),
            asks_user=asks,
            max_iterations=self.max_iterations,
            unattended=self.unattended,
            fresh=bool(self._memory.fresh.get(session_id)),
            start=start,
        )
        if plan is None:
            return
        # A new plan keeps the finished one it replaces as plan-<id>.json.
        archive = before if before is not None and before.id != plan.id else None
        self._save(slot, plan, now, archive=archive)
        self._memory.fresh.pop(session_id, None)

    def _on_iteration_limit(self, session_id: str, now: datetime) -> str:
        slot = self._locate(session_id)
        plan = slot.plan
        language = self._user_language(session_id, plan)
        if plan is None:
            return _render.limit_message(None, language)
        stopped = rules.at_limit(plan, now=_iso(now), unattended=self.unattended)
        if stopped is not plan:
            try:
                self._save(slot, stopped, now)
            except OSError as exc:
                # The user still needs to hear why the agent stopped.
                self._degrade("on_iteration_limit", session_id, exc)
        if stopped.waiting_on_user and stopped.status in ("running", "pending"):
            return _render.waiting_message(stopped.to_dict(), language)
        if stopped.status == "paused":
            return _render.limit_message(stopped.to_dict(), language)
        return _render.finished_message(stopped.to_dict(), language)

    # ------------------------------------------------------------ memory

    def _remember(self, session_id: str, text: str) -> None:
        language = detect_language(text)
        if language is not None:
            self._memory.put(self._memory.language, session_id, language)
        # "continue" and "not done yet" are not goals; keep the real request.
        if text.strip() and not (is_continue_intent(text) or is_correction(text)):
            self._memory.put(self._memory.goal, session_id, text.strip())

    def _goal(self, session_id: str, reply: str) -> str:
        remembered = self._memory.goal.get(session_id)
        if remembered:
            return remembered
        # No user message seen in this process (a restart, or a host that only
        # reports replies): the reply itself says what it is doing.
        return goal_from_reply(reply)

    def _user_language(self, session_id: str, plan: SessionPlanRun | None) -> str:
        if self.language is not None:
            return self.language
        from_goal = detect_language(plan.goal) if plan else None
        return from_goal or self._memory.language.get(session_id) or "en"

    # ------------------------------------------------------------ files

    def _locate(self, session_id: str) -> _files.Slot:
        slot = _files.locate(self.workspace, session_id)
        if slot.corrupt and slot.path not in self._warned:
            # Every hook looks at the file; say it once, not on every call.
            self._warned.add(slot.path)
            log.warning(
                "session plan %s is corrupt (%s); it is moved aside when the next plan starts",
                slot.path,
                slot.problem,
            )
        return slot

    def _read(self, session_id: str, hook: str) -> SessionPlanRun | None:
        try:
            return self._locate(session_id).plan
        except OSError as exc:
            self._degrade(hook, session_id, exc)
            return None

    def _save(
        self,
        slot: _files.Slot,
        plan: SessionPlanRun,
        now: datetime,
        archive: SessionPlanRun | None = None,
    ) -> None:
        stamp = now.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
        _files.save(slot, plan, stamp=stamp, archive=archive)
        self._warned.discard(slot.path)
        if self.records is not None:
            self.records.write(plan.to_dict())

    def _degrade(self, hook: str, session_id: str, exc: BaseException) -> None:
        if isinstance(exc, OSError):
            log.warning(
                "session plan of %r unavailable in %s, continuing without a plan: %s",
                session_id,
                hook,
                exc,
            )
        else:
            log.warning(
                "session plan of %r: %s failed, continuing without a plan: %s",
                session_id,
                hook,
                exc,
                exc_info=True,
            )
