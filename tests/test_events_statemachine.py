"""State machine DTOs, validation, compilation to the graph model, and data templates."""

from __future__ import annotations

from typing import Any

import pytest

from tests.research_planner import SM
from waygraph.check import check_plan
from waygraph.draw import to_mermaid
from waygraph.errors import PlanFormatError, StateMachineError
from waygraph.events import (
    StateAction,
    StateConfig,
    StateTransition,
    to_plan,
    validate_state_machine,
)
from waygraph.events.statemachine import fill_template, response_event_for
from waygraph.formats.json_library import plan_to_data
from waygraph.model import Plan, Verify


def machine(**states: dict[str, Any]) -> dict[str, Any]:
    return {name: {"state_name": name, **fields} for name, fields in states.items()}


def test_dto_defaults_and_immutability() -> None:
    action = StateAction(event_type="web.search.requested")
    assert action.data == {} and action.response_event is None
    assert action.expected_response == "web.search.completed"
    assert StateAction(event_type="x").data is not StateAction(event_type="y").data
    config = StateConfig(state_name="s")
    assert (config.description, config.action, config.transitions) == ("", None, [])
    assert (config.default_next, config.is_terminal) == (None, False)
    with pytest.raises(Exception, match="frozen"):
        config.is_terminal = True  # type: ignore[misc]
    with pytest.raises(Exception, match="extra"):
        StateConfig(state_name="s", on_enter="x")  # type: ignore[call-arg]


def test_a_condition_parses_into_the_shared_predicate_tree() -> None:
    t = StateTransition(on_event="e", to_state="s", condition="data.count > 0 && !data.error")
    assert t.predicate == Verify(
        type="all",
        checks=(
            Verify(type="compare", field="data.count", op=">", value=0),
            Verify(type="not", checks=(Verify(type="truthy", field="data.error"),)),
        ),
    )
    assert StateTransition(on_event="e", to_state="s", condition="  ").condition is None
    with pytest.raises(ValueError, match="bad condition at column 12"):
        StateTransition(on_event="e", to_state="s", condition="data.count = 1")
    # Code is never run: this is just a field path that is not truthy.
    evil = StateTransition(on_event="e", to_state="s", condition="__import__")
    assert evil.predicate == Verify(type="truthy", field="__import__")


@pytest.mark.parametrize(
    ("states", "state", "field", "words"),
    [
        (
            machine(
                start={"default_next": "work"},
                work={"transitions": [{"on_event": "x", "to_state": "dnoe"}]},
                done={"is_terminal": True},
            ),
            "work",
            "transitions[0].to_state",
            "unknown target state 'dnoe'",
        ),
        (
            machine(start={"default_next": "nowhere"}, done={"is_terminal": True}),
            "start",
            "default_next",
            "unknown target state 'nowhere'",
        ),
        (
            machine(
                start={"default_next": "loop"},
                loop={"default_next": "start"},
                done={"is_terminal": True},
            ),
            "start",
            "default_next",
            "loops through states without actions (start -> loop -> start)",
        ),
        (
            machine(
                start={"default_next": "work"},
                work={
                    "action": {"event_type": "w"},
                    "transitions": [{"on_event": "x", "to_state": "start"}],
                },
            ),
            None,
            "is_terminal",
            "no terminal state",
        ),
        (
            machine(
                start={
                    "default_next": "done",
                    "transitions": [{"on_event": "x", "to_state": "done"}],
                },
                done={"is_terminal": True},
            ),
            "start",
            "default_next",
            "would never be tried",
        ),
        (
            machine(
                start={"default_next": "done"},
                done={"is_terminal": True},
                island={"default_next": "done"},
            ),
            "island",
            None,
            "unreachable",
        ),
        (
            machine(
                start={"default_next": "work"},
                work={"transitions": [{"on_event": "x", "to_state": "done", "condition": "a >"}]},
                done={"is_terminal": True},
            ),
            "work",
            None,
            "bad condition",
        ),
        (
            machine(start={"default_next": "trap"}, trap={}, done={"is_terminal": True}),
            "trap",
            "transitions",
            "could never leave",
        ),
        (
            machine(
                start={"default_next": "done"},
                done={"is_terminal": True, "default_next": "start"},
            ),
            "done",
            "default_next",
            "terminal state",
        ),
        (
            {"start": {"state_name": "begin", "default_next": "done"}, **machine(done={})},
            "start",
            "state_name",
            "differs",
        ),
        (
            machine(start={"default_next": "done", "action": {"data": {}}}, done={}),
            "start",
            "action.event_type",
            "Field required",
        ),
    ],
)
def test_validation_names_the_state_and_field(
    states: dict[str, Any], state: str | None, field: str | None, words: str
) -> None:
    with pytest.raises(StateMachineError) as caught:
        validate_state_machine(states, name="research")
    error = caught.value
    assert words in str(error)
    assert error.state == state and error.plan == "research"
    if field is not None:
        assert error.field == field
        assert f"field {field!r}" in str(error)
    if state is not None:
        assert f"state {state!r}" in str(error)
    assert isinstance(error, ValueError)


