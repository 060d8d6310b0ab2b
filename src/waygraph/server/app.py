"""The FastAPI application: API, dashboard, static files, security gate, live feed.

Example:
    >>> from fastapi.testclient import TestClient
    >>> app = create_app(store="memory://")
    >>> TestClient(app).get("/api/plans").json()["plans"][0]["id"]
    'bugfix_workflow'
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from waygraph import __version__
from waygraph.library import Library
from waygraph.navigator import Navigator
from waygraph.server.api import router as api_router
from waygraph.server.errors import AsciiJSONResponse, install_handlers
from waygraph.server.live import open_feed
from waygraph.server.outbox import router as outbox_router
from waygraph.server.pages import router as pages_router
from waygraph.server.pools import Pools
from waygraph.server.security import DEFAULT_MAX_BODY, Gate
from waygraph.server.service import Service
from waygraph.server.streams import (
    DEFAULT_MAX_STREAMS,
    DEFAULT_MAX_STREAMS_PER_CLIENT,
    StreamGuard,
    StreamSlots,
)
from waygraph.store import Store

__all__ = ["STATIC", "Settings", "create_app"]

STATIC = Path(__file__).parent / "static"

DESCRIPTION = """\
The waygraph Navigator over HTTP: plans, matching, sessions, turns and live
events. Every error is `{"error": code, "message": text}`. With `--token`,
send `Authorization: Bearer TOKEN`. See docs/server.md.
"""


@dataclass(frozen=True, slots=True)
class Settings:
    """What the routes and pages need to know about how the server runs."""

    token: str | None = None
    max_body: int = DEFAULT_MAX_BODY
    poll_interval: float = 0.5
    heartbeat: float = 15.0
    #: Seconds between the dashboard's refreshes of the sessions table.
    refresh: float = 2.0


def create_app(
    navigator: Navigator | None = None,
    *,
    library: Library | str | os.PathLike[str] | None = None,
    store: str | Store | None = None,
    token: str | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    allowed_hosts: frozenset[str] | None = None,
    poll_interval: float = 0.5,
    heartbeat: float = 15.0,
    refresh: float = 2.0,
    workspace: str | os.PathLike[str] | None = None,
    max_streams: int = DEFAULT_MAX_STREAMS,
    max_streams_per_client: int = DEFAULT_MAX_STREAMS_PER_CLIENT,
) -> FastAPI:
    """The ASGI app serving ``navigator`` (or a new strict one on ``library`` and ``store``).

    ``token``: required bearer token (None: no token, for loopback only).
    ``max_body``: largest request body in bytes. ``allowed_hosts``: Host
    header names accepted (None: any). ``poll_interval``: seconds between
    store reads of a live stream that just got events (stores without
    notifications; an idle stream backs off to 4 s).
    ``heartbeat``: seconds between keep-alive comments on idle streams.
    ``refresh``: seconds between the dashboard's sessions-table refreshes.
    ``workspace``: the folder whose session plans (``.sessions``) the
    dashboard lists too (None: none). ``max_streams``,
    ``max_streams_per_client``: event streams open at once, in all and per
    client address (more are refused with 503 or 429, see
    :mod:`waygraph.server.streams`).
    """
    owned = navigator is None
    nav = navigator if navigator is not None else Navigator(library, store=store, strict=True)
    settings = Settings(token, max_body, poll_interval, heartbeat, refresh)
    feed = open_feed(nav.store, poll_interval)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        feed.start()
        try:
            yield
        finally:
            feed.stop()
            if owned:
                nav.close()

    app = FastAPI(
        title="waygraph",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        default_response_class=AsciiJSONResponse,
        # The interactive docs pages load scripts from a CDN; the server must work offline.
        docs_url=None,
        redoc_url=None,
    )
    app.state.service = Service(nav)
    app.state.settings = settings
    app.state.workspace = workspace
    app.state.feed = feed
    app.state.streams = StreamSlots(max_streams, max_streams_per_client)
    # Turns (and their command gates) and stream reads never take the request threads.
    app.state.pools = Pools()
    install_handlers(app)
    app.include_router(api_router)
    app.include_router(outbox_router)
    app.include_router(pages_router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    # Inside the gate: a stream is counted only once its request is let in.
    app.add_middleware(StreamGuard, slots=app.state.streams, feed=feed)
    app.add_middleware(Gate, token=token, max_body=max_body, allowed_hosts=allowed_hosts)
    return app
