"""The server keeps answering while blocking work runs (issue 39 item 3).

Command gates run in slots of their own (:mod:`waygraph.gates`), turns in
the server's ``work`` pool (:mod:`waygraph.server.pools`), and
``/api/health`` takes no thread: 40 turns whose gates sleep leave health and
the read routes answering, and a gate that gets no slot is *unknown*, naming
why, never a fail.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from waygraph import Navigator, gates
from waygraph.library import Library
from waygraph.model import Plan
from waygraph.server import create_app

GATE_SECONDS = 4
TURNS = 40
#: Only a guard against a hung suite, never a measure of speed.
GUARD_SECONDS = 120.0


def gate_plan(command: str) -> Plan:
    step = {"name": "check", "verify": {"type": "command", "run": command, "timeout": 60}}
    return Plan.model_validate(
        {"id": "gated", "triggers": ["do it"], "trigger_threshold": 1, "steps": [step]}
    )


@pytest.fixture
def small_pool(monkeypatch: pytest.MonkeyPatch) -> gates.GateSlots:
    """Four gate slots, and a one-second wait for one (the defaults are 8 and 10 s)."""
    pool = gates.GateSlots(4, wait=1.0)
    monkeypatch.setattr(gates, "SLOTS", pool)
    return pool


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    library = Library([gate_plan(f"sleep {GATE_SECONDS}")])
    nav = Navigator(
        library, store="memory://", strict=True, workspace=tmp_path, allow_commands=True
    )
    with TestClient(create_app(nav), base_url="http://127.0.0.1") as c:
        yield c


def verdicts(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in answer["events"] if e["type"] == "node_verified"]


def test_health_and_reads_answer_while_40_slow_gates_run(
    client: TestClient, small_pool: gates.GateSlots
) -> None:
    sessions = [f"s{i}" for i in range(TURNS)]
    for session in sessions:
        started = client.post(f"/api/sessions/{session}/turn", json={"user_message": "do it"})
        assert started.status_code == 200
    with ThreadPoolExecutor(max_workers=TURNS) as pool:
        turns = [
            pool.submit(client.post, f"/api/sessions/{session}/turn", json={"tool_output": "done"})
            for session in sessions
        ]
        deadline = time.monotonic() + GUARD_SECONDS
        while small_pool.running < small_pool.size and time.monotonic() < deadline:
            time.sleep(0.02)
        assert small_pool.running == small_pool.size, "the gates never started"
        # Every slot is taken and more turns wait behind them: the server still answers.
        health = client.get("/api/health")
        plans = client.get("/api/plans")
        listed = client.get("/api/sessions")
        still_running = small_pool.running
        unfinished = sum(not t.done() for t in turns)
        answers = [t.result(timeout=GUARD_SECONDS) for t in turns]
    assert health.status_code == 200 and health.json()["status"] == "ok"
    assert plans.status_code == 200 and listed.status_code == 200
    # They answered before the gates were through, not after.
    assert still_running > 0 and unfinished > 0
    assert {a.status_code for a in answers} == {200}
    outcomes = [v["outcome"] for a in answers for v in verdicts(a.json())]
    assert "fail" not in outcomes
    assert outcomes.count("success") >= small_pool.size
    unknown = [v for a in answers for v in verdicts(a.json()) if v["outcome"] == "unknown"]
    assert unknown, "with 4 slots and a 1 s wait some of 40 gates find no slot"
    assert all("command-gate slots stayed busy" in v["reason"] for v in unknown)


def test_a_gate_without_a_slot_is_unknown_naming_why_and_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    busy = gates.GateSlots(1, wait=0.0)
    with busy.slot():
        seen = gates.run_command(f"touch {marker}", cwd=tmp_path, slots=busy)
    assert seen.exit_code is None and not marker.exists()
    assert "all 1 command-gate slots stayed busy for 0 s" in seen.data[gates.UNAVAILABLE]
    # Once a slot is free the same gate runs.
    assert gates.run_command(f"touch {marker}", cwd=tmp_path, slots=busy).exit_code == 0
    assert marker.exists()


def test_a_turn_whose_gate_gets_no_slot_is_unknown_even_for_a_negated_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "output must not contain X" would pass on any text: a gate that never ran must not.
    step = {
        "name": "check",
        "verify": {
            "type": "command",
            "run": "echo FAILED",
            "expect": {"type": "output_not_contains", "value": "FAILED"},
        },
    }
    plan = Plan.model_validate(
        {"id": "neg", "triggers": ["do it"], "trigger_threshold": 1, "steps": [step]}
    )
    busy = gates.GateSlots(1, wait=0.0)
    monkeypatch.setattr(gates, "SLOTS", busy)
    nav = Navigator(Library([plan]), store="memory://", strict=True, allow_commands=True)
    nav.turn("s", user_message="do it")
    held = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with busy.slot():
            held.set()
            release.wait(GUARD_SECONDS)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert held.wait(GUARD_SECONDS)
    try:
        g = nav.turn("s", tool_output="done")
    finally:
        release.set()
        holder.join(GUARD_SECONDS)
    (verified,) = [e for e in g.events if e.type == "node_verified"]
    assert verified["outcome"] == "unknown"
    assert "command-gate slots stayed busy" in verified["reason"]
    assert g.run["status"] == "running"
