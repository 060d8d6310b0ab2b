"""Issue 33, item 5: the server's redirect stays on the server; streams cannot lock it up.

- ``?token=`` redirects only to a path on this server (``//evil.example/``
  used to be answered with a 303 to another site);
- event streams have their own cap, per client and in all, below the
  connection limit: a stream over it is refused at once while the API and
  ``/api/health`` keep answering;
- an idle stream reads the store on a backoff schedule (not every 0.5 s),
  and not at all while a PostgreSQL feed listens.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from waygraph.server.security import Gate

TOKEN = "s3cret-token"


async def _endpoint(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def _login(path: str, query: bytes = b"token=" + TOKEN.encode()) -> tuple[int, str]:
    """Status and Location of ``GET path?query`` through the gate (raw ASGI: any path)."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "GET",
        "path": path,
        "root_path": "",
        "query_string": query,
        "headers": [(b"host", b"127.0.0.1:8765")],
    }
    asyncio.run(Gate(_endpoint, token=TOKEN)(scope, receive, send))
    start = sent[0]
    headers = {k.decode(): v.decode() for k, v in start["headers"]}
    return start["status"], headers.get("location", "")


@pytest.mark.parametrize(
    ("path", "location"),
    [
        ("//evil.example/", "/evil.example/"),  # the reported case
        ("///evil.example/x", "/evil.example/x"),
        ("/\\evil.example/", "/evil.example/"),  # browsers read \ as /
        ("\\\\evil.example", "/evil.example"),
        ("/\\/\\evil.example", "/evil.example"),
        ("http://evil.example/", "/http://evil.example/"),  # absolute-form request line
        ("/\t/evil.example", "/%09/evil.example"),  # a tab browsers strip stays encoded
        ("/plans", "/plans"),
    ],
)
def test_token_login_redirects_only_to_a_path_on_this_server(path: str, location: str) -> None:
    status, target = _login(path)
    assert status == 303
    assert target == location
    assert target.startswith("/") and not target.startswith(("//", "/\\"))


def test_token_login_keeps_the_other_query_parameters() -> None:
    status, target = _login("//evil.example/sessions", b"token=" + TOKEN.encode() + b"&q=a%20b")
    assert (status, target) == (303, "/evil.example/sessions?q=a+b")


def test_a_wrong_token_is_not_redirected_anywhere() -> None:
    status, target = _login("//evil.example/", b"token=guess")
    assert status == 401 and target == ""
