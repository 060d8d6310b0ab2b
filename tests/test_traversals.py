"""Traversal fixtures: every documented routing rule, pinned as data.

Each ``tests/fixtures/traversals/*.yaml`` holds a plan, the inputs a driver
receives, and what must come of them (the README there gives the format).
Every fixture runs through the pure engine (with the verifier every driver
uses) and through each guided driver it applies to (Navigator, AsyncNavigator,
Hooks, all on ``memory://``); each must end with the expected path, status,
node states and events. A rewrite of the engine or of a driver that changes
a traversal fails here, with the fixture's rule in the message.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from waygraph import AsyncNavigator, Hooks, Navigator, engine
from waygraph.guided.turns import evidence_of
from waygraph.library import Library
from waygraph.model import Plan
from waygraph.verify import Observation, judge_for
from waygraph.verify.questions import asks_user
from waygraph.verify_types.evidence import command_of

FIXTURES = Path(__file__).parent / "fixtures" / "traversals"
DRIVERS = ("engine", "navigator", "async", "hooks")
#: Every kind of fixture; this file runs the guided ones (test_traversals_dag.py and
#: test_traversals_events.py the others).
KINDS = ("guided", "dag", "event")
SESSION = "fixture"


def _load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), f"{path.name}: a fixture is a mapping"
    body = "machine" if data.get("kind") == "event" else "plan"
    missing = {"description", "rule", body, "inputs", "expect"} - set(data)
    assert not missing, f"{path.name}: missing {sorted(missing)}"
    assert data.get("kind", "guided") in KINDS, f"{path.name}: unknown kind {data.get('kind')!r}"
    unknown = set(data.get("drivers", DRIVERS)) - set(DRIVERS) - {"executor", "planner"}
    assert not unknown, f"{path.name}: unknown drivers {sorted(unknown)}"
    return data


def kind_cases(kind: str, drivers: tuple[str, ...]) -> list[Any]:
    """``(path, driver)`` parameters for every fixture of ``kind`` and each driver it names."""
    cases = []
    for path in sorted(FIXTURES.glob("*.yaml")):
        data = _load(path)
        if data.get("kind", "guided") != kind:
            continue
        for driver in data.get("drivers", drivers):
            assert driver in drivers, f"{path.name}: unknown driver {driver!r}"
            cases.append(pytest.param(path, driver, id=f"{path.stem}-{driver}"))
    return cases


def _cases() -> list[Any]:
    cases = []
    for path in sorted(FIXTURES.glob("*.yaml")):
        data = _load(path)
        if data.get("kind", "guided") != "guided":
            continue
        for driver in data.get("drivers", DRIVERS):
            marks = []
            if data.get("xfail"):
                marks.append(pytest.mark.xfail(reason=data["xfail"], strict=True))
            cases.append(pytest.param(path, driver, id=f"{path.stem}-{driver}", marks=marks))
    return cases


def _observation(step: dict[str, Any]) -> Observation:
    return Observation(
        output=str(step.get("output", "")),
        exit_code=step.get("exit_code"),
        tool_name=step.get("tool"),
        source=step.get("source", "tool"),
        call=step.get("call"),
        command=command_of(step.get("call")),
    )


# ---------------------------------------------------------------- drivers


def _run_engine(plan: Plan, inputs: list[dict[str, Any]]) -> dict[str, Any]:
    run, _ = engine.start(plan, run_id="r", turn=1, session_id=SESSION)
    for turn, step in enumerate(inputs, start=2):
        if step.get("rewind"):
            run, _ = engine.rewind(plan, run, turn=run.turn)
            continue
        if step.get("idle"):
            run, _ = engine.advance(plan, run, turn=turn)
            continue
        person = step.get("answer", step.get("user"))
        if person is not None:
            run, _ = engine.advance(plan, run, turn=turn)
            judge = judge_for(Observation(output=str(person), source="human"))
            run, _ = engine.hear(plan, run, turn=turn, text=str(person), judge=judge)
            continue
        observation = _observation(step)
        run, _ = engine.advance(
            plan,
            run,
            turn=turn,
            judge=judge_for(observation),
            observation_id=step.get("id"),
            tool_name=observation.tool_name,
            evidence=evidence_of(observation),
            final=bool(step.get("final")),
            question=_asks(step),
        )
    return engine.to_record(plan, run)


def _asks(step: dict[str, Any]) -> bool:
    """Whether a model reply asks the user something, as the drivers decide it."""
    if step.get("source") != "model":
        return False
    if step.get("asks_user") is not None:
        return bool(step["asks_user"])
    return bool(step.get("final")) and asks_user(str(step.get("output", "")))


def _turn_kwargs(step: dict[str, Any]) -> dict[str, Any]:
    if step.get("idle"):
        return {"user_message": "still here"}
    if "user" in step:
        return {"user_message": str(step["user"])}
    return {
        "tool_output": str(step.get("output", "")),
        "exit_code": step.get("exit_code"),
        "tool_name": step.get("tool"),
        "tool_args": step.get("call"),
        "observation_id": step.get("id"),
        "source": step.get("source", "tool"),
        "final": bool(step.get("final")),
        "asks_user": step.get("asks_user"),
    }


def _run_navigator(plan: Plan, inputs: list[dict[str, Any]]) -> dict[str, Any]:
    nav = Navigator(Library([plan]), store="memory://", strict=True)
    nav.start(SESSION, plan.id)
    for step in inputs:
        if step.get("rewind"):
            nav.rewind(SESSION)
        elif "answer" in step:
            nav.answer(SESSION, str(step["answer"]))
        else:
            nav.turn(SESSION, **_turn_kwargs(step))
    record = nav.state(SESSION)
    assert record is not None
    return record


def _run_async(plan: Plan, inputs: list[dict[str, Any]]) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        nav = AsyncNavigator(Library([plan]), store="memory://", strict=True)
        await nav.start(SESSION, plan.id)
        for step in inputs:
            if step.get("rewind"):
                await nav.rewind(SESSION)
            elif "answer" in step:
                await nav.answer(SESSION, str(step["answer"]))
            else:
                await nav.turn(SESSION, **_turn_kwargs(step))
        record = await nav.state(SESSION)
        await nav.close()
        assert record is not None
        return record

    return asyncio.run(main())


def _run_hooks(plan: Plan, inputs: list[dict[str, Any]]) -> dict[str, Any]:
    nav = Navigator(Library([plan]), store="memory://", strict=True)
    nav.start(SESSION, plan.id)
    hooks = Hooks(SESSION, navigator=nav, strict=True)
    for step in inputs:
        if step.get("rewind"):
            nav.rewind(SESSION)
        elif step.get("idle"):
            hooks.on_user_message("still here")
        elif "answer" in step or "user" in step:
            hooks.on_user_message(str(step.get("answer", step.get("user"))))
        elif step.get("source") == "model":
            hooks.on_model_reply(
                str(step.get("output", "")),
                final=bool(step.get("final")),
                asks_user=step.get("asks_user"),
            )
        else:
            hooks.on_tool_result(
                str(step.get("output", "")),
                tool_name=step.get("tool"),
                exit_code=step.get("exit_code"),
                call_id=step.get("id"),
                tool_args=step.get("call"),
                source=step.get("source", "tool"),
            )
    record = hooks.state()
    assert record is not None
    return record


RUNNERS = {
    "engine": _run_engine,
    "navigator": _run_navigator,
    "async": _run_async,
    "hooks": _run_hooks,
}


# ---------------------------------------------------------------- the test


def _subsequence(wanted: list[str], got: list[str]) -> bool:
    remaining = iter(got)
    return all(any(w == g for g in remaining) for w in wanted)


@pytest.mark.parametrize(("path", "driver"), _cases())
def test_traversal(path: Path, driver: str) -> None:
    data = _load(path)
    plan = Plan.model_validate(data["plan"])
    record = RUNNERS[driver](plan, list(data["inputs"]))
    expect = data["expect"]
    rule = f"{path.name} ({driver}): {data['rule']}"
    types = [e["type"] for e in record["events"]]
    if "status" in expect:
        assert record["status"] == expect["status"], rule
    if "current_node" in expect:
        assert record["current_node"] == expect["current_node"], rule
    if "path" in expect:
        assert record["path"] == expect["path"], rule
    if "events" in expect:
        assert types == expect["events"], rule
    if "events_include" in expect:
        assert _subsequence(expect["events_include"], types), (rule, types)
    for event_type in expect.get("events_exclude", ()):
        assert event_type not in types, (rule, types)
    for node_id, state in expect.get("visited", {}).items():
        got = record["visited"].get(node_id, {})
        for key, value in state.items():
            assert got.get(key) == value, (rule, node_id, key, got)
    if "reason_contains" in expect:
        assert expect["reason_contains"] in (record.get("reason") or ""), (rule, record["reason"])
    if "pace_level" in expect:
        assert record["pace_level"] == expect["pace_level"], rule
    if "awaiting" in expect:
        assert record.get("awaiting") == expect["awaiting"], rule


def test_there_are_at_least_thirty_fixtures():
    assert len(list(FIXTURES.glob("*.yaml"))) >= 30
