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
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from waygraph import engine, render, tracing
from waygraph.errors import NotWaitingError, WaygraphError
from waygraph.guided.chaining import start_next_plan
from waygraph.guided.sessions import CACHE_SESSIONS, GuidedSessions
from waygraph.guided.turns import (
    MAX_ID_CHARS,
    MAX_MESSAGE_CHARS,
    Event,
    Guidance,
    call_digest,
    check_answer,
    check_source,
    check_turn,
    evidence_of,
)
from waygraph.library import Library
from waygraph.match import Match
from waygraph.match.selector import PlanSelector
from waygraph.model import Plan
from waygraph.render.style import GuidanceStyle, ToolsSpec
from waygraph.store import Store, default_store_url
from waygraph.store.retry import CONFLICT_TIMEOUT
from waygraph.verify import Observation, VerifyContext, gates, judge_for, questions
from waygraph.verify_types.evidence import command_of
from waygraph.verify_types.people import rejected_answer

__all__ = [
    "CACHE_SESSIONS",
    "MAX_ID_CHARS",
    "MAX_MESSAGE_CHARS",
    "Event",
    "Guidance",
    "Navigator",
    "call_digest",
    "default_store_url",
]

log = logging.getLogger("waygraph.navigator")

#: Characters of the activating user message kept on the ``plan_activated`` event.
ACTIVATION_MESSAGE_CHARS = 500


