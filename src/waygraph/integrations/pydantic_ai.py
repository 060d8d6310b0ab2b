"""waygraph inside a Pydantic AI agent: one capability.

::

    agent = Agent(model, tools=[shell], capabilities=[waygraph_capability(library="plans/")])

Install with ``pip install 'waygraph[pydantic-ai]'``. The capability uses
Pydantic AI's documented extension point, a capability (its lifecycle hooks),
so it composes with the agent's other capabilities, tools and instructions:

- ``for_run`` / ``before_run``: each run starts or resumes a waygraph session
  (named by ``session=``, else the run's own ``conversation_id``) and the
  run's prompt goes to :meth:`Hooks.on_user_message`, which may start a plan;
- ``wrap_tool_execute``: every tool result (its name, arguments, call id and
  the output the model sees) is verified against the current step; a tool
  that raises, retries (``ModelRetry``) or fails (``ToolFailed``) is reported
  too, as a failed result;
- ``before_model_request``: the guidance is enqueued as a request-scoped
  system prompt (``SystemPromptPart(scope="request")``), so the model sees it
  in this request only, right after the latest tool result, and the cached
  prefix of the conversation stays the same;
- ``after_run``: the run's final answer is recorded as a claim, never evidence;
  an answer that asks the user something is a question (``question_asked``)
  and the run waits for the conversation's next prompt, the user's answer.

See ``docs/pydantic-ai.md``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from waygraph._extras import require
from waygraph.errors import WaygraphError
from waygraph.hooks import Hooks, open_navigator
from waygraph.integrations._framework import require_framework
from waygraph.navigator import Navigator
from waygraph.render.style import ToolsSpec

if TYPE_CHECKING:
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.tools import RunContext

__all__ = ["HOOK_POINTS", "exit_code_of", "waygraph_capability"]

log = logging.getLogger("waygraph.integrations.pydantic_ai")

ADAPTER = "waygraph.integrations.pydantic_ai"
#: Request-scoped system prompts (the guidance channel) arrived in 2.58.
MINIMUM = "2.58"
BELOW = "3"

#: Every Pydantic AI name the adapter relies on, checked when it is set up.
HOOK_POINTS: tuple[str, ...] = (
    "pydantic_ai.capabilities:AbstractCapability.for_run",
    "pydantic_ai.capabilities:AbstractCapability.before_run",
    "pydantic_ai.capabilities:AbstractCapability.after_run",
    "pydantic_ai.capabilities:AbstractCapability.before_model_request",
    "pydantic_ai.capabilities:AbstractCapability.wrap_tool_execute",
    "pydantic_ai.capabilities:AbstractCapability.get_serialization_name",
    "pydantic_ai.tools:RunContext.enqueue",
    "pydantic_ai.tools:RunContext.conversation_id",
    "pydantic_ai.tools:RunContext.prompt",
    "pydantic_ai.messages:SystemPromptPart.scope",
    "pydantic_ai.messages:ToolReturn",
    "pydantic_ai.exceptions:ToolRetryError",
    "pydantic_ai.exceptions:ToolFailedError",
    "pydantic_ai.exceptions:CallDeferred",
    "pydantic_ai.exceptions:ApprovalRequired",
    "pydantic_ai.exceptions:SkipToolExecution",
)

#: ``session=``: a fixed id, or a function of the run's context (e.g. its deps).
SessionSpec = str | Callable[["RunContext[Any]"], str] | None
#: ``exit_code=``: the exit code of a tool's result, or None when it has none.
ExitCodeOf = Callable[[str, Any], int | None]


def exit_code_of(tool_name: str, result: Any) -> int | None:
    """The exit code a tool's result carries: an int ``exit_code`` key or attribute.

    A shell tool that returns ``{"exit_code": 1, "output": "..."}`` (or an
    object with an ``exit_code`` field, or a ``ToolReturn`` whose ``metadata``
    has one) has its status checked by ``exit_code_zero`` steps; a plain
    string has none (the Navigator then reads only an ``exit=N`` marker on
    its last line, never other words).

    Example:
        >>> exit_code_of("shell", {"exit_code": 1, "output": "FAILED"})
        1
        >>> exit_code_of("search", "three results") is None
        True
    """
    code = result.get("exit_code") if isinstance(result, Mapping) else None
    if code is None:
        code = getattr(result, "exit_code", None)
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def waygraph_capability(
    *,
    session: SessionSpec = None,
    library: Any = None,
    store: Any = None,
    workspace: str | os.PathLike[str] | None = None,
    navigator: Navigator | None = None,
    exit_code: ExitCodeOf = exit_code_of,
    strict: bool = False,
    tools: ToolsSpec = None,
    guidance: str = "full",
    matching: str = "phrase",
) -> AbstractCapability[Any]:
    """A Pydantic AI capability that guides the agent's runs through waygraph plans.

    Give it to ``Agent(..., capabilities=[...])`` (or to one ``run``). Each run
    is a turn of the waygraph session ``session`` (a string, or a function of
    the run's ``RunContext``), by default the run's ``conversation_id``: pass
    ``conversation_id=`` to ``run``, or the previous run's messages as
    ``message_history``, and the plan carries on. ``navigator`` shares one
    Navigator (and its store); otherwise one is built from ``library``,
    ``store`` and ``workspace``, with ``tools`` (the agent's tool names, a
    list or a mapping from the plan's names; see :class:`~waygraph.Navigator`)
    and ``guidance`` (``"full"`` or ``"compact"``), and ``matching``
    (``"phrase"``, ``"semantic"`` or ``"both"``: docs/matching.md). ``exit_code`` reads a
    tool result's exit code (default :func:`exit_code_of`).

    Checks the installed Pydantic AI first
    (:class:`~waygraph.errors.IntegrationVersionError` when its version or a
    hook point does not fit). After that nothing raises into the agent unless
    ``strict``: a library or store that does not load, or a failing turn,
    logs a warning and the agent runs on without guidance.

    Example:
        >>> cap = waygraph_capability(session="chat-1", store="memory://")
        >>> type(cap).__name__, cap.navigator is not None
        ('WaygraphCapability', True)
    """
    require_framework(
        ADAPTER, "pydantic-ai", "pydantic-ai-slim", minimum=MINIMUM, below=BELOW, hooks=HOOK_POINTS
    )
    cls = _capability_class()
    if navigator is None:
        navigator = open_navigator(
            library,
            store,
            workspace,
            strict=strict,
            logger=log,
            tools=tools,
            guidance=guidance,
            matching=matching,
        )
    return cls(navigator=navigator, session=session, exit_code=exit_code, strict=strict)


def _prompt_text(prompt: Any) -> str | None:
    """The text of a run's prompt (a string, or user content whose strings are text)."""
    if isinstance(prompt, str):
        return prompt
    if prompt is None:
        return None
    parts = [part for part in prompt if isinstance(part, str)]
    return "\n".join(parts) if parts else None


def _as_text(value: Any) -> str:
    """A tool's return value as the model reads it: strings as they are, the rest as JSON."""
    if isinstance(value, str):
        return value
    from pydantic_core import to_json

    try:
        return to_json(value, fallback=str).decode()
    except Exception:
        return str(value)


@cache
def _capability_class() -> Callable[..., AbstractCapability[Any]]:
    """The capability class, built on Pydantic AI once it has been checked."""
    # Imported only now: the extra is optional and its version was just checked.
    require("pydantic-ai", purpose="waygraph.integrations.pydantic_ai")
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.exceptions import (
        ApprovalRequired,
        CallDeferred,
        SkipToolExecution,
        ToolFailedError,
        ToolRetryError,
    )
    from pydantic_ai.messages import SystemPromptPart, ToolCallPart, ToolReturn
    from pydantic_ai.run import AgentRunResult
    from pydantic_ai.tools import DeferredToolRequests, ToolDefinition

    # Deferring a call or skipping it is control flow: no tool ran, nothing to verify.
    not_results = (ApprovalRequired, CallDeferred, SkipToolExecution)

    @dataclasses.dataclass
    class WaygraphCapability(AbstractCapability[Any]):
        """waygraph's capability: see :func:`waygraph_capability`."""

        navigator: Navigator | None = None
        session: SessionSpec = None
        exit_code: ExitCodeOf = exit_code_of
        strict: bool = False
        #: The run's session hooks; set on the copy ``for_run`` makes for each run.
        hooks: Hooks | None = None

        @classmethod
        def get_serialization_name(cls) -> str | None:
            # A live Navigator does not go into an agent spec file.
            return None

        async def for_run(self, ctx: RunContext[Any]) -> AbstractCapability[Any]:
            if self.navigator is None:
                return self
            try:
                session_id = self.session_id(ctx)
            except Exception as exc:
                if self.strict:
                    raise
                log.warning("waygraph: no session id for this run (%s); no guidance", exc)
                return self
            # One copy per run: runs of different conversations never share hooks.
            hooks = Hooks(session_id, navigator=self.navigator, strict=self.strict)
            return dataclasses.replace(self, hooks=hooks)

        def session_id(self, ctx: RunContext[Any]) -> str:
            """The waygraph session of the run ``ctx`` describes."""
            if callable(self.session):
                return str(self.session(ctx))
            if self.session is not None:
                return self.session
            if not ctx.conversation_id:
                raise WaygraphError("the run has no conversation_id; pass session=")
            return ctx.conversation_id

        async def before_run(self, ctx: RunContext[Any]) -> None:
            text = _prompt_text(ctx.prompt)
            if self.hooks is not None and text:
                self.hooks.on_user_message(text)

        async def before_model_request(self, ctx: RunContext[Any], request_context: Any) -> Any:
            guidance = self.hooks.context_for_model() if self.hooks is not None else None
            if guidance:
                # Request-scoped: the model sees it now, after the latest tool
                # result; the next request carries the next guidance instead.
                part = SystemPromptPart(guidance, scope="request", metadata={"waygraph": True})
                ctx.enqueue(part)
            return request_context

        async def wrap_tool_execute(
            self,
            ctx: RunContext[Any],
            *,
            call: ToolCallPart,
            tool_def: ToolDefinition,
            args: dict[str, Any],
            handler: Callable[[dict[str, Any]], Any],
        ) -> Any:
            try:
                result = await handler(args)
            except not_results:
                raise
            except (ToolRetryError, ToolFailedError) as exc:
                # ModelRetry / ToolFailed from the tool: the message the model gets.
                self._report(call, args, str(exc), 1)
                raise
            except Exception as exc:
                self._report(call, args, f"error: {type(exc).__name__}: {exc}", 1)
                raise
            value = result.return_value if isinstance(result, ToolReturn) else result
            code = self._exit_code_of(call.tool_name, value)
            if code is None and isinstance(result, ToolReturn) and result.metadata is not None:
                # A ToolReturn's metadata is the tool's own channel, never sent to the model.
                code = self._exit_code_of(call.tool_name, result.metadata)
            self._report(call, args, _as_text(value), code)
            return result

        def _exit_code_of(self, tool_name: str, value: Any) -> int | None:
            try:
                return self.exit_code(tool_name, value)
            except Exception as exc:
                if self.strict:
                    raise
                log.warning("waygraph: cannot read the exit code of %s: %s", tool_name, exc)
                return None

        def _report(
            self, call: ToolCallPart, args: dict[str, Any], output: str, code: int | None
        ) -> None:
            if self.hooks is not None:
                self.hooks.on_tool_result(
                    output,
                    tool_name=call.tool_name,
                    exit_code=code,
                    call_id=call.tool_call_id,
                    tool_args=args,
                )

        async def after_run(
            self, ctx: RunContext[Any], *, result: AgentRunResult[Any]
        ) -> AgentRunResult[Any]:
            output = result.output
            # A run paused for approval has not answered the user yet.
            if self.hooks is not None and not isinstance(output, DeferredToolRequests):
                self.hooks.on_model_reply(_as_text(output), final=True)
            return result

    return WaygraphCapability
