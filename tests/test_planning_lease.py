"""A stored run is run by one process at a time (issue 33, item 2).

Starting or resuming a run writes a lease (owner and expiry) into the run
record with the record's version-checked commit; a second resumer is
refused with a PlanningError before it calls any tool, a lease whose owner
is gone or expired is taken over, ``--takeover`` takes a live one at once
and says whose it was, and the steps a kill interrupted are marked so.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from waygraph.cli import app
from waygraph.errors import PlanningError
from waygraph.planning import Plan, PlanningAgent
from waygraph.planning._journal import load_run
from waygraph.planning._lease import Lease
from waygraph.store import Store, open_store
from waygraph.testing import ScriptedChatServer

pytestmark = pytest.mark.timeout(90)

runner = CliRunner()


def chain_plan() -> Plan:
    """a -> b -> c."""
    return Plan(
        goal="three steps in a row",
        steps=[
            {"id": "a", "action": "first"},
            {"id": "b", "action": "second", "parameters": {"x": "${a}"}, "dependencies": ["a"]},
            {"id": "c", "action": "third", "parameters": {"x": "${b}"}, "dependencies": ["b"]},
        ],
    )


def counting_tools(calls: list[str], gate: threading.Event | None = None) -> list[Any]:
    """first, second, third: each notes its call; ``second`` waits for ``gate`` when given."""

    def first() -> dict[str, int]:
        calls.append("a")
        return {"n": 1}

    def second(x: dict[str, int]) -> dict[str, int]:
        calls.append("b")
        if gate is not None:
            gate.wait(60)
        return {"n": x["n"] + 1}

    def third(x: dict[str, int]) -> int:
        calls.append("c")
        return x["n"] + 1

    return [first, second, third]


def interrupted_run(store: str | Store) -> str:
    """chain_plan stopped (as Ctrl-C stops it) while ``b`` runs; the run id."""
    calls: list[str] = []
    gate = threading.Event()
    agent = PlanningAgent(None, tools=counting_tools(calls, gate), store=store)

    async def scenario() -> str:
        task = asyncio.ensure_future(agent.execute_plan(chain_plan()))
        while "b" not in calls:
            await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        gate.set()  # let b's thread end (asyncio.run waits for it); its result is not kept
        assert agent.run_id is not None
        return agent.run_id

    return asyncio.run(scenario())


def hold(store: Store, run_id: str, lease: Lease, running: list[str] | None = None) -> None:
    """Write ``lease`` into the run record, as another process starting the run would."""
    record = store.get(run_id)
    assert record is not None
    data = {**record.data, "lease": lease.data()}
    if running is not None:
        data["current_node"] = running
    store.commit(
        run_id,
        data,
        record.version,
        [],
        kind=record.kind,
        session=record.session,
        status=record.status,
        plan=record.plan,
    )


def elsewhere(expires_in: float) -> Lease:
    """A lease of a process on another machine (its liveness cannot be looked up)."""
    return Lease("build-host-7", 4242, "f00d", time.time() + expires_in, "another/machine/1")


def types(store: Store, key: str) -> list[str]:
    return [e.data["type"] for e in store.events(key)]


# ------------------------------------------------------------------ the lease itself


def test_a_run_holds_a_lease_while_it_runs_and_releases_it_when_it_ends():
    store = open_store("memory://")
    seen: list[Any] = []

    def first() -> int:
        record = store.get(agent.run_id or "")
        seen.append(record.data.get("lease") if record is not None else None)
        return 1

    agent = PlanningAgent(None, tools=[first], store=store)
    plan = Plan(goal="one", steps=[{"id": "a", "action": "first"}])
    result = asyncio.run(agent.execute_plan(plan))
    assert result.success
    lease = Lease.from_data(seen[0])
    assert lease is not None and lease.pid == os.getpid() and lease.live()
    assert store.get(result.run_id).data["lease"] is None  # released at the end


def test_a_stopped_run_releases_its_lease_so_it_can_be_resumed_at_once():
    store = open_store("memory://")
    run_id = interrupted_run(store)
    assert load_run(store, run_id).lease is None
    calls: list[str] = []
    result = asyncio.run(
        PlanningAgent(None, tools=counting_tools(calls), store=store).resume(run_id)
    )
    assert result.success and calls == ["b", "c"]


def test_the_lease_is_renewed_while_a_long_step_runs(monkeypatch: pytest.MonkeyPatch):
    import waygraph.planning._journal as journal

    monkeypatch.setattr(journal, "RENEW", 0.05)  # renew often; nothing else commits meanwhile
    store = open_store("memory://")
    expiries: list[float] = []

    async def wait() -> str:
        deadline = time.monotonic() + 30
        while len(set(expiries)) < 3 and time.monotonic() < deadline:
            lease = Lease.from_data(store.get(agent.run_id or "").data.get("lease"))
            if lease is not None:
                expiries.append(lease.expires)
            await asyncio.sleep(0.02)
        return "done"

    agent = PlanningAgent(None, tools=[wait], store=store)
    result = asyncio.run(agent.execute_plan(Plan(goal="w", steps=[{"id": "w", "action": "wait"}])))
    assert result.success
    assert len(set(expiries)) >= 3 and expiries == sorted(expiries)


@pytest.mark.parametrize(
    "data", [None, "x", [], {"host": "h"}, {"host": "h", "pid": "x", "token": "t", "expires": 1}]
)
def test_a_lease_that_is_not_one_is_read_as_no_lease(data: Any):
    assert Lease.from_data(data) is None


# ------------------------------------------------------------------ two resumers


def test_two_resumers_started_together_one_runs_and_the_other_calls_nothing(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id = interrupted_run(url)
    barrier = threading.Barrier(2)
    release = threading.Event()  # the winner's step b waits until the loser was refused
    calls: dict[int, list[str]] = {0: [], 1: []}
    outcome: dict[int, Any] = {}

    def resume(index: int) -> None:
        agent = PlanningAgent(None, tools=counting_tools(calls[index], release), store=url)
        barrier.wait()
        try:
            outcome[index] = asyncio.run(agent.resume(run_id))
        except PlanningError as exc:
            outcome[index] = exc
            release.set()

    threads = [threading.Thread(target=resume, args=(i,)) for i in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    refused = [i for i, o in outcome.items() if isinstance(o, PlanningError)]
    assert len(refused) == 1, outcome
    loser, winner = refused[0], 1 - refused[0]
    assert calls[loser] == []  # refused before it called any tool
    message = str(outcome[loser])
    assert "is being run by" in message or "another process is resuming it" in message
    assert outcome[winner].success and calls[winner] == ["b", "c"]


def test_a_resume_of_a_run_held_elsewhere_is_refused_naming_the_holder():
    store = open_store("memory://")
    run_id = interrupted_run(store)
    holder = elsewhere(600)
    hold(store, run_id, holder)
    calls: list[str] = []
    agent = PlanningAgent(None, tools=counting_tools(calls), store=store)
    with pytest.raises(PlanningError) as refused:
        asyncio.run(agent.resume(run_id))
    assert calls == []
    assert f"is being run by pid 4242 on build-host-7 until {holder.until()}" in str(refused.value)
    assert "--takeover" in str(refused.value)


def test_an_expired_lease_is_taken_over():
    store = open_store("memory://")
    run_id = interrupted_run(store)
    hold(store, run_id, elsewhere(-1))  # its owner stopped renewing it a second ago
    calls: list[str] = []
    result = asyncio.run(
        PlanningAgent(None, tools=counting_tools(calls), store=store).resume(run_id)
    )
    assert result.success and calls == ["b", "c"]


def test_the_lease_of_a_process_that_is_gone_is_taken_over_at_once():
    store = open_store("memory://")
    run_id = interrupted_run(store)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    mine = Lease.mine()
    hold(store, run_id, Lease(mine.host, dead.pid, "dead", time.time() + 600, mine.machine))
    calls: list[str] = []
    result = asyncio.run(
        PlanningAgent(None, tools=counting_tools(calls), store=store).resume(run_id)
    )
    assert result.success and calls == ["b", "c"]


def test_takeover_takes_a_live_lease_at_once():
    store = open_store("memory://")
    run_id = interrupted_run(store)
    hold(store, run_id, elsewhere(600))
    calls: list[str] = []
    agent = PlanningAgent(None, tools=counting_tools(calls), store=store)
    result = asyncio.run(agent.resume(run_id, takeover=True))
    assert result.success and calls == ["b", "c"]
    assert store.get(run_id).data["lease"] is None


def test_the_process_a_run_was_taken_from_stops_at_its_next_commit():
    store = open_store("memory://")
    gate = asyncio.Event()
    old_calls: list[str] = []

    async def first() -> dict[str, int]:
        old_calls.append("a")
        return {"n": 1}

    async def second(x: dict[str, int]) -> dict[str, int]:
        old_calls.append("b")
        await gate.wait()
        return {"n": x["n"] + 1}

    async def third(x: dict[str, int]) -> int:
        old_calls.append("c")
        return x["n"] + 1

    async def scenario() -> tuple[Any, Any]:
        holder = PlanningAgent(None, tools=[first, second, third], store=store)
        task = asyncio.ensure_future(holder.execute_plan(chain_plan(), run_id="dag_taken"))
        # Until b's start is committed, the holder's writer has a commit to
        # make that a takeover would race with (that one would get a Conflict).
        while "b" not in getattr(store.get("dag_taken"), "data", {}).get("current_node", []):
            await asyncio.sleep(0.005)
        with pytest.raises(PlanningError, match="is being run by pid"):
            await PlanningAgent(None, tools=counting_tools([]), store=store).resume("dag_taken")
        taker = PlanningAgent(None, tools=counting_tools([]), store=store)
        taken = await taker.resume("dag_taken", takeover=True)
        gate.set()
        return taken, await task

    taken, old = asyncio.run(scenario())
    assert taken.success
    # The process the run was taken from does not report a success it could not save.
    assert not old.success and "could not be saved" in old.final_output
    # The old holder's first commit after the takeover is refused: nothing it
    # did afterwards reaches the store, whose run is the taker's, ended once.
    kinds = types(store, "dag_taken")
    assert kinds.count("plan_completed") == 1 and kinds[-1] == "plan_completed"
    steps = [
        (e.data["type"], e.data["node"]) for e in store.events("dag_taken") if "node" in e.data
    ]
    assert steps[-3:] == [("node_interrupted", "b"), ("node_finished", "b"), ("node_finished", "c")]
    assert store.get("dag_taken").data["lease"] is None


# ------------------------------------------------------------------ interrupted steps


def test_the_step_running_at_the_stop_is_marked_interrupted_before_it_runs_again():
    store = open_store("memory://")
    run_id = interrupted_run(store)
    assert load_run(store, run_id).interrupted() == ["b"]
    asyncio.run(PlanningAgent(None, tools=counting_tools([]), store=store).resume(run_id))
    kinds = types(store, run_id)
    # Marked before the resume's checkpoint, so before b's second call.
    assert kinds.index("node_interrupted") < kinds.index("plan_resumed")
    marked = [e.data for e in store.events(run_id) if e.data["type"] == "node_interrupted"]
    assert [m["node"] for m in marked] == ["b"]
    resumed = next(e.data for e in store.events(run_id) if e.data["type"] == "plan_resumed")
    assert resumed["interrupted"] == ["b"]
    assert store.get(run_id).data["interrupted"] == ["b"]


# ------------------------------------------------------------------ the command

TOOLS = """
from pathlib import Path

