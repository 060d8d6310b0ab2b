"""Retries stay bounded through loops (issue 32, item 7), as properties.

Random graphs (tests/strategies.py: loops, traps and dangling routes all
occur) and random verdict sequences (pass, fail, unknown) hold every task
with ``max_retries: N`` to its bound:

- no attempt number, entered or judged, is above ``N + 1``;
- a node that left through its own ``on_retry`` route and comes back goes
  on counting (its next attempt is the one after its last);
- a node that a failure sends back to after its last attempt is never
  skipped through an ``always`` or ``on_success`` edge: it takes its
  ``on_exhaust``/``on_fail`` edge or the run escalates;

and no shipped plan, driven by any verdict sequence, is ever ended by
``max_transitions``: its own bounds end it first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.strategies import graph_plans
from waygraph import engine, load_library
from waygraph.model import Plan

#: A verdict for one tool result: pass, fail or cannot tell.
verdicts = st.sampled_from([True, False, None])


def _drive(plan: Plan, results: list[bool | None]) -> list[Mapping[str, Any]]:
    """Every event of a run of ``plan`` fed ``results`` one turn each."""
    run, events = engine.start(plan, run_id="r", turn=1)
    seen = list(events)
    for turn, verdict in enumerate(results, start=2):
        if run.status != "running":
            break
        run, events = engine.advance(
            plan, run, turn=turn, judge=lambda verify, v=verdict: v, observation_id=str(turn)
        )
        seen.extend(events)
    return seen


def _limit(plan: Plan, node_id: str | None) -> int | None:
    node = plan.graph.nodes.get(node_id or "")
    if node is None or node.type != "task" or node.max_retries is None:
        return None
    return 1 + node.max_retries


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=graph_plans(), results=st.lists(verdicts, max_size=60))
def test_no_task_goes_past_its_attempts(plan: Plan, results: list[bool | None]):
    for event in _drive(plan, results):
        limit = _limit(plan, event.get("node"))
        if limit is None or event["type"] not in ("node_entered", "node_verified"):
            continue
        attempt = event.get("attempt")
        if attempt is not None:
            assert attempt <= limit, (event, limit)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=graph_plans(), results=st.lists(verdicts, max_size=60))
def test_a_node_back_from_its_retry_route_goes_on_counting(plan: Plan, results: list[bool | None]):
    last_attempt: dict[str, int] = {}
    retrying: set[str] = set()
    for event in _drive(plan, results):
        node, kind = event.get("node"), event["type"]
        if kind == "node_verified" and event.get("attempt") is not None and not event.get("gate"):
            last_attempt[str(node)] = int(event["attempt"])
            if event.get("outcome") == "success":
                retrying.discard(str(node))
        elif kind == "edge_followed" and event.get("condition") == "on_retry":
            retrying.add(str(event["from"]))
        elif kind == "node_entered" and node in retrying and not event.get("exhausted"):
            retrying.discard(str(node))
            assert event["attempt"] == last_attempt[str(node)] + 1, event


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=graph_plans(), results=st.lists(verdicts, max_size=60))
def test_a_spent_node_is_never_skipped(plan: Plan, results: list[bool | None]):
    events = _drive(plan, results)
    for i, event in enumerate(events):
        if event["type"] != "node_entered" or not event.get("exhausted"):
            continue
        after = events[i + 1] if i + 1 < len(events) else None
        assert after is not None, event
        if after["type"] == "edge_followed":
            assert after["from"] == event["node"]
            assert after["condition"] in ("on_exhaust", "on_fail"), after
        else:
            assert after["type"] == "plan_escalated", after


def _shipped() -> list[Plan]:
    return list(load_library().plans.values())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    plan=st.sampled_from(_shipped()),
    results=st.lists(st.sampled_from([True, False, False, None]), max_size=150),
)
def test_no_shipped_plan_ends_by_max_transitions(plan: Plan, results: list[bool | None]):
    for event in _drive(plan, results):
        if event["type"] == "plan_escalated":
            assert "max_transitions" not in str(event.get("reason")), (plan.id, event)


def test_the_issue_loop_through_a_diagnostic_takes_two_attempts():
    # Issue 32: a (max_retries 1) retries through a diagnostic that returns
    # with always; a failed 52 times until max_transitions ended the run.
    plan = Plan.model_validate(
        {
            "id": "loop",
            "graph": {
                "start": "start",
                "nodes": {
                    "start": {"type": "start"},
                    "a": {"type": "task", "verify": {"type": "any_output"}, "max_retries": 1},
                    "diag": {"type": "task", "verify": {"type": "any_output"}},
                    "done": {"type": "exit"},
                },
                "edges": [
                    {"from": "start", "to": "a"},
                    {"from": "a", "to": "done", "condition": "on_success"},
                    {"from": "a", "to": "diag", "condition": "on_retry"},
                    {"from": "diag", "to": "a", "condition": "always"},
                ],
            },
        }
    )
    events = _drive(plan, [False, True, False, False, True, False] * 20)
    failures = [e for e in events if e["type"] == "node_verified" and e["node"] == "a"]
    assert [e["attempt"] for e in failures][:2] == [1, 2]
    diagnosed = [e for e in events if e["type"] == "node_verified" and e["node"] == "diag"]
    assert len(diagnosed) == 1
    # After its second failure a has no route out: it stalls where it is, and
    # the run never goes round the loop again (a later pass finishes it).
    later = events[events.index(failures[1]) :]
    assert not any(e["type"] == "edge_followed" and e["to"] == "diag" for e in later)
    assert any(e["type"] == "stall" and e["node"] == "a" for e in later)
    assert max(e["attempt"] for e in failures) == 2
    assert events[-1]["type"] == "plan_completed"
