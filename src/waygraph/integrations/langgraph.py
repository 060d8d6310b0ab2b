"""waygraph inside a LangGraph agent: tool results verified, guidance before every model call.

With the prebuilt agent (``langgraph.prebuilt.create_react_agent``)::

    lg = LangGraphHooks(library="plans/", store="sqlite:///agent.db")
    agent = create_react_agent(model, lg.tool_node(tools), prompt=lg.prompt("You are ..."),
                               post_model_hook=lg.post_model_hook, checkpointer=InMemorySaver())

In a hand-built ``StateGraph``, the tool node is ``lg.tool_node(tools)`` and
the model node calls ``lg.add_guidance(messages, config)`` before the model
and ``lg.report_reply(reply, config)`` after it.

What each piece does, through LangGraph's own extension points:

- :meth:`LangGraphHooks.tool_node` is the prebuilt ``ToolNode`` with
  ``wrap_tool_call`` set to :meth:`LangGraphHooks.wrap_tool_call`: every
  ``ToolMessage`` (errors too) goes to waygraph as evidence with the tool's
  name, arguments and call id, and is checked against the current step;
- :meth:`LangGraphHooks.prompt` (the agent's ``prompt``) and
  :meth:`LangGraphHooks.add_guidance` report new user input (which may start
  the matching plan) and add the guidance as a system message to the model's
  input (the last one, by default), so the model sees where it is after each
  tool result;
- :meth:`LangGraphHooks.post_model_hook` and :meth:`LangGraphHooks.report_reply`
  record the model's text as a claim, never evidence: an answer while the plan
  is unfinished is ``claim_unverified`` and the plan does not move. An answer
  that asks the user something is a question (``question_asked``): the run
  waits for the thread's next user message, which is the answer.

The waygraph session follows the run's ``config["configurable"]["thread_id"]``
(so a checkpointed thread resumes its plan), else ``session_id``. See
``docs/langgraph.md``.

Example:
    >>> lg = LangGraphHooks(store="memory://", session_id="demo")
    >>> lg.session_for({"configurable": {"thread_id": "t-1"}}), lg.session_for(None)
    ('t-1', 'demo')
"""

from __future__ import annotations

import inspect
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from importlib import metadata
from typing import TYPE_CHECKING, Any, Literal

from waygraph._extras import require
from waygraph.errors import IntegrationVersionError
from waygraph.hooks import Hooks, open_navigator
from waygraph.integrations._framework import require_framework
from waygraph.navigator import Navigator
from waygraph.render.style import ToolsSpec

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage, SystemMessage, ToolMessage
    from langchain_core.runnables import RunnableConfig
    from langgraph.prebuilt import ToolNode
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.types import Command

__all__ = ["ADAPTER", "MINIMUM", "LangGraphHooks", "check_langgraph", "default_exit_code"]

log = logging.getLogger("waygraph.integrations.langgraph")

ADAPTER = "waygraph.integrations.langgraph"
#: The oldest langgraph whose prebuilt ToolNode takes ``wrap_tool_call`` (1.0, October 2025).
MINIMUM = "1.0"
_BELOW = "2"
#: Every LangGraph / LangChain name this adapter relies on.
_HOOK_POINTS = (
    "langgraph.prebuilt:ToolNode",
    "langgraph.prebuilt.tool_node:ToolCallRequest",
    "langgraph.errors:GraphBubbleUp",
    "langchain_core.messages:AIMessage",
    "langchain_core.messages:HumanMessage",
    "langchain_core.messages:SystemMessage",
    "langchain_core.messages:ToolMessage",
)
#: Conversations whose Hooks are kept (least recently used go; they hold no state that matters).
_KEEP_SESSIONS = 1024