def test_empty_and_malformed_machines_are_refused() -> None:
    with pytest.raises(StateMachineError, match="non-empty"):
        validate_state_machine({})
    with pytest.raises(StateMachineError, match="not list"):
        validate_state_machine({"start": ["x"]})


def test_the_start_state_is_start_else_the_first() -> None:
    assert validate_state_machine(SM).start == "start"
    other = validate_state_machine(
        machine(begin={"default_next": "end"}, end={"is_terminal": True})
    )
    assert other.start == "begin"


def test_a_state_machine_compiles_to_a_plan_that_checks_and_draws() -> None:
    plan = to_plan(validate_state_machine(SM), plan_id="research")
    assert isinstance(plan, Plan)
    nodes = plan.graph.nodes
    assert nodes["start"].type == "start" and plan.graph.start == "start"
    assert nodes["searching"].type == "task"
    assert nodes["searching"].action == "web.search.requested"
    assert nodes["searching"].meta == {
        "response_event": "web.search.completed",
        "data": {"query": "{goal_data.topic}"},
    }
    assert nodes["done"].type == "exit" and nodes["done"].exit_status == "completed"
    assert nodes["failed"].exit_status == "aborted"
    out = [(e.to, e.on_event, e.when) for e in plan.graph.out_edges("searching")]
    assert out == [
        (
            "analyzing",
            "web.search.completed",
            Verify(type="compare", field="data.count", op=">", value=0),
        ),
        ("retry_search", "web.search.completed", None),
        ("failed", "web.search.failed", None),
    ]
    assert [e.to for e in plan.graph.out_edges("start")] == ["searching"]
    errors = [p for p in check_plan(plan) if p.level == "error"]
    assert errors == []
    drawing = to_mermaid(plan)
    assert "web.search.failed" in drawing and "retry_search" in drawing
    # It stores like any plan.
    assert Plan.model_validate({"id": "research", **plan_to_data(plan)}).graph == plan.graph


def test_default_next_after_an_action_waits_for_its_response() -> None:
    sm = validate_state_machine(
        machine(
            start={"default_next": "work"},
            work={"action": {"event_type": "job.requested"}, "default_next": "done"},
            done={"is_terminal": True},
        )
    )
    assert sm.next_state("work", "job.completed", {"data": {}}) == "done"
    assert sm.next_state("work", "job.failed", {"data": {}}) is None
    assert sm.follow_defaults("start") == "work"
    [edge] = to_plan(sm, plan_id="job").graph.out_edges("work")
    assert (edge.to, edge.on_event) == ("done", "job.completed")


def test_response_event_names() -> None:
    assert response_event_for("web.search.requested") == "web.search.completed"
    assert response_event_for("summarize") == "summarize.completed"


def test_templates_fill_values_safely() -> None:
    scope = {
        "goal_data": {"topic": "graphs", "n": 3, "tags": ["a", "b"]},
        "results": {"searching": {"hits": [{"title": "T"}]}},
    }
    template = {
        "query": "{goal_data.topic}",
        "count": "{goal_data.n}",
        "text": "about {goal_data.topic} ({goal_data.n})",
        "first": "{results.searching.hits.0.title}",
        "tags": ["{goal_data.tags}", "plain"],
        "braces": "{{literal}} {goal_data.topic}",
        "number": 5,
    }
    assert fill_template(template, scope) == {
        "query": "graphs",
        "count": 3,
        "text": "about graphs (3)",
        "first": "T",
        "tags": [["a", "b"], "plain"],
        "braces": "{literal} graphs",
        "number": 5,
    }


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("{goal_data.missing}", "has no value"),
        ("{goal_data.topic.__class__}", "has no value"),
        ("{goal_data['topic']}", "not a dotted path"),
        ("{goal_data.topic + 1}", "not a dotted path"),
        ("x {__import__('os')} y", "not a dotted path"),
    ],
)
def test_templates_refuse_what_is_not_a_path_with_a_value(text: str, words: str) -> None:
    with pytest.raises(PlanFormatError, match="template") as caught:
        fill_template({"q": text}, {"goal_data": {"topic": "graphs"}}, where="searching.data")
    assert words in str(caught.value)
    assert caught.value.field == "searching.data.q"