class Navigator(GuidedSessions):
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
    ``tools``: the host's tool names, so the guidance names the host's tool
    and never one the host lacks: a mapping from the plan's tool names to the
    host's (``{"code_execution_tool": "run_command"}``) or a list of the
    host's names (:mod:`waygraph.render.style`; default: the plan's names).
    ``guidance``: ``"full"`` (the workflow view, the default) or
    ``"compact"`` (the current step, its check and what failed last, within
    120 tokens, for small contexts). A bad value of either raises
    :class:`~waygraph.errors.ConfigError`.
    ``matching``: how a user message starts a plan: ``"phrase"`` (its
    triggers, the default), ``"semantic"`` (its meaning) or ``"both"``
    (triggers first, then meaning); the last two need the ``semantic`` extra
    (:class:`~waygraph.errors.MissingExtra` without it) and keep plan
    embeddings next to the store (:mod:`waygraph.match.selector`, docs/matching.md).

    Example:
        >>> nav = Navigator(store="memory://", tools={"code_execution_tool": "run_command"})
        >>> text = nav.start("s", "bugfix_workflow").text
        >>> "Tool: run_command" in text, "code_execution_tool" in text
        (True, False)
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
        tools: ToolsSpec = None,
        guidance: str = "full",
        matching: str = "phrase",
    ) -> None:
        # Checked first: a bad value must leave no store open.
        style = GuidanceStyle.of(guidance, tools)
        self.selector = PlanSelector(matching, cache_dir=_embedding_dir(store))
        super().__init__(
            library,
            store,
            strict=strict,
            max_tokens=max_tokens,
            conflict_timeout=conflict_timeout,
        )
        self.style = style
        self.workspace = Path(workspace) if workspace is not None else None
        self.allow_commands = allow_commands
        self._verify_context = VerifyContext(
            workspace=self.workspace,
            confine=confine,
            tools_run_elsewhere=tools_run_elsewhere,
            run_command=self._run_gate if allow_commands else None,
        )
        self.selector.warm(self.library)

    @property
    def matching(self) -> str:
        """How user messages start plans: ``"phrase"``, ``"semantic"`` or ``"both"``."""
        return self.selector.mode

    def match(
        self,
        message: str,
        domain: str | None = None,
        allowed_plans: list[str] | tuple[str, ...] | set[str] | None = None,
    ) -> list[Match]:
        """What ``message`` would start, in this Navigator's ``matching`` mode, and why the
        other plans would not (no run starts).

        Example:
            >>> nav = Navigator(store="memory://")
            >>> nav.match("I need to fix a bug in the login module")[0].plan_id
            'bugfix_workflow'
        """
        self.live.refresh()
        library, matcher = self.library, self.matcher
        return self.selector.match(
            library, matcher, message[:MAX_MESSAGE_CHARS], domain, allowed_plans
        )

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
        asks_user: bool | None = None,
    ) -> Guidance:
        """Process one turn of ``session_id`` and return the guidance.

        A turn may carry a user message, a tool result, or both (the result is
        applied first). With no running plan, a user message may activate one;
        with one, it is the person's evidence for the node the run is on (a
        ``human`` node's choice, a ``manual`` check's confirmation, the answer
        to a question the model asked).

        ``source`` says what ``tool_output`` is: ``"tool"`` (a tool's real
        result, the default), ``"model"`` (words the model wrote: a reply, a
        claim; recorded, never judged), ``"host"`` (a check the host ran) or
        ``"human"`` (a person's words, as ``user_message``).
        ``final`` marks model words that tell the user the work is done;
        ``asks_user`` says whether they ask the user something instead (None:
        a reply whose last sentence ends with ``?`` does), which is no claim.
        ``tool_args`` (the command or arguments) is shown back to the model in
        the list of what it already tried, tells repeats apart, and is the
        command a ``command_matches`` check reads.
        """

        def work() -> Guidance:
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
            checked = check_source(source, strict=self.strict)
            with tracing.turn_span(session_id, tool_name, observation_id) as span:
                return span.done(
                    self._turn(
                        session_id,
                        # Matching reads every word; a pasted log must not stall the turn.
                        user_message=None
                        if user_message is None
                        else user_message[:MAX_MESSAGE_CHARS],
                        domain=domain,
                        allowed_plans=allowed_plans,
                        tool_output=tool_output,
                        tool_name=tool_name,
                        exit_code=exit_code,
                        observation_id=observation_id,
                        tool_args=tool_args,
                        source=checked,
                        final=final,
                        asks_user=asks_user,
                    )
                )

        return self._guarded(session_id, "turn", work)

    def _guarded(self, session_id: str, what: str, work: Callable[[], Guidance]) -> Guidance:
        """``work()``, whose errors are raised (strict) or logged and returned as ``error``."""
        try:
            return work()
        except Exception as exc:
            if self.strict:
                if isinstance(exc, WaygraphError):
                    raise
                raise WaygraphError(f"session {session_id!r}: the {what} failed: {exc}") from exc
            log.warning(
                "waygraph: the %s was not applied for session %r: %s",
                what,
                session_id,
                exc,
                exc_info=not isinstance(exc, WaygraphError),
            )
            return Guidance(error=f"the {what} was not applied: {exc}")

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
        asks_user: bool | None = None,
    ) -> Guidance:
        self.live.refresh()
        if source == "human" and tool_output is not None:
            # A person's words arrive as the user's message, whatever the call.
            user_message, tool_output = tool_output, None
        has_result = tool_output is not None or exit_code is not None
        observation = (
            Observation(
                output=tool_output or "",
                tool_name=tool_name,
                exit_code=exit_code,
                id=observation_id,
                source=source,
                call=call_digest(tool_args),
                command=command_of(tool_args),
            )
            if has_result
            else None
        )
        evidence = evidence_of(observation) if observation is not None else None
        question = source == "model" and (
            asks_user if asks_user is not None else final and questions.asks_user(tool_output)
        )

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
                    question=question,
                )
                if user_message is not None and run.status == "running":
                    run, heard = self._hear(plan, run, turn_no, user_message, None)
                    events = [*events, *heard]
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
                text=render.context(plan, run, max_tokens=self.max_tokens, style=self.style),
                events=Event.copies(events),
                run=record if record is not None else engine.to_record(plan, run),
                error=_refusal(events),
            )

        return self._retry(session_id, attempt)

    def _judge(self, observation: Observation) -> engine.Judge:
        return judge_for(observation, self._verify_context)

    def _hear(
        self, plan: Plan, run: engine.Run, turn: int, text: str, by: str | None
    ) -> engine.Result:
        """A person's words applied to the run (the engine's ``hear``), judged as human evidence."""
        judge = self._judge(Observation(output=text, source="human"))
        return engine.hear(plan, run, turn=turn, text=text, judge=judge, by=by)

    def answer(self, session_id: str, answer: str, *, by: str | None = None) -> Guidance:
        """A person's ``answer`` to what the session waits for (``awaiting == "user"``).

        At a ``human`` node the answer picks a choice (its label, or the
        label's accelerator: ``y`` for ``[Y] Yes``); any other answer changes
        nothing and the guidance's ``error`` lists the choices. At a
        ``manual`` check it is the person's confirmation; after the model
        asked a question, it is the reply. ``by`` says who answered (kept on
        the ``human_answered`` event). A session that waits for nobody is
        left as it is: :class:`NotWaitingError` in strict mode, else a
        Guidance whose ``error`` says so.

        Example:
            >>> from waygraph.model import Graph
            >>> plan = (Graph.builder().human("ok", prompt="Deploy?").exit("done")
            ...         .edge("start", "ok").edge("ok", "done", label="[Y] Yes").plan("p"))
            >>> nav = Navigator(Library([plan]), store="memory://")
            >>> nav.start("s", "p").run["awaiting"]
            'user'
            >>> nav.answer("s", "y", by="ann").run["status"]
            'completed'
        """

        def work() -> Guidance:
            check_answer(session_id, answer, by)
            text = answer[:MAX_MESSAGE_CHARS]

            def attempt() -> Guidance:
                run, version = self._load(session_id)
                if run is None or run.status != "running" or run.awaiting != "user":
                    raise NotWaitingError(f"session {session_id!r} is not waiting for an answer")
                plan = self._plan_of(run)
                run, events = self._hear(plan, run, run.turn + 1, text, by)
                record = self._commit(run, plan, version, events, new=False)
                return Guidance(
                    text=render.context(plan, run, max_tokens=self.max_tokens, style=self.style),
                    events=Event.copies(events),
                    run=record,
                    error=_refusal(events),
                )

            return self._retry(session_id, attempt)

        return self._guarded(session_id, "answer", work)

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
        library, matcher = self.library, self.matcher
        best = self.selector.best(library, matcher, message, domain or None, allowed)
        if best is None:
            return None
        plan = library[best.plan_id]
        # A start by meaning says so, with its similarity (what `waygraph tune` weighs).
        meaning = (
            {"matched_by": best.matched_by, "similarity": best.similarity}
            if best.similarity is not None
            else {}
        )
        run, events = self._begin(
            plan,
            session_id=session_id,
            turn=turn_no,
            triggers=list(best.hits),
            score=best.score,
            **meaning,
            # What activated the plan: `waygraph tune` weighs triggers against
            # the messages they caught, and the statistics show what activated
            # a run that went nowhere (its start only: a pasted log must not
            # bloat every run's first event).
            message=message[:ACTIVATION_MESSAGE_CHARS],
        )
        record = self._commit(run, plan, 0, events, new=True)
        return plan, run, events, record


def _embedding_dir(store: str | Store | None) -> Path | None:
    """The folder beside the store where plan embeddings are kept (None: memory only)."""
    from waygraph.match._semantic_cache import cache_dir_for

    url = store if isinstance(store, str) else getattr(store, "url", None)
    return cache_dir_for(url if store is not None else default_store_url())


def _refusal(events: list[Mapping[str, Any]]) -> str | None:
    """The error a turn's refused answer gets (the choices it should have picked), or None."""
    rejected = next((e for e in events if e["type"] == "answer_rejected"), None)
    return None if rejected is None else rejected_answer(rejected)


def __getattr__(name: str) -> Any:
    # AsyncNavigator lives in its own module; this name stays importable from here.
    if name == "AsyncNavigator":
        from waygraph.async_navigator import AsyncNavigator

        return AsyncNavigator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
