"""Names and descriptions for a suggested plan, asked of a model; the structure stays the runs'.

``waygraph library suggest --llm URL --model NAME`` sends each suggestion's
goals, steps and sample outputs to the model and asks for a name and a
description for the plan and for each step, as JSON. Only those texts are
taken: the steps, their order, tools, checks, triggers and provenance stay
what the runs gave. An answer that is not that JSON, or names a different
number of steps, or puts text where a short name belongs, leaves the
suggestion as it was, with the reason (the model's words are data here,
never instructions).

Example:
    >>> from waygraph.learning.samples import Sample, SampleStep
    >>> from waygraph.learning.suggest import suggest
    >>> runs = [Sample("dag", f"r{i}", "back up the database", (
    ...     SampleStep("dump the database", "pg_dump", ("Dump complete",)),)) for i in range(3)]
    >>> (found,) = suggest(runs)
    >>> reply = ('{"name": "Nightly backup", "description": "Back up the database.", '
    ...          '"steps": [{"name": "Dump", "description": "Dump it with pg_dump."}]}')
    >>> named, problem = name_with_model(found, lambda messages: reply)
    >>> named.plan.name, named.plan.steps()[0].name, problem
    ('Nightly backup', 'Dump', None)
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from waygraph.check import check_plan
from waygraph.formats.json_library import plan_to_data
from waygraph.learning.suggest import Suggestion
from waygraph.model import Plan

__all__ = ["SYSTEM_PROMPT", "Complete", "name_with_model"]

#: Sends chat messages to a model and returns its reply's text.
Complete = Callable[[list[dict[str, str]]], str]

SYSTEM_PROMPT = (
    "You name workflow plans. You get a plan learned from past runs: a goal users gave, the "
    "phrases their goals shared, and its steps with the tool each used and the check its "
    "output passed. Answer with one JSON object "
    'and nothing else: {"name": "...", "description": "...", "steps": [{"name": "...", '
    '"description": "..."}, ...]} with exactly one entry per step, in the same order. Names '
    "are short (at most 60 characters), imperative for steps; descriptions are one sentence "
    "each. Do not add, drop or reorder steps."
)


class _StepText(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str = Field(min_length=1, max_length=60)
    description: str = Field(default="", max_length=300)


class _PlanText(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str = Field(min_length=1, max_length=80)
    description: str = Field(default="", max_length=500)
    steps: list[_StepText]


def _request(suggestion: Suggestion, goals: list[str]) -> list[dict[str, str]]:
    """The chat messages: the rules, then the plan's goal, triggers and steps as JSON."""
    steps = [
        {
            "step": s.name,
            "tool": s.tool,
            "check": s.verify.model_dump(exclude_none=True) if s.verify else None,
        }
        for s in suggestion.plan.steps()
    ]
    content = {"goals": goals, "triggers": list(suggestion.plan.triggers), "steps": steps}
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": json.dumps(content, ensure_ascii=False)},
    ]


def _parse(reply: str) -> Any:
    text = reply.strip()
    if text.startswith("```"):
        # A fenced block: the JSON is between the fences.
        text = text.strip("`").removeprefix("json").strip()
    return json.loads(text)


def name_with_model(suggestion: Suggestion, complete: Complete) -> tuple[Suggestion, str | None]:
    """The suggestion with the model's names and descriptions, or unchanged and why.

    ``complete`` may raise; its error is the reason the suggestion stays as it was.
    """
    goals = [suggestion.plan.goal or ""]
    try:
        reply = complete(_request(suggestion, goals))
        texts = _PlanText.model_validate(_parse(reply))
    except (ValueError, ValidationError) as exc:
        return suggestion, f"the model's answer is not the JSON asked for: {str(exc)[:200]}"
    except Exception as exc:  # the model's transport: any failure keeps the runs' names
        return suggestion, f"the model could not be asked: {str(exc)[:200]}"
    data = plan_to_data(suggestion.plan)
    steps = data.get("steps") or []
    if len(texts.steps) != len(steps):
        return suggestion, (f"the model named {len(texts.steps)} steps; the plan has {len(steps)}")
    data["name"] = texts.name.strip()
    if texts.description.strip():
        data["description"] = texts.description.strip()
    for step, text in zip(steps, texts.steps, strict=True):
        step["name"] = text.name.strip()
        if text.description.strip():
            step["description"] = text.description.strip()
    plan = Plan.model_validate({"id": suggestion.plan.id, **data})
    problems = tuple(check_plan(plan))
    if any(p.level == "error" for p in problems):
        return suggestion, "the model's names made the plan fail waygraph check"
    return dataclasses.replace(suggestion, plan=plan, problems=problems), None
