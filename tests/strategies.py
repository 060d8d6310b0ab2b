"""Hypothesis strategies shared by the property tests."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from waygraph.model import Plan

CONDITIONS = ("on_success", "on_fail", "on_retry", "on_exhaust", "always")


@st.composite
def graph_plans(draw: st.DrawFn, *, max_tasks: int = 6) -> Plan:
    """Random plans: tasks and decisions with random edges, retries and exits.

    They need not be sensible (traps, loops, dangling routes all occur): the
    engine must still behave.
    """
    n = draw(st.integers(1, max_tasks))
    tasks = [f"t{i}" for i in range(n)]
    nodes: dict[str, dict[str, Any]] = {"start": {"type": "start"}}
    for node_id in tasks:
        kind = draw(st.sampled_from(["task", "task", "task", "decision"]))
        node: dict[str, Any] = {"type": kind, "name": node_id.upper()}
        if kind == "task":
            node["max_retries"] = draw(st.sampled_from([0, 1, 2, None]))
            node["verify"] = {"type": "any_output"}
        nodes[node_id] = node
    extra = draw(st.lists(st.sampled_from(["checkpoint", "exit", "escalate"]), max_size=3))
    for i, kind in enumerate(extra):
        nodes[f"{kind}{i}"] = (
            {"type": kind, "reason": "stuck"} if kind == "escalate" else {"type": kind}
        )
    nodes["done"] = {"type": "exit"}
    targets = [k for k in nodes if k != "start"]
    edges = [{"from": "start", "to": tasks[0], "condition": "always"}]
    sources = [k for k, v in nodes.items() if v["type"] in ("task", "decision", "checkpoint")]
    for source in sources:
        for _ in range(draw(st.integers(0, 3))):
            edge: dict[str, Any] = {
                "from": source,
                "to": draw(st.sampled_from(targets)),
                "condition": draw(st.sampled_from(CONDITIONS)),
            }
            if nodes[source]["type"] == "decision" and draw(st.booleans()):
                edge["when"] = {"type": "output_contains", "value": draw(st.sampled_from("ab"))}
            edges.append(edge)
    return Plan.model_validate(
        {
            "id": "random",
            "stale_after_turns": draw(st.integers(1, 5)),
            "max_transitions": draw(st.integers(1, 40)),
            "graph": {"start": "start", "nodes": nodes, "edges": edges},
        }
    )


#: A tool result: (passes verification?, output letter for decision `when`s).
outcomes = st.tuples(st.booleans(), st.sampled_from("ab"))
