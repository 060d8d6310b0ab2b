"""waygraph over the Model Context Protocol: plans for any MCP client.

``waygraph mcp [--library PATH] [--store URL]`` runs :func:`serve`, an MCP
server on stdio built with the official ``mcp`` package. A client (Claude
Desktop, an IDE, an agent framework) gets:

Tools (every one takes and returns plain JSON):

=========================  ===================================================
``list_plans``             every plan: id, name, domains, triggers, shape, and
                           the URIs of its two resources
``match_plans``            which plan a message would activate, and why the
                           others would not
``start_plan``             start a plan by id in a session
``user_message``           report the user's own message, word for word; it
                           activates the best matching plan when none is
                           running, and is the person's answer while one waits
``report_tool_result``     report a tool's output (exit code, arguments):
                           verified against the current node, the run moves
                           on; or the model's own reply (``source="model"``,
                           ``final``, ``asks_user``): a claim or a question,
                           never evidence
``get_status``             the session's run (status, node, attempts, path)
                           and the guidance text for the model
``reset_session``          abort the session's running plan
=========================  ===================================================

Who may pass a step (:mod:`waygraph.integrations.mcp_people`): at a ``human``
node or a ``manual`` check only a person moves the run on, and no tool takes
their answer (``source="human"`` is refused; tool output naming a choice is
only recorded). When the client offers elicitation, the tool call that reached
such a step asks the person through it and passes their answer on
(``elicited`` in the result says what happened); else, or when they decline,
the result's ``ask_user`` tells the model to ask the user in chat and wait.

Resources, one pair per plan: ``waygraph://plans/{plan_id}/mermaid`` (its
Mermaid drawing) and ``waygraph://plans/{plan_id}/json`` (its JSON); an
unknown one is the JSON-RPC error -32002 (resource not found).

Each tool's arguments are described in its input schema, which takes no
other argument; its annotations say whether it changes anything
(:mod:`waygraph.integrations.mcp_protocol` holds both). ``serverInfo`` gives
waygraph's version.

Sessions are the client's to name (one per conversation); runs persist in the
store, so they outlive the server process. Bad input to a tool (an unknown
plan, a missing, mistyped or unknown argument, a result reported for a
session with no run) comes back as a tool error with a one-line message; a
library or store that does not load stops ``waygraph mcp`` before it serves,
with a one-line message on stderr. Nothing but protocol messages is ever
written to stdout.

Example:
    >>> server = build_server(store="memory://")
    >>> server.name
    'waygraph'
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote, unquote

from waygraph._extras import require
from waygraph.errors import ConfigError, InputError, WaygraphError
from waygraph.integrations.mcp_people import Settled, ask_user, settle, waiting_for
from waygraph.integrations.mcp_protocol import (
    REPORT_SOURCES,
    RESOURCE_NOT_FOUND,
    TOOL_SPECS,
    protocol_error,
    server_class,
)
from waygraph.navigator import Navigator
from waygraph.render.style import ToolsSpec

if TYPE_CHECKING:
    # Typed as mcp 2's server; mcp 1's FastMCP has the same decorators.
    from mcp.server.mcpserver import MCPServer as _Server

__all__ = ["MCP_REQUIREMENT", "RUN_FIELDS", "build_server", "json_uri", "mermaid_uri", "serve"]

#: The mcp versions this module is tested with (FastMCP in 1.x, MCPServer in 2.x).
MCP_REQUIREMENT = "mcp>=1.30,<3"

#: The run-record fields tools return (the full record is in the store).
RUN_FIELDS = (
    "run_id",
    "plan_id",
    "plan_name",
    "mode",
    "status",
    "current_node",
    "attempts",
    "path",
    "completed_nodes",
    "total_nodes",
    "turns_since_transition",
    "stale_after_turns",
    "reason",
    "pace_level",
    "awaiting",
)

INSTRUCTIONS = (
    "waygraph keeps you on course through multi-step work. Call user_message with what "
    "the user asked (or start_plan with a plan id), then follow the guidance: do the "
    "current node's action, and after every tool you run call report_tool_result with "
    "its output, exit code and arguments. get_status shows where you are. Where a person "
    "decides (a result with ask_user), ask the user in chat and wait for their reply: "
    "report it with user_message, word for word. Never answer for them."
)

F = TypeVar("F", bound=Callable[..., Any])
#: The parameter the MCP framework passes the request context in.
CONTEXT_PARAMETER = "ctx"


def mermaid_uri(plan_id: str) -> str:
    """The resource URI of a plan's Mermaid drawing."""
    return f"waygraph://plans/{quote(plan_id, safe='')}/mermaid"


