"""``waygraph serve``: the Navigator over HTTP, with a live dashboard.

Needs the ``serve`` extra (``pip install 'waygraph[serve]'``: FastAPI and
uvicorn). :func:`create_app` builds the ASGI app; the ``waygraph serve``
command runs it with uvicorn. See ``docs/server.md``.

Example:
    >>> from fastapi.testclient import TestClient
    >>> from waygraph.server import create_app
    >>> client = TestClient(create_app(store="memory://"))
    >>> client.post("/api/sessions/s1/turn", json={"user_message": "fix bug",
    ...             "domain": "bugfix"}).json()["run"]["current_node"]
    'reproduce'
"""

from __future__ import annotations

from waygraph._extras import require

# Before FastAPI is imported: without the extra, one line naming it.
require("serve", purpose="waygraph.server")

from waygraph.server.app import Settings, create_app  # noqa: E402

__all__ = ["Settings", "create_app"]
