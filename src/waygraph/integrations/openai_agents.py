"""waygraph inside the OpenAI Agents SDK: run hooks that keep an agent on its plan.

One line::

    result = await Runner.run(agent, task, hooks=waygraph_hooks(navigator, session="chat-42"))

:func:`waygraph_hooks` returns the SDK's own ``RunHooks`` (install with
``pip install 'waygraph[openai-agents]'``). Per run it:

- starts or resumes the waygraph session ``session`` with the run's user
  message (the last user item of the run's input, as ``on_agent_start`` sees
  it), which may start the matching plan from the navigator's library;
- reports every tool result (``on_tool_end``) as evidence with the tool's
  name, call id, arguments (the command a ``command_matches`` check reads)
  and real output (an error the SDK turned into the tool's result included),
  with the exit code the result carries as a field (``exit_code``); a text
  result has one only as an ``exit=N`` last line;
- appends the guidance as a system message to the input of every model call
  (``on_llm_start`` is handed the very list the SDK then sends), so the model
  sees where it is after each tool result; the run's history never keeps it;
- reports the model's text answers as claims (``on_llm_end``), never evidence;
  a final answer that asks the user something is a question: the session
  waits for the user, whose next run's message is the answer.

The SDK's documented way to change a model call's input is
``RunConfig.call_model_input_filter``; pass
``run_config=RunConfig(call_model_input_filter=hooks.call_model_input_filter)``
as well to have the guidance added there (it is then added once, not twice).
Nothing raises into the run from waygraph's side unless ``strict=True``; an
SDK whose version or hook points the adapter cannot use raises
:class:`~waygraph.errors.IntegrationVersionError` when the hooks are built.
See docs/openai-agents.md.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from waygraph.async_navigator import AsyncNavigator
from waygraph.hooks import Hooks
from waygraph.integrations._framework import require_framework
from waygraph.navigator import Navigator

if TYPE_CHECKING:
    from agents import (
        Agent,
        AgentHookContext,
        ModelResponse,
        RunContextWrapper,
        Tool,
        TResponseInputItem,
    )
    from agents.lifecycle import RunHooksBase
    from agents.run import CallModelData, ModelInputData
else:
    try:
        from agents.lifecycle import RunHooksBase
    except ImportError:  # the extra is missing (or moved): waygraph_hooks says which
        _C, _A = TypeVar("_C"), TypeVar("_A")

        class RunHooksBase(Generic[_C, _A]):
            """Stand-in so this module imports without the SDK."""


__all__ = ["BELOW", "HOOK_POINTS", "MINIMUM", "WaygraphRunHooks", "waygraph_hooks"]

log = logging.getLogger("waygraph.integrations.openai_agents")

ADAPTER = "waygraph.integrations.openai_agents"
#: Oldest SDK release with every hook point used (AgentHookContext.turn_input came in 0.6.5).
MINIMUM = "0.6.5"
#: First release the adapter does not claim to support.
BELOW = "1"
#: Every SDK name the adapter relies on, checked when the hooks are built.
HOOK_POINTS = (
    "agents:Runner.run",
    "agents:RunConfig",
    "agents:AgentHookContext",
    "agents.lifecycle:RunHooksBase.on_agent_start",
    "agents.lifecycle:RunHooksBase.on_handoff",
    "agents.lifecycle:RunHooksBase.on_llm_start",
    "agents.lifecycle:RunHooksBase.on_llm_end",
    "agents.lifecycle:RunHooksBase.on_tool_end",
    "agents.run:ModelInputData",
)
# Output item types that are not a tool call: a model reply with only these ends the run.
_NOT_CALLS = frozenset({"message", "reasoning"})


def waygraph_hooks(
    navigator: Navigator | AsyncNavigator,
    *,
    session: str,
    strict: bool = False,
) -> WaygraphRunHooks:
    """Run hooks for ``Runner.run(..., hooks=...)`` that guide the run with waygraph.

    ``navigator`` holds the plan library and the store; ``session`` names the
    conversation there, so a later run (or a restarted process) with the same
    session id resumes the same waygraph session. Raises
    :class:`~waygraph.errors.MissingExtra` without the SDK and
    :class:`~waygraph.errors.IntegrationVersionError` for an SDK version or
    hook point the adapter cannot use.

    Example:
        >>> from agents.lifecycle import RunHooksBase
        >>> hooks = waygraph_hooks(Navigator(store="memory://"), session="chat-1")
        >>> isinstance(hooks, RunHooksBase), hooks.session
        (True, 'chat-1')
    """
    require_framework(
        ADAPTER,
        "openai-agents",
        "openai-agents",
        minimum=MINIMUM,
        below=BELOW,
        hooks=HOOK_POINTS,
    )
    sync = navigator.sync if isinstance(navigator, AsyncNavigator) else navigator
    return WaygraphRunHooks(Hooks(session, navigator=sync, strict=strict))


class WaygraphRunHooks(RunHooksBase[Any, Any]):
    """The SDK's ``RunHooks`` for one waygraph conversation; :func:`waygraph_hooks` builds it.

    Every waygraph call runs in a worker thread, so the store is never read
    on the event loop. ``hooks`` is the :class:`~waygraph.hooks.Hooks` it reports to.

    Example:
        >>> hooks = waygraph_hooks(Navigator(store="memory://"), session="s")
        >>> hooks.hooks.active
        False
    """

    def __init__(self, hooks: Hooks) -> None:
        self.hooks = hooks
        # The next on_agent_start follows a handoff: the same run, so its input is not news.
        self._handed_off = False
        # Tool call ids are unique within a run, not always across runs (a local server
        # may number them from 1 again), so the id waygraph sees is scoped to the run.
        self._run = uuid.uuid4().hex[:12]

    @property
    def session(self) -> str:
        """The waygraph session id this run reports to."""
        return self.hooks.session_id

    async def on_agent_start(self, context: AgentHookContext[Any], agent: Agent[Any]) -> None:
        """A run (or a handed-off agent) starts: the run's user message goes to waygraph."""
        if self._handed_off:
            self._handed_off = False
            return
        self._run = uuid.uuid4().hex[:12]
        text = _last_user_text(context.turn_input)
        if text:
            await self._call(self.hooks.on_user_message, text)

    async def on_handoff(
        self, context: RunContextWrapper[Any], from_agent: Agent[Any], to_agent: Agent[Any]
    ) -> None:
        """One agent hands off to another within the run: the session goes on."""
        self._handed_off = True

    async def on_llm_start(
        self,
        context: RunContextWrapper[Any],
        agent: Agent[Any],
        system_prompt: str | None,
        input_items: list[Any],
    ) -> None:
        """Before a model call: append the guidance to the input the SDK is about to send."""
        guidance = await self._call(self.hooks.context_for_model)
        if not guidance:
            return
        message = _guidance_message(guidance)
        if message not in input_items:  # call_model_input_filter already added it
            input_items.append(message)

    async def on_llm_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse
    ) -> None:
        """After a model call: its text is a claim; with no tool call, a final one.

        A final one that asks the user something is a question, not a claim:
        the Navigator decides (``asks_user`` left to its default), and the
        session waits for the user's next message.
        """
        texts: list[str] = []
        calls = False
        for item in response.output:
            kind = getattr(item, "type", None)
            if kind == "message":
                texts.extend(
                    part.text for part in getattr(item, "content", ()) if hasattr(part, "text")
                )
            calls = calls or kind not in _NOT_CALLS
        text = "".join(texts).strip()
        if text:
            await self._call(self.hooks.on_model_reply, text, final=not calls)

    async def on_tool_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool, result: object
    ) -> None:
        """A tool returned ``result``: waygraph verifies it against the current step."""
        output, exit_code = _output_of(result)
        arguments = getattr(context, "tool_arguments", None)
        call_id = getattr(context, "tool_call_id", None)
        await self._call(
            self.hooks.on_tool_result,
            output,
            tool_name=str(getattr(context, "tool_name", None) or tool.name),
            exit_code=exit_code,
            call_id=f"{self._run}:{call_id}" if call_id else None,
            tool_args=_parsed(arguments) if isinstance(arguments, str) else None,
        )

    async def call_model_input_filter(self, data: CallModelData[Any]) -> ModelInputData:
        """``RunConfig.call_model_input_filter``: the model input with the guidance appended.

        The SDK's documented hook for changing a model call's input; use it
        with the run hooks (``on_llm_start`` then sees the guidance there and
        adds nothing). A filter of your own can call this one first.
        """
        guidance = await self._call(self.hooks.context_for_model)
        if guidance:
            data.model_data.input = [*data.model_data.input, _guidance_message(guidance)]
        return data.model_data

    async def _call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        # Hooks already logs store and turn failures; this guards the adapter's own work.
        try:
            return await asyncio.to_thread(method, *args, **kwargs)
        except Exception as exc:
            if self.hooks.strict:
                raise
            log.warning("waygraph: %s failed: %s", getattr(method, "__name__", method), exc)
            return None