def json_uri(plan_id: str) -> str:
    """The resource URI of a plan's JSON."""
    return f"waygraph://plans/{quote(plan_id, safe='')}/json"


def _mcp_api() -> tuple[type[_Server], type[Exception], type[Exception], type]:
    """(server class, ToolError, ResourceError, Context) of the installed ``mcp`` package.

    mcp 2 renamed FastMCP to MCPServer; the decorators used here are the same in both.
    The server class is waygraph's subclass of it (``mcp_protocol.server_class``).
    """
    require("mcp", purpose="serving MCP")
    try:
        from mcp.server.mcpserver import Context, MCPServer
        from mcp.server.mcpserver.exceptions import ResourceError, ToolError
    except ImportError:
        try:
            # mcp 1.x; imported by name since the installed types may be mcp 2's.
            fast = importlib.import_module("mcp.server.fastmcp")
            errors = importlib.import_module("mcp.server.fastmcp.exceptions")
        except ImportError as exc:
            raise ConfigError(
                f"serving MCP needs the mcp package ({exc}); pip install '{MCP_REQUIREMENT}'"
            ) from None
        server = server_class(fast.FastMCP, errors.ToolError, errors.ResourceError)
        return server, errors.ToolError, errors.ResourceError, fast.Context
    server = server_class(MCPServer, ToolError, ResourceError)
    return server, ToolError, ResourceError, Context


def _tool_errors(func: F) -> F:
    """Turn a WaygraphError into the MCP tool error a client shows as a message."""
    _, ToolError, _, _ = _mcp_api()
    if inspect.iscoroutinefunction(func):

        @wraps(func)
        async def waiting(*args: Any, **kwargs: Any) -> Any:
            try:
                return await func(*args, **kwargs)
            except WaygraphError as exc:
                raise ToolError(str(exc)) from None

        return waiting  # type: ignore[return-value]

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except WaygraphError as exc:
            raise ToolError(str(exc)) from None

    return wrapper  # type: ignore[return-value]


def _with_context(context: type) -> Callable[[F], F]:
    """A decorator: the framework fills the tool's ``ctx`` parameter with the request's ``context``.

    The framework finds that parameter by its annotation when the tool is
    registered; this module's annotations are text (postponed), and the
    Context class is only known once the installed ``mcp`` is imported, so it
    is set here, between the function and ``server.tool()``.
    """

    def annotate(func: F) -> F:
        func.__annotations__[CONTEXT_PARAMETER] = context
        return func

    return annotate


def _run_summary(record: dict[str, Any] | None) -> dict[str, Any] | None:
    if record is None:
        return None
    return {name: record.get(name) for name in RUN_FIELDS}


def _guidance_data(session_id: str, settled: Settled) -> dict[str, Any]:
    guidance = settled.guidance
    return {
        "session_id": session_id,
        "guidance": guidance.text,
        "events": settled.events,
        "run": _run_summary(guidance.run),
        # Set when the report was not applied (the store kept losing races, ...).
        "error": guidance.error,
        # The person's step: what they were asked through the client, and what
        # the model must still ask them in chat.
        "elicited": settled.elicited,
        "ask_user": settled.ask_user,
    }


