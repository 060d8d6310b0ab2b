"""The HTTP API and dashboard pages through FastAPI's test client; live SSE on a real server."""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi.testclient import TestClient

from waygraph.navigator import Navigator
from waygraph.server import create_app
from waygraph.server.security import COOKIE

BUG = {"user_message": "please fix bug in the login page", "domain": "bugfix"}


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(create_app(store="memory://"), base_url="http://127.0.0.1") as c:
        yield c


def error_of(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert set(body) >= {"error", "message"}, body
    return body


# ---------------------------------------------------------------- plans and match


def test_plans_list_and_one_plan_in_every_format(client: TestClient):
    plans = client.get("/api/plans").json()["plans"]
    assert plans[0]["id"] == "bugfix_workflow" and plans[0]["nodes"] == 11
    doc = client.get("/api/plans/bugfix_workflow").json()
    assert doc["id"] == "bugfix_workflow" and doc["graph"]["start"] == "start"
    mermaid = client.get("/api/plans/bugfix_workflow?format=mermaid")
    assert mermaid.headers["content-type"].startswith("text/plain")
    assert mermaid.text.startswith("flowchart TD")
    svg = client.get("/api/plans/bugfix_workflow", params={"format": "svg"})
    assert svg.headers["content-type"] == "image/svg+xml" and svg.text.startswith("<svg")


def test_unknown_plan_and_bad_format(client: TestClient):
    missing = client.get("/api/plans/nope")
    assert missing.status_code == 404 and error_of(missing)["error"] == "plan_not_found"
    bad = client.get("/api/plans/bugfix_workflow?format=png")
    assert bad.status_code == 422 and error_of(bad)["problems"][0]["loc"] == ["query", "format"]


def test_match_says_which_plan_and_why(client: TestClient):
    answer = client.post("/api/match", json={"message": "fix bug in login", "domain": "bugfix"})
    assert answer.json()["activates"] == "bugfix_workflow"
    miss = client.post("/api/match", json={"message": "fix bug in login", "domain": "git"})
    assert miss.json()["activates"] is None
    assert "domain 'git'" in miss.json()["matches"][0]["reason"]


# ---------------------------------------------------------------- sessions


def test_turns_sessions_events_and_reset(client: TestClient):
    first = client.post("/api/sessions/chat-1/turn", json=BUG).json()
    assert first["run"]["current_node"] == "reproduce" and "reproduce" in first["text"]
    assert first["events"][0]["type"] == "plan_activated"
    second = client.post(
        "/api/sessions/chat-1/turn",
        json={"tool_output": "AssertionError: login failed", "exit_code": 1, "tool_name": "sh"},
    ).json()
    assert second["run"]["current_node"] == "isolate"

    rows = client.get("/api/sessions").json()["sessions"]
    assert [(r["session_id"], r["plan"], r["status"], r["current_node"]) for r in rows] == [
        ("chat-1", "bugfix_workflow", "running", "isolate")
    ]
    assert client.get("/api/sessions?status=completed").json()["sessions"] == []
    assert client.get("/api/sessions?plan=bugfix_workflow").json()["sessions"] != []

    detail = client.get("/api/sessions/chat-1").json()
    assert detail["run"]["current_node"] == "isolate" and detail["kind"] == "guided"
    assert "isolate" in detail["context"]
    events = client.get("/api/sessions/chat-1/events").json()["events"]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    later = client.get("/api/sessions/chat-1/events", params={"after": 5}).json()["events"]
    assert [e["seq"] for e in later] == [e["seq"] for e in events[5:]]
    drawing = client.get("/api/sessions/chat-1/drawing").text
    assert 'class="node t-task current" data-node="isolate"' in drawing

    reset = client.delete("/api/sessions/chat-1")
    assert reset.status_code == 200 and reset.json()["run"]["status"] == "aborted"
    assert client.get("/api/sessions?status=aborted").json()["sessions"][0]["session_id"] == (
        "chat-1"
    )


def test_a_turn_that_activates_nothing_is_not_an_error(client: TestClient):
    answer = client.post("/api/sessions/s/turn", json={"user_message": "hello there"})
    assert answer.status_code == 200 and answer.json() == {"text": None, "events": [], "run": None}


def test_unknown_session_is_404_everywhere(client: TestClient):
    for method, path in (
        ("GET", "/api/sessions/ghost"),
        ("GET", "/api/sessions/ghost/events"),
        ("GET", "/api/sessions/ghost/drawing"),
        ("GET", "/api/sessions/ghost/stream"),
        ("DELETE", "/api/sessions/ghost"),
    ):
        response = client.request(method, path)
        assert response.status_code == 404, path
        assert error_of(response)["error"] == "session_not_found"


def test_other_record_kinds_show_as_rows():
    nav = Navigator(store="memory://", strict=True)
    nav.store.commit(
        "plan_ctx_1",
        {"plan_id": "research", "current_state": "searching", "status": "running"},
        0,
        [{"type": "goal_received"}],
        kind="plan_context",
        session="team-7",
        status="running",
        plan="research",
    )
    with TestClient(create_app(nav), base_url="http://127.0.0.1") as c:
        rows = c.get("/api/sessions").json()["sessions"]
        assert rows == [
            {
                "session_id": "team-7",
                # Stored under the kind's old name: it reads as the kind it is now.
                "kind": "event",
                "key": "plan_ctx_1",
                "plan": "research",
                "status": "running",
                "current_node": "searching",
                "attempts": None,
                "turn": None,
                # An event-driven plan's awaiting is the response it waits for: no person.
                "awaiting": None,
                "updated_at": rows[0]["updated_at"],
            }
        ]
        assert c.get("/api/sessions/team-7/events").json()["events"][0]["type"] == "goal_received"
        page = c.get("/").text
        assert "event" in page and "searching" in page
        assert c.get("/sessions/team-7").status_code == 200
        assert c.get("/api/sessions/team-7/drawing").status_code == 404


# ---------------------------------------------------------------- bad input


def test_bad_json_wrong_types_unknown_keys_and_content_type(client: TestClient):
    bad_json = client.post(
        "/api/sessions/s/turn", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert bad_json.status_code == 400 and error_of(bad_json)["error"] == "bad_json"
    wrong = client.post("/api/sessions/s/turn", json={"exit_code": "zero"})
    assert wrong.status_code == 422 and error_of(wrong)["problems"][0]["loc"] == [
        "body",
        "exit_code",
    ]
    typo = client.post("/api/sessions/s/turn", json={"tool_ouput": "x"})
    assert typo.status_code == 422 and "tool_ouput" in error_of(typo)["message"]
    not_object = client.post("/api/sessions/s/turn", json=[1, 2])
    assert not_object.status_code == 422
    text = client.post(
        "/api/sessions/s/turn",
        content=b'{"user_message": "x"}',
        headers={"content-type": "text/plain"},
    )
    assert text.status_code == 415 and error_of(text)["error"] == "unsupported_media_type"
    huge_code = client.post("/api/sessions/s/turn", json={"exit_code": 10**30})
    assert huge_code.status_code == 422
    surrogate = client.post(
        "/api/match",
        content=b'{"message": "\\ud800"}',
        headers={"content-type": "application/json"},
    )
    assert surrogate.status_code == 422
    control = client.get("/api/sessions", params={"status": "run\x00ning"})
    assert control.status_code == 422
    assert client.get("/api/sessions", params={"limit": 0}).status_code == 422
    unknown_route = client.get("/api/nothing-here")
    assert unknown_route.status_code == 404 and error_of(unknown_route)["error"] == "not_found"


def test_oversized_body_is_413_before_any_route_runs():
    nav = Navigator(store="memory://", strict=True)
    with TestClient(create_app(nav, max_body=1000), base_url="http://127.0.0.1") as c:
        big = c.post("/api/sessions/s/turn", json={"tool_output": "x" * 2000})
        assert big.status_code == 413 and error_of(big)["error"] == "body_too_large"

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted while reading
            yield b'{"tool_output": "'
            yield b"y" * 2000
            yield b'"}'

        streamed = c.post(
            "/api/sessions/s/turn", content=chunks(), headers={"content-type": "application/json"}
        )
        assert streamed.status_code == 413
        assert c.post("/api/sessions/s/turn", json={"tool_output": "ok"}).status_code == 200
    assert nav.sessions() == []  # nothing from the refused bodies reached the store


# ---------------------------------------------------------------- security


def test_token_required_on_api_and_dashboard():
    app = create_app(store="memory://", token="s3cret-token")
    with TestClient(app, base_url="http://127.0.0.1") as c:
        for path in ("/api/plans", "/api/sessions", "/openapi.json", "/api/health"):
            missing = c.get(path)
            assert missing.status_code == 401 and error_of(missing)["error"] == "unauthorized"
            assert missing.headers["www-authenticate"] == "Bearer"
        wrong = c.get("/api/plans", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and "wrong" in error_of(wrong)["message"]
        ok = c.get("/api/plans", headers={"Authorization": "Bearer s3cret-token"})
        assert ok.status_code == 200
        page = c.get("/", headers={"accept": "text/html"})
        assert page.status_code == 401 and "?token=" in page.text
        # The browser's way in: ?token= once sets an HttpOnly cookie and drops the token.
        login = c.get("/plans?token=s3cret-token", follow_redirects=False)
        assert login.status_code == 303 and login.headers["location"] == "/plans"
        assert "httponly" in login.headers["set-cookie"].lower()
        assert "samesite=strict" in login.headers["set-cookie"].lower()
        assert c.cookies.get(COOKIE) == "s3cret-token"
        assert c.get("/").status_code == 200 and c.get("/api/sessions").status_code == 200
        c.cookies.clear()
        bad = c.get("/?token=guess", follow_redirects=False)
        assert bad.status_code == 401


def test_without_a_token_only_loopback_host_names_are_served():
    app = create_app(store="memory://", allowed_hosts=frozenset({"127.0.0.1", "localhost"}))
    with TestClient(app, base_url="http://127.0.0.1:8765") as c:
        assert c.get("/api/plans").status_code == 200
        rebound = c.get("/api/plans", headers={"host": "evil.example:8765"})
        assert rebound.status_code == 400 and "DNS rebinding" in error_of(rebound)["message"]


def test_serve_refuses_a_public_bind_without_token_and_explains_missing_extra(monkeypatch):
    from typer.testing import CliRunner

    from waygraph.cli import app

    runner = CliRunner()
    result = runner.invoke(app, ["serve", "--host", "0.0.0.0"], env={"WAYGRAPH_TOKEN": ""})
    assert result.exit_code == 2 and "--token is required" in result.output
    monkeypatch.setitem(sys.modules, "fastapi", None)  # as if the extra were not installed
    result = runner.invoke(app, ["serve"])
    assert result.exit_code == 2 and "pip install 'waygraph[serve]'" in result.output


# ---------------------------------------------------------------- dashboard pages


def test_pages_render_and_escape_untrusted_text(client: TestClient):
    evil = "<img src=x onerror=alert(1)>"
    assert client.post(f"/api/sessions/{evil}/turn", json=BUG).status_code == 200
    index = client.get("/").text
    assert evil not in index and "&lt;img src=x onerror=alert(1)&gt;" in index
    session = client.get("/sessions/%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E")
    assert session.status_code == 200 and evil not in session.text
    assert 'data-node="reproduce"' in session.text
    assert client.get("/plans").status_code == 200
    plan = client.get("/plans/bugfix_workflow")
    assert plan.status_code == 200 and "fix bug" in plan.text
    assert client.get("/plans/nope").status_code == 404
    assert client.get("/static/dashboard.css").status_code == 200


def test_openapi_documents_every_route(client: TestClient):
    doc = client.get("/openapi.json").json()
    paths = doc["paths"]
    assert set(paths) == {
        "/api/health",
        "/api/plans",
        "/api/plans/{plan_id}",
        "/api/match",
        "/api/sessions",
        "/api/sessions/{session_id}",
        "/api/sessions/{session_id}/events",
        "/api/sessions/{session_id}/drawing",
        "/api/sessions/{session_id}/turn",
        "/api/sessions/{session_id}/answer",
        "/api/sessions/{session_id}/stream",
        "/api/session-plans",
        "/api/session-plans/{session_id}",
        "/api/stats",
        "/api/outbox",
    }
    turn = paths["/api/sessions/{session_id}/turn"]["post"]
    assert {"400", "413", "422"} <= set(turn["responses"])
    body = doc["components"]["schemas"]["TurnRequest"]["properties"]
    assert set(body) == {
        "user_message",
        "domain",
        "allowed_plans",
        "tool_output",
        "tool_name",
        "exit_code",
        "observation_id",
        "tool_args",
        "source",
        "final",
        "asks_user",
    }


# ---------------------------------------------------------------- live events (real server)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def live_server(tmp_path) -> Iterator[tuple[str, Navigator]]:
    nav = Navigator(store=f"sqlite:///{tmp_path / 'live.db'}", strict=True)
    app = create_app(nav, poll_interval=0.05, heartbeat=0.3)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}", nav
    server.should_exit = True
    thread.join(timeout=10)
    nav.close()


def read_sse(
    url: str, headers: dict[str, str], want: int, timeout: float = 10.0
) -> list[dict[str, Any]]:
    """Messages of an event stream (as dicts of their fields) until ``want`` events with an id."""
    messages: list[dict[str, Any]] = []
    with httpx.stream("GET", url, headers=headers, timeout=timeout) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        current: dict[str, Any] = {}
        for line in response.iter_lines():
            if line == "":
                if current:
                    messages.append(current)
                current = {}
                if sum(1 for m in messages if "data" in m and "event" not in m) >= want:
                    return messages
                continue
            field, _, value = line.partition(":")
            current[field or "comment"] = value.lstrip(" ")
    return messages


def test_stream_sends_events_as_they_happen_and_resumes(live_server):
    base, nav = live_server
    nav.turn("live-1", user_message="fix bug please", domain="bugfix")  # 4 events
    results: list[list[dict[str, Any]]] = []
    reader = threading.Thread(
        target=lambda: results.append(read_sse(f"{base}/api/sessions/live-1/stream", {}, 7))
    )
    reader.start()
    time.sleep(0.3)
    httpx.post(
        f"{base}/api/sessions/live-1/turn", json={"tool_output": "boom", "exit_code": 1}
    ).raise_for_status()
    reader.join(timeout=15)
    messages = results[0]
    assert messages[0]["event"] == "run" and "id" not in messages[0]
    events = [m for m in messages if "event" not in m and "data" in m]
    assert [int(m["id"]) for m in events] == [1, 2, 3, 4, 5, 6, 7]
    assert [json.loads(m["data"])["type"] for m in events][4:] == [
        "node_verified",
        "edge_followed",
        "node_entered",
    ]
    # A reconnecting client sends Last-Event-ID and gets only what it missed.
    resumed = read_sse(f"{base}/api/sessions/live-1/stream", {"Last-Event-ID": "5"}, 2)
    assert [int(m["id"]) for m in resumed if "id" in m] == [6, 7]


def test_stream_sends_keep_alive_comments(live_server):
    base, nav = live_server
    nav.turn("quiet", user_message="fix bug please", domain="bugfix")
    seen: list[str] = []
    with httpx.stream("GET", f"{base}/api/sessions/quiet/stream?after=4", timeout=5) as response:
        for line in response.iter_lines():
            seen.append(line)
            if line.startswith(": keep-alive"):
                break
    assert ": keep-alive" in seen


def test_stream_on_postgresql_is_woken_by_notify(postgres_url, tmp_path):
    from waygraph.server.live import PostgresFeed

    nav = Navigator(store=postgres_url, strict=True)
    # A listening feed never polls: events arriving prove LISTEN/NOTIFY woke the stream.
    app = create_app(nav, heartbeat=30.0)
    assert isinstance(app.state.feed, PostgresFeed)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        writer = Navigator(store=postgres_url, strict=True)  # another "process" commits
        writer.turn("pg-1", user_message="fix bug please", domain="bugfix")
        results: list[list[dict[str, Any]]] = []
        reader = threading.Thread(
            target=lambda: results.append(
                read_sse(f"http://127.0.0.1:{port}/api/sessions/pg-1/stream?after=4", {}, 3)
            )
        )
        reader.start()
        time.sleep(0.5)
        # Listening: streams read only when notified (they poll only while the feed is not).
        assert app.state.feed.listening
        writer.turn("pg-1", tool_output="boom", exit_code=1)
        reader.join(timeout=15)
        ids = [int(m["id"]) for m in results[0] if "id" in m]
        # A listening feed's streams read only when notified: without the NOTIFY the
        # stream would have read nothing before its 3 s read ended.
        assert ids == [5, 6, 7], "the NOTIFY did not wake the stream"
        writer.close()
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        nav.close()


def test_an_event_driven_plan_is_drawn_and_told_in_words():
    import asyncio

    from waygraph.events import (
        InProcessBus,
        PlanContext,
        Planner,
        StateAction,
        StateConfig,
        StateTransition,
    )

    machine = {
        "start": StateConfig(state_name="start", default_next="work"),
        "work": StateConfig(
            state_name="work",
            action=StateAction(event_type="job.work.requested"),
            transitions=[StateTransition(on_event="job.work.completed", to_state="done")],
        ),
        "done": StateConfig(state_name="done", is_terminal=True),
    }
    nav = Navigator(store="memory://", strict=True)

    async def run() -> None:
        planner = Planner("jobs", bus=InProcessBus(), store=nav.store)
        goal = planner.context.bus.envelope(
            "job.goal", {"n": 2}, correlation_id="c1", session_id="team-8"
        )
        plan = await PlanContext.create_from_goal(
            goal, state_machine=machine, context=planner.context
        )
        await plan.execute_next()
        answer = planner.context.bus.envelope("job.work.completed", {}, correlation_id="c1")
        await plan.execute_next(answer)
        await plan.finalize({"ok": True})

    asyncio.run(run())
    with TestClient(create_app(nav), base_url="http://127.0.0.1") as c:
        drawing = c.get("/api/sessions/team-8/drawing")
        assert drawing.status_code == 200
        svg = drawing.text
        assert 'data-node="start"' in svg and 'data-node="done"' in svg
        page = c.get("/sessions/team-8").text
        assert "<pre class=record>" not in page  # no raw JSON dump
        assert "Current state" in page and "jobs" in page
        assert "Entered state work" in page and "Sent job.work.requested from work" in page
        assert "Plan completed at done" in page
        assert "at None" not in page


def test_every_event_is_told_in_words():
    from waygraph import engine
    from waygraph.server.html import describe_event

    samples = {
        "plan_activated": {"plan_id": "p", "triggers": ["fix bug"]},
        "node_entered": {"attempt": 2},
        "node_verified": {
            "passed": None,
            "outcome": "unknown",
            "check": "exit_code_zero",
            "reason": "no exit status",
        },
        "retry_triggered": {"attempt": 2, "max_attempts": 3},
        "edge_followed": {"to": "test", "condition": "on_success"},
        "plan_escalated": {"reason": "stuck"},
        "stall": {"reason": "no edge"},
        "claim_recorded": {"excerpt": "Fixed it!"},
        "claim_unverified": {"nodes": ["test", "verify"]},
        "repeat_detected": {"count": 3, "call": "pytest -q"},
    }
    for kind in engine.EVENT_TYPES:
        text = describe_event({"type": kind, "node": "fix", "turn": 3, **samples.get(kind, {})})
        assert "{" not in text and "None" not in text, (kind, text)
    unknown = describe_event({"type": "node_verified", "node": "test", **samples["node_verified"]})
    assert unknown == "Verification could not decide at test (exit_code_zero): no exit status"
    custom = describe_event({"type": "goal_received", "seq": 4, "state": "start"})
    assert custom == "Goal received: state start"


def test_session_plans_are_served_with_a_workspace_and_refused_without(tmp_path):
    from waygraph.sessions import SessionPlanner

    planner = SessionPlanner(tmp_path, max_iterations=20)
    planner.on_user_message("chat:7", "Write the report")
    planner.after_model_reply("chat:7", "[Step] Gather numbers\n[Step] Write", 1)
    nav = Navigator(store="memory://", strict=True)
    with TestClient(create_app(nav, workspace=tmp_path), base_url="http://127.0.0.1") as c:
        listed = c.get("/api/session-plans").json()["session_plans"]
        assert [(p["session_id"], p["steps_total"]) for p in listed] == [("chat:7", 2)]
        folder = listed[0]["folder"]
        assert c.get(f"/api/session-plans/{folder}").json()["goal"] == "Write the report"
        page = c.get(f"/session-plans/{folder}").text
        assert 'data-node="step_2"' in page and "Gather numbers" in page
        assert "Session plans" in c.get("/").text
    with TestClient(create_app(nav), base_url="http://127.0.0.1") as c:
        assert c.get("/api/session-plans").json() == {"session_plans": []}
        missing = c.get(f"/api/session-plans/{folder}")
        assert missing.status_code == 404 and "--workspace" in missing.json()["message"]
        assert "Session plans" not in c.get("/").text
