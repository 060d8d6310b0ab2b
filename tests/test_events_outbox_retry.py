"""Outboxes that do not go out, and stores that fail, lose nothing (issue 39 item 1).

An outbox entry whose publish keeps failing is logged each time with its
plan id and tried again with backoff until the bus takes it, and the caller
then hears back; plans whose outbox stays unsent are listed by ``waygraph
events outbox``, ``/api/outbox`` and the dashboard's sessions page. A store
call that raises ``StoreError`` (a PostgreSQL store past its deadline) is a
transient failure: the event is redelivered and the goal answered once.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from tests.bus_contract import async_test, eventually
from waygraph.cli import app
from waygraph.errors import Conflict, StoreError
from waygraph.events import (
    Envelope,
    InProcessBus,
    Planner,
    StateAction,
    StateConfig,
    StateTransition,
    Topic,
    Worker,
    _outbox_retry,
)
from waygraph.events.failures import is_permanent
from waygraph.events.outbox import stuck_outboxes
from waygraph.server import create_app
from waygraph.store import SQLiteStore, Write

SM = {
    "start": StateConfig(state_name="start", default_next="work"),
    "work": StateConfig(
        state_name="work",
        action=StateAction(event_type="job.requested", data={"n": "{goal_data.n}"}),
        transitions=[StateTransition(on_event="job.completed", to_state="done")],
    ),
    "done": StateConfig(state_name="done", is_terminal=True),
}


class RefusingBus(InProcessBus):
    """Refuses to publish the goal's answer (``job.done``) ``failures`` times, or always."""

    def __init__(self, failures: int | None) -> None:
        super().__init__(source="test", retry_delay=0.001)
        self.failures = failures
        self.refused = 0

    async def publish(self, envelope: Envelope, topic: Topic | str | None = None) -> None:
        if envelope.type == "job.done" and (self.failures is None or self.refused < self.failures):
            self.refused += 1
            raise ConnectionError("the bus is away")
        await super().publish(envelope, topic)


def build(bus: InProcessBus, store: Any) -> tuple[Planner, Worker]:
    planner = Planner("retry-planner", bus=bus, store=store)
    planner.on_goal("job.goal", state_machine=SM)
    worker = Worker("retry-worker", bus=bus)

    @worker.on_task("job.requested")
    async def job(task: Any, context: Any) -> dict[str, Any]:
        return {"n": task.data["n"]}

    return planner, worker


@pytest.fixture
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_outbox_retry, "FIRST_DELAY", 0.05)


@async_test(60)
async def test_a_failing_outbox_is_logged_each_time_and_sent_once_the_bus_takes_it(
    tmp_path: Path, quick_backoff: None, caplog: pytest.LogCaptureFixture
) -> None:
    bus = RefusingBus(failures=4)
    planner, worker = build(bus, f"sqlite:///{tmp_path / 'plans.db'}")
    await planner.start()
    await worker.start()
    try:
        with caplog.at_level(logging.WARNING, logger="waygraph.events"):
            answer = await bus.ask("job.goal", {"n": 7}, "job.done", timeout=30)
        assert answer.data["status"] == "completed" and answer.data["result"]["results"]
        plan_id = answer.data["plan_id"]
        tries = [
            int(m.group(1))
            for r in caplog.records
            if (
                m := re.search(
                    rf"plan {plan_id}: outbox not sent \(job.done .*\), try (\d+)", r.getMessage()
                )
            )
        ]
        # Each failure is logged with the plan, the count going up as the waits double.
        assert tries == [1, 2, 3, 4] and bus.refused == 4
        assert any("trying again in 0.4 s" in r.getMessage() for r in caplog.records)
        assert planner.context.retries.attempts(plan_id) == 0
    finally:
        await worker.close()
        await planner.close()
        await bus.close()


