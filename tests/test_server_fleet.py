"""The dashboard with real fleets: paging, search, counts, judged output, stored plans."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from waygraph.library import Library, load_library
from waygraph.navigator import Navigator
from waygraph.server import create_app
from waygraph.store import open_store

BUG = {"user_message": "I need to fix a bug in the login module", "domain": "bugfix"}


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(create_app(store="memory://"), base_url="http://127.0.0.1") as c:
        yield c


def finish(client: TestClient, session: str) -> None:
    """Drive bugfix_workflow to completion: every result passes."""
    assert client.post(f"/api/sessions/{session}/turn", json=BUG).status_code == 200
    for _ in range(12):
        run = client.get(f"/api/sessions/{session}").json()["run"]
        if run["status"] != "running":
            return
        # The tool_args a host reports: the bound test steps count only a runner.
        passed = {"tool_output": "3 passed", "exit_code": 0, "tool_args": "python -m pytest -q"}
        client.post(f"/api/sessions/{session}/turn", json=passed)
    raise AssertionError("the run did not finish")


# ---------------------------------------------------------------- progress and plans


def test_a_completed_run_reads_complete_though_a_branch_was_never_taken(client: TestClient):
    finish(client, "done-1")
    run = client.get("/api/sessions/done-1").json()["run"]
    # The fleet's symptom: 5 nodes passed of 6 (one branch never taken).
    assert (run["status"], run["completed_nodes"], run["total_nodes"]) == ("completed", 5, 6)
    page = client.get("/sessions/done-1").text
    assert re.search(r"<span id=f-progress>6 / 6</span>", page), page


def test_a_plan_not_in_the_library_is_drawn_from_the_stored_run(tmp_path):
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    with open_store(url) as store:
        Navigator(load_library(), store=store).turn("old-1", **BUG)
    # The server's library no longer has bugfix_workflow (a new deploy, another team's plans).
    other = Library([p for p in load_library() if p.id != "bugfix_workflow"])
    with TestClient(create_app(Navigator(other, store=url)), base_url="http://127.0.0.1") as c:
        row = c.get("/api/sessions").json()["sessions"][0]
        assert row["plan"] == "bugfix_workflow"
        page = c.get("/plans/bugfix_workflow")
        assert page.status_code == 200
        assert "id=stored-plan" in page.text and 'data-node="reproduce"' in page.text
        assert c.get("/api/plans/bugfix_workflow").json()["id"] == "bugfix_workflow"
        assert c.get("/api/plans/bugfix_workflow?format=svg").status_code == 200
        # The session page draws it too, and a plan nobody ran is still 404.
        assert 'data-node="reproduce"' in c.get("/sessions/old-1").text
        assert c.get("/plans/never_ran").status_code == 404
        assert c.get("/api/plans/never_ran").status_code == 404


# ---------------------------------------------------------------- judged output


def test_the_timeline_shows_the_output_each_verdict_judged(client: TestClient):
    client.post("/api/sessions/out-1/turn", json=BUG)
    long_tail = "\n".join(f"  at frame {i}" for i in range(400))
    output = f"\nAssertionError: <login> failed\n{long_tail}"
    client.post("/api/sessions/out-1/turn", json={"tool_output": output, "exit_code": 1})
    events = client.get("/api/sessions/out-1/events").json()["events"]
    verified = [e for e in events if e["type"] == "node_verified"]
    assert len(verified) == 1
    # A bounded excerpt: the start of the output, at most 2,000 characters.
    assert verified[0]["output"] == output[:2000]
    # The run record's own event list stays small: no output copies there.
    record_events = client.get("/api/sessions/out-1").json()["run"]["events"]
    assert all("output" not in e for e in record_events)
    page = client.get("/sessions/out-1").text
    item = re.search(r'<li class="ev t-good" data-seq="5">.*?</li>', page, re.S)
    assert item, page
    # Reproducing the bug passes on a failing test: the verdict and the first line, expandable.
    assert (
        "<details class=output><summary><b>passed</b> AssertionError: &lt;login&gt; failed"
        "</summary><pre>" in item.group(0)
    )
    assert "at frame 3" in item.group(0)


# ---------------------------------------------------------------- paging, search, counts


def fleet(n: int, url: str = "memory://") -> Navigator:
    """``n`` sessions on bugfix_workflow, newest last; every third one reset (aborted)."""
    nav = Navigator(load_library(), store=url)
    for i in range(n):
        nav.turn(f"agent-{i:03d}", **BUG)
        if i % 3 == 0:
            nav.reset(f"agent-{i:03d}")
    return nav


def test_the_api_pages_searches_and_counts_sessions():
    nav = fleet(7)
    with TestClient(create_app(nav), base_url="http://127.0.0.1") as c:
        first = c.get("/api/sessions?limit=3").json()
        assert [r["session_id"] for r in first["sessions"]] == [
            "agent-006",
            "agent-005",
            "agent-004",
        ]
        assert (first["total"], first["offset"], first["limit"]) == (7, 0, 3)
        assert first["counts"] == {"running": 4, "aborted": 3}
        last = c.get("/api/sessions?limit=3&offset=6").json()
        assert [r["session_id"] for r in last["sessions"]] == ["agent-000"]
        assert c.get("/api/sessions").json()["limit"] == 200  # the old default stays
        aborted = c.get("/api/sessions?status=aborted").json()
        assert [r["session_id"] for r in aborted["sessions"]] == [
            "agent-006",
            "agent-003",
            "agent-000",
        ]
        assert aborted["total"] == 3 and aborted["counts"] == first["counts"]
        found = c.get("/api/sessions?q=AGENT-00").json()
        assert found["total"] == 7
        assert [r["session_id"] for r in c.get("/api/sessions?q=t-005").json()["sessions"]] == [
            "agent-005"
        ]
        assert c.get("/api/sessions?q=bugfix_w").json()["total"] == 7  # by plan
        assert c.get("/api/sessions?q=abort").json()["total"] == 3  # by status
        assert c.get("/api/sessions?q=").json()["total"] == 7  # a cleared search box
        assert c.get("/api/sessions?offset=-1").status_code == 422
        assert c.get("/api/sessions?q=%00").status_code == 422


def test_the_sessions_page_shows_n_of_m_pages_and_searches():
    nav = fleet(120)
    with TestClient(create_app(nav), base_url="http://127.0.0.1") as c:
        page = c.get("/").text
        assert "Showing 1–50 of 120" in page
        assert page.count('<tr data-session="agent-') == 50
        assert 'data-session="agent-119"' in page and 'data-session="agent-069"' not in page
        assert "Page 1 of 3" in page
        assert re.search(r"id=page-newer [^>]*hidden", page)  # no newer page than the first
        assert 'id=page-older href="/?page=2">' in page
        # Chips count every status, whichever is chosen.
        assert 'data-chip="">all <span class=n>120</span>' in page
        assert 'data-chip="aborted">aborted <span class=n>40</span>' in page
        assert 'data-chip="running">running <span class=n>80</span>' in page
        third = c.get("/?page=3").text
        assert "Showing 101–120 of 120" in third and "Page 3 of 3" in third
        assert 'data-session="agent-000"' in third
        assert re.search(r"id=page-older [^>]*hidden", third)
        # Search and status together; the pager and the chips keep the search.
        found = c.get("/?q=agent-01&status=aborted").text
        assert "Showing 1–3 of 3" in found  # agent-012, -015, -018
        assert 'name=q value="agent-01"' in found
        assert 'href="/?status=running&amp;q=agent-01"' in found
        assert 'data-body="' not in found and 'data-q="agent-01"' in found
        none = c.get("/?q=nobody-here").text
        assert "Showing 0 of 0" in none and "No sessions match" in none
        assert c.get("/?page=0").status_code == 422
