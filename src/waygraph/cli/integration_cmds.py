"""Integration commands: install, uninstall, mcp.

``waygraph install agent-zero PATH`` and ``waygraph uninstall agent-zero PATH``
put waygraph's extensions into an Agent-Zero folder and take them out again
(see :mod:`waygraph.integrations.agent_zero`); ``waygraph mcp`` serves plans
over the Model Context Protocol on stdio (see
:mod:`waygraph.integrations.mcp_server`). Every failure is one line on stderr
and exit code 2; nothing is left written half way.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from waygraph._extras import require
from waygraph.cli.app import AllowCommandsOption, LibraryOption, app, console, friendly_errors
from waygraph.errors import ConfigError

__all__ = ["install", "mcp", "uninstall"]


class Target(StrEnum):
    """Agents waygraph can be installed into."""

    agent_zero = "agent-zero"


class LayoutChoice(StrEnum):
    auto = "auto"
    v09 = "0.9"
    v1x = "1.x"


TargetArgument = Annotated[Target, typer.Argument(help="The agent to install into or remove from.")]
PathArgument = Annotated[
    Path, typer.Argument(help="The agent's folder (for Agent-Zero, the one holding agent.py).")
]
InstallStoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        help="Store URL: sqlite:///PATH, file://DIR, postgresql://... "
        "Default: SQLite in the Agent-Zero folder (usr/waygraph/waygraph.db).",
    ),
]
MatchingOption = Annotated[
    str,
    typer.Option(
        "--matching",
        help="How a user message starts a plan: phrase (its triggers), semantic (its "
        "meaning; pip install 'waygraph[semantic]') or both.",
    ),
]
ServeStoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        help="Store URL: sqlite:///PATH, file://DIR, memory://, postgresql://... "
        "Default: $WAYGRAPH_STORE, else SQLite in your user data folder.",
        envvar="WAYGRAPH_STORE",
    ),
]


@app.command()
@friendly_errors
def install(
    target: TargetArgument,
    path: PathArgument,
    layout: Annotated[
        LayoutChoice,
        typer.Option(
            help="Agent-Zero layout. auto: 0.9 when python/extensions/ exists, "
            "1.x when extensions/python/ does."
        ),
    ] = LayoutChoice.auto,
    library: Annotated[
        Path | None,
        typer.Option(
            "--library",
            "-l",
            help="Plan library (a file or folder) to copy in. Default: the shipped plans.",
        ),
    ] = None,
    link: Annotated[
        bool, typer.Option("--link", help="Reference --library where it is instead of copying it.")
    ] = False,
    store: InstallStoreOption = None,
    compat: Annotated[
        bool,
        typer.Option(
            "--compat",
            help="Write the guidance under the HTN plan selector's extras key "
            "(htn_active_plan) instead of waygraph_plan.",
        ),
    ] = False,
    matching: MatchingOption = "phrase",
) -> None:
    """Install waygraph into an agent (all or nothing; running it again changes nothing)."""
    from waygraph.integrations.agent_zero import install as install_agent_zero

    report = install_agent_zero(
        path,
        layout=layout.value,
        library=library,
        link_library=link,
        store=store,
        compat=compat,
        matching=matching,
    )
    console.print(report.summary(), markup=False, highlight=False, soft_wrap=True)


@app.command()
@friendly_errors
def uninstall(target: TargetArgument, path: PathArgument) -> None:
    """Remove what `waygraph install` added and restore what it replaced."""
    from waygraph.integrations.agent_zero import uninstall as uninstall_agent_zero

    report = uninstall_agent_zero(path)
    console.print(report.summary(), markup=False, highlight=False, soft_wrap=True)


@app.command()
@friendly_errors
def mcp(
    library: LibraryOption = None,
    store: ServeStoreOption = None,
    allow_commands: AllowCommandsOption = False,
    workspace: Annotated[
        Path | None,
        typer.Option(
            "--workspace",
            help="Folder where relative file checks and command gates run "
            "(default: the current folder).",
        ),
    ] = None,
    matching: MatchingOption = "phrase",
) -> None:
    """Serve waygraph over the Model Context Protocol on stdio (for any MCP client).

    Tools list and match plans, start one, report tool results, show status
    and guidance, and reset a session; each plan is readable as a resource
    (its Mermaid drawing and its JSON). Runs persist in the store.
    """
    from waygraph.integrations.mcp_server import serve

    if workspace is not None and not workspace.expanduser().is_dir():
        raise ConfigError(f"--workspace {workspace}: no such folder")
    # Before the store is opened (and created): without mcp nothing is written.
    require("mcp", purpose="waygraph mcp")
    from waygraph.match.selector import PlanSelector

    PlanSelector(matching)  # a bad mode or a missing extra: one line, before serving
    serve(
        library=library,
        store=store,
        allow_commands=allow_commands,
        workspace=workspace,
        matching=matching,
    )
