"""Event routing is one engine rule: route_event over the compiled state machine.

Each case states the documented rule (docs/events.md, "State machines") and
checks the engine function and the planner's entry point
(StateMachine.next_state, which every planner calls) give the same answer.
"""

from __future__ import annotations

from typing import Any

import pytest

from waygraph.engine.events import route_event
from waygraph.events import to_plan, validate_state_machine
from waygraph.predicates import evaluate_data

MACHINE: dict[str, Any] = {
    "start": {
        "state_name": "start",
        "action": {"event_type": "search.requested", "response_event": "search.completed"},
        "transitions": [
            {"on_event": "search.completed", "to_state": "rich", "condition": "data.hits > 10"},
            {"on_event": "search.completed", "to_state": "some", "condition": "data.hits > 0"},
            {"on_event": "search.failed", "to_state": "failed"},
        ],
        "default_next": "empty",
    },
    "rich": {"state_name": "rich", "is_terminal": True},
    "some": {"state_name": "some", "is_terminal": True},
    "empty": {"state_name": "empty", "is_terminal": True},
    "failed": {"state_name": "failed", "is_terminal": True},
}

CASES = [
    # (rule, event type, event data, expected next state)
    ("the first transition whose condition holds wins", "search.completed", {"hits": 50}, "rich"),
    (
        "a later transition when the first's condition fails",
        "search.completed",
        {"hits": 3},
        "some",
    ),
    (
        "default_next takes the response when no condition holds",
        "search.completed",
        {"hits": 0},
        "empty",
    ),
    ("a transition without a condition always holds", "search.failed", {}, "failed"),
    ("an event nothing accepts leaves the state as it is", "search.cancelled", {}, None),
]


@pytest.mark.parametrize(
    ("rule", "event_type", "data", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_route_event_and_the_planner_agree(
    rule: str, event_type: str, data: dict[str, Any], expected: str | None
) -> None:
    machine = validate_state_machine(MACHINE, name="research")
    scope = {"data": data, "results": {}, "goal_data": {}, "event": {}}
    plan = to_plan(machine, plan_id="research")
    got = route_event(plan, "start", event_type, lambda when: evaluate_data(when, scope))
    assert got == expected, rule
    assert machine.next_state("start", event_type, scope) == expected, rule
