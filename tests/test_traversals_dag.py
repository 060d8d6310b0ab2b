"""DAG traversal fixtures: the engine's DAG rules and the executor end the same way.

Each ``tests/fixtures/traversals/*.yaml`` of ``kind: dag`` (format in the
README there) runs through :mod:`waygraph.engine.dag` over the plan compiled
by ``to_graph_plan``, driven as the executor's sequential mode drives it, and
through the executor itself (``PlanningAgent``); both must give the expected
statuses, finishing order, skip causes and success.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_traversals import kind_cases
from waygraph.engine.dag import DagIndex, propagate_skips, ready
from waygraph.planning import Plan, PlanningAgent, PlanningPattern, to_graph_plan
from waygraph.store import open_store

DRIVERS = ("engine", "executor")


def _fixtures() -> list[Any]:
    return kind_cases("dag", DRIVERS)


def _plan(data: dict[str, Any]) -> Plan:
    steps = [
        {**step, "parameters": {"name": step["id"]}, "dependencies": step.get("dependencies", [])}
        for step in data["plan"]["steps"]
    ]
    return Plan(goal=data["plan"]["goal"], steps=steps)


def _run_engine(plan: Plan, fail: set[str], cof: bool) -> dict[str, Any]:
    """The engine's rules, driven one step at a time in plan order (sequential mode)."""
    index = DagIndex.of_plan(to_graph_plan(plan))
    statuses = dict.fromkeys(index.order, "pending")
    path: list[str] = []
    causes: dict[str, str] = {}
    stopped = False
    while not stopped and (todo := ready(index, statuses)):
        node = todo[0]
        statuses[node] = "failed" if node in fail else "completed"
        path.append(node)
        if node in fail:
            if cof:
                skipped, _ = propagate_skips(index, statuses)
                statuses.update(dict.fromkeys(skipped, "skipped"))
                causes.update(skipped)
            else:
                stopped = True
    if stopped:
        statuses = {n: "blocked" if s == "pending" else s for n, s in statuses.items()}
    success = all(s == "completed" for s in statuses.values())
    return {"statuses": statuses, "path": path, "causes": causes, "success": success}


def _run_executor(plan: Plan, fail: set[str], cof: bool) -> dict[str, Any]:
    def work(name: str) -> str:
        if name in fail:
            raise RuntimeError(f"{name} failed on purpose")
        return name

    pattern = PlanningPattern(
        execution_mode="sequential",
        allow_revision=False,
        continue_on_failure=cof,
        retry_failed_steps=0,
    )
    store = open_store("memory://")
    agent = PlanningAgent(None, tools=[work], pattern=pattern, store=store)
    result = asyncio.run(agent.execute_plan(plan))
    statuses = {sid: str(r.status) for sid, r in result.step_results.items()}
    causes = {}
    for sid, r in result.step_results.items():
        found = re.search(r"its dependency '([^']+)'", r.error or "")
        if r.status == "skipped" and found:
            causes[sid] = found.group(1)
    path = [
        e.data["node"] for e in store.events(result.run_id) if e.data["type"] == "node_finished"
    ]
    return {"statuses": statuses, "path": path, "causes": causes, "success": result.success}


@pytest.mark.parametrize(("path", "driver"), _fixtures())
def test_dag_traversal(path: Path, driver: str) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    plan = _plan(data)
    fail = set(data["inputs"].get("fail", ()))
    cof = bool(data.get("options", {}).get("continue_on_failure", False))
    got = (_run_engine if driver == "engine" else _run_executor)(plan, fail, cof)
    rule = f"{path.name} ({driver}): {data['rule']}"
    expect = data["expect"]
    assert got["statuses"] == expect["statuses"], rule
    assert got["success"] == expect["success"], rule
    if "path" in expect:
        assert got["path"] == expect["path"], rule
    if "causes" in expect:
        assert got["causes"] == expect["causes"], rule


def test_there_are_dag_fixtures_for_both_drivers():
    assert len(_fixtures()) >= 12


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_the_executors_index_is_the_compiled_plans(data: st.DataObject) -> None:
    # The executor indexes its steps' dependencies directly (compiling costs
    # about 100 us a step, as much as scheduling it): the index must be the
    # one DagIndex.of_plan reads from the plan to_graph_plan compiles.
    n = data.draw(st.integers(min_value=1, max_value=12))
    steps = []
    for i in range(n):
        deps = data.draw(st.lists(st.integers(0, i - 1), unique=True, max_size=3)) if i else []
        steps.append({"id": f"s{i}", "action": "t", "dependencies": [f"s{d}" for d in deps]})
    plan = Plan(goal="random", steps=steps)
    direct = DagIndex.of_dependencies({s.id: s.dependencies for s in plan.steps})
    compiled = DagIndex.of_plan(to_graph_plan(plan))
    assert compiled.order == direct.order
    assert dict(compiled.dependencies) == {k: tuple(v) for k, v in direct.dependencies.items()}
    assert {k: tuple(sorted(v)) for k, v in compiled.dependents.items()} == {
        k: tuple(sorted(v)) for k, v in direct.dependents.items()
    }
    assert dict(compiled.join) == dict(direct.join)
