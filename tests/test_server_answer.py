"""``POST /api/sessions/{id}/answer`` and what the dashboard shows a run waiting for a person.

Through FastAPI's test client for every case, and once against ``waygraph
serve`` started for real, with a token.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from tests.answer_plans import CHOICES, PROMPT, library, write_library
from tests.test_server import error_of, free_port
from waygraph.describe import describe_event
from waygraph.navigator import Navigator
from waygraph.server import create_app


@pytest.fixture
def nav() -> Iterator[Navigator]:
    with Navigator(library(), store="memory://", strict=True) as navigator:
        yield navigator


@pytest.fixture
def client(nav: Navigator) -> Iterator[TestClient]:
    with TestClient(create_app(nav), base_url="http://127.0.0.1") as c:
        yield c


def events_of(client: TestClient, session: str) -> list[dict]:
    events: list[dict] = client.get(f"/api/sessions/{session}/events").json()["events"]
    return events


def test_a_choice_moves_the_run_on(nav: Navigator, client: TestClient):
    nav.start("s", "deploy_gate")
    detail = client.get("/api/sessions/s").json()
    assert detail["waiting"] == {
        "node": "ok",
        "kind": "choice",
        "prompt": PROMPT,
        "choices": CHOICES,
        "value": None,
    }
    reply = client.post("/api/sessions/s/answer", json={"answer": "y", "by": "ann"})
    assert reply.status_code == 200
    body = reply.json()
    assert body["error"] is None and body["run"]["current_node"] == "deploy"
    assert "Deploy the release" in body["text"]
    assert body["events"][0] == {
        **body["events"][0],
        "type": "human_answered",
        "answer": "y",
        "by": "ann",
        "choice": "[Y] Yes",
        "to": "deploy",
    }
    assert client.get("/api/sessions/s").json()["waiting"] is None


def test_an_answer_that_is_no_choice_is_a_200_whose_error_lists_the_choices(
    nav: Navigator, client: TestClient
):
    nav.start("s", "deploy_gate")
    reply = client.post("/api/sessions/s/answer", json={"answer": "maybe"})
    assert reply.status_code == 200
    body = reply.json()
    assert body["error"] == "'maybe' is not one of the choices: answer '[Y] Yes' or '[N] No'"
    assert body["run"]["current_node"] == "ok" and body["run"]["awaiting"] == "user"
    assert [e["type"] for e in body["events"]] == ["answer_rejected"]
    assert client.get("/api/sessions/s").json()["waiting"]["choices"] == CHOICES


def test_a_manual_check_and_the_models_question_take_words(nav: Navigator, client: TestClient):
    nav.start("m", "migration")
    waiting = client.get("/api/sessions/m").json()["waiting"]
    assert (waiting["kind"], waiting["value"], waiting["choices"]) == ("confirm", "CONFIRMED", [])
    assert waiting["prompt"] == "Run the migration on production"
    unsure = client.post("/api/sessions/m/answer", json={"answer": "I think so"}).json()
    assert unsure["error"] is None and unsure["run"]["awaiting"] == "user"
    done = client.post("/api/sessions/m/answer", json={"answer": "CONFIRMED"}).json()
    assert done["run"]["current_node"] == "notes" and done["run"]["awaiting"] is None
    nav.turn("m", tool_output="Shall I add the changelog too?", source="model", final=True)
    waiting = client.get("/api/sessions/m").json()["waiting"]
    assert (waiting["kind"], waiting["node"]) == ("question", "notes")
    assert waiting["prompt"] == "Shall I add the changelog too?"
    reply = client.post("/api/sessions/m/answer", json={"answer": "yes"}).json()
    assert reply["run"]["awaiting"] is None
    assert client.get("/api/sessions/m").json()["waiting"] is None


def test_a_session_that_waits_for_nobody_is_409_and_nothing_changes(
    nav: Navigator, client: TestClient
):
    nav.start("s", "deploy_gate")
    assert client.post("/api/sessions/s/answer", json={"answer": "n"}).status_code == 200
    before = events_of(client, "s")
    again = client.post("/api/sessions/s/answer", json={"answer": "y"})
    assert again.status_code == 409
    assert error_of(again) == {
        "error": "not_waiting",
        "message": "session 's' is not waiting for an answer: its run is completed "
        "(at node 'stop')",
    }
    assert events_of(client, "s") == before
    nav.start("busy", "migration")
    nav.answer("busy", "CONFIRMED")
    busy = client.post("/api/sessions/busy/answer", json={"answer": "y"})
    assert (
        busy.status_code == 409
        and "at node 'notes', waiting for the agent" in (error_of(busy)["message"])
    )


def test_bad_input_is_refused_before_anything_changes(nav: Navigator, client: TestClient):
    nav.start("s", "deploy_gate")
    before = events_of(client, "s")
    unknown = client.post("/api/sessions/ghost/answer", json={"answer": "y"})
    assert unknown.status_code == 404 and error_of(unknown)["error"] == "session_not_found"
    for body in (
        {"answer": ""},
        {"answer": "  \n"},
        {"answer": "\x1c"},  # blank to Python's str.strip, which the Navigator uses
        {},
        {"answer": 1},
        {"answer": "y", "by": ""},
        {"answer": "y", "by": "a\nb"},
        {"answer": "y", "by": "x" * 201},
        {"answer": "y", "who": "ann"},
    ):
        refused = client.post("/api/sessions/s/answer", json=body)
        assert refused.status_code == 422, body
        assert error_of(refused)["error"] == "invalid_request", body
    blank = client.post("/api/sessions/s/answer", json={"answer": " "})
    assert error_of(blank)["problems"][0]["loc"] == ["body", "answer"]
    bad_json = client.post(
        "/api/sessions/s/answer", content=b"{", headers={"content-type": "application/json"}
    )
    assert bad_json.status_code == 400
    assert events_of(client, "s") == before


def test_the_body_limit_and_the_text_limit_apply():
    with Navigator(library(), store="memory://", strict=True) as nav:
        nav.start("s", "deploy_gate")
        with TestClient(create_app(nav, max_body=1000), base_url="http://127.0.0.1") as c:
            big = c.post("/api/sessions/s/answer", json={"answer": "y" * 2000})
            assert big.status_code == 413 and error_of(big)["error"] == "body_too_large"
        with TestClient(create_app(nav, max_body=4_000_000), base_url="http://127.0.0.1") as c:
            huge = c.post("/api/sessions/s/answer", json={"answer": "y" * 1_000_001})
            assert huge.status_code == 422
            # Within the limits an answer is read on its first 100,000 characters.
            long = c.post("/api/sessions/s/answer", json={"answer": "x" * 100_000 + "y"})
            assert long.status_code == 200 and "not one of the choices" in long.json()["error"]
        assert nav.state("s")["current_node"] == "ok"  # type: ignore[index]


def test_the_dashboard_shows_the_question_with_a_button_per_choice(
    nav: Navigator, client: TestClient
):
    nav.start("s", "deploy_gate")
    nav.start("m", "migration")
    page = client.get("/sessions/s").text
    assert "<section class='card answer' id=answer>" in page
    assert f"<p class=question id=answer-prompt>{PROMPT}</p>" in page
    for label in CHOICES:
        assert f'data-answer="{label}">{label}</button>' in page
    assert "<form id=answer-form hidden>" in page  # choices are buttons, not words
    assert "<span id=f-waiting>the user</span>" in page
    manual = client.get("/sessions/m").text
    assert "<form id=answer-form>" in manual and 'placeholder="CONFIRMED"' in manual
    assert "contains &#x27;CONFIRMED&#x27;" in manual
    rows = client.get("/").text
    assert rows.count("<span class='tag waiting'>waiting for the user</span>") == 2
    assert client.get("/api/sessions").json()["sessions"][0]["awaiting"] == "user"
    client.post("/api/sessions/s/answer", json={"answer": "y"})
    after = client.get("/sessions/s").text
    assert "<section class='card answer' id=answer hidden>" in after
    assert "<span id=f-waiting>the agent</span>" in after
    timeline = [describe_event(e) for e in events_of(client, "s")]
    assert f"Asked the user at ok: “{PROMPT}”; choices '[Y] Yes' or '[N] No'" in timeline
    assert "The user answered “y” at ok: chose '[Y] Yes' → deploy" in timeline
    assert "The user answered “y” at ok" in after


def test_the_answer_route_is_documented(client: TestClient):
    doc = client.get("/openapi.json").json()
    route = doc["paths"]["/api/sessions/{session_id}/answer"]["post"]
    assert {"200", "401", "404", "409", "413", "422"} <= set(route["responses"])
    schemas = doc["components"]["schemas"]
    assert set(schemas["AnswerRequest"]["properties"]) == {"answer", "by"}
    assert schemas["AnswerRequest"]["required"] == ["answer"]
    assert set(schemas["AnswerResponse"]["properties"]) == {"text", "events", "run", "error"}
    assert "waiting" in schemas["SessionDetail"]["properties"]


def test_waygraph_serve_takes_an_answer_behind_its_token(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'served.db'}"
    with Navigator(library(), store=url, strict=True) as nav:
        nav.start("s", "deploy_gate")
    port, token = free_port(), "answer-token-1"
    command = [sys.executable, "-m", "waygraph", "serve", "--port", str(port), "--store", url]
    command += ["--library", str(write_library(tmp_path)), "--token", token]
    server = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ)
    )
    base, auth = f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {token}"}
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(f"{base}/api/health", headers=auth, timeout=1).is_success:
                    break
            except httpx.HTTPError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, "serve did not start"
            time.sleep(0.1)
        anonymous = httpx.post(f"{base}/api/sessions/s/answer", json={"answer": "y"}, timeout=10)
        assert anonymous.status_code == 401
        reply = httpx.post(
            f"{base}/api/sessions/s/answer", json={"answer": "y"}, headers=auth, timeout=10
        )
        assert reply.status_code == 200 and reply.json()["run"]["current_node"] == "deploy"
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
    with Navigator(library(), store=url, strict=True) as nav:
        assert nav.state("s")["current_node"] == "deploy"  # type: ignore[index]