LEDGER = Path(__file__).with_name("ledger.txt")


def _note(name):
    with LEDGER.open("a") as f:
        f.write(name + "\\n")


def first():
    _note("a")
    return {"n": 1}


def second(x):
    _note("b")
    return {"n": x["n"] + 1}


def third(x):
    _note("c")
    return x["n"] + 1
"""


def test_waygraph_plan_takeover_says_whose_run_it_took(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id = interrupted_run(url)
    holder = elsewhere(600)
    hold(open_store(url), run_id, holder, running=["b"])
    (tmp_path / "tools.py").write_text(TOOLS)
    with ScriptedChatServer([]) as server:
        base = [
            *("plan", "--resume", run_id, "--llm", server.base_url, "--model", "m"),
            *("--workspace", str(tmp_path), "--store", url),
            *("--no-workspace-tools", "--tools", str(tmp_path / "tools.py")),
        ]
        refused = runner.invoke(app, base, env={"COLUMNS": "400"})
        taken = runner.invoke(app, [*base, "--takeover"], env={"COLUMNS": "400"})
    assert refused.exit_code == 2, refused.output
    assert f"is being run by pid 4242 on build-host-7 until {holder.until()}" in refused.output
    assert "Traceback" not in refused.output
    assert taken.exit_code == 0, taken.output
    assert (
        "--takeover: run" in taken.output and "was held by pid 4242 on build-host-7" in taken.output
    )
    assert "interrupted: b" in taken.output
    assert "step b interrupted" in taken.output
    assert (tmp_path / "ledger.txt").read_text().split() == ["b", "c"]  # only the taker ran


def test_waygraph_plan_takeover_needs_resume(tmp_path: Path):
    result = runner.invoke(
        app,
        [
            "plan",
            "goal",
            "--takeover",
            "--llm",
            "http://x",
            "--model",
            "m",
            "--workspace",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 2
    assert "--resume RUN_ID" in result.output


def test_two_waygraph_plan_resumes_after_a_kill_one_runs_the_other_is_refused(tmp_path: Path):
    """kill -9 a run at s2; two ``--resume`` together: one runs s2 and s3 once, one exits 2."""
    wait_go = "while [ ! -f go ]; do sleep 0.05; done"
    steps = [
        {
            "id": "s1",
            "action": "shell",
            "parameters": {"command": "echo s1 >> ledger"},
            "dependencies": [],
        },
        {
            "id": "s2",
            "action": "shell",
            "parameters": {"command": f"echo s2 >> ledger; {wait_go}; echo two"},
            "dependencies": ["s1"],
        },
        {
            "id": "s3",
            "action": "shell",
            "parameters": {"command": "echo s3 >> ledger"},
            "dependencies": ["s2"],
        },
    ]
    reply = json.dumps({"goal": "ledger", "steps": steps})
    url = f"sqlite:///{tmp_path.parent / (tmp_path.name + '-runs.db')}"
    with ScriptedChatServer([reply]) as server:
        base = [
            *("--llm", server.base_url, "--model", "scripted", "--workspace", str(tmp_path)),
            *("--store", url, "--step-timeout", "60"),
        ]
        first = subprocess.Popen(
            [sys.executable, "-m", "waygraph", "plan", "ledger", *base],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            run_id = first.stderr.readline().split()[1]
            store = open_store(url)
            ledger = tmp_path / "ledger"
            deadline = time.monotonic() + 30
            # s2 is running: the record says so and its command has begun.
            while "s2" not in getattr(store.get(run_id), "data", {}).get(
                "current_node", []
            ) or "s2" not in (ledger.read_text().split() if ledger.exists() else []):
                assert time.monotonic() < deadline, "s2 never started"
                time.sleep(0.05)
        finally:
            first.kill()
            first.wait()
            first.stderr.close()
        resumers = [
            subprocess.Popen(
                [sys.executable, "-m", "waygraph", "plan", "--resume", run_id, *base],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                env={**os.environ, "COLUMNS": "400"},
            )
            for _ in range(2)
        ]
        try:
            # The loser is refused while the winner waits in s2 for "go".
            deadline = time.monotonic() + 60
            while all(r.poll() is None for r in resumers):
                assert time.monotonic() < deadline, "neither resumer was refused"
                time.sleep(0.05)
        finally:
            (tmp_path / "go").write_text("")
        outputs = []
        for resumer in resumers:
            _, err = resumer.communicate(timeout=60)
            outputs.append((resumer.returncode, err))
    codes = sorted(code for code, _ in outputs)
    assert codes == [0, 2], outputs
    refused = next(err for code, err in outputs if code == 2)
    ran = next(err for code, err in outputs if code == 0)
    assert "is being run by" in refused or "another process is resuming it" in refused
    assert "step s2 interrupted" in ran
    assert "which is gone: taking it over" in ran  # the killed run's lease, taken at once
    # s2 once by the killed run and once by the winner; the loser ran nothing.
    assert (tmp_path / "ledger").read_text().split() == ["s1", "s2", "s2", "s3"]
    kinds = types(open_store(url), run_id)
    assert kinds.count("plan_resumed") == 1 and "node_interrupted" in kinds
