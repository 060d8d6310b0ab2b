"""Issue 13, defects 7-9: a server that holds.

Slow clients cannot lock others out (a header deadline and a connection
limit that evicts the slowest), out-of-range paging is a 422, every 405 names
the allowed methods, and pages carry a Content-Security-Policy.
"""

from __future__ import annotations

import asyncio
import resource
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import uvicorn
from fastapi.testclient import TestClient

from waygraph.navigator import Navigator
from waygraph.server import create_app
from waygraph.server.protocol import guarded_protocol
from waygraph.server.security import CONTENT_SECURITY_POLICY

SLOW_CLIENTS = 150


class ServerThread:
    """uvicorn serving the app on a free loopback port, in a thread."""

    def __init__(self, *, header_timeout: float, max_connections: int) -> None:
        app = create_app(Navigator(store="memory://", strict=True))
        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=0,
            log_level="critical",
            http=guarded_protocol(header_timeout=header_timeout, max_connections=max_connections),
            lifespan="off",
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> int:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        return int(self.server.servers[0].sockets[0].getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def slow_clients(port: int, count: int) -> list[socket.socket]:
    """Connections that send half a request's headers and then nothing."""
    sockets = []
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        sockets.append(s)
    return sockets


@pytest.fixture
def closing() -> Iterator[list[socket.socket]]:
    opened: list[socket.socket] = []
    yield opened
    for s in opened:
        s.close()


def test_slow_clients_cannot_lock_out_a_real_one(closing: list[socket.socket]):
    # Fewer connections allowed than slow clients: each new one evicts the slowest.
    with ServerThread(header_timeout=30, max_connections=50) as port:
        closing += slow_clients(port, SLOW_CLIENTS)
        for _ in range(5):
            # Locked out, the request would time out (httpx raises) instead of answering.
            reply = httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=5)
            assert reply.status_code == 200


def test_a_client_that_never_finishes_its_headers_is_dropped(closing: list[socket.socket]):
    with ServerThread(header_timeout=0.5, max_connections=100) as port:
        (slow,) = slow_clients(port, 1)
        closing.append(slow)
        slow.settimeout(5)
        assert slow.recv(100) == b""  # closed by the server, without an answer


def test_a_keep_alive_connection_gets_the_deadline_again(closing: list[socket.socket]):
    with ServerThread(header_timeout=0.5, max_connections=100) as port:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        closing.append(s)
        s.sendall(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert s.recv(4096).startswith(b"HTTP/1.1 200")
        s.sendall(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        # Closed by the server at its 0.5 s deadline; without one, recv raises at
        # the socket's 5 s timeout and the test fails.
        while s.recv(4096):
            pass


@pytest.fixture
def client() -> Iterator[TestClient]:
    nav = Navigator(store="memory://", strict=True)
    nav.turn("s", user_message="I need to fix a bug in the login module")
    with TestClient(create_app(nav)) as c:
        yield c


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("DELETE", "/api/plans", "GET"),
        ("PUT", "/api/sessions/s/turn", "POST"),
        ("POST", "/api/health", "GET"),
        ("PATCH", "/api/sessions/s", "DELETE, GET"),
    ],
)
def test_a_405_names_the_allowed_methods(client: TestClient, method: str, path: str, allowed: str):
    reply = client.request(method, path)
    assert reply.status_code == 405
    assert reply.headers["allow"] == allowed
    assert reply.json()["message"] == f"{method} is not allowed here; use {allowed}"


@pytest.mark.parametrize("query", ["after=9223372036854775808", "after=-1", "limit=0"])
def test_out_of_range_paging_is_a_422_not_a_500(client: TestClient, query: str):
    reply = client.get(f"/api/sessions/s/events?{query}")
    assert reply.status_code == 422
    assert query.split("=")[0] in reply.json()["message"]
    stream = client.get(f"/api/sessions/s/stream?{query}") if "after" in query else None
    assert stream is None or stream.status_code == 422


def test_pages_carry_a_content_security_policy(client: TestClient):
    for path in ("/", "/api/health", "/static/dashboard.js"):
        reply = client.get(path)
        assert reply.headers["x-content-type-options"] == "nosniff"
        assert reply.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert "script-src 'self';" in CONTENT_SECURITY_POLICY


def test_a_body_that_never_finishes_is_answered_408(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr("waygraph.server.security.BODY_TIMEOUT", 0.3)
    app = create_app(Navigator(store="memory://", strict=True))
    sent: list[dict] = []

    async def receive() -> dict:
        await asyncio.sleep(3600)
        return {}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/api/sessions/s/turn",
        "raw_path": b"/api/sessions/s/turn",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
        "scheme": "http",
        "root_path": "",
        "http_version": "1.1",
    }
    asyncio.run(asyncio.wait_for(app(scope, receive, send), 10))
    assert sent[0]["status"] == 408


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_waygraph_serve_outlives_more_slow_clients_than_it_has_file_descriptors(
    closing: list[socket.socket],
):
    """The defect as found: slow clients beyond the open-file limit locked everyone out."""
    port = _free_port()

    def low_file_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    server = subprocess.Popen(
        [sys.executable, "-m", "waygraph", "serve", "--store", "memory://", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=low_file_limit,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "waygraph serve did not start"
                time.sleep(0.1)
        closing += slow_clients(port, 300)
        for _ in range(5):
            reply = httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=5)
            assert reply.status_code == 200
    finally:
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
            raise


def test_a_taken_port_is_one_clear_line_not_a_traceback():
    port = _free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen(1)
        command = [sys.executable, "-m", "waygraph", "serve", "--store", "memory://"]
        done = subprocess.run(
            [*command, "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and "serving" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) <= 2, done.stderr  # rich may wrap one line at 80 columns
    assert f"cannot listen on 127.0.0.1:{port}" in " ".join(lines)
    assert "--port" in " ".join(lines)