def _guidance_message(text: str) -> TResponseInputItem:
    # A system message, as examples/openai_loop.py sends it: every chat server knows the role.
    return {"role": "system", "content": text}


def _last_user_text(items: Any) -> str | None:
    """The text of the last user message among the run's input items."""
    for item in reversed(items or []):
        if not isinstance(item, Mapping) or item.get("role") != "user":
            continue
        content = item.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            parts = [p.get("text") for p in content if isinstance(p, Mapping)]
            return "\n".join(p for p in parts if isinstance(p, str)) or None
        return None
    return None


def _output_of(result: object) -> tuple[str, int | None]:
    """A tool result as text, with its exit code when the tool gave one as a field.

    The exit code is only ever a field (``exit_code`` of a mapping or an
    object): a status the tool printed is the Navigator's to read, and only
    as the ``exit=N`` marker on the output's last line.

    Example:
        >>> _output_of({"exit_code": 2, "output": "expected exit code 0, got 2"})
        ('expected exit code 0, got 2', 2)
        >>> _output_of("3 passed")
        ('3 passed', None)
    """
    code = result.get("exit_code") if isinstance(result, Mapping) else None
    code = code if code is not None else getattr(result, "exit_code", None)
    exit_code = code if isinstance(code, int) and not isinstance(code, bool) else None
    if isinstance(result, str):
        return result, exit_code
    if isinstance(result, Mapping) and isinstance(result.get("output"), str):
        return str(result["output"]), exit_code
    # An object with an ``output`` text (a dataclass, say): that text, as for a mapping.
    output = getattr(result, "output", None)
    if isinstance(output, str) and not isinstance(result, Mapping):
        return output, exit_code
    dump = getattr(result, "model_dump_json", None)
    if callable(dump):
        return str(dump()), exit_code
    try:
        return json.dumps(result, default=str), exit_code
    except (TypeError, ValueError):
        return str(result), exit_code


def _parsed(arguments: str) -> Any:
    """Tool arguments as a dict when they are JSON (shown back as what was tried), else text."""
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments
