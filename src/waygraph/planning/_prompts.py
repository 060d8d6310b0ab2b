"""The messages sent to the planning and execution models, and the plan schema they answer in.

Kept apart from the logic so they can be read and tuned in one place. Every
``*_messages`` function returns a list of chat messages; :func:`plan_json_schema`
is the structured-output schema a plan reply follows.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from waygraph.planning._models import DECOMPOSE, Plan, PlanProblem, PlanStep
from waygraph.planning._pattern import PlanningPattern
from waygraph.planning._tools import Tool

__all__ = [
    "DEFAULT_PLANNING_PROMPT",
    "decomposition_messages",
    "expectation_messages",
    "feasibility_messages",
    "plan_json_schema",
    "planning_messages",
    "recovery_messages",
    "repair_message",
    "replan_messages",
]

DEFAULT_PLANNING_PROMPT = (
    "You are a careful planner. Break the goal into the fewest steps that reach it, each "
    "calling one of the tools below. Reply with one JSON object and nothing else."
)

#: Longest text of one earlier result shown to a model.
RESULT_CHARS = 600

_EXAMPLE = {
    "goal": "the goal, restated",
    "steps": [
        {
            "id": "s1",
            "description": "what this step does",
            "action": "tool_name",
            "parameters": {"arg": "value"},
            "dependencies": [],
        },
        {
            "id": "s2",
            "description": "uses the result of s1",
            "action": "tool_name",
            "parameters": {"arg": "$s1"},
            "dependencies": ["s1"],
        },
    ],
    "success_criteria": ["how to tell the goal is reached"],
}


def _rules(pattern: PlanningPattern, depth: int, budget_left: int | None) -> list[str]:
    rules = [
        'Each step calls exactly one tool: "action" is the tool name and "parameters" its '
        "arguments, which must fit the tool's parameters.",
        '"dependencies" lists the ids of the steps that must finish first; use [] for none. '
        "Steps that do not depend on each other may run at the same time.",
        'To use an earlier result, write "$id" as the whole parameter value, or "${id}" inside '
        "text, and list that step in dependencies.",
        f"Use at most {pattern.max_steps} steps.",
        'Optional per step: "description", "expected_output", "fallback_action" (another tool '
        'to call if the step fails, with "fallback_parameters" or else the same parameters), '
        '"estimated_tokens".',
    ]
    if pattern.require_fallbacks:
        rules.append('Every step must have a "fallback_action".')
    if budget_left is not None:
        rules.append(f"The steps' estimated_tokens must add up to at most {budget_left}.")
    if pattern.hierarchical and depth < pattern.max_decomposition_depth:
        rules.append(
            f'A complex step may use the action "{DECOMPOSE}" with a "description" of its '
            "sub-goal and no parameters; it is planned in detail when it is reached."
        )
    return rules


def _tool_lines(tools: Mapping[str, Tool]) -> list[str]:
    lines = []
    for tool in tools.values():
        lines.append(f"- {tool.signature_text()}: {tool.description or 'no description'}")
        schema = json.dumps(tool.parameters_schema, separators=(",", ":"))
        lines.append(f"  parameters schema: {schema}")
    return lines


def _system(
    pattern: PlanningPattern, tools: Mapping[str, Tool], depth: int, budget_left: int | None
) -> str:
    parts = [
        pattern.planning_prompt or DEFAULT_PLANNING_PROMPT,
        "Rules:\n" + "\n".join(f"- {r}" for r in _rules(pattern, depth, budget_left)),
        "Tools:\n" + ("\n".join(_tool_lines(tools)) or "(none)"),
        "Reply in this JSON format:\n" + json.dumps(_EXAMPLE, indent=1),
    ]
    return "\n\n".join(parts)


def _result_text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= RESULT_CHARS else text[: RESULT_CHARS - 3] + "..."


def _results_block(results: Mapping[str, Any], ids: Collection[str]) -> str:
    lines = [f"- {sid}: {_result_text(results.get(sid))}" for sid in ids]
    return "\n".join(lines) or "(none)"


def planning_messages(
    goal: str,
    context: str | None,
    pattern: PlanningPattern,
    tools: Mapping[str, Tool],
    *,
    budget_left: int | None = None,
) -> list[dict[str, str]]:
    """The first request for a plan."""
    user = f"Goal: {goal}"
    if context:
        user += f"\n\nContext:\n{context}"
    return [
        {"role": "system", "content": _system(pattern, tools, 0, budget_left)},
        {"role": "user", "content": user},
    ]


def repair_message(problems: Sequence[PlanProblem]) -> dict[str, str]:
    """The message that sends an invalid plan back to the model."""
    listed = "\n".join(f"- {p}" for p in problems)
    return {
        "role": "user",
        "content": (
            f"That plan cannot run:\n{listed}\n\nReply with the corrected plan as one JSON object."
        ),
    }


def _plan_lines(plan: Plan, statuses: Mapping[str, str]) -> str:
    lines = []
    for step in plan.steps:
        deps = ", ".join(step.dependencies) or "-"
        status = statuses.get(step.id, "pending")
        lines.append(
            f"- {step.id} [{status}] {step.action}({json.dumps(step.parameters)}) "
            f"after: {deps}. {step.description}".rstrip()
        )
    return "\n".join(lines)


def replan_messages(
    goal: str,
    plan: Plan,
    statuses: Mapping[str, str],
    results: Mapping[str, Any],
    kept: Sequence[str],
    reason: str,
    pattern: PlanningPattern,
    tools: Mapping[str, Tool],
    *,
    depth: int,
    budget_left: int | None,
) -> list[dict[str, str]]:
    """Ask for the steps still needed after ``kept`` steps finished."""
    user = (
        f"Goal: {goal}\n\nThe plan so far:\n{_plan_lines(plan, statuses)}\n\n"
        f"Why it is being revised: {reason}\n\n"
        f"Finished steps and their results (depend on them and reference them as $id):\n"
        f"{_results_block(results, kept)}\n\n"
        "Write a plan with only the steps still needed to reach the goal. Do not repeat "
        f"finished steps and do not reuse their ids ({', '.join(kept) or 'none'})."
    )
    return [
        {"role": "system", "content": _system(pattern, tools, depth, budget_left)},
        {"role": "user", "content": user},
    ]


def recovery_messages(
    goal: str,
    plan: Plan,
    statuses: Mapping[str, str],
    results: Mapping[str, Any],
    kept: Sequence[str],
    step: PlanStep,
    reason: str,
    pattern: PlanningPattern,
    tools: Mapping[str, Tool],
    *,
    depth: int,
    budget_left: int | None,
) -> list[dict[str, str]]:
    """Ask for recovery steps that stand in for the failed ``step``."""
    user = (
        f"Goal: {goal}\n\nThe plan so far:\n{_plan_lines(plan, statuses)}\n\n"
        f"Step {step.id} ({step.action}) went wrong: {reason}\n\n"
        f"Finished steps and their results (you may reference them as $id):\n"
        f"{_results_block(results, kept)}\n\n"
        f"Write recovery steps that achieve what {step.id} was meant to do. Their last step "
        f"stands in for {step.id}: the steps that waited for {step.id} will use its result. "
        f"Use new step ids, none of: {', '.join(plan.step_ids)}."
    )
    return [
        {"role": "system", "content": _system(pattern, tools, depth, budget_left)},
        {"role": "user", "content": user},
    ]


def decomposition_messages(
    parent_goal: str,
    step: PlanStep,
    results: Mapping[str, Any],
    available: Sequence[str],
    pattern: PlanningPattern,
    tools: Mapping[str, Tool],
    *,
    depth: int,
) -> list[dict[str, str]]:
    """Ask for the sub-plan of a composite step at ``depth``."""
    sub_goal = step.description or step.id
    user = (
        f"Goal: {sub_goal}\n\nThis is one step of a larger goal: {parent_goal}\n\n"
        f"Results available (reference them as $id):\n{_results_block(results, available)}"
    )
    if step.parameters:
        user += f"\n\nInputs of this step: {json.dumps(step.parameters, default=str)}"
    return [
        {"role": "system", "content": _system(pattern, tools, depth, None)},
        {"role": "user", "content": user},
    ]


FEASIBILITY_SCHEMA = {
    "type": "object",
    "properties": {
        "feasible": {"type": "boolean"},
        "problems": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["feasible", "problems"],
}


def feasibility_messages(plan: Plan, tools: Mapping[str, Tool]) -> list[dict[str, str]]:
    """Ask a model whether the plan can reach its goal with these tools."""
    system = (
        "You review plans before they run. Say whether the plan can reach its goal with "
        "the tools listed, and list each concrete problem. Reply with JSON: "
        '{"feasible": true or false, "problems": ["..."]}.'
    )
    user = (
        f"Tools:\n{chr(10).join(_tool_lines(tools))}\n\nPlan:\n"
        f"{plan.model_dump_json(exclude={'created_at'}, indent=1)}"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


EXPECTATION_SCHEMA = {
    "type": "object",
    "properties": {"matches": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["matches"],
}


def expectation_messages(step: PlanStep, output: Any) -> list[dict[str, str]]:
    """Ask a model whether a step's output is what the plan expected."""
    system = (
        "You check a step's output against what was expected. Reply with JSON: "
        '{"matches": true or false, "reason": "one sentence"}.'
    )
    user = (
        f"Step: {step.description or step.action}\nExpected: {step.expected_output}\n"
        f"Output: {_result_text(output)}"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


# ------------------------------------------------------------------ JSON Schema


def plan_json_schema(
    *, hierarchical: bool = False, require_dependencies: bool = True
) -> dict[str, Any]:
    """The JSON Schema a model's plan must follow (sent as structured output).

    Only ``goal`` and each step's ``id``, ``action``, ``parameters`` and
    ``dependencies`` (the last unless ``require_dependencies`` is False) are
    required. With ``hierarchical`` a step may carry a nested ``subplan``.

    Example:
        >>> plan_json_schema()["required"]
        ['goal', 'steps']
    """
    step_required = ["id", "action", "parameters"]
    if require_dependencies:
        step_required.append("dependencies")
    step: dict[str, Any] = {
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "unique id, referenced as $id"},
            "description": {"type": "string"},
            "action": {"type": "string", "description": "the name of a tool"},
            "parameters": {
                "type": "object",
                "description": "the tool's arguments",
                "additionalProperties": True,
            },
            "dependencies": {
                "type": "array",
                "items": {"type": "string"},
                "description": "ids of steps that must complete first",
            },
            "expected_output": {"type": "string"},
            "fallback_action": {"type": "string", "description": "a tool to try on failure"},
            "fallback_parameters": {"type": "object", "additionalProperties": True},
            "estimated_tokens": {"type": "integer", "minimum": 0},
        },
        "required": step_required,
    }
    if hierarchical:
        step["properties"]["subplan"] = {"$ref": "#/$defs/subplan"}
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "goal": {"type": "string"},
            "steps": {"type": "array", "items": {"$ref": "#/$defs/step"}, "minItems": 1},
            "success_criteria": {"type": "array", "items": {"type": "string"}},
            "estimated_total_tokens": {"type": "integer", "minimum": 0},
        },
        "required": ["goal", "steps"],
        "$defs": {"step": step},
    }
    if hierarchical:
        schema["$defs"]["subplan"] = {
            "type": "object",
            "properties": {"steps": {"type": "array", "items": {"$ref": "#/$defs/step"}}},
            "required": ["steps"],
        }
    return schema
