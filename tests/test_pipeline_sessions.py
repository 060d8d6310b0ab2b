"""Pipeline runs among the sessions: listed, answered and drawn by the CLI and the HTTP API.

The run is one a runner would have saved (:class:`PipelineRecords`), built
here from checkpoints; no pipeline is executed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from tests.test_pipeline_record import GATE, pipeline
from waygraph.cli import app
from waygraph.navigator import Navigator
from waygraph.pipelines.checkpoint import Checkpoint
from waygraph.pipelines.outcome import Outcome
from waygraph.pipelines.record import PipelineRecords
from waygraph.server import create_app
from waygraph.store import open_store

runner = CliRunner()


def waiting_run(url: str, run_id: str = "pl_gate") -> PipelineRecords:
    """A run that finished start and build and waits at the review gate."""
    records = PipelineRecords(open_store(url))
    done = ("start", "build")
    records.save(
        Checkpoint(
            run_id=run_id,
            plan_id="ship",
            source="ship.dot",
            current_node="build",
            next_node="review",
            completed_nodes=done,
            node_outcomes={n: Outcome(status="success") for n in done},
        ),
        pipeline(),
    )
    records.ask(run_id, GATE)
    return records


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'runs.db'}"


def wg(*args: str):
    return runner.invoke(app, list(args))


# ---------------------------------------------------------------- CLI


def test_sessions_list_shows_the_pipeline_run_waiting_at_its_gate(url):
    waiting_run(url)
    out = wg("sessions", "list", "--store", url, "--json")
    assert out.exit_code == 0, out.output
    (row,) = json.loads(out.stdout)["sessions"]
    assert (row["session"], row["run"], row["kind"]) == ("pl_gate", "pl_gate", "pipeline")
    assert (row["status"], row["current_node"], row["plan"]) == ("paused", "review", "ship")
    assert row["awaiting"] == "user"
    table = runner.invoke(app, ["sessions", "list", "--store", url], env={"COLUMNS": "200"})
    assert table.exit_code == 0
    assert "pipeline" in table.stdout and "paused, waiting for the" in table.stdout


def test_sessions_answer_answers_the_gate_by_run_id(url):
    records = waiting_run(url)
    question = records.load("pl_gate")[0].waiting["id"]
    out = wg("sessions", "answer", "pl_gate", "y", "--by", "ann", "--store", url)
    assert out.exit_code == 0, out.output
    assert "ann chose '[Y] Yes' at node 'review'" in out.stdout
    # The runner waiting on the store finds it.
    assert records.answered("pl_gate", question)["choice"] == "[Y] Yes"
    listed = json.loads(wg("sessions", "list", "--store", url, "--json").stdout)["sessions"]
    assert (listed[0]["status"], listed[0]["awaiting"]) == ("running", None)

    again = wg("sessions", "answer", "pl_gate", "n", "--store", url)
    assert again.exit_code == 1 and "already answered" in again.stderr


def test_an_answer_that_is_no_choice_is_refused_with_the_choices(url):
    waiting_run(url)
    out = wg("sessions", "answer", "pl_gate", "maybe", "--store", url)
    assert out.exit_code == 1
    assert "'maybe' is not one of the choices: answer '[Y] Yes' or '[N] No'" in out.stderr
    assert json.loads(wg("sessions", "list", "--store", url, "--json").stdout)["sessions"][0][
        "status"
    ] == ("paused")


def test_a_run_that_waits_on_nobody_says_where_it_is(url):
    records = waiting_run(url)
    cp, plan = records.load("pl_gate")
    records.save(cp.model_copy(update={"waiting": None, "status": "running"}), plan)
    out = wg("sessions", "answer", "pl_gate", "y", "--store", url, "--json")
    assert out.exit_code == 1
    assert "pipeline run 'pl_gate' is not waiting for an answer: it is running node" in out.stderr


def test_resetting_the_session_leaves_the_pipeline_run_as_it_was(url):
    records = waiting_run(url)
    out = wg("sessions", "reset", "pl_gate", "--store", url)
    assert out.exit_code == 0, out.output
    assert records.record("pl_gate").kind == "pipeline"
    assert records.load("pl_gate")[0].waiting["node"] == "review"
    assert wg("sessions", "answer", "pl_gate", "y", "--store", url).exit_code == 0
    shown = wg("sessions", "show", "pl_gate", "--store", url)
    assert shown.exit_code == 0 and "pipeline pl_gate of session pl_gate" in shown.stdout


def test_answer_as_json(url):
    waiting_run(url)
    out = wg("sessions", "answer", "pl_gate", "No", "--store", url, "--json")
    assert out.exit_code == 0, out.output
    body = json.loads(out.stdout)
    assert (body["run"], body["answer"]["choice"]) == ("pl_gate", "[N] No")


# ---------------------------------------------------------------- HTTP


@pytest.fixture
def client(url: str) -> Iterator[TestClient]:
    with (
        Navigator(store=url, strict=True) as nav,
        TestClient(create_app(nav), base_url="http://127.0.0.1") as c,
    ):
        yield c


def test_the_api_lists_the_run_and_says_what_it_waits_on(url, client):
    waiting_run(url)
    rows = client.get("/api/sessions").json()["sessions"]
    assert [(r["key"], r["kind"], r["status"], r["current_node"]) for r in rows] == [
        ("pl_gate", "pipeline", "paused", "review")
    ]
    detail = client.get("/api/sessions/pl_gate").json()
    assert detail["kind"] == "pipeline"
    assert detail["waiting"] == {
        "node": "review",
        "kind": "choice",
        "prompt": "Ship it?",
        "choices": ["[Y] Yes", "[N] No"],
        "value": None,
    }


def test_the_api_answers_the_gate(url, client):
    records = waiting_run(url)
    question = records.load("pl_gate")[0].waiting["id"]
    refused = client.post("/api/sessions/pl_gate/answer", json={"answer": "maybe"})
    assert refused.status_code == 200
    assert "is not one of the choices" in refused.json()["error"]
    assert records.answered("pl_gate", question) is None

    reply = client.post("/api/sessions/pl_gate/answer", json={"answer": "[Y] Yes", "by": "bo"})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["error"] is None and body["run"]["status"] == "running"
    assert body["events"] == [
        {
            "type": "human_answered",
            "node": "review",
            "answer": "[Y] Yes",
            "choice": "[Y] Yes",
            "by": "bo",
        }
    ]
    assert records.answered("pl_gate", question)["by"] == "bo"
    assert client.get("/api/sessions/pl_gate").json()["waiting"] is None
    again = client.post("/api/sessions/pl_gate/answer", json={"answer": "n"})
    assert again.status_code == 409 and again.json()["error"] == "not_waiting"


def test_the_dashboard_draws_the_run_from_the_stored_plan(url, client):
    waiting_run(url)
    svg = client.get("/api/sessions/pl_gate/drawing").text
    assert 'data-node="review"' in svg and 'data-node="stop"' in svg
    page = client.get("/sessions/pl_gate").text
    assert "Ship it?" in page and 'data-answer="[Y] Yes"' in page
    timeline = client.get("/api/sessions/pl_gate/events").json()["events"]
    assert [e["type"] for e in timeline] == [
        "plan_started",
        "node_finished",
        "node_finished",
        "human_asked",
    ]
    # The plan link of the sessions row works without the file.
    assert client.get("/api/plans/ship").status_code == 200
