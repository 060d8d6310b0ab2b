"""Chat-completions messages as every OpenAI-compatible server accepts them.

waygraph's own tool-calling loops (the demo, ``waygraph eval``, the agent of
``waygraph run``, the OpenAI loop example) send back the model's reply with
its tool calls before the tool results. Servers differ in what they accept
there: llama-cpp-python's answers HTTP 500 to an assistant message without
``content`` or with ``"content": null``, and without an explicit
``tool_choice`` its function-calling format drops the tools. So the reply is
echoed with ``content`` always a string, and every request that offers tools
says ``tool_choice: "auto"`` (:data:`TOOL_CHOICE`).

Example:
    >>> from types import SimpleNamespace as NS
    >>> call = NS(id="c1", function=NS(name="shell", arguments='{"command": "ls"}'))
    >>> assistant_message(NS(content=None, tool_calls=[call]))["content"]
    ''
"""

from __future__ import annotations

from typing import Any

__all__ = ["DEFAULT_MAX_TOKENS", "TOOL_CHOICE", "assistant_message"]

#: Sent with every request that offers tools: the model may call one or answer.
TOOL_CHOICE = "auto"
#: ``max_tokens`` of each request of waygraph's loops: room for a tool call or a
#: short answer, and a bound on a rambling reply (one generated 2,643 tokens and
#: the next request overflowed a 4,096-token local context).
DEFAULT_MAX_TOKENS = 1024


def assistant_message(message: Any) -> dict[str, Any]:
    """The model's reply ``message`` (an ``openai`` chat message) as the next request's
    history: ``content`` a string (empty when the reply was only tool calls), and the
    tool calls, when there are any, in the request's shape.

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
