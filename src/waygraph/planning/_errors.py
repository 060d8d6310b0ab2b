"""Errors of the planning agent.

Every one derives from :class:`waygraph.errors.WaygraphError` and also from
the built-in it means::

    WaygraphError
    └── PlanningError                       anything the planning agent raises
        ├── InvalidPlanError (ValueError)   a plan failed validation (``.problems``)
        ├── PlanParseError (ValueError)     a model reply holds no usable JSON
        ├── PlanRejectedError               approval rejected the plan
        ├── LLMError (RuntimeError)         a model call failed
        ├── ToolDefinitionError (TypeError) a function cannot be used as a tool
        └── AgentBusyError (RuntimeError)   a second run on an agent that is running

Example:
    >>> from waygraph.planning import InvalidPlanError, PlanProblem
    >>> err = InvalidPlanError([PlanProblem("unknown_tool", "unknown tool 'serch'", "s1")])
    >>> str(err)
    "the plan is invalid:\\n- step 's1': unknown tool 'serch'"
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from waygraph.errors import WaygraphError

if TYPE_CHECKING:
    from waygraph.planning._models import Plan, PlanProblem

__all__ = [
    "AgentBusyError",
    "InvalidPlanError",
    "LLMError",
    "PlanParseError",
    "PlanRejectedError",
    "PlanningError",
    "ToolDefinitionError",
]


class PlanningError(WaygraphError):
    """Base class of the planning agent's errors."""


class InvalidPlanError(PlanningError, ValueError):
    """A plan failed validation; ``problems`` lists every problem found.

    ``plan`` is the offending plan when it could be parsed at all.
    """

    def __init__(
        self, problems: Sequence[PlanProblem], *, plan: Plan | None = None, attempts: int = 1
    ) -> None:
        self.problems = tuple(problems)
        self.plan = plan
        self.attempts = attempts
        head = "the plan is invalid"
        if attempts > 1:
            head += f" after {attempts} attempts"
        super().__init__(head + ":\n" + "\n".join(f"- {p}" for p in self.problems))


class PlanParseError(PlanningError, ValueError):
    """A model reply holds no JSON that could be extracted or repaired."""


class PlanRejectedError(PlanningError):
    """Plan approval (a callback or a person) rejected the plan."""


class LLMError(PlanningError, RuntimeError):
    """A model call failed (connection, HTTP error, empty reply)."""


class ToolDefinitionError(PlanningError, TypeError):
    """A function cannot be registered as a tool (for example it takes ``*args``)."""


class AgentBusyError(PlanningError, RuntimeError):
    """The agent is already running a plan; use one agent per concurrent run."""
