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
        client.post(
            f"/api/sessions/{session}/turn", json={"tool_output": "3 passed", "exit_code": 0}
        )
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
