"""Plan validation: every problem code, with messages that say what and how to fix."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from waygraph.planning import (
    Plan,
    PlanningPattern,
    PlanProblem,
    ToolRegistry,
    find_cycles,
    parse_plan,
    validate_plan,
)


def search(query: str, limit: int = 5) -> str:
    """Search the notes."""
    return query


def summarize(text: str) -> str:
    return text[:10]


TOOLS = ToolRegistry([search, summarize])


def step(
    step_id: str, action: str = "search", deps: tuple[str, ...] = (), **params: Any
) -> dict[str, Any]:
    return {
        "id": step_id,
        "action": action,
        "parameters": params or {"query": step_id},
        "dependencies": list(deps),
    }


def problems(
    *steps: dict[str, Any], pattern: PlanningPattern | None = None, **kwargs: Any
) -> list[PlanProblem]:
    plan = Plan(goal="g", steps=list(steps))
    return validate_plan(plan, TOOLS, pattern or PlanningPattern(), **kwargs)


def codes(found: list[PlanProblem]) -> list[str]:
    return [p.code for p in found]


def test_a_good_plan_has_no_problems():
    assert problems(step("a"), step("b", "summarize", ("a",), text="$a")) == []


def test_unknown_tool_suggests_the_closest_name():
    [problem] = problems(step("s1", "serch"))
    assert problem.code == "unknown_tool"
    assert problem.step_id == "s1"
    assert str(problem) == (
        "step 's1': unknown tool 'serch' (did you mean 'search'?); "
        "available tools: search, summarize"
    )


def test_parameters_must_fit_the_signature():
    found = problems(step("s1", query="x", limit="many", color="red"))
    assert codes(found) == ["bad_parameters", "bad_parameters"]
    text = " ".join(map(str, found))
    assert "parameter 'limit'" in text
    assert "unknown parameter 'color'; search takes: query, limit" in text
    [missing] = problems({"id": "s1", "action": "summarize", "parameters": {}, "dependencies": []})
    assert "missing required parameter 'text'" in missing.message


def test_dependencies_must_name_existing_steps():
    [problem] = problems(step("a"), step("b", deps=("a", "zz")))
    assert problem.code == "unknown_dependency"
    assert problem.message == "depends on unknown step 'zz'; steps are: a, b"


def test_duplicate_ids_are_reported():
    assert "duplicate_step" in codes(problems(step("a"), step("a")))


@pytest.mark.parametrize("bad", ["a\u202eb", "x\u200d", "\ufeffs", "s\x01"])
def test_a_step_id_with_format_or_control_characters_is_a_problem(bad: str):
    # Issue 33: ids refuse what would hide or reverse them, generated plans' too.
    found = problems(step(bad))
    assert "bad_step_id" in codes(found)
    assert all(bad != p.step_id for p in found if p.code == "bad_step_id")


@pytest.mark.parametrize(("edges", "expected"), [
    ({"s1": ["s4"], "s4": ["s1"]}, ["s1 -> s4 -> s1"]),
    ({"s1": ["s1"]}, ["s1 -> s1"]),
    ({"a": ["c"], "b": ["a"], "c": ["b"]}, ["a -> b -> c -> a"]),
    ({"a": ["b"], "b": ["a"], "c": ["d"], "d": ["c"]}, ["a -> b -> a", "c -> d -> c"]),
])  # fmt: skip
def test_cycles_are_named_with_their_path(edges, expected):
    found = problems(*[step(sid, deps=tuple(deps)) for sid, deps in edges.items()])
    cycles = [p.message for p in found if p.code == "cycle"]
    assert len(cycles) == len(expected)
    for message, path in zip(cycles, expected, strict=True):
        assert message.startswith(f"dependencies form a cycle: {path} ")
        assert "remove one of these dependencies" in message


def test_step_count_is_limited():
    [problem] = problems(step("a"), step("b"), step("c"), pattern=PlanningPattern(max_steps=2))
    assert problem.code == "too_many_steps"
    assert "3 steps; at most 2" in problem.message


def test_empty_plan_is_a_problem():
    assert codes(validate_plan(Plan(goal="g"), TOOLS, PlanningPattern())) == ["empty_plan"]


def test_estimated_tokens_must_fit_the_budget_left():
    plan = [dict(step("a"), estimated_tokens=60), dict(step("b"), estimated_tokens=50)]
    [problem] = problems(*plan, budget_left=100)
    assert problem.code == "over_budget"
    assert "estimated at 110 tokens, over the 100 tokens left" in problem.message
    assert problems(*plan, budget_left=110) == []


def test_fallbacks_must_exist_fit_and_may_be_required():
    found = problems(
        dict(step("a"), fallback_action="nope"),
        dict(step("b"), fallback_action="summarize"),
        dict(step("c"), fallback_action="summarize", fallback_parameters={"text": "x"}),
    )
    # b's fallback gets b's own parameters: `query` is unknown to summarize, `text` missing.
    assert codes(found) == [
        "unknown_fallback",
        "bad_fallback_parameters",
        "bad_fallback_parameters",
    ]
    assert found[1].message == "fallback summarize: missing required parameter 'text' of summarize"
    required = PlanningPattern(require_fallbacks=True)
    assert codes(problems(step("a"), pattern=required)) == ["missing_fallback"]


def test_references_must_name_steps_that_run_before():
    found = problems(step("a", query="${zz}"), step("b", query="$a"), step("c", query="$c"))
    assert codes(found) == ["unknown_reference", "undeclared_dependency", "unknown_reference"]
    assert "uses $a but does not depend on it; add 'a' to its dependencies" in str(found[1])
    # A step two levels up is safe: it finished before the direct dependency.
    assert problems(step("a"), step("b", deps=("a",)), step("c", deps=("b",), query="$a")) == []


def test_references_need_no_listed_dependency_when_dependencies_are_not_required():
    relaxed = PlanningPattern(require_dependencies=False)
    assert problems(step("a"), step("b", deps=("a",), query="$a"), pattern=relaxed) == []


def test_composite_steps_need_hierarchical_planning_within_the_depth():
    sub = {"goal": "sub", "steps": [step("x")]}
    found = problems(dict(step("a"), action="decompose"), dict(step("b"), subplan=sub))
    assert codes(found) == ["hierarchical_off", "hierarchical_off"]
    nested = {"goal": "n", "steps": [dict(step("y"), action="decompose")]}
    deep = PlanningPattern(hierarchical=True, max_decomposition_depth=1)
    [problem] = problems(dict(step("a"), subplan=nested), pattern=deep)
    assert problem.code == "too_deep"
    assert "in its sub-plan: step 'y': asks for a sub-plan at depth 2" in problem.message


def test_subplans_are_validated_and_may_reference_ancestors_of_their_step():
    sub = {"goal": "sub", "steps": [step("x", "serch"), step("y", query="$a")]}
    pattern = PlanningPattern(hierarchical=True)
    found = problems(step("a"), dict(step("b", deps=("a",)), subplan=sub), pattern=pattern)
    assert codes(found) == ["unknown_tool"]
    assert found[0].step_id == "b"


# ------------------------------------------------------------------ parsing model JSON


def test_parse_reports_missing_required_fields():
    plan, found = parse_plan({"steps": [{"action": "search"}, "oops"]})
    assert plan is None
    assert [str(p) for p in found] == [
        "the plan has no 'goal' (a string)",
        "steps[0] has no 'id' (a unique string)",
        "steps[0] has no 'parameters' (an object of the tool's arguments)",
        "steps[0] has no 'dependencies' list; give [] when the step depends on nothing",
        "steps[1] is not an object",
    ]


def test_parse_rejects_non_objects_and_bad_field_types():
    assert codes(parse_plan([1, 2])[1]) == ["not_object"]
    plan, found = parse_plan({"goal": "g", "steps": [dict(step("a"), estimated_tokens=-5)]})
    assert plan is None
    assert codes(found) == ["bad_field"]
    assert "steps.0.estimated_tokens" in found[0].message


def test_parse_without_required_dependencies_lets_references_imply_them():
    plan, found = parse_plan({"goal": "g", "steps": [
        {"id": "a", "action": "search", "parameters": {}},
        {"id": "b", "action": "search", "parameters": {"query": "$a"}},
    ]}, require_dependencies=False)  # fmt: skip
    assert found == []
    assert plan is not None
    assert plan.step("b").dependencies == ("a",)


# ------------------------------------------------------------------ cycles, as a property


@given(
    st.integers(1, 7).flatmap(
        lambda n: st.lists(st.lists(st.integers(0, n - 1), max_size=3), min_size=n, max_size=n)
    )
)
def test_find_cycles_reports_real_cycles_exactly_when_there_are_some(deps):
    ids = [f"s{i}" for i in range(len(deps))]
    plan = Plan(
        goal="g",
        steps=[
            {"id": ids[i], "action": "t", "dependencies": sorted({ids[d] for d in ds})}
            for i, ds in enumerate(deps)
        ],
    )
    cycles = find_cycles(plan)
    for loop in cycles:
        assert loop[0] == loop[-1]
        for before, after in itertools.pairwise(loop):
            assert before in plan.step(after).dependencies
    # Kahn's algorithm: the plan is acyclic exactly when every step can be ordered.
    remaining = {s.id: set(s.dependencies) for s in plan.steps}
    while ready := [sid for sid, d in remaining.items() if not d]:
        for sid in ready:
            del remaining[sid]
        for d in remaining.values():
            d.difference_update(ready)
    assert bool(cycles) == bool(remaining)
