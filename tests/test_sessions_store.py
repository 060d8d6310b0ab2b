"""Session plans as run records of kind ``session`` in the store, beside their plan.json."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from waygraph.cli import app as cli_app
from waygraph.errors import StoreError
from waygraph.navigator import Navigator
from waygraph.server import create_app
from waygraph.sessions import SessionPlanner
from waygraph.sessions._records import changes, to_record
from waygraph.store import MemoryStore, Store, open_store

RECORD_KEYS = {"kind", "plan", "current_node", "visited", "path", "status"}


def types(store: Store, key: str) -> list[str]:
    return [e.data["type"] for e in store.events(key)]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return "memory://" if request.param == "memory" else f"sqlite:///{tmp_path / 'w.db'}"


def test_a_plans_life_is_a_session_record_with_events_in_words(tmp_path: Path, store_url: str):
    store = open_store(store_url)
    sid = f"c1-{uuid.uuid4().hex[:8]}"  # the PostgreSQL schema is shared by the run
    planner = SessionPlanner(tmp_path / "ws", max_iterations=3, store=store)
    planner.on_user_message(sid, "Tidy the docs folder")
    planner.after_model_reply(sid, "[Step] List files\n[Step] Fix links", 1)
    planner.after_model_reply(sid, "Listed them. [done]", 1)
    planner.after_model_reply(sid, "Still fixing.", 1)
    assert planner.plan(sid)["status"] == "paused"  # type: ignore[index]
    planner.on_user_message(sid, "continue")
    planner.after_model_reply(sid, "All links fixed.", 0)

    plan = planner.plan(sid)
    assert plan is not None and plan["status"] == "completed"
    (record,) = store.list(kind="session", session=sid)
    assert record.key == plan["id"] and record.plan == plan["id"]
    assert (record.session, record.status) == (sid, "completed")
    assert set(record.data) >= RECORD_KEYS
    assert record.data["path"] == ["step_1", "step_2"]
    assert record.data["visited"]["step_2"] == {"outcome": "success", "status": "completed"}
    # The record is the plan file and more: what the file says, it says.
    assert {k: record.data[k] for k in plan} == plan
    assert types(store, record.key) == [
        "session_plan_started",
        "step_declared",
        "step_declared",
        "node_entered",
        "step_completed",
        "node_entered",
        "plan_paused",
        "plan_resumed",
        "step_completed",
        "plan_completed",
    ]
    store.close()


def test_a_correction_reopens_the_step_and_a_new_task_is_a_second_record(tmp_path: Path):
    store = MemoryStore()
    planner = SessionPlanner(tmp_path, store=store)
    planner.on_user_message("c1", "Ship it")
    planner.after_model_reply("c1", "[Step] Build\n[Step] Upload\nBuilding.", 1)
    planner.after_model_reply("c1", "Built. [done]", 1)
    planner.on_user_message("c1", "not done yet")
    first = planner.plan("c1")
    assert first is not None
    assert types(store, first["id"])[-2:] == ["step_reopened", "node_entered"]
    assert store.get(first["id"]).data["current_node"] == "step_1"  # type: ignore[union-attr]

    planner.after_model_reply("c1", "Done with everything.", 0)
    planner.on_user_message("c1", "Now write the release notes")
    planner.after_model_reply("c1", "[Step] Draft notes\nDrafting.", 1)
    second = planner.plan("c1")
    assert second is not None and second["id"] != first["id"]
    assert {r.key for r in store.list(kind="session", session="c1")} == {
        first["id"],
        second["id"],
    }


def test_unattended_failure_says_why(tmp_path: Path):
    store = MemoryStore()
    planner = SessionPlanner(tmp_path, max_iterations=1, unattended=True, store=store)
    planner.on_user_message("c1", "Crunch the numbers")
    planner.after_model_reply("c1", "[Step] Crunch\nCrunching.", 1)
    (record,) = store.list(kind="session")
    assert record.status == "failed"
    last = store.events(record.key)[-1].data
    assert last == {"type": "plan_failed", "node": "step_1", "reason": "iteration limit reached"}
    assert record.data["visited"]["step_1"]["outcome"] == "fail"


class FlakyStore(MemoryStore):
    """A memory store whose commits fail while ``down``."""

    down = False

    def commit(self, *args: Any, **kwargs: Any) -> int:
        if self.down:
            raise StoreError("database is down")
        return super().commit(*args, **kwargs)


def test_a_store_that_fails_never_stops_the_host_and_is_caught_up(tmp_path: Path, caplog):
    store = FlakyStore()
    planner = SessionPlanner(tmp_path, store=store)
    planner.on_user_message("c1", "Tidy up")
    planner.after_model_reply("c1", "[Step] Sweep\n[Step] Mop\nSweeping.", 1)
    store.down = True
    with caplog.at_level(logging.WARNING, logger="waygraph.sessions"):
        planner.after_model_reply("c1", "Swept. [done]", 1)
    assert "was not stored" in caplog.text and "database is down" in caplog.text
    plan = planner.plan("c1")
    assert plan is not None and plan["steps"][0]["status"] == "completed"  # the file has it
    store.down = False
    planner.after_model_reply("c1", "Mopping the floor.", 1)
    record = store.get(plan["id"])
    assert record is not None and record.data["current_node"] == "step_2"
    # The write the store missed is told by the next one.
    assert types(store, plan["id"])[-2:] == ["step_completed", "node_entered"]


def test_another_writer_in_between_is_read_back_not_overwritten_blindly(tmp_path: Path):
    store = MemoryStore()
    planner = SessionPlanner(tmp_path, store=store)
    planner.on_user_message("c1", "Tidy up")
    planner.after_model_reply("c1", "[Step] Sweep\nSweeping.", 1)
    plan = planner.plan("c1")
    assert plan is not None
    stored = store.get(plan["id"])
    assert stored is not None
    # Someone else (another process mirroring the same file) commits first.
    store.commit(plan["id"], stored.data, stored.version, [], kind="session", session="c1")
    planner.after_model_reply("c1", "Swept. [done]", 0)
    record = store.get(plan["id"])
    assert record is not None and record.version == stored.version + 2
    assert record.status == "completed"


def test_changes_tell_a_finish_before_the_next_start():
    before = to_record(
        {"id": "p", "status": "running", "steps": [{"id": "step_1", "status": "running"}]}
    )
    after = to_record(
        {
            "id": "p",
            "status": "running",
            "steps": [
                {"id": "step_1", "status": "completed", "result": "ok", "completed_by": "marker"},
                {"id": "step_2", "description": "Next", "status": "running"},
            ],
        }
    )
    assert changes(before, after) == [
        {"type": "step_declared", "node": "step_2", "description": "Next"},
        {"type": "step_completed", "node": "step_1", "result": "ok", "completed_by": "marker"},
        {"type": "node_entered", "node": "step_2"},
    ]
    assert changes(after, after) == []


def test_the_dashboard_and_the_cli_show_a_session_record_like_any_run(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'w.db'}"
    planner = SessionPlanner(tmp_path / "ws", store=url)
    planner.on_user_message("chat-9", "Write the <b>report</b>")
    planner.after_model_reply("chat-9", "[Step] Gather numbers\n[Step] Write it\nOn it.", 1)
    planner.after_model_reply("chat-9", "Numbers gathered. [done]", 1)
    planner.close()

    nav = Navigator(store=url, strict=True)
    with TestClient(create_app(nav), base_url="http://127.0.0.1") as c:
        svg = c.get("/api/sessions/chat-9/drawing").text
        assert 'data-node="step_1"' in svg and 'data-node="step_2"' in svg
        detail = c.get("/api/sessions/chat-9").json()
        assert detail["kind"] == "session"
        assert "Write it" in detail["context"]  # the plan block the model is given
        page = c.get("/sessions/chat-9").text
        assert "Current step" in page and "step_2: Write it" in page
        assert "Declared step_1: Gather numbers" in page
        assert "Step step_1 completed (marker)" in page
        assert "<b>report</b>" not in page and "&lt;b&gt;report&lt;/b&gt;" in page
    nav.close()

    runner = CliRunner()
    shown = runner.invoke(cli_app, ["sessions", "show", "chat-9", "--store", url])
    assert shown.exit_code == 0, shown.output
    assert "Progress: 1/2 steps done" in shown.output
    listed = runner.invoke(cli_app, ["sessions", "list", "--store", url, "--json"])
    assert listed.exit_code == 0 and '"kind": "session"' in listed.output
