"""The planning agent's configuration."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from waygraph.planning._models import ExecutionMode, RevisionStrategy

__all__ = ["PlanningPattern"]


class PlanningPattern(BaseModel):
    """How the agent plans, validates, runs and revises (defaults are the seed's).

    Planning: ``max_steps``, ``planning_prompt`` (your instructions, used in
    place of the built-in opening of the system prompt; the rules, tool list
    and format are always added), ``structured_output`` (ask for the plan's
    JSON Schema; plain-text JSON is extracted and repaired either way),
    ``require_dependencies`` (every step must state its dependencies, and a
    ``$step`` reference must be listed among them; when False a missing list
    means none and references imply dependencies), ``require_fallbacks``,
    ``hierarchical`` and ``max_decomposition_depth``, ``token_budget``,
    ``plan_repair_attempts`` (how often an invalid plan is sent back to the
    model with its problems) and ``feasibility_review`` (a model reviews the
    plan; off by default).

    Execution: ``execution_mode`` (``sequential``, ``parallel``,
    ``adaptive``), ``max_parallel``, ``step_timeout`` in seconds (None: no
    limit), ``retry_failed_steps``, ``continue_on_failure`` and
    ``check_expected_output`` (a model judges outputs against
    ``expected_output``; off by default).

    Revision: ``allow_revision``, ``max_revisions``, ``revision_strategy``,
    ``revision_threshold`` (the failure rate that triggers a revision when
    ``continue_on_failure`` is on). Approval: ``require_plan_approval``.

    Example:
        >>> PlanningPattern(execution_mode="parallel", max_parallel=4).execution_mode
        <ExecutionMode.PARALLEL: 'parallel'>
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_steps: int = Field(default=20, ge=1)
    execution_mode: ExecutionMode = ExecutionMode.SEQUENTIAL
    max_parallel: int = Field(default=3, ge=1)
    step_timeout: float | None = Field(default=60.0, gt=0)
    continue_on_failure: bool = False
    retry_failed_steps: int = Field(default=1, ge=0)
    allow_revision: bool = True
    max_revisions: int = Field(default=3, ge=0)
    revision_strategy: RevisionStrategy = RevisionStrategy.REPLAN_REMAINING
    revision_threshold: float = Field(default=0.3, ge=0.0, le=1.0)
    require_plan_approval: bool = False
    require_dependencies: bool = True
    require_fallbacks: bool = False
    planning_prompt: str | None = None
    structured_output: bool = True
    hierarchical: bool = False
    max_decomposition_depth: int = Field(default=2, ge=0)
    token_budget: int | None = Field(default=None, ge=1)
    plan_repair_attempts: int = Field(default=2, ge=0)
    feasibility_review: bool = False
    check_expected_output: bool = False
