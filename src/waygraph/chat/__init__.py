"""Talking to OpenAI-compatible model servers as they are really served.

waygraph's own tool-calling loops (the demo, ``waygraph eval``, the agent of
``waygraph run``, the OpenAI loop example) ask the model through one client,
:class:`ChatClient`, which deals with what servers differ in: the shape of
the messages they accept, ``tool_choice``, native or text tool calls
(:data:`TOOL_PROTOCOLS`), ``max_tokens`` and the model's context size, and
errors as one line naming the endpoint. docs/local-models.md has recipes for
llama.cpp, llama-cpp-python, Ollama, vLLM and LM Studio.

History is kept in the chat-completions shape: :meth:`Reply.message` for the
model's reply, :func:`tool_message` for each call's result.

Example:
    >>> from waygraph.testing import ScriptedChatServer
    >>> shell = {"type": "function", "function": {"name": "shell",
    ...          "parameters": {"type": "object", "required": ["command"]}}}
    >>> with ScriptedChatServer(['{"tool_name": "shell", "tool_args": {"command": "ls"}}']) as s:
    ...     with ChatClient(s.base_url, model="m", tool_protocol="text") as chat:
    ...         reply = chat.ask([{"role": "user", "content": "list files"}], [shell])
    >>> [(call.name, call.args) for call in reply.calls]
    [('shell', {'command': 'ls'})]
"""

from __future__ import annotations

from waygraph.chat._client import ChatClient, server_error
from waygraph.chat._endpoint import (
    STRUCTURED_OUTPUT_MODES,
    TOOL_PROTOCOLS,
    Endpoint,
    endpoint,
    forget_endpoints,
    refused,
)
from waygraph.chat._fit import estimate, fit
from waygraph.chat._messages import (
    DEFAULT_MAX_TOKENS,
    TOOL_CHOICE,
    Reply,
    ToolRequest,
    assistant_message,
    check_call,
    tool_message,
)
from waygraph.chat._text_tools import describe_tools, find_calls

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "STRUCTURED_OUTPUT_MODES",
    "TOOL_CHOICE",
    "TOOL_PROTOCOLS",
    "ChatClient",
    "Endpoint",
    "Reply",
    "ToolRequest",
    "assistant_message",
    "check_call",
    "describe_tools",
    "endpoint",
    "estimate",
    "find_calls",
    "fit",
    "forget_endpoints",
    "refused",
    "server_error",
    "tool_message",
]
