"""``waygraph demo --llm``: the demo's bug fix done by a real model.

The model gets two tools (``run_command``, ``write_file``) in the demo's
project folder, and its requests go through :class:`~waygraph.chat.ChatClient`
(tool protocol, ``max_tokens``, context size, one-line server errors). Every
call of a reply runs in order and is answered; a call that cannot run is
answered with why and never counts as evidence; what the model says is a
claim, and a question it asks is answered by the demo for the user.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from waygraph.chat import DEFAULT_MAX_TOKENS, ChatClient, ToolRequest, tool_message
from waygraph.cli.app import plain
from waygraph.demo import USER_REQUEST, ToolResult, Workspace, _show_turn
from waygraph.errors import LLMError
from waygraph.navigator import Guidance, Navigator

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionToolParam

__all__ = ["CONTINUE", "DEMO_ANSWER", "SYSTEM_PROMPT", "TOOLS", "DemoModel", "llm_loop"]

SYSTEM_PROMPT = textwrap.dedent(
    """\
    You are a careful software engineer working in a small project folder.
    Use exactly one tool call per reply. Follow the [waygraph] guidance: it says which
    step you are on and how your result will be verified. Do not skip steps.
    """
)

#: What the demo tells a model that answered without a tool call.
CONTINUE = "Continue with one tool call."
#: What the demo answers, for the user, when the model asks the user something.
DEMO_ANSWER = (
    "Nobody is here to answer in this demo: decide as you think best and continue "
    "with one tool call."
)

TOOLS: list[ChatCompletionToolParam] = [
    {
        "type": "function",
        "function": {
            "name": "run_command",
            "description": "Run a shell command in the project folder and return its output.",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "Replace the whole content of a file in the project folder.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"],
            },
        },
    },
]


@dataclass(frozen=True)
class DemoModel:
    """The model of ``waygraph demo --llm`` and how requests reach it."""

    url: str
    name: str | None
    tool_protocol: str = "auto"
    context_tokens: int | None = None
    max_tokens: int | None = DEFAULT_MAX_TOKENS


def llm_loop(
    console: Console,
    nav: Navigator,
    ws: Workspace,
    session_id: str,
    guidance: Guidance,
    model: DemoModel,
    max_turns: int,
) -> int:
    chat = ChatClient(
        model.url,
        model=model.name or "default",
        max_tokens=model.max_tokens,
        tool_protocol=model.tool_protocol,
        context_tokens=model.context_tokens,
    )
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": USER_REQUEST},
    ]
    turns = 0
    # Replies without a tool call are bounded too: a model that only talks must not
    # keep the demo going for ever.
    said = 0
    with chat:
        while guidance.active and turns < max_turns and said < max_turns:
            context = [{"role": "system", "content": guidance.text}] if guidance.text else []
            try:
                reply = chat.ask(messages + context, TOOLS)
            except LLMError as exc:
                console.print(f"[red]{plain(str(exc))}[/]")
                return turns
            messages.append(reply.message())
            if not reply.calls:
                said += 1
                guidance = _model_said(console, nav, session_id, reply.content, messages)
                continue
            # Every call of the reply runs, in order, and each is answered.
            for call in reply.calls:
                if not guidance.active or turns >= max_turns:
                    # Each call is still answered: servers refuse a call left without one.
                    why = "the plan has ended" if not guidance.active else "the turn limit"
                    messages.append(tool_message(call, f"not run: {why}"))
                    continue
                turns += 1
                node = guidance.run["current_node"]  # type: ignore[index]
                attempt = guidance.run["attempts"]  # type: ignore[index]
                shown, args, result = _call_tool(ws, call)
                if not call.runnable or args is None:
                    # A malformed call ran nothing: the model is asked again, and it is no
                    # evidence (a verification it failed would cost an attempt for nothing).
                    why = call.problem or result.output
                    again = tool_message(replace(call, args=None, problem=why), "")
                    messages.append(again)
                    console.print(
                        Panel(
                            Text(again["content"]), title="tool call refused", border_style="yellow"
                        )
                    )
                    continue
                messages.append(tool_message(call, result.output))
                guidance = nav.turn(
                    session_id,
                    tool_output=result.output,
                    tool_name=call.name,
                    exit_code=result.exit_code,
                    observation_id=call.id,
                    # The call's own arguments: a write names no command, so a check
                    # bound to one (command_matches) never takes it for a test run.
                    tool_args=args,
                )
                _show_turn(console, turns, node, attempt, shown, result, guidance)
    return turns


def _model_said(
    console: Console,
    nav: Navigator,
    session_id: str,
    content: str,
    messages: list[dict[str, Any]],
) -> Guidance:
    """The model answered in words: recorded as a claim, never evidence; a question waits
    for the user, whom the demo answers for."""
    console.print(Panel(Text(content), title="model", border_style="blue"))
    guidance = nav.turn(session_id, tool_output=content, source="model", final=True)
    answer = CONTINUE
    if guidance.run is not None and guidance.run.get("awaiting") == "user":
        # Nobody sits at the demo to answer: it answers for the user, and
        # says so; that answer is the user's message, so the run goes on.
        answer = DEMO_ANSWER
        console.print(Panel(Text(answer), title="user (the demo)", border_style="blue"))
        guidance = nav.turn(session_id, user_message=answer)
    messages.append({"role": "user", "content": answer})
    return guidance


def _call_tool(ws: Workspace, call: ToolRequest) -> tuple[str, Any, ToolResult]:
    """Run a model's checked tool call: how it is shown, its arguments, its result. Never raises.

    A call that cannot run (``call.runnable`` is False: an unknown tool or
    arguments that are not a JSON object; an empty command; a write outside
    the workspace) comes back with None arguments: nothing ran.
    """
    name, args = call.name, call.args
    if not call.runnable or args is None:
        return f"{name}(?)", None, ToolResult(call.problem or "the call cannot run", 2)
    if name == "run_command" and not str(args.get("command") or "").strip():
        return f"{name}(?)", None, ToolResult('bad arguments: expected {"command": "..."}', 2)
    handlers: dict[str, Callable[[], tuple[str, ToolResult]]] = {
        "run_command": lambda: (str(args.get("command")), ws.run(str(args.get("command", "")))),
        "write_file": lambda: (
            f"write {args.get('path')}",
            ws.write(str(args.get("path", "")), str(args.get("content", ""))),
        ),
    }
    handler = handlers.get(name)
    if handler is None:
        return name, None, ToolResult(f"unknown tool {name!r}; use run_command or write_file", 2)
    shown, result = handler()
    if result.exit_code == 126 and name == "write_file":
        # Refused (the path leaves the workspace): nothing was written, so no evidence.
        return shown, None, result
    return shown, args, result
