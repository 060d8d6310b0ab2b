"""``waygraph serve``: the HTTP API and live dashboard (needs the ``serve`` extra)."""

from __future__ import annotations

import errno
import socket
from pathlib import Path
from typing import Annotated

import typer

from waygraph._extras import require
from waygraph.cli.app import (
    AllowCommandsOption,
    LibraryOption,
    app,
    err_console,
    friendly_errors,
    load,
)
from waygraph.cli.integration_cmds import MatchingOption
from waygraph.errors import ConfigError


@app.command()
@friendly_errors
def serve(
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="Store URL (sqlite:///PATH, file://DIR, memory://, postgresql://...). "
            "Default: the user data folder's SQLite file.",
            envvar="WAYGRAPH_STORE",
        ),
    ] = None,
    library: LibraryOption = None,
    host: Annotated[str, typer.Option(help="Address to bind; not loopback needs --token.")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")] = 8765,
    token: Annotated[
        str | None,
        typer.Option(
            help="Bearer token required on every request (env WAYGRAPH_TOKEN).",
            envvar="WAYGRAPH_TOKEN",
        ),
    ] = None,
    max_body: Annotated[
        int, typer.Option("--max-body", min=1, help="Largest request body in bytes.")
    ] = 1024 * 1024,
    allow_commands: AllowCommandsOption = False,
    max_streams: Annotated[
        int,
        typer.Option(
            "--max-streams",
            min=1,
            help="Event streams open at once, in all (at most half the connection limit); "
            "more are refused with 503.",
        ),
    ] = 256,
    max_streams_per_client: Annotated[
        int,
        typer.Option(
            "--max-streams-per-client",
            min=1,
            help="Event streams open at once from one client address; more are refused with 429.",
        ),
    ] = 32,
    workspace: Annotated[
        Path | None,
        typer.Option(
            "--workspace",
            help="Also list the session plans under DIR/.sessions (the plans models declare "
            "for themselves, docs/sessions.md).",
        ),
    ] = None,
    matching: MatchingOption = "phrase",
) -> None:
    """Serve the HTTP API and the live dashboard over a store.

    Example: waygraph serve --store sqlite:///runs.db
    """
    uvicorn = require("serve", "uvicorn", "fastapi", purpose="waygraph serve")
    from waygraph.navigator import Navigator, default_store_url
    from waygraph.server import create_app
    from waygraph.server.protocol import connection_limit, guarded_protocol
    from waygraph.server.security import LOOPBACK_HOSTS, is_loopback
    from waygraph.server.streams import stream_limit

    if not is_loopback(host) and not token:
        raise ConfigError(
            f"refusing to bind {host}: it is reachable from other machines, so --token is "
            "required (or WAYGRAPH_TOKEN); every request must then send it"
        )
    if token is not None and len(token) < 8:
        raise ConfigError("--token must be at least 8 characters")
    navigator = Navigator(
        load(library),
        store=store or default_store_url(),
        strict=True,
        allow_commands=allow_commands,
        matching=matching,
    )
    # Without a token, only loopback Host names are served (no DNS rebinding).
    allowed = None if token else frozenset(LOOPBACK_HOSTS | {host.strip("[]").lower()})
    connections = connection_limit()
    application = create_app(
        navigator,
        token=token,
        max_body=max_body,
        allowed_hosts=allowed,
        workspace=workspace,
        # Streams never fill the connection limit: the API and health keep room.
        max_streams=stream_limit(max_streams, connections),
        max_streams_per_client=max_streams_per_client,
    )
    shown = f"[{host}]" if ":" in host else host
    try:
        # Bound here, before saying where: a taken port is one clear line, and
        # "serving at" is only printed once the address is ours.
        listening = _bind(host, port)
    except OSError as exc:
        navigator.close()
        raise ConfigError(
            f"cannot listen on {shown}:{port}: {exc.strerror or exc}"
            + (
                " (another program, or another waygraph serve, uses it; pick one with --port)"
                if exc.errno == errno.EADDRINUSE
                else ""
            )
        ) from None
    err_console.print(
        f"waygraph serving {navigator.store.url} with {len(navigator.library)} plans at "
        f"http://{shown}:{port}/" + (" (open it once with ?token=YOUR_TOKEN)" if token else ""),
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    try:
        config = uvicorn.Config(
            application,
            log_level="warning",
            server_header=False,
            # Slow clients cannot lock others out (see waygraph.server.protocol).
            http=guarded_protocol(max_connections=connections),
            timeout_keep_alive=5,
            timeout_graceful_shutdown=5,
        )
        uvicorn.Server(config).run(sockets=[listening])
    finally:
        navigator.close()


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port`` (IPv6 when the host is an IPv6 address)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listening = socket.socket(family, socket.SOCK_STREAM)
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind((host.strip("[]"), port))
        listening.listen(2048)
    except OSError:
        listening.close()
        raise
    listening.set_inheritable(True)
    return listening
