"""Planning data: plans and steps, the JSON Schema, the pattern, graph compilation, exports."""

from __future__ import annotations

import doctest
import importlib

import pytest
from pydantic import ValidationError

import waygraph.planning as planning
from waygraph.errors import WaygraphError
from waygraph.model import Plan as GraphPlan
from waygraph.planning import (
    ExecutionMode,
    InvalidPlanError,
    Plan,
    PlanningPattern,
    PlanStep,
    RevisionStrategy,
    TokenUsage,
    from_graph_plan,
    plan_json_schema,
)

EXPORTS = {
    "DECOMPOSE", "LLM", "Agent", "PlanningCallbacks", "AgentBusyError", "ConsoleApproval",
    "DryRunLayer", "DryRunReport",
    "ExecutionMode",
    "InvalidPlanError", "LLMError", "LLMResponse", "OpenAILLM", "Plan",
    "PlanExecutionResult", "PlanExecutionState", "PlanParseError", "PlanProblem",
    "PlanRejectedError", "PlanRevision", "PlanStep", "PlanningAgent", "PlanningError",
    "PlanningPattern", "RevisionDecision", "RevisionStrategy", "RevisionTrigger",
    "StepContext", "StepResult", "StepStatus", "TokenUsage", "Tool", "ToolDefinitionError",
    "ToolRegistry", "extract_json", "find_cycles", "from_graph_plan", "parse_plan",
    "plan_json_schema", "render_plan", "repair_json", "to_graph_plan", "validate_plan",
}  # fmt: skip


def diamond() -> Plan:
    return Plan(goal="Write a report", steps=[
        {"id": "a", "action": "fetch", "parameters": {"url": "x"}, "dependencies": []},
        {"id": "b", "action": "fetch", "parameters": {"url": "y"}, "dependencies": []},
        {"id": "c", "action": "merge", "parameters": {"left": "$a", "right": "$b"},
         "dependencies": ["a", "b"], "estimated_tokens": 40},
        {"id": "d", "action": "publish", "parameters": {"text": "$c"}, "dependencies": ["c"],
         "estimated_tokens": 2},
    ])  # fmt: skip


# ------------------------------------------------------------------ exports


def test_public_exports_are_exactly_the_documented_ones():
    assert set(planning.__all__) == EXPORTS
    for name in planning.__all__:
        assert getattr(planning, name) is not None


def test_planning_errors_are_waygraph_errors_and_builtins():
    assert issubclass(planning.InvalidPlanError, WaygraphError)
    assert issubclass(planning.InvalidPlanError, ValueError)
    assert issubclass(planning.LLMError, RuntimeError)
    assert issubclass(planning.ToolDefinitionError, TypeError)
    assert issubclass(planning.AgentBusyError, RuntimeError)


@pytest.mark.parametrize("module", [
    "_models", "_graph", "_json", "_references", "_tools", "_validate", "_approval",
    "_runtime", "_errors", "_pattern",
])  # fmt: skip
def test_docstring_examples_run(module):
    mod = importlib.import_module(f"waygraph.planning.{module}")
    assert doctest.testmod(mod).failed == 0


# ------------------------------------------------------------------ plan data


def test_step_is_lenient_about_what_models_get_wrong_harmlessly():
    step = PlanStep.model_validate({
        "id": 2, "action": "search", "parameters": {"q": "x"}, "dependencies": 1,
        "description": None, "expected_output": None, "estimated_tokens": None,
        "fallback_action": "",
    })  # fmt: skip
    assert step.id == "2"
    assert step.dependencies == ("1",)
    assert step.description == ""
    assert step.estimated_tokens == 0
    assert step.fallback_action is None


def test_step_needs_an_id_and_an_action():
    with pytest.raises(ValidationError):
        PlanStep(id="", action="x")
    with pytest.raises(ValidationError):
        PlanStep.model_validate({"id": "a"})


def test_only_goal_and_step_core_fields_are_required():
    plan = Plan.model_validate(
        {"goal": "g", "steps": [{"id": "a", "action": "t", "parameters": {}, "dependencies": []}]}
    )
    step = plan.steps[0]
    assert (step.description, step.expected_output, step.fallback_action) == ("", None, None)
    assert step.subplan is None
    assert plan.success_criteria == ()
    assert plan.created_at.tzinfo is not None


def test_estimated_total_tokens_defaults_to_the_sum_and_keeps_a_larger_claim():
    assert diamond().estimated_total_tokens == 42
    claimed = Plan(
        goal="g",
        estimated_total_tokens=500,
        steps=[{"id": "a", "action": "t", "estimated_tokens": 10}],
    )
    assert claimed.estimated_total_tokens == 500


def test_success_criteria_accepts_a_single_string():
    assert Plan(goal="g", success_criteria="done").success_criteria == ("done",)


def test_plan_lookups():
    plan = diamond()
    assert plan.step_ids == ["a", "b", "c", "d"]
    assert [s.id for s in plan.roots()] == ["a", "b"]
    assert [s.id for s in plan.leaves()] == ["d"]
    assert [s.id for s in plan.dependents("a")] == ["c"]
    with pytest.raises(KeyError, match=r"no step 'z'.*a, b, c, d"):
        plan.step("z")


def test_plans_are_immutable_and_updates_return_new_objects():
    plan = diamond()
    with pytest.raises(ValidationError):
        plan.goal = "other"  # type: ignore[misc]
    shorter = plan.with_steps(plan.steps[:2])
    assert shorter.step_ids == ["a", "b"]
    assert shorter.estimated_total_tokens == 0
    assert plan.step_ids == ["a", "b", "c", "d"]
    assert plan.estimated_total_tokens == 42