def check_langgraph() -> None:
    """Check that langgraph is installed in a version whose hook points this adapter uses.

    Raises :class:`~waygraph.errors.MissingExtra` without the ``langgraph``
    extra and :class:`~waygraph.errors.IntegrationVersionError` for a
    version out of range or a hook point that moved. :class:`LangGraphHooks`
    calls it when built.

    Example:
        >>> check_langgraph() is None
        True
    """
    require_framework(
        ADAPTER, "langgraph", "langgraph", minimum=MINIMUM, below=_BELOW, hooks=_HOOK_POINTS
    )
    if "wrap_tool_call" not in inspect.signature(_module("langgraph.prebuilt").ToolNode).parameters:
        raise IntegrationVersionError(
            ADAPTER,
            "langgraph",
            metadata.version("langgraph"),
            f">={MINIMUM},<{_BELOW}",
            "langgraph.prebuilt.ToolNode takes no wrap_tool_call",
        )


class LangGraphHooks:
    """waygraph for every thread of a LangGraph agent: the tool node, the prompt, the reply.

    Give a ``navigator`` to share one, or the Navigator's own arguments
    (``library``, ``store``, ``workspace``, ``tools``: the agent's tool names,
    ``guidance``: ``"full"`` or ``"compact"``, ``matching``: ``"phrase"``,
    ``"semantic"`` or ``"both"``; see :class:`Navigator`).
    ``session_id`` names the conversation when a run's config has no
    ``thread_id``. ``exit_code_of`` reads a tool's exit code from its
    ``ToolMessage`` (default: the ``artifact`` when it is an int or has an
    ``exit_code`` key; 1 for a message whose status is ``"error"``; else
    unknown). ``guidance_at``: ``"end"`` adds the guidance as the last system
    message (the model reads it last); ``"start"`` puts it into the leading
    system message instead, for providers that take system text only first.
    Nothing raises into the agent unless ``strict``; a langgraph without the
    hook points raises :class:`~waygraph.errors.IntegrationVersionError` here.

    Example:
        >>> lg = LangGraphHooks(store="memory://")
        >>> lg.state({"configurable": {"thread_id": "t-7"}}) is None
        True
    """

    def __init__(
        self,
        *,
        navigator: Navigator | None = None,
        library: Any = None,
        store: Any = None,
        workspace: str | os.PathLike[str] | None = None,
        session_id: str = "langgraph",
        strict: bool = False,
        exit_code_of: Callable[[ToolMessage], int | None] | None = None,
        guidance_at: Literal["end", "start"] = "end",
        tools: ToolsSpec = None,
        guidance: str = "full",
        matching: str = "phrase",
    ) -> None:
        check_langgraph()
        if guidance_at not in ("end", "start"):
            raise ValueError(f"guidance_at must be 'end' or 'start', not {guidance_at!r}")
        self.guidance_at = guidance_at
        self.session_id = session_id
        self.strict = strict
        self.exit_code_of = exit_code_of or default_exit_code
        self.navigator = navigator
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
        self._lock = threading.Lock()
        self._hooks: OrderedDict[str, Hooks] = OrderedDict()
        # session -> id of the last user message reported, so a model call
        # repeated on the same input does not report it again.
        self._heard: dict[str, str] = {}

    # ------------------------------------------------------------ sessions

    def session_for(self, config: RunnableConfig | None) -> str:
        """The waygraph session of a run: its ``thread_id``, else ``session_id``."""
        configurable = (config or {}).get("configurable") or {}
        thread = configurable.get("thread_id")
        return str(thread) if thread not in (None, "") else self.session_id

    def hooks_for(self, config: RunnableConfig | None) -> Hooks | None:
        """The :class:`~waygraph.hooks.Hooks` of the run's session (one per thread).

        None when the library or store did not load (the agent runs unguided).
        """
        if self.navigator is None:
            return None
        session = self.session_for(config)
        with self._lock:
            hooks = self._hooks.get(session)
            if hooks is None:
                hooks = Hooks(session, navigator=self.navigator, strict=self.strict)
                self._hooks[session] = hooks
                while len(self._hooks) > _KEEP_SESSIONS:
                    self._hooks.popitem(last=False)
            self._hooks.move_to_end(session)
            return hooks

    def state(self, config: RunnableConfig | None) -> dict[str, Any] | None:
        """The latest waygraph run record of the run's session, or None."""
        hooks = self.hooks_for(config)
        return hooks.state() if hooks is not None else None

    def close(self) -> None:
        """Release the navigator's store."""
        if self.navigator is not None:
            self.navigator.close()

    # ------------------------------------------------------------ tools

    def tool_node(self, tools: Sequence[Any], **kwargs: Any) -> ToolNode:
        """The prebuilt ``ToolNode`` for ``tools``, reporting every result to waygraph.

        ``kwargs`` go to ``ToolNode`` (``handle_tool_errors``, ``name``, ...);
        a ``wrap_tool_call`` / ``awrap_tool_call`` of yours runs inside ours,
        so waygraph sees what your wrapper returns.

        Example:
            >>> def add(a: int, b: int) -> int:
            ...     "Add two numbers."
            ...     return a + b
            >>> node = LangGraphHooks(store="memory://").tool_node([add])
            >>> node.name, list(node.tools_by_name)
            ('tools', ['add'])
        """
        inner = kwargs.pop("wrap_tool_call", None)
        ainner = kwargs.pop("awrap_tool_call", None)

        def wrap(request: ToolCallRequest, execute: Callable[..., Any]) -> Any:
            if inner is None:
                return self.wrap_tool_call(request, execute)
            return self.wrap_tool_call(request, lambda req: inner(req, execute))

        async def awrap(request: ToolCallRequest, execute: Callable[..., Any]) -> Any:
            if ainner is None:
                return await self.awrap_tool_call(request, execute)

            async def through(req: ToolCallRequest) -> Any:
                return await ainner(req, execute)

            return await self.awrap_tool_call(request, through)

        # A sync wrapper of yours alone also serves async runs (ToolNode's own
        # fallback), so then ours must not add an async path that skips it.
        both = ainner is not None or inner is None
        return _module("langgraph.prebuilt").ToolNode(  # type: ignore[no-any-return]
            tools, wrap_tool_call=wrap, awrap_tool_call=awrap if both else None, **kwargs
        )

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        execute: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Run the tool call, report its result to waygraph, return it unchanged.

        The ``wrap_tool_call`` of a ``ToolNode`` you build yourself:
        ``ToolNode(tools, wrap_tool_call=lg.wrap_tool_call)``. A tool that
        raises is reported as a failed result (exit code 1), then the error
        goes on as it would have; interrupts are not results and pass through.
        """
        try:
            result = execute(request)
        except _module("langgraph.errors").GraphBubbleUp:
            raise
        except Exception as exc:
            self._report_error(request, exc)
            raise
        self._report_result(request, result)
        return result

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        execute: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """:meth:`wrap_tool_call` for an agent run with ``ainvoke``/``astream``."""
        try:
            result = await execute(request)
        except _module("langgraph.errors").GraphBubbleUp:
            raise
        except Exception as exc:
            self._report_error(request, exc)
            raise
        self._report_result(request, result)
        return result

    def report_tool_messages(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        """A node to put after a tool node of your own: reports its new ``ToolMessage``\\ s.

        The messages after the last AI message are the tool node's results;
        a result reported twice (the call id is the same) counts once.
        Returns no state update.
        """
        kinds = _module("langchain_core.messages")
        messages = _messages_of(state)
        calls: dict[str, dict[str, Any]] = {}
        for message in reversed(messages):
            if isinstance(message, kinds.AIMessage):
                calls = {str(c["id"]): dict(c) for c in message.tool_calls if c.get("id")}
                break
        for message in messages[len(messages) - _tail(messages, kinds.ToolMessage) :]:
            call = calls.get(message.tool_call_id, {})
            self._report(config, message, call.get("name") or message.name, call.get("args"))
        return {}

    # ------------------------------------------------------------ the model

    def add_guidance(self, messages: Sequence[BaseMessage], config: RunnableConfig) -> list[Any]:
        """``messages`` with the waygraph guidance added (a system message, see ``guidance_at``).

        Call it on the model's input in your model node, before every model
        call. New user input at the end of ``messages`` (the human messages
        after the last answer or tool result) is reported first, so it may
        start the plan that matches. Without a guiding plan the messages come
        back unchanged (as a new list).
        """
        kinds = _module("langchain_core.messages")
        messages = list(messages)
        hooks = self.hooks_for(config)
        if hooks is None:
            return messages
        try:
            fresh = messages[len(messages) - _tail(messages, kinds.HumanMessage) :]
            if fresh:
                self._hear(hooks, fresh)
            guidance = hooks.context_for_model()
        except Exception as exc:
            if self.strict:
                raise
            log.warning("waygraph: no guidance for session %r: %s", hooks.session_id, exc)
            guidance = None
        if not guidance:
            return messages
        # Per call, never in the graph's state: the thread keeps only the conversation.
        if self.guidance_at == "end":
            return [*messages, kinds.SystemMessage(content=guidance)]
        if messages and isinstance(messages[0], kinds.SystemMessage):
            first = _text(messages[0].content)
            return [kinds.SystemMessage(content=f"{first}\n\n{guidance}"), *messages[1:]]
        return [kinds.SystemMessage(content=guidance), *messages]

    def prompt(
        self, system_prompt: str | SystemMessage | None = None
    ) -> Callable[[Any, RunnableConfig], list[Any]]:
        """The ``prompt`` of ``create_react_agent``: your system prompt, the messages, the guidance.

        Example:
            >>> lg = LangGraphHooks(store="memory://")
            >>> prompt = lg.prompt("Be brief.")
            >>> [m.content for m in prompt({"messages": []}, {})]
            ['Be brief.']
        """
        system = _module("langchain_core.messages").SystemMessage
        head = [] if system_prompt is None else [_system(system_prompt, system)]

        # `config: RunnableConfig` exactly: LangGraph passes the run's config by that annotation.
        def prompt(state: Any, config: RunnableConfig) -> list[Any]:
            return self.add_guidance([*head, *_messages_of(state)], config)

        return prompt

    def report_reply(
        self, message: Any, config: RunnableConfig, *, asks_user: bool | None = None
    ) -> None:
        """Record the model's words in ``message`` (an ``AIMessage``) as a claim.

        A reply without tool calls is final: while the plan is unfinished,
        waygraph records ``claim_unverified`` and the next guidance names the
        steps still unverified. A final reply that asks the user something
        (its last sentence ends with ``?``, or ``asks_user=True``) is a
        question instead: the run waits for the thread's next user message.
        The plan never moves on words.
        """
        text = _text(getattr(message, "content", ""))
        if not text.strip():
            return
        final = not getattr(message, "tool_calls", None)
        hooks = self.hooks_for(config)
        if hooks is None:
            return
        try:
            hooks.on_model_reply(text, final=final, asks_user=asks_user)
        except Exception as exc:
            if self.strict:
                raise
            log.warning("waygraph: reply not recorded for %r: %s", hooks.session_id, exc)

    def post_model_hook(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        """The ``post_model_hook`` of ``create_react_agent``: :meth:`report_reply` on its reply.

        Returns no state update.
        """
        messages = _messages_of(state)
        if messages:
            self.report_reply(messages[-1], config)
        return {}

    # ------------------------------------------------------------ reporting

    def _hear(self, hooks: Hooks, fresh: list[Any]) -> None:
        key = str(getattr(fresh[-1], "id", None) or "")
        with self._lock:
            if key and self._heard.get(hooks.session_id) == key:
                return
            self._heard[hooks.session_id] = key
            while len(self._heard) > _KEEP_SESSIONS:
                del self._heard[next(iter(self._heard))]
        text = "\n".join(_text(m.content) for m in fresh).strip()
        if text:
            hooks.on_user_message(text)

    def _report_result(self, request: ToolCallRequest, result: Any) -> None:
        call = request.tool_call
        config = getattr(request.runtime, "config", None)
        for message in _tool_messages(result, _module("langchain_core.messages").ToolMessage):
            if message.tool_call_id == call.get("id"):
                self._report(config, message, call.get("name"), call.get("args"))

    def _report_error(self, request: ToolCallRequest, exc: Exception) -> None:
        call = request.tool_call
        hooks = self.hooks_for(getattr(request.runtime, "config", None))
        if hooks is None:
            return
        try:
            hooks.on_tool_result(
                f"{type(exc).__name__}: {exc}",
                tool_name=call.get("name"),
                exit_code=1,
                call_id=call.get("id"),
                tool_args=call.get("args"),
            )
        except Exception as error:
            if self.strict:
                raise
            log.warning("waygraph: tool error not reported: %s", error)

    def _report(self, config: Any, message: ToolMessage, name: Any, args: Any) -> None:
        hooks = self.hooks_for(config)
        if hooks is None:
            return
        try:
            hooks.on_tool_result(
                _text(message.content),
                tool_name=str(name) if name else None,
                exit_code=self.exit_code_of(message),
                call_id=message.tool_call_id or None,
                tool_args=args,
            )
        except Exception as exc:
            if self.strict:
                raise
            log.warning("waygraph: tool result not reported for %r: %s", hooks.session_id, exc)


def default_exit_code(message: Any) -> int | None:
    """A tool's exit code from its ``ToolMessage``: the artifact's, 1 on error, else None.

    The artifact is the tool's structured result, which the model never reads:
    an int, a mapping with an int ``exit_code``, or an object with one. The
    message's text is never read for a status here; without one, the
    Navigator reads only the ``exit=N`` marker on the output's last line.

    Example:
        >>> from langchain_core.messages import ToolMessage
        >>> default_exit_code(ToolMessage("ok", tool_call_id="c", artifact={"exit_code": 0}))
        0
        >>> default_exit_code(ToolMessage("boom", tool_call_id="c", status="error"))
        1
        >>> default_exit_code(ToolMessage("exit code 0", tool_call_id="c")) is None
        True
    """
    artifact = getattr(message, "artifact", None)
    if isinstance(artifact, Mapping):
        code = artifact.get("exit_code")
    elif isinstance(artifact, int):
        code = artifact
    else:
        code = getattr(artifact, "exit_code", None)
    if isinstance(code, int) and not isinstance(code, bool):
        return code
    return 1 if getattr(message, "status", None) == "error" else None


def _module(name: str) -> Any:
    """A module of the langgraph extra (imported through it, so a missing one says which)."""
    return require("langgraph", name, purpose=ADAPTER)


def _messages_of(state: Any) -> list[Any]:
    if isinstance(state, dict):
        return list(state.get("messages") or [])
    if isinstance(state, list):
        return state
    return list(getattr(state, "messages", None) or [])


def _tail(messages: Sequence[Any], kind: type) -> int:
    """How many messages at the end of ``messages`` are of ``kind``."""
    count = 0
    for message in reversed(messages):
        if not isinstance(message, kind):
            break
        count += 1
    return count


def _tool_messages(result: Any, kind: type) -> list[Any]:
    """The tool messages in what a tool call returned (a message, a Command, or a list)."""
    if isinstance(result, kind):
        return [result]
    if isinstance(result, list):
        return [m for item in result for m in _tool_messages(item, kind)]
    update = getattr(result, "update", None)
    if isinstance(update, dict):
        return [m for m in update.get("messages") or [] if isinstance(m, kind)]
    return []


def _system(prompt: Any, kind: type) -> Any:
    return prompt if isinstance(prompt, kind) else kind(content=str(prompt))


def _text(content: Any) -> str:
    """Message content as text: a string, or the text parts of content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "".join(parts)
    return "" if content is None else str(content)
