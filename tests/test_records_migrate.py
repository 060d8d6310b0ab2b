"""Records written before the one run-record schema still load, in every store.

``tests/fixtures/records/`` holds what the code at commit 52671ec wrote (its
``make_old_records.py`` made them): a guided run still running and one
aborted (kind ``run``), a finished and an interrupted generated run (``dag``,
a bare status per node in ``visited``), a finished event plan and one waiting
for its event (``plan_context``, the planner in the ``plan`` column), and a
stored library version (``plan``). Each is read through the current code:
as an SQLite file of schema 1, as a file-store folder, and replayed into
every backend (PostgreSQL included) through ``commit`` with the old kinds.
Reading them must give the current schema, and each driver must carry on
its unfinished run.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from waygraph import Navigator
from waygraph.events import InProcessBus, PlanContext, Planner
from waygraph.model.record import current_nodes
from waygraph.planning import PlanningAgent
from waygraph.store import Store, open_store
from waygraph.store.sqlite import SCHEMA_VERSION

FIXTURES = Path(__file__).parent / "fixtures" / "records"
OLD = json.loads((FIXTURES / "old-records.json").read_text(encoding="utf-8"))


def _key(store: Store, kind: str, status: str) -> str:
    """The key of the one record of ``kind`` (its current name) with ``status``."""
    return next(r.key for r in store.list(kind=kind, status=status))


def _replay(store: Store) -> Store:
    for r in OLD["records"]:
        store.commit(
            r["key"],
            r["data"],
            0,
            r["events"],
            kind=r["kind"],
            session=r["session"],
            status=r["status"],
            plan=r["plan"],
            correlation_ids=r["correlation_ids"],
            make_current=r["current"],
        )
    return store


@pytest.fixture(params=["memory", "sqlite", "file", "postgres", "sqlite-file-v1", "file-folder"])
def old_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A store holding the old records, by each way they can reach current code."""
    name = request.param
    if name == "sqlite-file-v1":
        shutil.copy(FIXTURES / "old.db", tmp_path / "old.db")
        store = open_store(f"sqlite:///{tmp_path / 'old.db'}")
    elif name == "file-folder":
        shutil.copytree(FIXTURES / "old-files", tmp_path / "old-files")
        store = open_store(f"file://{tmp_path / 'old-files'}")
    elif name == "postgres":
        from tests.store_backends import empty_postgres

        store = _replay(empty_postgres(request.getfixturevalue("postgres_url")))
    else:
        url = {
            "memory": "memory://",
            "sqlite": f"sqlite:///{tmp_path / 'new.db'}",
            "file": f"file://{tmp_path / 'files'}",
        }[name]
        store = _replay(open_store(url))
    try:
        yield store
    finally:
        store.close()


def test_every_old_run_reads_in_the_current_schema(old_store: Store) -> None:
    kinds = {r.key: r.kind for r in old_store.list()}
    assert sorted(kinds.values()) == ["dag", "dag", "event", "event", "guided", "guided", "plan"]
    for record in old_store.list():
        if record.kind == "plan":
            continue
        data = record.data
        assert data["kind"] == record.kind
        assert data["plan"] == record.plan and record.plan is not None
        assert data["status"] == record.status
        assert isinstance(data["path"], list) and isinstance(data["visited"], dict)
        assert all("outcome" in v for v in data["visited"].values()), record.key
        assert isinstance(current_nodes(data), list)
    event = old_store.get(_key(old_store, "event", "running"))
    assert event is not None
    # An event run's plan is its own id; the planner has its own field.
    assert event.plan == event.key and event.data["planner"] == "old-planner"
    assert event.data["current_node"] == "work"
    dag = old_store.get(_key(old_store, "dag", "completed"))
    assert dag is not None
    assert dag.data["visited"]["a"] == {"outcome": "success", "status": "completed"}
    guided = old_store.get(_key(old_store, "guided", "running"))
    assert guided is not None and guided.data["plan"] == "bugfix_workflow"
    assert old_store.current("s-guided") == guided.key
    assert [r.key for r in old_store.list(kind="guided", status="running")] == [guided.key]
    assert {r.kind for r in old_store.session_rows(exclude_kinds=["plan"]).records} == {
        "guided",
        "dag",
        "event",
    }


def test_the_old_guided_run_carries_on(old_store: Store) -> None:
    nav = Navigator(store=old_store, strict=True)
    before = nav.state("s-guided")
    assert before is not None and before["status"] == "running"
    guidance = nav.turn("s-guided", tool_output="1 failed: test_login", exit_code=1)
    after = guidance.run
    assert after is not None and after["run_id"] == before["run_id"]
    assert after["turn"] == before["turn"] + 1
    assert after["kind"] == "guided" and after["plan"] == "bugfix_workflow"
    record = old_store.get(before["run_id"])
    assert record is not None and record.kind == "guided"


def test_the_old_event_plan_waiting_for_its_event_finishes(old_store: Store) -> None:
    async def run() -> tuple[str, str, list[str]]:
        planner = Planner("old-planner", bus=InProcessBus(), store=old_store)
        mine = await PlanContext.find(planner.context, planner="old-planner")
        plan = await PlanContext.restore(_key(old_store, "event", "running"), planner.context)
        correlation = plan.correlation_ids[-1]
        done = planner.context.bus.envelope("job.done", {"ok": True}, correlation_id=correlation)
        await plan.execute_next(done)
        return plan.current_state, plan.path[-1], sorted(p.plan_id for p in mine)

    state, last, found = asyncio.run(run())
    assert state == last == "done"
    assert found == sorted(r.key for r in old_store.list(kind="event"))
    assert len(found) == 2
    record = old_store.get(_key(old_store, "event", "running"))
    assert record is not None and record.data["current_node"] == "done"
    assert record.data["path"] == ["done"]  # states entered since the new code took over


def test_the_interrupted_generated_run_resumes_without_calling_the_finished_step(
    old_store: Store,
) -> None:
    calls: list[str] = []

    async def first() -> dict[str, int]:
        calls.append("first")
        return {"n": 1}

    async def hang(x: dict[str, Any]) -> dict[str, Any]:
        calls.append("hang")
        return {"n": x["n"] + 1}

    run_id = _key(old_store, "dag", "running")
    agent = PlanningAgent(None, tools=[first, hang], store=old_store)
    result = asyncio.run(agent.resume(run_id))
    assert result.success and result.final_output == {"n": 2}
    assert calls == ["hang"]
    record = old_store.get(run_id)
    assert record is not None and record.status == "completed"
    assert record.data["visited"]["b"] == {"outcome": "success", "status": "completed"}


def test_an_sqlite_file_of_schema_1_gets_the_new_kind_names_on_open(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "old.db", tmp_path / "old.db")
    open_store(f"sqlite:///{tmp_path / 'old.db'}").close()
    conn = sqlite3.connect(tmp_path / "old.db")
    try:
        kinds = sorted(k for (k,) in conn.execute("SELECT kind FROM records"))
        version = conn.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()
        plans = dict(conn.execute("SELECT key, plan FROM records WHERE kind = 'event'").fetchall())
    finally:
        conn.close()
    assert kinds == ["dag", "dag", "event", "event", "guided", "guided", "plan"]
    assert version == (str(SCHEMA_VERSION),)
    assert plans == {key: key for key in plans} and len(plans) == 2
