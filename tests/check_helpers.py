"""Shared helpers of the plan checker tests (tests/test_check_*.py): the smallest clean
plan and ways to build a plan with one problem."""

from __future__ import annotations

import copy
from typing import Any

from waygraph.check import CODES, check_plan
from waygraph.model import Plan

OK = {"type": "exit_code_zero"}

# start -> work -> done: the smallest plan with no problems at all.
BASE: dict[str, Any] = {
    "id": "p",
    "triggers": ["do the work"],
    "trigger_threshold": 1,
    "graph": {
        "start": "start",
        "nodes": {
            "start": {"type": "start"},
            "work": {"type": "task", "verify": OK},
            "done": {"type": "exit"},
        },
        "edges": [
            {"from": "start", "to": "work", "condition": "always"},
            {"from": "work", "to": "done", "condition": "on_success"},
        ],
    },
}


def plan(
    *,
    nodes: dict[str, Any] | None = None,
    edges: list[dict[str, Any]] | None = None,
    replace_edges: list[dict[str, Any]] | None = None,
    drop: tuple[str, ...] = (),
    **fields: Any,
) -> Plan:
    """BASE with nodes merged in (None removes one), edges added or replaced, fields set."""
    data = copy.deepcopy(BASE)
    graph = data["graph"]
    for node_id, node in (nodes or {}).items():
        if node is None:
            graph["nodes"].pop(node_id)
        else:
            graph["nodes"][node_id] = node
    if replace_edges is not None:
        graph["edges"] = replace_edges
    graph["edges"] = [e for e in graph["edges"] if e["to"] not in drop] + list(edges or [])
    start = fields.pop("start", None)
    if start is not None:
        graph["start"] = start
    data.update(fields)
    return Plan.model_validate(data)


def task(verify: Any = OK, **fields: Any) -> dict[str, Any]:
    return {"type": "task", "verify": verify, **fields}


def edge(source: str, target: str, condition: str = "always", **fields: Any) -> dict[str, Any]:
    return {"from": source, "to": target, "condition": condition, **fields}


def with_verify(verify: dict[str, Any]) -> Plan:
    return plan(nodes={"work": task(verify)})


def codes(p: Plan) -> list[str]:
    return [problem.code for problem in check_plan(p)]


def assert_fails_and_fix_is_clean(code: str, bad: Plan, good: Plan) -> None:
    """``code`` is reported on ``bad`` at its level, and ``good`` (the fix) is clean."""
    found = [p for p in check_plan(bad) if p.code == code]
    assert found, f"{code} not reported; got {codes(bad)}"
    assert all(p.level == CODES[code][0] for p in found)
    # The fix is clean (a plan without triggers is always told it has none).
    assert {p.code for p in check_plan(good)} <= {"no-triggers"}