def build_server(
    library: str | os.PathLike[str] | None = None,
    store: str | None = None,
    *,
    navigator: Navigator | None = None,
    allow_commands: bool = False,
    workspace: str | os.PathLike[str] | None = None,
    tools: ToolsSpec = None,
    guidance: str = "full",
    matching: str = "phrase",
) -> Any:
    """An ``mcp`` server (``MCPServer``; ``FastMCP`` before mcp 2) for ``navigator``.

    Without ``navigator``, one is built from ``library`` and ``store``;
    ``workspace`` is the folder relative ``file_exists`` paths and command
    gates resolve against (default: the server's working folder); ``tools``
    (the client's tool names) and ``guidance`` (``"full"`` or ``"compact"``)
    word the guidance as :class:`~waygraph.Navigator` does; ``matching``
    (``"phrase"``, ``"semantic"`` or ``"both"``) is how ``user_message`` and
    ``match_plans`` pick a plan (docs/matching.md).

    Raises a :class:`~waygraph.errors.WaygraphError` when the library or the
    store does not load.
    """
    # Library and store first: a bad one is reported without waiting for mcp to import.
    nav = (
        navigator
        if navigator is not None
        else Navigator(
            library,
            store=store,
            strict=True,
            allow_commands=allow_commands,
            workspace=workspace,
            tools=tools,
            guidance=guidance,
            matching=matching,
        )
    )

    MCPServer, _, _, Context = _mcp_api()

    from waygraph import __version__
    from waygraph.draw import to_mermaid
    from waygraph.formats.json_library import plan_to_data

    if "version" in inspect.signature(MCPServer).parameters:
        server = MCPServer(name="waygraph", instructions=INSTRUCTIONS, version=__version__)
    else:  # mcp 1's FastMCP passes no version on to its low-level server
        server = MCPServer(name="waygraph", instructions=INSTRUCTIONS)
        server._mcp_server.version = __version__  # type: ignore[attr-defined]
    annotations = importlib.import_module("mcp.types").ToolAnnotations

    def tool(name: str) -> Callable[[F], F]:
        """Register a tool with its annotations (readOnlyHint, ...) from TOOL_SPECS."""
        hints = annotations.model_validate(TOOL_SPECS[name].annotations())
        return server.tool(name=name, title=TOOL_SPECS[name].title, annotations=hints)

    def plan_of(plan_id: str, uri: str) -> Any:
        plan = nav.library.get(plan_id)
        if plan is None:
            # Perhaps added to the library files since the last turn.
            nav.reload()
            plan = nav.library.get(plan_id)
        if plan is None:
            raise protocol_error(
                RESOURCE_NOT_FOUND,
                f"Resource not found: no plan {plan_id!r} in the library (list_plans lists them)",
                uri,
            )
        return plan

    def read_mermaid(plan_id: str) -> str:
        return to_mermaid(plan_of(unquote(plan_id), mermaid_uri(unquote(plan_id))))

    def read_json(plan_id: str) -> str:
        plan = plan_of(unquote(plan_id), json_uri(unquote(plan_id)))
        return json.dumps({"id": plan.id, **plan_to_data(plan)}, indent=2, ensure_ascii=False)

    # ---------------------------------------------------------------- tools

    @tool("list_plans")
    @_tool_errors
    def list_plans() -> dict[str, Any]:
        """Every plan in the library: id, name, description, domains, triggers, shape, resources."""
        plans = []
        for plan in nav.library:
            plans.append(
                {
                    "id": plan.id,
                    "name": plan.title,
                    "description": plan.description,
                    "domains": list(plan.domains),
                    "triggers": list(plan.triggers),
                    "trigger_threshold": plan.trigger_threshold,
                    "linear": bool(plan.linear),
                    "nodes": len(plan.graph.nodes),
                    "mermaid": mermaid_uri(plan.id),
                    "json": json_uri(plan.id),
                }
            )
        return {"plans": plans}

    @tool("match_plans")
    @_tool_errors
    def match_plans(
        message: str, domain: str | None = None, allowed_plans: list[str] | None = None
    ) -> dict[str, Any]:
        """Which plan `message` would activate (none is started), and why others would not.

        Matched as `user_message` matches: by triggers, by meaning, or both (the
        server's matching); a match by meaning has `similarity` and `matched_by`.
        """
        results = nav.match(message, domain or None, allowed_plans)
        winner = next((m for m in results if m.activates), None)
        return {
            "activates": winner.plan_id if winner else None,
            "matching": nav.matching,
            "matches": [m.to_dict() for m in results],
        }

    @tool("start_plan")
    @_with_context(Context)
    @_tool_errors
    async def start_plan(session_id: str, plan_id: str, ctx: Any = None) -> dict[str, Any]:
        """Start plan `plan_id` in session `session_id` (a running plan there is aborted)."""
        guidance = nav.start(session_id, plan_id)
        return _guidance_data(session_id, await settle(ctx, nav, session_id, guidance))

    @tool("user_message")
    @_with_context(Context)
    @_tool_errors
    async def user_message(
        session_id: str,
        message: str,
        domain: str | None = None,
        allowed_plans: list[str] | None = None,
        ctx: Any = None,
    ) -> dict[str, Any]:
        """Report the user's own message, word for word (never words of your own).

        With no plan running, the best matching plan starts. While a plan waits
        for the user (a result's `ask_user`, or a question you asked), the
        message is their answer.
        """
        guidance = nav.turn(
            session_id, user_message=message, domain=domain, allowed_plans=allowed_plans
        )
        return _guidance_data(session_id, await settle(ctx, nav, session_id, guidance))

    @tool("report_tool_result")
    @_with_context(Context)
    @_tool_errors
    async def report_tool_result(
        session_id: str,
        output: str,
        tool_name: str | None = None,
        exit_code: int | None = None,
        call_id: str | None = None,
        source: str = "tool",
        # A JSON object as well as text: MCP frameworks decode JSON-looking strings.
        arguments: str | dict[str, Any] | None = None,
        final: bool = False,
        asks_user: bool | None = None,
        ctx: Any = None,
    ) -> dict[str, Any]:
        """Report a tool's output: it is verified against the current node and the run moves on.

        Give `exit_code` when known (without it an exit-code check cannot decide;
        text in the output is never read as one), `call_id` so a result reported
        twice counts once, and `arguments` (the command or arguments: a step bound
        to its command judges only that command's output). `source`: "tool" for a
        tool's real output, "host" for a check the client ran itself, "model" for
        words the model wrote (recorded, never evidence; `final` true when it is
        the model's final reply to the user, `asks_user` true when that reply
        asks the user something, false when it does not; left out, a reply whose
        last sentence ends with "?" does). A person's answer is never reported
        here: it is the user's message (user_message).
        """
        if source not in REPORT_SOURCES:
            raise WaygraphError(
                f"source {source!r} is not accepted: use one of {', '.join(REPORT_SOURCES)}. "
                "Only a person answers for a person: their reply is the user's message "
                "(user_message), or the client asks them itself"
            )
        if nav.state(session_id) is None:
            raise InputError(
                f"no plan is running in session {session_id!r}, so there is nothing to verify "
                "this result against: start one with start_plan (a plan id from list_plans) "
                "or report the user's request with user_message"
            )
        guidance = nav.turn(
            session_id,
            tool_output=output,
            tool_name=tool_name,
            exit_code=exit_code,
            observation_id=call_id,
            tool_args=arguments,
            source=source,
            final=final,
            asks_user=asks_user,
        )
        return _guidance_data(session_id, await settle(ctx, nav, session_id, guidance))

    @tool("get_status")
    @_tool_errors
    def get_status(session_id: str) -> dict[str, Any]:
        """The session's latest run (running or finished) and the guidance for the model.

        `ask_user` is set while the run waits for a person's answer that the
        model must ask for in chat.
        """
        record = nav.state(session_id)
        waiting = waiting_for(nav, record)
        return {
            "session_id": session_id,
            "run": _run_summary(record),
            "guidance": nav.context(session_id),
            "ask_user": ask_user(waiting) if waiting is not None else None,
        }

    @tool("reset_session")
    @_tool_errors
    def reset_session(session_id: str) -> dict[str, Any]:
        """Abort the session's running plan and forget it; finished runs stay in the store."""
        before = nav.state(session_id)
        nav.reset(session_id)
        running = before is not None and before.get("status") == "running"
        aborted = before.get("plan_id") if before is not None and running else None
        return {"session_id": session_id, "aborted": aborted}

    # ---------------------------------------------------------------- resources

    for plan in nav.library:
        server.resource(
            mermaid_uri(plan.id),
            name=f"{plan.id} (Mermaid)",
            description=f"{plan.title}: the plan drawn as a Mermaid flowchart",
            mime_type="text/vnd.mermaid",
        )(_reader(read_mermaid, plan.id, "mermaid"))
        server.resource(
            json_uri(plan.id),
            name=f"{plan.id} (JSON)",
            description=f"{plan.title}: the plan as waygraph JSON",
            mime_type="application/json",
        )(_reader(read_json, plan.id, "json"))
    # Plans added to the library after start-up are readable too.
    server.resource(
        "waygraph://plans/{plan_id}/mermaid",
        name="plan (Mermaid)",
        description="Any plan drawn as a Mermaid flowchart",
        mime_type="text/vnd.mermaid",
    )(read_mermaid)
    server.resource(
        "waygraph://plans/{plan_id}/json",
        name="plan (JSON)",
        description="Any plan as waygraph JSON",
        mime_type="application/json",
    )(read_json)
    return server


def _reader(read: Callable[[str], str], plan_id: str, kind: str) -> Callable[[], str]:
    """A named zero-argument reader of one plan, as MCPServer's static resources need."""

    def reader() -> str:
        return read(quote(plan_id, safe=""))

    reader.__name__ = reader.__qualname__ = f"read_{kind}_{plan_id}"
    return reader


def serve(
    library: str | os.PathLike[str] | None = None,
    store: str | None = None,
    *,
    allow_commands: bool = False,
    workspace: str | os.PathLike[str] | None = None,
    matching: str = "phrase",
) -> None:
    """Run the MCP server on stdio until the client disconnects.

    The library and store are opened first, so a broken one raises a
    :class:`~waygraph.errors.WaygraphError` before anything is served.
    """
    server = build_server(
        library, store, allow_commands=allow_commands, workspace=workspace, matching=matching
    )
    server.run("stdio")
