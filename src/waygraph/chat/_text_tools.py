"""The text tool protocol: tools for models and servers without native tool calls.

The tools are described in a system message and the model calls one by
answering with a single JSON object, the shape Agent-Zero uses::

    {"tool_name": "shell", "tool_args": {"command": "python -m pytest -q"}}

Tool results go back as user messages. The shapes small models produce on
their own are read too (``{"name": ..., "arguments": ...}``, Hermes-style
``<tool_call>`` tags, a fenced JSON block), because a model trained on one
of them writes it whatever the prompt says.

Example:
    >>> calls = find_calls('{"tool_name": "shell", "tool_args": {"command": "ls"}}',
    ...                    {"shell": {}})
    >>> [(c.name, c.args) for c in calls]
    [('shell', {'command': 'ls'})]
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from waygraph.chat._messages import ToolRequest, check_call

__all__ = ["describe_tools", "find_calls", "looks_like_call", "to_text_wire"]

_DECODER = json.JSONDecoder()
_NAME_KEYS = ("tool_name", "name", "tool")
_ARG_KEYS = ("tool_args", "arguments", "args", "parameters")
# A reply that starts a call but whose JSON does not parse (cut by max_tokens or a grammar).
_CALL_START = re.compile(r'\{\s*"(?:tool_name|tool|name)"\s*:')


def describe_tools(tools: Mapping[str, Mapping[str, Any]]) -> str:
    """The system message that offers ``tools`` (function schemas by name) as text.

    Example:
        >>> print(describe_tools({"shell": {"function": {"description": "Run a command.",
        ...     "parameters": {"properties": {"command": {"type": "string"}}}}}}))
        ... # doctest: +ELLIPSIS
        You have tools. To call one, answer with exactly one JSON object and nothing else:
        {"tool_name": "<tool>", "tool_args": {<arguments>}}
        Tools:
        - shell: Run a command. Arguments: {"command": string}
        ...
    """
    lines = [
        "You have tools. To call one, answer with exactly one JSON object and nothing else:",
        '{"tool_name": "<tool>", "tool_args": {<arguments>}}',
        "Tools:",
    ]
    for name, schema in tools.items():
        function = schema.get("function") or {}
        props = (function.get("parameters") or {}).get("properties") or {}
        args = ", ".join(f'"{key}": {spec.get("type", "value")}' for key, spec in props.items())
        lines.append(f"- {name}: {function.get('description', '')} Arguments: {{{args}}}")
    lines.append(
        "The tool's result comes back in the next message. When you are done, or to ask "
        "the user something, answer in plain words without a JSON object."
    )
    return "\n".join(lines)


def find_calls(content: str, tools: Mapping[str, Mapping[str, Any]]) -> list[ToolRequest]:
    """The tool calls written in ``content``, checked against ``tools``.

    Every JSON object in the text that names a tool is a call (most replies
    hold one). A reply that starts a call whose JSON does not parse is one
    call that cannot run, so the model is asked again instead of its
    half-written call being taken for an answer.

    Example:
        >>> [c.problem for c in find_calls('{"tool_name": "shell", "tool_args": {"comm',
        ...                                 {"shell": {}})]
        ['arguments are not JSON: {"tool_name": "shell", "tool_args": {"comm']
    """
    calls: list[ToolRequest] = []
    for found in _objects(content):
        named = _named_call(found)
        if named is None:
            continue
        name, arguments = named
        calls.append(check_call(f"text-{len(calls) + 1}", name, arguments, tools))
    if not calls:
        cut = _CALL_START.search(content)
        if cut is not None:
            text = content[cut.start() :].strip()
            problem = f"arguments are not JSON: {text[:200]}"
            name = _cut_name(text)
            calls.append(ToolRequest("text-1", name, text, None, problem))
    return calls


def looks_like_call(content: str, tools: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether ``content`` holds a call of one of ``tools`` written as text (how ``auto``
    tells a model that writes its calls instead of making them).

    Example:
        >>> looks_like_call('Sure! {"name": "shell", "arguments": {"command": "ls"}}',
        ...                 {"shell": {}})
        True
    """
    return any(call.name in tools for call in find_calls(content, tools))


def to_text_wire(
    messages: Sequence[Mapping[str, Any]], tools: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """``messages`` (native shape) as the text protocol sends them: the tools described
    at the end of the first system message, each call written as its JSON object
    (a reply that wrote its calls is sent as it was), each result a user message.

    Example:
        >>> wire = to_text_wire([{"role": "user", "content": "hi"},
        ...     {"role": "assistant", "content": "", "tool_calls": [{"id": "c1",
        ...      "function": {"name": "shell", "arguments": '{"command": "ls"}'}}]},
        ...     {"role": "tool", "tool_call_id": "c1", "content": "a.txt"}], {"shell": {}})
        >>> [m["role"] for m in wire], wire[-1]["content"]
        (['system', 'user', 'assistant', 'user'], 'Result of shell:\\na.txt')
    """
    names: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "assistant" and message.get("tool_calls"):
            written = []
            for call in message["tool_calls"]:
                function = call.get("function") or {}
                names[call.get("id", "")] = function.get("name", "")
                written.append(_written_call(function.get("name", ""), function.get("arguments")))
            content = str(message.get("content") or "").strip()
            if find_calls(content, tools):
                written = []  # the model wrote its calls itself: its words are the call
            out.append(
                {"role": "assistant", "content": "\n".join(filter(None, [content, *written]))}
            )
        elif role == "tool":
            name = names.get(str(message.get("tool_call_id", "")), "the tool")
            out.append({"role": "user", "content": f"Result of {name}:\n{message.get('content')}"})
        else:
            out.append(dict(message))
    # One system message first: some chat templates refuse a second one there.
    if out and out[0].get("role") == "system":
        out[0] = dict(out[0], content=f"{out[0].get('content') or ''}\n\n{describe_tools(tools)}")
    else:
        out.insert(0, {"role": "system", "content": describe_tools(tools)})
    return out


def _written_call(name: str, arguments: Any) -> str:
    try:
        args = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        args = arguments  # a call that could not run is shown as it was written
    return json.dumps({"tool_name": name, "tool_args": args})


def _objects(text: str) -> list[Any]:
    """Every top-level JSON object in ``text``, in order."""
    found: list[Any] = []
    at = text.find("{")
    while at != -1:
        try:
            value, end = _DECODER.raw_decode(text, at)
        except ValueError:
            at = text.find("{", at + 1)
            continue
        found.append(value)
        at = text.find("{", end)
    return found


def _named_call(value: Any) -> tuple[str, Any] | None:
    """(tool name, arguments) when ``value`` is a call in one of the shapes models write."""
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):  # an OpenAI tool call written out
        value = value["function"]
    name = next((value[k] for k in _NAME_KEYS if isinstance(value.get(k), str)), None)
    if name is None:
        return None
    arguments: Any = next((value[k] for k in _ARG_KEYS if k in value), {})
    return name, arguments


def _cut_name(text: str) -> str:
    match = re.search(r'"(?:tool_name|tool|name)"\s*:\s*"([^"]*)"', text)
    return match.group(1) if match else ""
