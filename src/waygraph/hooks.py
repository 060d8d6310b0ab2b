"""Three calls that put waygraph into any agent loop.

For loops that are not Agent-Zero (your own, or one built on a framework),
:class:`Hooks` wraps a :class:`~waygraph.navigator.Navigator` for one
conversation:

1. ``on_user_message(text)`` when the user says something: it may start the
   plan that matches;
2. ``on_tool_result(output, exit_code=..., call_id=...)`` after every tool
   call: the result is verified against the current step and the run moves on;
3. ``context_for_model()`` before every model call: the text to add to the
   model's context (a system message, say), or None when no plan is guiding.

::

    hooks = Hooks("chat-42", library="plans/", store="sqlite:///agent.db")
    hooks.on_user_message(user_text)
    while True:
        guidance = hooks.context_for_model()
        reply = call_model(messages + ([system(guidance)] if guidance else []))
        if not reply.tool_calls:
            break
        for call in reply.tool_calls:
            output, code = run_tool(call)
            hooks.on_tool_result(output, tool_name=call.name, exit_code=code, call_id=call.id)

Nothing here raises into your loop: a library or store that does not load
logs one warning line and the hooks run without guidance; a failing turn
logs a warning and returns empty guidance (``strict=True`` raises instead).
``examples/openai_loop.py`` is a complete agent built this way.

Example:
    >>> hooks = Hooks("chat-1", store="memory://")
    >>> hooks.on_user_message("What's the weather like?").text is None
    True
    >>> hooks.context_for_model() is None
    True
"""

from __future__ import annotations

import logging
import os
from typing import Any

from waygraph.errors import ConfigError, WaygraphError
from waygraph.match.selector import PlanSelector
from waygraph.navigator import Guidance, Navigator
from waygraph.render.style import GuidanceStyle, ToolsSpec

__all__ = ["Hooks", "open_navigator"]

log = logging.getLogger("waygraph.hooks")

_ENDED = ("completed", "escalated", "expired", "aborted")


def open_navigator(
    library: Any,
    store: Any,
    workspace: str | os.PathLike[str] | None,
    *,
    strict: bool,
    logger: logging.Logger = log,
    tools: ToolsSpec = None,
    guidance: str = "full",
    matching: str = "phrase",
) -> Navigator | None:
    """A Navigator for an agent's hooks, or None (with one warning line) when it cannot open.

    Every adapter builds its Navigator here: a library or store that does not
    load leaves the agent running without guidance, unless ``strict``, when
    the error is raised. ``tools``, ``guidance`` and ``matching`` are the
    Navigator's (the host's tool names, the guidance style, how messages start
    plans); a bad value of any always raises
    :class:`~waygraph.errors.ConfigError` (a ``matching`` that needs the
    ``semantic`` extra, when it is missing, too: ``MissingExtra``): it is the
    caller's mistake, not a library that failed to load.

    Example:
        >>> open_navigator(None, "nosuch://x", None, strict=False) is None
        True
        >>> nav = open_navigator(None, "memory://", None, strict=False, guidance="compact")
        >>> nav.style.compact
        True
    """
    GuidanceStyle.of(guidance, tools)
    PlanSelector(matching)
    try:
        return Navigator(
            library,
            store=store,
            workspace=workspace,
            strict=strict,
            tools=tools,
            guidance=guidance,
            matching=matching,
        )
    except WaygraphError as exc:
        if strict:
            raise
        logger.warning("waygraph: %s; the agent runs without guidance", exc)
        return None


