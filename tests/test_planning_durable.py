"""Generated runs are durable: every finished step is committed, and a run resumes.

The promise tested here: after a crash (Ctrl-C, SIGKILL), ``agent.resume(run_id)``
and ``waygraph plan --resume RUN_ID`` continue the run without calling again
any step whose result was committed; a step that was running runs again.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from waygraph.cli import app
from waygraph.errors import RunNotFoundError
from waygraph.planning import Plan, PlanningAgent, PlanningPattern, StepStatus
from waygraph.planning._journal import KIND, load_run
from waygraph.store import open_store
from waygraph.testing import ScriptedChatServer

pytestmark = pytest.mark.timeout(60)


def chain_plan() -> Plan:
    """a -> b -> c, each passing its output on."""
    return Plan(
        goal="three steps in a row",
        steps=[
            {"id": "a", "action": "first"},
            {"id": "b", "action": "second", "parameters": {"x": "${a}"}, "dependencies": ["a"]},
            {"id": "c", "action": "third", "parameters": {"x": "${b}"}, "dependencies": ["b"]},
        ],
    )


class Tools:
    """Counting tools; ``second`` waits for ``gate`` while ``hold`` is set."""

    def __init__(self, *, hold: bool = False) -> None:
        self.calls: list[str] = []
        self.hold = hold
        self.gate = asyncio.Event()

    def all(self) -> list[Any]:
        async def first() -> dict[str, int]:
            self.calls.append("a")
            return {"n": 1}

        async def second(x: dict[str, int]) -> dict[str, int]:
            self.calls.append("b")
            if self.hold:
                await self.gate.wait()
            return {"n": x["n"] + 1}

        async def third(x: dict[str, int]) -> int:
            self.calls.append("c")
            return x["n"] + 1

        return [first, second, third]


def types(store: Any, key: str) -> list[str]:
    return [e.data["type"] for e in store.events(key)]


async def cancel_when(agent: PlanningAgent, plan: Plan, started: Callable[[], bool]) -> str:
    """Run ``plan``, cancel it (as Ctrl-C does) once ``started()``; the run id."""
    task = asyncio.ensure_future(agent.execute_plan(plan))
    while not started():
        await asyncio.sleep(0.005)
    await asyncio.sleep(0.02)  # let the finished steps' commits land
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert agent.run_id is not None
    return agent.run_id


async def interrupted_run(store: Any, tools: Tools) -> str:
    """Start chain_plan, cancel it while ``b`` runs; the run id."""
    agent = PlanningAgent(None, tools=tools.all(), store=store)
    return await cancel_when(agent, chain_plan(), lambda: "b" in tools.calls)


# ------------------------------------------------------------------ what is stored


def test_every_run_is_a_dag_record_with_its_steps_as_events():
    store = open_store("memory://")
    tools = Tools()
    result = asyncio.run(
        PlanningAgent(None, tools=tools.all(), store=store).execute_plan(chain_plan())
    )
    assert result.success and result.final_output == 3
    record = store.get(result.run_id)
    assert record.kind == KIND == "dag"
    assert record.status == "completed" and record.session == result.run_id
    assert record.plan == record.data["plan"] == "three-steps-in-a-row"
    done = {"outcome": "success", "status": "completed"}
    assert record.data["visited"] == {"a": done, "b": done, "c": done}
    assert record.data["path"] == ["a", "b", "c"]
    assert record.data["current_node"] == []
    assert store.current(result.run_id) == result.run_id
    events = types(store, result.run_id)
    assert events[0] == "plan_started" and events[-1] == "plan_completed"
    assert events == ["plan_started", *["node_finished"] * 3, "plan_completed"]
    finished = [e.data for e in store.events(result.run_id) if e.data["type"] == "node_finished"]
    assert [f["result"]["output"] for f in finished] == [{"n": 1}, {"n": 2}, 3]


def test_a_failed_run_is_stored_failed_with_the_reason():
    store = open_store("memory://")

    async def first() -> None:
        raise RuntimeError("disk full")

    plan = Plan(goal="g", steps=[{"id": "a", "action": "first"}])
    agent = PlanningAgent(
        None, tools=[first], store=store, pattern=PlanningPattern(allow_revision=False)
    )
    result = asyncio.run(agent.execute_plan(plan))
    record = store.get(result.run_id)
    assert not result.success and record.status == "failed"
    end = store.events(result.run_id)[-1].data
    assert end["type"] == "plan_failed" and "disk full" in end["reason"]


def test_the_default_store_is_the_navigators(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("WAYGRAPH_STORE", f"sqlite:///{tmp_path / 'runs.db'}")
    agent = PlanningAgent(None, tools=Tools().all())
    result = asyncio.run(agent.execute_plan(chain_plan()))
    assert open_store(f"sqlite:///{tmp_path / 'runs.db'}").get(result.run_id).status == "completed"


def test_building_an_agent_opens_no_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("WAYGRAPH_STORE", f"sqlite:///{tmp_path / 'never.db'}")
    PlanningAgent(None, tools=Tools().all())
    assert not (tmp_path / "never.db").exists()


# ------------------------------------------------------------------ resuming


def test_resume_after_cancel_does_not_call_a_committed_step_again():
    store = open_store("memory://")
    tools = Tools(hold=True)

    async def scenario() -> Any:
        run_id = await interrupted_run(store, tools)
        record = store.get(run_id)
        assert record.status == "running"
        assert record.data["visited"]["a"]["status"] == "completed"
        again = Tools()
        result = await PlanningAgent(None, tools=again.all(), store=store).resume(run_id)
        return run_id, again, result

    run_id, again, result = asyncio.run(scenario())
    assert again.calls == ["b", "c"]  # a's result was committed; b was running
    assert result.success and result.final_output == 3 and result.run_id == run_id
    assert result.step_results["a"].status == StepStatus.COMPLETED
    events = types(store, run_id)
    assert "plan_resumed" in events and events[-1] == "plan_completed"
    resumed = next(e.data for e in store.events(run_id) if e.data["type"] == "plan_resumed")
    assert resumed["rerun"] == ["b", "c"]
    assert store.get(run_id).status == "completed"


def test_resuming_an_ended_run_calls_nothing_and_returns_its_result():
    store = open_store("memory://")
    first = asyncio.run(
        PlanningAgent(None, tools=Tools().all(), store=store).execute_plan(chain_plan())
    )
    count = len(store.events(first.run_id))
    later = Tools()
    again = asyncio.run(PlanningAgent(None, tools=later.all(), store=store).resume(first.run_id))
    assert later.calls == []
    assert again.success and again.final_output == 3
    assert len(store.events(first.run_id)) == count  # nothing written


def test_a_committed_failure_is_acted_on_at_resume_without_running_the_step_again():
    store = open_store("memory://")
    calls: list[str] = []
    gate = asyncio.Event()

    async def boom() -> None:
        calls.append("boom")
        raise RuntimeError("no network")

    async def slow() -> str:
        calls.append("slow")
        await gate.wait()
        return "ok"

    # continue_on_failure: the failure skips its dependent, the other branch goes on.
    plan = Plan(
        goal="two branches",
        steps=[
            {"id": "x", "action": "boom"},
            {"id": "y", "action": "slow"},
            {"id": "z", "action": "slow", "dependencies": ["x"]},
        ],
    )
    pattern = PlanningPattern(
        allow_revision=False, continue_on_failure=True, execution_mode="parallel"
    )

    async def scenario() -> Any:
        agent = PlanningAgent(None, tools=[boom, slow], store=store, pattern=pattern)
        run_id = await cancel_when(agent, plan, lambda: {"boom", "slow"} <= set(calls))
        gate.set()
        calls.clear()
        resumed = PlanningAgent(None, tools=[boom, slow], store=store, pattern=pattern)
        return await resumed.resume(run_id)

    result = asyncio.run(scenario())
    assert calls == ["slow"]  # y again (it was running), never x, and z is skipped
    assert result.step_results["x"].status == StepStatus.FAILED
    assert result.step_results["z"].status == StepStatus.SKIPPED
    assert result.step_results["y"].status == StepStatus.COMPLETED


def test_an_output_that_is_not_json_is_not_committed_so_the_step_runs_again():
    store = open_store("memory://")
    seen: list[str] = []
    gate = asyncio.Event()

    async def make() -> object:
        seen.append("make")
        return object()

    async def use(x: object) -> str:
        seen.append("use")
        await gate.wait()
        return type(x).__name__

    plan = Plan(
        goal="g",
        steps=[
            {"id": "m", "action": "make"},
            {"id": "u", "action": "use", "parameters": {"x": "${m}"}, "dependencies": ["m"]},
        ],
    )

    async def scenario() -> Any:
        agent = PlanningAgent(None, tools=[make, use], store=store)
        run_id = await cancel_when(agent, plan, lambda: "use" in seen)
        gate.set()
        seen.clear()
        return await PlanningAgent(None, tools=[make, use], store=store).resume(run_id)

    result = asyncio.run(scenario())
    assert seen == ["make", "use"]
    assert result.success and result.final_output == "object"


def test_resume_of_an_unknown_run_names_it_and_the_store():
    store = open_store("memory://")
    with pytest.raises(RunNotFoundError, match="no run 'dag_nope' in the store memory://"):
        asyncio.run(PlanningAgent(None, tools=[], store=store).resume("dag_nope"))
    store.commit("guided_1", {"status": "running"}, 0, [], kind="run")
    with pytest.raises(RunNotFoundError, match="a guided record, not a generated run"):
        asyncio.run(PlanningAgent(None, tools=[], store=store).resume("guided_1"))


def test_saved_run_says_what_a_resume_will_run():
    store = open_store("memory://")
    run_id = asyncio.run(interrupted_run(store, Tools(hold=True)))
    saved = load_run(store, run_id)
    assert saved.committed() == {"a": "completed", "b": "pending", "c": "pending"}
    assert saved.describe() == "running, 1 of 3 steps completed; interrupted: b; to run: b, c"


# ------------------------------------------------------------------ kill -9

CHILD = textwrap.dedent(
    """
    import asyncio, sys, time
    from pathlib import Path
    from waygraph.planning import Plan, PlanningAgent

    log = Path(sys.argv[2])

    def first() -> str:
        with log.open("a") as f:
            f.write("a\\n")
        return "one"

    def second(x: str) -> str:
        with log.open("a") as f:
            f.write("b\\n")
        time.sleep(60)  # killed here
        return x + "+two"

    plan = Plan(goal="survive a kill", steps=[
        {"id": "a", "action": "first"},
        {"id": "b", "action": "second", "parameters": {"x": "${a}"}, "dependencies": ["a"]},
    ])
    agent = PlanningAgent(None, tools=[first, second], store=sys.argv[1])
    asyncio.run(agent.execute_plan(plan, run_id="dag_killed"))
    """
)


def test_a_run_killed_with_sigkill_resumes_without_calling_committed_steps(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    log = tmp_path / "calls.log"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    child = subprocess.Popen([sys.executable, str(script), url, str(log)])
    try:
        deadline = time.monotonic() + 30
        while not (log.exists() and "b" in log.read_text().split()):
            assert child.poll() is None, "the child ended before it could be killed"
            assert time.monotonic() < deadline, "step b never started"
            time.sleep(0.02)
        # b has started, so a's result was committed before (in finishing order).
        time.sleep(0.2)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    store = open_store(url)
    assert store.get("dag_killed").status == "running"

    def first() -> str:
        raise AssertionError("a's result was committed: it must not run again")

    def second(x: str) -> str:
        with log.open("a") as f:
            f.write("b\n")
        return x + "+two"

    result = asyncio.run(PlanningAgent(None, tools=[first, second], store=url).resume("dag_killed"))
    assert result.success, result.final_output
    assert result.final_output == "one+two"
    assert log.read_text().split() == ["a", "b", "b"]
    assert store.get("dag_killed").status == "completed"


# ------------------------------------------------------------------ the command

runner = CliRunner()


def test_waygraph_plan_resume_continues_a_killed_run(tmp_path: Path):
    """The CLI prints the run id first; --resume RUN_ID finishes it after a SIGKILL."""
    steps = [
        {
            "id": "s1",
            "action": "shell",
            "parameters": {"command": "echo once >> log.txt"},
            "dependencies": [],
        },
        {
            "id": "s2",
            "action": "shell",
            "parameters": {"command": "test -f go || sleep 30; echo done"},
            "dependencies": ["s1"],
        },
    ]
    reply = json.dumps({"goal": "log once", "steps": steps})
    url = f"sqlite:///{tmp_path.parent / (tmp_path.name + '-runs.db')}"
    with ScriptedChatServer([reply]) as server:
        base = ["--llm", server.base_url, "--model", "scripted", "--workspace", str(tmp_path)]
        child = subprocess.Popen(
            [sys.executable, "-m", "waygraph", "plan", "log once", *base, "--store", url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            first = child.stderr.readline()
            deadline = time.monotonic() + 30
            store = open_store(url)
            run_id = first.split()[1]
            while True:
                record = store.get(run_id)
                if (
                    record is not None
                    and record.data["visited"].get("s2", {}).get("status") == "running"
                ):
                    break
                assert time.monotonic() < deadline, first
                time.sleep(0.05)
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
            child.stdout.close()
            child.stderr.close()
        assert first.startswith(f"run {run_id} (stored in ")
        assert f"waygraph plan --resume {run_id}" in first
        (tmp_path / "go").write_text("")
        result = runner.invoke(app, ["plan", "--resume", run_id, *base, "--store", url])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "log.txt").read_text() == "once\n"  # s1 did not run again
    assert open_store(url).get(run_id).status == "completed"


def test_waygraph_plan_resume_of_an_unknown_run_is_one_line_and_exit_2(tmp_path: Path):
    with ScriptedChatServer([]) as server:
        result = runner.invoke(
            app,
            [
                *("plan", "--resume", "dag_missing", "--llm", server.base_url, "--model", "m"),
                *("--workspace", str(tmp_path), "--store", "memory://"),
            ],
        )
    assert result.exit_code == 2
    assert "no run 'dag_missing' in the store memory://" in result.output
    assert "Traceback" not in result.output


def test_waygraph_plan_resume_and_a_goal_exclude_each_other(tmp_path: Path):
    result = runner.invoke(
        app,
        [
            *("plan", "a goal", "--resume", "dag_1", "--llm", "http://x", "--model", "m"),
            *("--workspace", str(tmp_path)),
        ],
    )
    assert result.exit_code == 2
    assert "drop GOAL" in result.output


def test_the_pattern_style_agent_stores_and_resumes_runs_too():
    from waygraph.planning import Agent

    store = open_store("memory://")
    tools = Tools(hold=True)

    async def scenario() -> Any:
        agent = Agent(tools=tools.all(), llm=object(), store=store)  # type: ignore[arg-type]
        engine = agent.engine(agent.pattern)
        run_id = await cancel_when(engine, chain_plan(), lambda: "b" in tools.calls)
        again = Tools()
        return await Agent(tools=again.all(), llm=object(), store=store).resume(run_id), again

    result, again = asyncio.run(scenario())
    assert result.success and again.calls == ["b", "c"]


def test_generated_runs_are_listed_and_told_in_words_by_waygraph_sessions(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    agent = PlanningAgent(None, tools=Tools().all(), store=url)
    run_id = asyncio.run(agent.execute_plan(chain_plan(), run_id="dag_listed")).run_id
    listed = runner.invoke(app, ["sessions", "list", "--store", url, "--json"])
    assert listed.exit_code == 0, listed.output
    row = next(r for r in json.loads(listed.output)["sessions"] if r["session"] == run_id)
    assert row["kind"] == "dag" and row["status"] == "completed"
    assert row["plan"] == "three-steps-in-a-row"
    events = runner.invoke(
        app, ["sessions", "events", run_id, "--store", url], env={"COLUMNS": "200"}
    )
    assert events.exit_code == 0, events.output
    text = " ".join(events.output.split())
    assert "Plan started: 3 steps for “three steps in a row”" in text
    assert 'Step a completed: {"n": 1}' in text and "Step c completed: 3" in text
    assert '"result"' not in text  # words, not the stored JSON


def test_a_run_resumed_elsewhere_first_is_refused_before_any_step_runs(monkeypatch):
    import waygraph.planning._agent as agent_module
    from waygraph.errors import PlanningError

    store = open_store("memory://")
    run_id = asyncio.run(interrupted_run(store, Tools(hold=True)))
    stale = load_run(store, run_id)  # read by a second process ...
    asyncio.run(PlanningAgent(None, tools=Tools().all(), store=store).resume(run_id))  # ... first
    monkeypatch.setattr(agent_module, "load_run", lambda _store, _id: stale)
    late = Tools()
    with pytest.raises(PlanningError, match="another process is resuming it"):
        asyncio.run(PlanningAgent(None, tools=late.all(), store=store).resume(run_id))
    assert late.calls == []


def test_a_store_that_cannot_be_written_runs_nothing():
    from waygraph.errors import StoreError
    from waygraph.store import MemoryStore

    class Broken(MemoryStore):
        def _commit_all(self, commits: Any) -> list[int]:
            raise StoreError("disk full")

    tools = Tools()
    result = asyncio.run(
        PlanningAgent(None, tools=tools.all(), store=Broken()).execute_plan(chain_plan())
    )
    assert not result.success and tools.calls == []
    assert "the run could not be saved: disk full" in result.final_output


def test_a_checkpointed_output_that_was_not_json_runs_again():
    """A checkpoint (after a revision) may hold a result whose output could not be stored."""
    store = open_store("memory://")
    plan = Plan(
        goal="g",
        steps=[
            {"id": "m", "action": "make"},
            {"id": "u", "action": "use", "parameters": {"x": "${m}"}, "dependencies": ["m"]},
        ],
    )
    state = {
        "goal": "g",
        "initial_plan": None,
        "plan": plan.model_dump(mode="json"),
        "status": {"m": "completed", "u": "pending"},
        "results": {
            "m": {"step_id": "m", "status": "completed", "output": "<object>", "durable": False}
        },
        "replaced": {},
        "by_strategy": [],
        "revisions": [],
        "revision_attempts": 1,
        "applied_revisions": 0,
        "sub_revisions": 0,
        "budget_flagged": False,
        "stop_reason": None,
        "started_at": "2026-11-25T10:00:00+00:00",
    }
    store.commit(
        "dag_handmade",
        {"kind": "dag", "status": "running", "plan": "g"},
        0,
        [{"type": "run_checkpoint", "state": state}],
        kind="dag",
        session="dag_handmade",
        status="running",
    )
    assert load_run(store, "dag_handmade").committed() == {"u": "pending"}
    calls: list[str] = []

    def make() -> list[int]:
        calls.append("make")
        return [1, 2]

    def use(x: list[int]) -> int:
        calls.append("use")
        return sum(x)

    result = asyncio.run(PlanningAgent(None, tools=[make, use], store=store).resume("dag_handmade"))
    assert calls == ["make", "use"] and result.final_output == 3
