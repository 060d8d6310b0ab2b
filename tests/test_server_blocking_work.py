"""The server keeps answering while blocking work runs (issue 39 item 3).

Command gates run in slots of their own (:mod:`waygraph.verify.gates`), turns in
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

from waygraph import Navigator
from waygraph.library import Library
from waygraph.model import Plan
from waygraph.server import create_app
from waygraph.verify import gates

TURNS = 40
#: Only a guard against a hung suite, never a measure of speed.
GUARD_SECONDS = 60.0


def gate_plan(command: str) -> Plan:
    step = {"name": "check", "verify": {"type": "command", "run": command, "timeout": 120}}
    return Plan.model_validate(
        {"id": "gated", "triggers": ["do it"], "trigger_threshold": 1, "steps": [step]}
    )


@pytest.fixture
def release(tmp_path: Path) -> Path:
    """The file whose creation lets every gate finish (each waits for it)."""
    return tmp_path / "release"


@pytest.fixture
def client(tmp_path: Path, release: Path) -> Iterator[TestClient]:
    # A gate that runs until the test lets it: "slow" for as long as the test needs.
    gate = f"while [ ! -e {release} ]; do sleep 0.05; done"
    library = Library([gate_plan(gate)])
    nav = Navigator(
        library, store="memory://", strict=True, workspace=tmp_path, allow_commands=True
    )
    with TestClient(create_app(nav), base_url="http://127.0.0.1") as c:
        yield c
    release.touch()  # a failed test must not leave gates running


def slots(monkeypatch: pytest.MonkeyPatch, size: int, wait: float) -> gates.GateSlots:
    pool = gates.GateSlots(size, wait=wait)
    monkeypatch.setattr(gates, "SLOTS", pool)
    return pool


def verdicts(answer: Any) -> list[dict[str, Any]]:
    return [e for e in answer.json()["events"] if e["type"] == "node_verified"]


def start_sessions(client: TestClient) -> list[str]:
    sessions = [f"s{i}" for i in range(TURNS)]
    for session in sessions:
        started = client.post(f"/api/sessions/{session}/turn", json={"user_message": "do it"})
        assert started.status_code == 200
    return sessions


def wait_for(check: Any, what: str) -> None:
    deadline = time.monotonic() + GUARD_SECONDS
    while not check():
        assert time.monotonic() < deadline, f"{what} did not happen"
        time.sleep(0.02)


def test_health_and_reads_answer_while_40_slow_gates_run(
    client: TestClient, release: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = slots(monkeypatch, 8, wait=GUARD_SECONDS)
    sessions = start_sessions(client)
    with ThreadPoolExecutor(max_workers=TURNS + 3) as workers:
        turns = [
            workers.submit(
                client.post, f"/api/sessions/{session}/turn", json={"tool_output": "done"}
            )
            for session in sessions
        ]
        try:
            wait_for(lambda: pool.running == pool.size, "every gate slot taken")
            # Every slot holds a gate that will not end until released, and the other
            # turns wait for slots or work threads: health and reads must still answer.
            paths = ("/api/health", "/api/plans", "/api/sessions")
            reads = [workers.submit(client.get, path) for path in paths]
            answered = [r.result(timeout=GUARD_SECONDS) for r in reads]
            finished = sum(t.done() for t in turns)
        finally:
            release.touch()  # whatever happened, the gates end and the pool shuts down
        answers = [t.result(timeout=GUARD_SECONDS) for t in turns]
    assert [a.status_code for a in answered] == [200, 200, 200]
    assert answered[0].json()["status"] == "ok"
    # They answered before any gate could finish, not after the gates made room.
    assert finished == 0
    assert {a.status_code for a in answers} == {200}
    assert [v["outcome"] for a in answers for v in verdicts(a)] == ["success"] * TURNS


def test_gates_that_get_no_slot_are_unknown_naming_why_and_their_turns_answer(
    client: TestClient, release: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = slots(monkeypatch, 2, wait=0.2)
    sessions = start_sessions(client)
    with ThreadPoolExecutor(max_workers=TURNS) as workers:
        turns = [
            workers.submit(
                client.post, f"/api/sessions/{session}/turn", json={"tool_output": "done"}
            )
            for session in sessions
        ]
        try:
            wait_for(lambda: pool.running == pool.size, "both gate slots taken")
            # Turns whose gate found no slot answer while the two gates still run.
            wait_for(lambda: sum(t.done() for t in turns) >= TURNS - pool.size, "other turns")
            assert pool.running == pool.size
        finally:
            release.touch()
        answers = [t.result(timeout=GUARD_SECONDS) for t in turns]
    outcomes = [v["outcome"] for a in answers for v in verdicts(a)]
    assert outcomes.count("success") == pool.size and "fail" not in outcomes
    unknown = [v for a in answers for v in verdicts(a) if v["outcome"] == "unknown"]
    assert len(unknown) == TURNS - pool.size
    assert all("all 2 command-gate slots stayed busy for 0.2 s" in v["reason"] for v in unknown)
    assert {a.json()["run"]["status"] for a in answers} >= {"running", "completed"}


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