class Hooks:
    """waygraph for one conversation of any agent loop: three calls.

    Give a ``navigator`` to share one (and its store connection) between
    conversations, or the Navigator's own arguments (``library``, ``store``,
    ``workspace``, ``tools``, ``guidance``, ``matching``) to have one built. ``tools``: your
    loop's tool names, so the guidance names them and never one your loop
    lacks (a mapping from the plan's tool names to yours, or a list of
    yours); ``guidance``: ``"full"`` or ``"compact"`` (the current step, its
    check and what failed last, for small contexts); ``matching``:
    ``"phrase"`` (triggers, the default), ``"semantic"`` (meaning) or
    ``"both"`` (triggers, then meaning; needs the ``semantic`` extra). With a
    shared ``navigator`` they are the Navigator's to set, and passing them here
    raises :class:`~waygraph.errors.ConfigError`. ``session_id`` names the
    conversation in the store, so a restarted process picks up where it
    left off.

    Example:
        >>> hooks = Hooks("s", store="memory://", tools=["run_command", "write_file"])
        >>> hooks.active
        False
    """

    def __init__(
        self,
        session_id: str,
        *,
        navigator: Navigator | None = None,
        library: Any = None,
        store: Any = None,
        workspace: str | os.PathLike[str] | None = None,
        strict: bool = False,
        tools: ToolsSpec = None,
        guidance: str = "full",
        matching: str = "phrase",
    ) -> None:
        self.session_id = session_id
        self.strict = strict
        # A plan that ended is announced once by context_for_model, then dropped.
        self._ended_text: str | None = None
        self.navigator: Navigator | None = navigator
        if navigator is None:
            self.navigator = open_navigator(
                library,
                store,
                workspace,
                strict=strict,
                logger=log,
                tools=tools,
                guidance=guidance,
                matching=matching,
            )
        elif tools is not None or guidance != "full" or matching != "phrase":
            raise ConfigError(
                "tools= and guidance= belong to the shared navigator, as does matching=: "
                "pass them to Navigator(...), not to Hooks(navigator=...)"
            )

    @property
    def active(self) -> bool:
        """True while a plan is guiding this conversation."""
        record = self.state()
        return record is not None and record.get("status") == "running"

    def on_user_message(
        self,
        text: str,
        *,
        domain: str | None = None,
        allowed_plans: list[str] | None = None,
    ) -> Guidance:
        """The user said ``text``: with no plan running, the best matching plan starts.

        ``domain`` (when your loop classifies messages) filters plans by their
        ``domains``; ``allowed_plans`` limits which plan ids may start.
        """
        return self._turn(user_message=text, domain=domain, allowed_plans=allowed_plans)

    def on_tool_result(
        self,
        output: str,
        *,
        tool_name: str | None = None,
        exit_code: int | None = None,
        call_id: str | None = None,
        tool_args: Any = None,
        source: str = "tool",
    ) -> Guidance:
        """A tool returned ``output``: verify it against the current step and move on.

        Pass ``exit_code`` when the tool has one (without it an exit-code check
        cannot decide, and the model is asked for the status); ``call_id`` (the
        tool call's id) makes a result reported twice count once; ``tool_args``
        (the command or arguments) shows the model what it already tried and
        tells a repeated call from a new one, and is the command a
        ``command_matches`` check reads. ``source``: ``"tool"`` for a real
        tool result, ``"host"`` for a check your loop ran itself, ``"model"``
        for words the model wrote (never evidence; see :meth:`on_model_reply`).
        """
        return self._turn(
            tool_output=output,
            tool_name=tool_name,
            exit_code=exit_code,
            observation_id=call_id,
            tool_args=tool_args,
            source=source,
        )

    def on_model_reply(
        self, text: str, *, final: bool = True, asks_user: bool | None = None
    ) -> Guidance:
        """The model answered the user with ``text`` (not a tool call): a claim, not evidence.

        The plan does not move. With ``final`` (the answer ends the model's
        work, as a reply without tool calls does) while the plan is unfinished,
        waygraph records ``claim_unverified`` and the next guidance names the
        steps still unverified. A reply that asks the user something (its last
        sentence ends with ``?``, or ``asks_user=True``) is no claim: waygraph
        records ``question_asked`` and waits for the user's next message.

        Example:
            >>> hooks = Hooks("s", store="memory://")
            >>> _ = hooks.on_user_message("I need to fix a bug in the login module")
            >>> [e.type for e in hooks.on_model_reply("Fixed! Everything works now.").events]
            ['claim_recorded', 'claim_unverified']
        """
        return self._turn(tool_output=text, source="model", final=final, asks_user=asks_user)

    def answer(self, text: str, *, by: str | None = None) -> Guidance:
        """A person's answer to what the conversation waits for (:meth:`Navigator.answer`)."""
        if self.navigator is None:
            return Guidance()
        return self.navigator.answer(self.session_id, text, by=by)

    def context_for_model(self) -> str | None:
        """The guidance to add to the model's context now, or None.

        While a plan runs: where the model is and what to do next. Once, after
        a plan ends: what happened (completed, escalated, ...). Reading it does
        not take a turn, so call it as often as you build a prompt.
        """
        if self.navigator is None:
            return None
        try:
            record = self.navigator.state(self.session_id)
            if record is not None and record.get("status") == "running":
                self._ended_text = None
                return self.navigator.context(self.session_id)
        except Exception as exc:
            if self.strict:
                raise
            log.warning("waygraph: cannot read session %r: %s", self.session_id, exc)
            return None
        text, self._ended_text = self._ended_text, None
        return text

    def state(self) -> dict[str, Any] | None:
        """The conversation's latest run record (running or finished), or None."""
        if self.navigator is None:
            return None
        try:
            return self.navigator.state(self.session_id)
        except Exception as exc:
            if self.strict:
                raise
            log.warning("waygraph: cannot read session %r: %s", self.session_id, exc)
            return None

    def reset(self) -> None:
        """Forget the conversation's plan (a running one is aborted)."""
        self._ended_text = None
        if self.navigator is not None:
            self.navigator.reset(self.session_id)

    def close(self) -> None:
        """Release the navigator's store (nothing to do without a navigator)."""
        if self.navigator is not None:
            self.navigator.close()

    def _turn(self, **kwargs: Any) -> Guidance:
        if self.navigator is None:
            return Guidance()
        guidance = self.navigator.turn(self.session_id, **kwargs)
        if guidance.run is not None and guidance.run.get("status") in _ENDED and guidance.events:
            self._ended_text = guidance.text
        return guidance