def test_token_usage_adds_up_and_derives_the_total():
    usage = TokenUsage(prompt_tokens=3, completion_tokens=4)
    assert usage.total_tokens == 7
    total = usage + TokenUsage(prompt_tokens=1, completion_tokens=1, total_tokens=2)
    assert (total.prompt_tokens, total.completion_tokens, total.total_tokens) == (4, 5, 9)


# ------------------------------------------------------------------ JSON Schema


def test_plan_schema_requires_only_the_core_fields():
    schema = plan_json_schema()
    assert schema["required"] == ["goal", "steps"]
    step = schema["$defs"]["step"]
    assert step["required"] == ["id", "action", "parameters", "dependencies"]
    assert "subplan" not in step["properties"]
    relaxed = plan_json_schema(require_dependencies=False)["$defs"]["step"]
    assert relaxed["required"] == ["id", "action", "parameters"]


def test_hierarchical_schema_nests_subplans():
    schema = plan_json_schema(hierarchical=True)
    assert schema["$defs"]["step"]["properties"]["subplan"] == {"$ref": "#/$defs/subplan"}
    assert schema["$defs"]["subplan"]["properties"]["steps"]["items"] == {"$ref": "#/$defs/step"}


def test_subplan_without_goal_takes_the_step_description():
    step = PlanStep.model_validate({
        "id": "s", "action": "decompose", "description": "Collect the data",
        "subplan": {"steps": [{"id": "x", "action": "t"}]},
    })  # fmt: skip
    assert step.subplan is not None
    assert step.subplan.goal == "Collect the data"
    assert step.is_composite


# ------------------------------------------------------------------ pattern


def test_pattern_defaults_are_the_seeds():
    p = PlanningPattern()
    assert (p.max_steps, p.execution_mode, p.max_parallel, p.step_timeout) == (
        20,
        ExecutionMode.SEQUENTIAL,
        3,
        60.0,
    )
    assert (p.continue_on_failure, p.retry_failed_steps, p.allow_revision) == (False, 1, True)
    assert (p.max_revisions, p.revision_strategy, p.revision_threshold) == (
        3,
        RevisionStrategy.REPLAN_REMAINING,
        0.3,
    )
    assert (p.require_plan_approval, p.require_dependencies, p.require_fallbacks) == (
        False,
        True,
        False,
    )
    assert (p.planning_prompt, p.structured_output, p.hierarchical) == (None, True, False)
    assert (p.max_decomposition_depth, p.token_budget) == (2, None)
    assert (p.feasibility_review, p.check_expected_output) == (False, False)


def test_pattern_accepts_plain_strings_and_rejects_typos():
    p = PlanningPattern(execution_mode="adaptive", revision_strategy="insert_recovery")
    assert p.execution_mode is ExecutionMode.ADAPTIVE
    assert p.revision_strategy is RevisionStrategy.INSERT_RECOVERY
    with pytest.raises(ValidationError, match="max_paralel"):
        PlanningPattern(max_paralel=2)
    with pytest.raises(ValidationError):
        PlanningPattern(execution_mode="fast")
    with pytest.raises(ValidationError):
        PlanningPattern(revision_threshold=1.5)


# ------------------------------------------------------------------ graph model


def test_compiles_to_the_shared_graph_model_with_join_all():
    compiled = diamond().to_graph_plan(plan_id="report")
    assert isinstance(compiled, GraphPlan)
    assert compiled.id == "report"
    assert compiled.goal == "Write a report"
    graph = compiled.graph
    assert graph.start == "start"
    assert graph.nodes["start"].type == "start"
    assert graph.nodes["done"].type == "exit"
    for step_id in "abcd":
        node = graph.nodes[step_id]
        assert (node.type, node.join) == ("task", "all")
    assert graph.nodes["c"].tool == "merge"
    edges = {(e.from_, e.to, e.condition) for e in graph.edges}
    assert edges == {
        ("start", "a", "always"), ("start", "b", "always"),
        ("a", "c", "on_success"), ("b", "c", "on_success"),
        ("c", "d", "on_success"), ("d", "done", "on_success"),
    }  # fmt: skip
    assert len(graph.edges) == len(edges)


def test_graph_plan_id_defaults_to_a_slug_of_the_goal():
    assert diamond().to_graph_plan().id == "write-a-report"


def test_step_ids_that_clash_with_start_and_exit_names_get_other_node_names():
    plan = Plan(
        goal="g",
        steps=[
            {"id": "start", "action": "t"},
            {"id": "done", "action": "t", "dependencies": ["start"]},
        ],
    )
    graph = plan.to_graph_plan("clash").graph
    assert graph.start == "start_"
    assert graph.nodes["start"].type == "task"
    assert {(e.from_, e.to) for e in graph.edges} == {
        ("start_", "start"),
        ("start", "done"),
        ("done", "done_"),
    }


def test_a_plan_with_a_cycle_has_no_graph():
    plan = Plan(
        goal="g",
        steps=[
            {"id": "s1", "action": "t", "dependencies": ["s4"]},
            {"id": "s4", "action": "t", "dependencies": ["s1"]},
        ],
    )
    with pytest.raises(InvalidPlanError, match="cycle: s1 -> s4 -> s1"):
        plan.to_graph_plan()


def test_graph_round_trip_restores_the_generated_plan():
    plan = diamond().model_copy(update={"success_criteria": ("published",)})
    back = Plan.from_graph_plan(plan.to_graph_plan("report"))
    assert back.model_dump() == plan.model_dump()


def test_from_graph_plan_rejects_graphs_it_did_not_compile():
    other = GraphPlan.model_validate({"id": "x", "steps": [{"name": "A"}]})
    with pytest.raises(InvalidPlanError, match="not compiled from a generated plan"):
        from_graph_plan(other)
