"""A planning agent with two small pure-function tools.

A model writes the plan; waygraph validates it and runs it, the two word
counts in parallel, then the multiplication once both are done.

Against any OpenAI-compatible endpoint (Ollama, vLLM, llama.cpp, hosted):

    python examples/planning_agent.py --base-url http://localhost:11434/v1 --model llama3.1

Offline, against waygraph's scripted model server (replays a fixed plan for
the default goal):

    python examples/planning_agent.py --scripted
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from waygraph.planning import OpenAILLM, PlanningAgent, PlanningPattern, render_plan
from waygraph.testing import ScriptedChatServer

DEFAULT_GOAL = (
    "Multiply the number of words in 'the quick brown fox' by the number of words in "
    "'jumps over the lazy dog'."
)

# What a model might answer for DEFAULT_GOAL; used with --scripted.
SCRIPTED_PLAN = {
    "goal": DEFAULT_GOAL,
    "steps": [
        {"id": "first", "description": "Count the words of the first phrase",
         "action": "word_count", "parameters": {"text": "the quick brown fox"},
         "dependencies": []},
        {"id": "second", "description": "Count the words of the second phrase",
         "action": "word_count", "parameters": {"text": "jumps over the lazy dog"},
         "dependencies": []},
        {"id": "product", "description": "Multiply the two counts", "action": "multiply",
         "parameters": {"a": "$first", "b": "$second"}, "dependencies": ["first", "second"],
         "expected_output": "a number"},
    ],
    "success_criteria": ["the product of both word counts"],
}  # fmt: skip


def word_count(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())


def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


def show_step(*, step: Any, result: Any, depth: int, **future: Any) -> None:
    indent = "  " * (depth + 1)
    detail = result.output if result.error is None else result.error
    print(f"{indent}{step.id}: {result.status.value} -> {detail}")


def run(goal: str, llm: OpenAILLM, mode: str, approve: bool) -> int:
    agent = PlanningAgent(
        llm,
        tools=[word_count, multiply],
        pattern=PlanningPattern(execution_mode=mode, require_plan_approval=approve),
        on_plan_generated=lambda *, plan, **future: print(render_plan(plan)),
        on_step_complete=show_step,
    )
    print(f"Goal: {goal}")
    result = agent.run(goal)
    print(f"success: {result.success}")
    print(f"final output: {result.final_output}")
    usage = result.token_usage
    print(
        f"tokens: {usage.total_tokens} ({usage.prompt_tokens} prompt, "
        f"{usage.completion_tokens} completion); revisions: {result.revision_count}; "
        f"{result.execution_time:.2f} s"
    )
    return 0 if result.success else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("goal", nargs="?", default=DEFAULT_GOAL)
    parser.add_argument(
        "--base-url", help="an OpenAI-compatible endpoint, e.g. http://localhost:11434/v1"
    )
    parser.add_argument("--model", help="the model name the endpoint serves")
    parser.add_argument("--api-key", help="default: $OPENAI_API_KEY (local servers need none)")
    parser.add_argument(
        "--mode", default="parallel", choices=["sequential", "parallel", "adaptive"]
    )
    parser.add_argument(
        "--approve", action="store_true", help="show the plan and ask before running it"
    )
    parser.add_argument(
        "--scripted",
        action="store_true",
        help="run offline against a scripted model (replays a fixed plan)",
    )
    args = parser.parse_args(argv)

    if args.scripted:
        if args.goal != DEFAULT_GOAL:
            parser.error("--scripted replays a plan for the default goal; leave the goal out")
        with ScriptedChatServer([json.dumps(SCRIPTED_PLAN)]) as server:
            llm = OpenAILLM("scripted", base_url=server.base_url, api_key="scripted")
            return run(args.goal, llm, args.mode, args.approve)
    if not args.model:
        parser.error("--model is required (or use --scripted to run offline)")
    llm = OpenAILLM(args.model, base_url=args.base_url, api_key=args.api_key)
    return run(args.goal, llm, args.mode, args.approve)


if __name__ == "__main__":
    sys.exit(main())