@async_test(60)
async def test_a_stuck_outbox_is_listed_by_the_cli_the_api_and_the_dashboard(
    tmp_path: Path, quick_backoff: None
) -> None:
    url = f"sqlite:///{tmp_path / 'plans.db'}"
    bus = RefusingBus(failures=None)
    planner, worker = build(bus, url)
    await planner.start()
    await worker.start()
    try:
        goal = await bus.request("job.goal", {"n": 1}, "job.done")
        await eventually(lambda: bus.refused >= 2, timeout=20, what="two refused answers")
        store = planner.store
        [stuck] = stuck_outboxes(store, older_than=0)
        assert stuck.planner == "retry-planner" and stuck.status == "completed"
        assert "job.done" in [e["type"] for e in stuck.entries]
        assert all(e["bytes"] > 0 for e in stuck.entries)
        assert stuck_outboxes(store) == []  # not yet a minute old
        assert goal.correlation_id
    finally:
        await worker.close()
        await planner.close()
        await bus.close()
    result = CliRunner().invoke(app, ["events", "outbox", "--store", url, "--older-than", "0"])
    assert result.exit_code == 1 and stuck.plan_id in result.output and "job.done" in result.output
    as_json = CliRunner().invoke(
        app, ["events", "outbox", "--store", url, "--older-than", "0", "--json"]
    )
    assert json.loads(as_json.output.splitlines()[0])["plan_id"] == stuck.plan_id
    calm = CliRunner().invoke(app, ["events", "outbox", "--store", url])
    assert calm.exit_code == 0 and "no stuck outboxes" in calm.output
    with TestClient(create_app(store=url), base_url="http://127.0.0.1") as client:
        listed = client.get("/api/outbox", params={"older_than": 0}).json()["stuck"]
        assert [row["plan_id"] for row in listed] == [stuck.plan_id]
        assert client.get("/api/outbox").json() == {"stuck": []}
    # An hour later (as stored), the sessions page shows it too.
    aged = SQLiteStore(tmp_path / "plans.db")
    try:
        record = aged.get(stuck.plan_id)
        assert record is not None
        data = dict(record.data, updated_at=record.data["updated_at"] - 3600)
        fields = (record.kind, record.session, record.status, record.plan)
        aged.commit_all(
            [Write(record.key, data, record.version, (), *fields, record.correlation_ids)]
        )
    finally:
        aged.close()
    with TestClient(create_app(store=url), base_url="http://127.0.0.1") as client:
        page = client.get("/").text
        assert "Stuck outboxes" in page and stuck.plan_id in page


class FailingStore(SQLiteStore):
    """A SQLite store whose commits number ``failing`` raise StoreError (a store past its
    deadline), as the PostgreSQL store does when its server stops answering."""

    def __init__(self, path: Path, failing: set[int]) -> None:
        super().__init__(path)
        self.failing = failing
        self.commits = 0

    def commit_all(self, writes: Any) -> Any:
        self.commits += 1
        if self.commits in self.failing:
            raise StoreError(
                f"the store did not answer within its deadline (commit {self.commits})"
            )
        return super().commit_all(writes)


@async_test(60)
async def test_a_store_error_is_transient_the_event_redelivered_and_the_goal_answered_once(
    tmp_path: Path,
) -> None:
    # Commit 1 creates the plan (the goal's handler), commit 2 takes the worker's
    # answer (routing): each fails once and succeeds on the redelivery.
    store = FailingStore(tmp_path / "plans.db", failing={1, 3})
    bus = InProcessBus(source="test", retry_delay=0.01)
    planner, worker = build(bus, store)
    answers: list[Envelope] = []

    async def collect(event: Envelope) -> None:
        answers.append(event)

    await planner.start()
    await worker.start()
    try:
        await bus.subscribe(Topic.ACTION_RESULTS, "job.done", collect)
        answer = await bus.ask("job.goal", {"n": 3}, "job.done", timeout=30)
        await bus.drain()
        assert answer.data["status"] == "completed"
        assert answer.data["result"]["results"]["work"] == {"n": 3}
        assert len(answers) == 1 and store.commits >= 4
    finally:
        await worker.close()
        await planner.close()
        await bus.close()


def test_every_store_error_is_transient_whatever_else_it_is() -> None:
    class DeadlineError(StoreError, ValueError):
        """A store error that is also a ValueError (a permanent kind otherwise)."""

    assert not is_permanent(StoreError("no answer"))
    assert not is_permanent(Conflict("raced"))
    assert not is_permanent(DeadlineError("deadline"))
    assert is_permanent(ValueError("bad data"))
