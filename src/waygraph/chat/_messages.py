"""The conversation as waygraph's loops keep it, and the model's reply read from the wire.

History is always kept in the native shape of the chat-completions API (an
assistant message with ``tool_calls``, then one ``tool`` message per call);
the client turns it into the text protocol's shape on the wire when the
model gets its tools as text (:mod:`waygraph.chat._text_tools`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "TOOL_CHOICE",
    "Reply",
    "ToolRequest",
    "assistant_message",
    "check_call",
    "tool_message",
]

#: Sent with every request that offers tools: the model may call one or answer.
TOOL_CHOICE = "auto"
#: ``max_tokens`` of each request of waygraph's loops: room for a tool call or a
#: short answer, and a bound on a rambling reply (one generated 2,643 tokens and
#: the next request overflowed a 4,096-token local context).
DEFAULT_MAX_TOKENS = 1024


@dataclass(frozen=True)
class ToolRequest:
    """One tool call of a model's reply, checked against the tools offered.

    ``arguments`` is the JSON text as the model sent it; ``args`` the object it
    parses to. ``problem`` says why the call cannot run (no such tool,
    arguments that are not a JSON object, a required argument missing): such
    a call ran nothing, so its result is a request to call again and never
    evidence, and ``args`` is None so no command is taken from its text.

    Example:
        >>> call = check_call("c1", "shell", '{"command": "ls"', {"shell": {}})
        >>> call.args is None, call.problem.startswith("arguments are not JSON")
        (True, True)
    """

    id: str
    name: str
    arguments: str
    args: dict[str, Any] | None
    problem: str | None = None

    @property
    def runnable(self) -> bool:
        """Whether the call can run (it names a tool and its arguments are an object)."""
        return self.problem is None


@dataclass
class Reply:
    """A model's reply: its text, its tool calls, what it cost and how tools were read.

    ``protocol`` is ``native`` when the server returned the calls as
    ``tool_calls`` and ``text`` when they were read from the reply's text.

    Example:
        >>> Reply("done").message()
        {'role': 'assistant', 'content': 'done'}
    """

    content: str
    calls: list[ToolRequest] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    protocol: str = "native"
    finish_reason: str | None = None

    def message(self) -> dict[str, Any]:
        """This reply as the next request's history (native shape, ``content`` a string)."""
        out: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.calls:
            out["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in self.calls
            ]
        return out


def assistant_message(message: Any) -> dict[str, Any]:
    """The model's reply ``message`` (an ``openai`` chat message) as the next request's
    history: ``content`` a string (empty when the reply was only tool calls), and the
    tool calls, when there are any, in the request's shape.

    llama-cpp-python's server answers HTTP 500 to an assistant message without
    ``content`` or with ``"content": null``; every server takes a string.

    Example:
        >>> from types import SimpleNamespace as NS
        >>> assistant_message(NS(content="done", tool_calls=None))
        {'role': 'assistant', 'content': 'done'}
    """
    out: dict[str, Any] = {"role": "assistant", "content": message.content or ""}
    calls = getattr(message, "tool_calls", None) or []
    if calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.function.name, "arguments": call.function.arguments},
            }
            for call in calls
        ]
    return out


def tool_message(call: ToolRequest, output: str) -> dict[str, Any]:
    """The history entry answering ``call`` with ``output``; a call that could not run is
    answered with its problem and a request to call again.

    Example:
        >>> tool_message(ToolRequest("c1", "shell", "{}", None, "unknown tool 'sh'"), "")
        {'role': 'tool', 'tool_call_id': 'c1', 'content': "unknown tool 'sh'; nothing ran: \
call the tool again with valid arguments"}
    """
    if call.problem is not None:
        output = f"{call.problem}; nothing ran: call the tool again with valid arguments"
    return {"role": "tool", "tool_call_id": call.id, "content": output}


def check_call(
    call_id: str, name: str, arguments: Any, tools: Mapping[str, Mapping[str, Any]]
) -> ToolRequest:
    """``name(arguments)`` checked against ``tools`` (function schemas by name).

    Arguments may come as JSON text (native tool calls) or as an object (the
    text protocol); either way ``arguments`` of the result is JSON text.

    Example:
        >>> check_call("c1", "shell", {"command": "ls"}, {"shell": {}}).arguments
        '{"command": "ls"}'
    """
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    if name not in tools:
        known = ", ".join(tools) or "none"
        return ToolRequest(
            call_id, name, text, None, f"unknown tool {name!r}; the tools are: {known}"
        )
    try:
        args = json.loads(text or "{}")
    except json.JSONDecodeError as exc:
        # A grammar-constrained server cuts arguments mid-JSON: nothing can run.
        problem = f"arguments are not JSON ({exc.msg}): {text[:200]}"
        return ToolRequest(call_id, name, text, None, problem)
    if not isinstance(args, dict):
        return ToolRequest(call_id, name, text, None, "arguments must be a JSON object")
    schema = (tools[name].get("function") or {}).get("parameters") or {}
    missing = [key for key in schema.get("required", ()) if key not in args]
    if missing:
        wanted = ", ".join(f'"{key}"' for key in missing)
        return ToolRequest(call_id, name, text, None, f"bad arguments: missing {wanted}")
    return ToolRequest(call_id, name, text, args)
