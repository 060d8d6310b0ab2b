"""What waygraph's MCP tools take and how the server answers, as an MCP client sees it.

:data:`TOOL_SPECS` is the one description of every tool :mod:`waygraph.integrations.mcp_server`
serves: its title, what each argument means (the ``description`` of each
property of its input schema), the values an argument may take (an ``enum``)
and the hints the client gets as the tool's ``annotations`` (``readOnlyHint``,
``destructiveHint``, ``idempotentHint``). :func:`server_class` wraps the
installed ``mcp`` server class so that:

- every input schema has those descriptions and enums and
  ``additionalProperties: false``;
- an unknown argument is refused, and an argument of the wrong type or a
  missing one is a tool error of one line naming the argument and what was
  wrong (not pydantic's multi-line report);
- reading an unknown resource is the JSON-RPC error -32002 (resource not
  found, as the MCP specification defines it), with the URI as its data.

Example:
    >>> TOOL_SPECS["reset_session"].destructive
    True
    >>> sorted(TOOL_SPECS["get_status"].arguments)
    ['session_id']
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

__all__ = ["RESOURCE_NOT_FOUND", "TOOL_SPECS", "ToolSpec", "protocol_error", "server_class"]

#: The JSON-RPC error code of ``resources/read`` for an unknown URI (MCP specification).
RESOURCE_NOT_FOUND = -32002

#: The resource URIs the server serves, for messages.
RESOURCE_PATTERNS = "waygraph://plans/<plan id>/mermaid and waygraph://plans/<plan id>/json"

SESSION = (
    "The conversation's session: any name you choose, the same in every call of one conversation"
)
DOMAIN = "The conversation's domain, when known: plans tied to other domains do not match"
ALLOWED = "Plan ids the match may choose from (left out: every plan)"


@dataclass(frozen=True)
class ToolSpec:
    """One MCP tool as its client sees it: title, arguments, enums and hints.

    ``arguments`` maps each argument to its description, in the order the
    tool takes them; ``enums`` the arguments that take only some values.

    Example:
        >>> spec = ToolSpec("Look", {"what": "What to look at"}, read_only=True)
        >>> spec.annotations()["readOnlyHint"]
        True
    """

    title: str
    arguments: Mapping[str, str] = field(default_factory=dict)
    enums: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False

    def annotations(self) -> dict[str, Any]:
        """The tool's MCP annotations, by their protocol names.

        Example:
            >>> TOOL_SPECS["reset_session"].annotations()["destructiveHint"]
            True
        """
        hints: dict[str, Any] = {"title": self.title, "readOnlyHint": self.read_only}
        if self.read_only:
            # Nothing changes: repeating it changes nothing either, and it
            # touches only the plan library.
            hints.update(idempotentHint=True, openWorldHint=False)
        else:
            hints.update(destructiveHint=self.destructive, idempotentHint=self.idempotent)
        return hints

    def input_schema(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        """``schema`` (the framework's, from the tool's signature) with descriptions, enums
        and ``additionalProperties: false``.

        Example:
            >>> spec = TOOL_SPECS["get_status"]
            >>> out = spec.input_schema({"type": "object", "properties": {"session_id": {}}})
            >>> out["additionalProperties"], out["properties"]["session_id"]["description"][:18]
            (False, "The conversation's")
        """
        properties = {}
        for name, prop in dict(schema.get("properties") or {}).items():
            prop = dict(prop)
            if name in self.arguments:
                prop["description"] = self.arguments[name]
            if name in self.enums:
                prop["enum"] = list(self.enums[name])
            properties[name] = prop
        return {**schema, "properties": properties, "additionalProperties": False}


#: What ``report_tool_result`` accepts as ``source``: never a person's words.
REPORT_SOURCES = ("tool", "host", "model")

TOOL_SPECS: dict[str, ToolSpec] = {
    "list_plans": ToolSpec("List plans", read_only=True),
    "match_plans": ToolSpec(
        "Match a message to a plan",
        {
            "message": "The user's message: which plan it would start (none is started)",
            "domain": DOMAIN,
            "allowed_plans": ALLOWED,
        },
        read_only=True,
    ),
    "start_plan": ToolSpec(
        "Start a plan",
        {
            "session_id": SESSION,
            "plan_id": "The plan to start: an id from list_plans (a plan running in the "
            "session is aborted)",
        },
        # It aborts the plan the session was running.
        destructive=True,
    ),
    "user_message": ToolSpec(
        "Report the user's message",
        {
            "session_id": SESSION,
            "message": "The user's own message, word for word (never words of your own): it "
            "starts the best matching plan when none runs, and is the person's answer while "
            "one waits for them",
            "domain": DOMAIN,
            "allowed_plans": ALLOWED,
        },
    ),
    "report_tool_result": ToolSpec(
        "Report a tool result",
        {
            "session_id": SESSION,
            "output": 'The tool\'s output (with source "model": the words the model wrote)',
            "tool_name": "The name of the tool that ran",
            "exit_code": "The command's real exit status, when known (text in the output is "
            "never read as one)",
            "call_id": "The tool call's id: a result reported twice with the same id counts once",
            "source": '"tool": a tool\'s real output (the default); "host": a check the client '
            'ran itself; "model": words the model wrote (recorded, never evidence). A '
            "person's answer is never reported here: it is the user's message",
            "arguments": "The command or arguments the tool ran with, as text or a JSON object: "
            "a step bound to its command judges only that command's output",
            "final": 'With source "model": true when it is the model\'s final reply to the user',
            "asks_user": 'With source "model": true when the reply asks the user something, '
            'false when it does not (left out: a reply whose last sentence ends with "?" does)',
        },
        enums={"source": REPORT_SOURCES},
    ),
    "get_status": ToolSpec("Show the session's run", {"session_id": SESSION}, read_only=True),
    "reset_session": ToolSpec(
        "Abort the session's plan",
        {"session_id": SESSION},
        destructive=True,
        # A second reset finds nothing left to abort.
        idempotent=True,
    ),
}

_TYPE_WORDS = {
    "string": "text",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "object": "a JSON object",
}


def _expected(prop: Mapping[str, Any]) -> str:
    """What a property of an input schema takes, in words ("an integer or null")."""
    if "enum" in prop:
        return "one of " + ", ".join(json.dumps(value) for value in prop["enum"])
    words = []
    for option in prop.get("anyOf") or [prop]:
        kind = option.get("type")
        if kind == "array":
            words.append(f"a list of {_expected(option.get('items') or {})}")
        elif kind is not None:
            words.append(_TYPE_WORDS.get(kind, str(kind)))
    return " or ".join(words) or "something else"


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def unknown_arguments(tool: str, arguments: Mapping[str, Any]) -> str | None:
    """One line refusing the arguments ``tool`` does not take, or None when it takes them all."""
    spec = TOOL_SPECS.get(tool)
    if spec is None:
        return None  # the framework says the tool is unknown
    unknown = [name for name in arguments if name not in spec.arguments]
    if not unknown:
        return None
    takes = ", ".join(spec.arguments) or "no arguments"
    names = ", ".join(repr(name) for name in unknown)
    plural = "s" if len(unknown) > 1 else ""
    return f"Error executing tool {tool}: unknown argument{plural} {names} (it takes {takes})"


def invalid_arguments(tool: str, errors: list[Any], schema: Mapping[str, Any]) -> str:
    """One line naming each argument pydantic refused and what was wrong with it."""
    properties = schema.get("properties") or {}
    problems: dict[str, str] = {}
    for error in errors:
        location = error.get("loc") or ("?",)
        name = str(location[0])
        if name in problems:
            continue  # one problem per argument (a union reports each of its options)
        if error.get("type") == "missing":
            problems[name] = f"argument {name!r} is required"
        else:
            expected = _expected(properties.get(name) or {})
            problems[name] = (
                f"argument {name!r} must be {expected} (got {_shown(error.get('input'))})"
            )
    return f"Error executing tool {tool}: " + "; ".join(problems.values())


def protocol_error(code: int, message: str, uri: str) -> Exception:
    """The installed ``mcp``'s JSON-RPC error (``MCPError``; ``McpError`` in mcp 1).

    Raised from a handler, the client gets ``code`` and ``message`` with
    ``{"uri": uri}`` as the error's data.

    Example:
        >>> error = protocol_error(RESOURCE_NOT_FOUND, "Resource not found", "waygraph://x")
        >>> error.error.code
        -32002
    """
    exceptions = importlib.import_module("mcp.shared.exceptions")
    data = {"uri": uri}
    if hasattr(exceptions, "MCPError"):
        return exceptions.MCPError(code=code, message=message, data=data)  # type: ignore[no-any-return]
    error_data = importlib.import_module("mcp.types").ErrorData
    return exceptions.McpError(error_data(code=code, message=message, data=data))  # type: ignore[no-any-return]


def _not_found(error: Exception) -> bool:
    try:
        exceptions = importlib.import_module("mcp.server.mcpserver.exceptions")
    except ImportError:
        exceptions = None  # mcp 1.x
    not_found = getattr(exceptions, "ResourceNotFoundError", None)
    if not_found is not None and isinstance(error, not_found):
        return True
    # mcp 1.x says it in the message of a plain ResourceError.
    return str(error).startswith("Unknown resource")


@cache
def server_class(base: type, tool_error: type[Exception], resource_error: type[Exception]) -> type:
    """``base`` (the installed ``MCPServer`` or ``FastMCP``) as waygraph serves it.

    Its tools' schemas carry :data:`TOOL_SPECS`' descriptions, enums and
    ``additionalProperties: false``; bad arguments are refused with one line;
    an unknown resource is error :data:`RESOURCE_NOT_FOUND`.

    Example:
        >>> from mcp.server.mcpserver import MCPServer
        >>> from mcp.server.mcpserver.exceptions import ResourceError, ToolError
        >>> server_class(MCPServer, ToolError, ResourceError).__name__
        'WaygraphMCPServer'
    """

    class WaygraphMCPServer(base):  # type: ignore[misc]
        """The MCP server with waygraph's tool schemas and one-line argument errors."""

        async def list_tools(self, *args: Any, **kwargs: Any) -> Any:
            """The tools, their input schemas completed from :data:`TOOL_SPECS`."""
            tools = await super().list_tools(*args, **kwargs)
            completed = []
            for tool in tools:
                spec = TOOL_SPECS.get(tool.name)
                if spec is None:
                    completed.append(tool)
                    continue
                # mcp 2 names the field input_schema; mcp 1 inputSchema.
                key = "input_schema" if "input_schema" in type(tool).model_fields else "inputSchema"
                schema = spec.input_schema(getattr(tool, key))
                completed.append(tool.model_copy(update={key: schema}))
            return completed

        async def call_tool(self, name: str, arguments: Any, *args: Any, **kwargs: Any) -> Any:
            """Call tool ``name``, refusing unknown or invalid arguments with one line."""
            problem = unknown_arguments(name, arguments or {})
            if problem is not None:
                raise tool_error(problem)
            try:
                return await super().call_tool(name, arguments, *args, **kwargs)
            except tool_error as exc:
                cause = exc.__cause__
                # Only the framework's check of the arguments: its model is "<tool>Arguments".
                if getattr(cause, "title", None) != f"{name}Arguments":
                    raise
                tools = {tool.name: tool for tool in await self.list_tools()}
                tool = tools.get(name)
                schema = getattr(tool, "input_schema", None) or getattr(tool, "inputSchema", {})
                raise tool_error(invalid_arguments(name, cause.errors(), schema)) from cause  # type: ignore[union-attr]

        async def read_resource(self, uri: Any, *args: Any, **kwargs: Any) -> Any:
            """Read ``uri``; an unknown one is error -32002, resource not found."""
            try:
                return await super().read_resource(uri, *args, **kwargs)
            except resource_error as exc:
                if not _not_found(exc):
                    raise
                message = f"Resource not found: {uri} (waygraph's are {RESOURCE_PATTERNS})"
                raise protocol_error(RESOURCE_NOT_FOUND, message, str(uri)) from None

    return WaygraphMCPServer
