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
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from waygraph.navigator import Navigator
from waygraph.server.live import MAX_POLL, PollingFeed, Watch, poll_delay
from waygraph.server.security import Gate
from waygraph.server.streams import StreamGuard, StreamSlots, stream_limit

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


# ------------------------------------------------------------ stream limits


def test_slots_count_in_all_and_per_client_and_come_back() -> None:
    slots = StreamSlots(total=3, per_client=2)
    assert [slots.take("a"), slots.take("a"), slots.take("a")] == [None, None, "client"]
    assert slots.take("b") is None
    assert slots.take("c") == "total"
    slots.give_back("a")
    assert slots.take("c") is None and slots.open == 3
    assert stream_limit(1000, 1000) == 500  # never more than half the connections


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Served:
    """``waygraph serve`` in a subprocess on a SQLite store holding session ``s1``."""

    def __init__(self, tmp_path: Path, *options: str) -> None:
        db = tmp_path / "runs.db"
        nav = Navigator(store=f"sqlite:///{db}", strict=True)
        nav.turn("s1", user_message="fix bug please", domain="bugfix")
        nav.close()
        self.port = free_port()
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "waygraph",
                "serve",
                "--port",
                str(self.port),
                *options,
                "--store",
                f"sqlite:///{db}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 60
        while True:
            assert self.process.poll() is None, self.process.stderr and self.process.stderr.read()
            try:
                if httpx.get(f"{self.base}/api/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "waygraph serve did not start"
            time.sleep(0.1)

    def stream(self, source: str = "127.0.0.1") -> tuple[socket.socket, int, dict[str, str]]:
        """A held-open stream of ``s1`` from ``source``: the socket, status and headers."""
        sock = socket.create_connection(("127.0.0.1", self.port), 30, (source, 0))
        sock.sendall(
            f"GET /api/sessions/s1/stream HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n\r\n".encode()
        )
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(4096)
            assert chunk, f"closed before the headers: {data!r}"
            data += chunk
        head = data.split(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
        headers = dict(line.split(": ", 1) for line in head[1:])
        return sock, int(head[0].split()[1]), {k.lower(): v for k, v in headers.items()}

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        if self.process.stderr is not None:
            self.process.stderr.close()


def test_streams_over_the_cap_are_refused_while_health_and_the_api_answer(
    tmp_path: Path,
) -> None:
    cap = 10
    served = Served(tmp_path, "--max-streams", str(cap), "--max-streams-per-client", "100")
    held: list[socket.socket] = []
    try:
        for _ in range(cap):
            sock, status, _headers = served.stream()
            held.append(sock)
            assert status == 200
        refused = []
        for _ in range(5):
            sock, status, headers = served.stream()
            held.append(sock)
            refused.append((status, headers.get("retry-after")))
        assert refused == [(503, "5")] * 5
        # The cap keeps the API reachable while every allowed stream is open.
        assert httpx.get(f"{served.base}/api/health", timeout=10).status_code == 200
        assert httpx.get(f"{served.base}/api/sessions", timeout=10).status_code == 200
        for sock in held:
            sock.close()
        held.clear()
        # Closed streams give their slots back.
        deadline = time.monotonic() + 30
        while True:
            sock, status, _headers = served.stream()
            held.append(sock)
            if status == 200:
                break
            assert time.monotonic() < deadline, "closed streams kept their slots"
            time.sleep(0.2)
    finally:
        for sock in held:
            sock.close()
        served.close()


def test_one_client_over_its_cap_gets_429_and_others_still_stream(tmp_path: Path) -> None:
    served = Served(tmp_path, "--max-streams", "20", "--max-streams-per-client", "3")
    held: list[socket.socket] = []
    try:
        for _ in range(3):
            sock, status, _headers = served.stream()
            held.append(sock)
            assert status == 200
        sock, status, headers = served.stream()
        held.append(sock)
        assert (status, headers.get("retry-after")) == (429, "5")
        sock, status, _headers = served.stream(source="127.0.0.2")  # another client
        held.append(sock)
        assert status == 200
    finally:
        for sock in held:
            sock.close()
        served.close()


# ------------------------------------------------------------ polling


def test_an_idle_stream_backs_off_and_a_busy_one_does_not() -> None:
    assert [poll_delay(n) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert poll_delay(10_000) == MAX_POLL  # no overflow however long it idles
    assert poll_delay(3, base=0.05, longest=4.0) == 0.4
    feed = PollingFeed(0.5)
    watch = Watch(feed, "s1")
    for _ in range(3):
        watch.read(False)
    assert watch.idle == 3
    watch.read(True)  # events came: back to the base interval
    assert watch.idle == 0


def test_a_listening_feed_costs_no_reads_and_wakes_on_a_notice() -> None:
    async def scenario() -> tuple[bool, bool, bool]:
        feed = PollingFeed(0.01)
        feed.listening = True  # as PostgresFeed while its LISTEN connection is up
        with feed.watch("s1") as watch:
            watch.reading()
            watch.read(False)
            idle = await watch.wait(0.2)  # far past its poll delay: still no read
            watch.reading()
            feed.touch("s1")  # a notice during the read is not lost
            woken = await watch.wait(60)
            feed.listening = False  # the connection dropped: poll again
            watch.reading()
            watch.read(False)
            polled = await watch.wait(60)
        return idle, woken, polled

    assert asyncio.run(scenario()) == (False, True, True)
    feed = PollingFeed()
    with feed.watch("s1"):
        pass
    feed.touch("s1")  # nobody watches any more: nothing to do, nothing kept
    assert not feed._watches


def test_a_write_served_here_wakes_its_session_streams() -> None:
    touched: list[str | None] = []

    class Feed(PollingFeed):
        def touch(self, session_id: str | None) -> None:
            touched.append(session_id)

    guard = StreamGuard(_endpoint, slots=StreamSlots(), feed=Feed())

    async def call(method: str, path: str) -> None:
        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            pass

        scope = {"type": "http", "method": method, "path": path, "headers": []}
        await guard(scope, receive, send)

    for method, path in [
        ("POST", "/api/sessions/s1/turn"),
        ("POST", "/api/sessions/s2/answer"),
        ("DELETE", "/api/sessions/s3"),
        ("GET", "/api/sessions/s4"),  # reads wake nothing
        ("POST", "/api/match"),
    ]:
        asyncio.run(call(method, path))
    assert touched == ["s1", "s2", "s3"]


def test_the_api_document_names_the_stream_refusals() -> None:
    from fastapi.testclient import TestClient

    from waygraph.server import create_app

    with TestClient(create_app(store="memory://")) as client:
        document = client.get("/openapi.json").json()
    answers = document["paths"]["/api/sessions/{session_id}/stream"]["get"]["responses"]
    assert {"429", "503"} <= set(answers)
