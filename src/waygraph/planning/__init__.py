"""waygraph.planning: a model writes the plan, waygraph validates and runs it.

The second driver of the graph model (DESIGN.md, "Generated plans" and
"Parallel runs"): a planning model turns a goal into steps that call your
tools; waygraph validates the plan (sending problems back to the model),
optionally has a person approve or edit it, then runs it as a DAG (independent
steps in parallel), recovering with retries, fallbacks and plan revision.
A dry run (``PlanningPattern(dry_run=True)``, ``pattern.simulate``) shows what
would run without running it. See docs/planning.md.

Example:
    >>> from waygraph.planning import PlanningAgent, PlanningPattern, OpenAILLM
    >>> def search(query: str) -> str:
    ...     '''Search the notes.'''
    ...     return "notes about " + query
    >>> agent = PlanningAgent(OpenAILLM("llama3.1", base_url="http://localhost:11434/v1"),
    ...                       tools=[search], pattern=PlanningPattern(execution_mode="parallel"))
    >>> sorted(agent.tools)
    ['search']
"""

from waygraph.errors import (
    AgentBusyError,
    InvalidPlanError,
    LLMError,
    PlanningError,
    PlanParseError,
    PlanRejectedError,
    ToolDefinitionError,
)
from waygraph.planning._agent import PlanningAgent
from waygraph.planning._approval import ConsoleApproval, render_plan
from waygraph.planning._dryrun import DryRunLayer, DryRunReport
from waygraph.planning._facade import Agent, PlanningCallbacks
from waygraph.planning._graph import from_graph_plan, to_graph_plan
from waygraph.planning._json import extract_json, repair_json
from waygraph.planning._llm import LLM, LLMResponse, OpenAILLM
from waygraph.planning._models import (
    DECOMPOSE,
    ExecutionMode,
    Plan,
    PlanExecutionResult,
    PlanExecutionState,
    PlanProblem,
    PlanRevision,
    PlanStep,
    RevisionDecision,
    RevisionStrategy,
    RevisionTrigger,
    StepResult,
    StepStatus,
    TokenUsage,
)
from waygraph.planning._pattern import PlanningPattern
from waygraph.planning._prompts import plan_json_schema
from waygraph.planning._tools import StepContext, Tool, ToolRegistry
from waygraph.planning._validate import find_cycles, parse_plan, validate_plan

__all__ = [
    "DECOMPOSE",
    "LLM",
    "Agent",
    "AgentBusyError",
    "ConsoleApproval",
    "DryRunLayer",
    "DryRunReport",
    "ExecutionMode",
    "InvalidPlanError",
    "LLMError",
    "LLMResponse",
    "OpenAILLM",
    "Plan",
    "PlanExecutionResult",
    "PlanExecutionState",
    "PlanParseError",
    "PlanProblem",
    "PlanRejectedError",
    "PlanRevision",
    "PlanStep",
    "PlanningAgent",
    "PlanningCallbacks",
    "PlanningError",
    "PlanningPattern",
    "RevisionDecision",
    "RevisionStrategy",
    "RevisionTrigger",
    "StepContext",
    "StepResult",
    "StepStatus",
    "TokenUsage",
    "Tool",
    "ToolDefinitionError",
    "ToolRegistry",
    "extract_json",
    "find_cycles",
    "from_graph_plan",
    "parse_plan",
    "plan_json_schema",
    "render_plan",
    "repair_json",
    "to_graph_plan",
    "validate_plan",
]
