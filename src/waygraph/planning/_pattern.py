"""The planning agent's configuration."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from waygraph.errors import ConfigError, InputError
from waygraph.planning._models import (
    ExecutionMode,
    Plan,
    PlanExecutionResult,
    PlanExecutionState,
    RevisionStrategy,
)

if TYPE_CHECKING:
    from waygraph.planning._agent import PlanningAgent
    from waygraph.planning._dryrun import DryRunReport
    from waygraph.planning._facade import Agent

__all__ = ["PlanningPattern"]


class _LastRun:
    """The engine a pattern drove last, for ``get_plan``/``get_execution_state``.

    Not configuration: every holder compares equal, so two patterns with the
    same settings stay equal after one of them has run.
    """

    __slots__ = ("engine",)

    def __init__(self) -> None:
        self.engine: PlanningAgent | None = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _LastRun)

    __hash__ = None  # type: ignore[assignment]


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
    plan; off by default), ``planning_model`` (a model name: plans are
    written, repaired and revised by that model on the agent's own endpoint,
    an :class:`~waygraph.planning.OpenAILLM` copy of the agent's model with
    only the name changed; a planning LLM passed to the agent explicitly
    wins; an agent model that cannot switch names is a ConfigError).

    Execution: ``execution_mode`` (``sequential``, ``parallel``,
    ``adaptive``), ``max_parallel``, ``step_timeout`` in seconds (None: no
    limit), ``retry_failed_steps``, ``continue_on_failure`` and
    ``check_expected_output`` (a model judges outputs against
    ``expected_output``; off by default).

    Revision: ``allow_revision``, ``max_revisions``, ``revision_strategy``,
    ``revision_threshold`` (the failure rate that triggers a revision when
    ``continue_on_failure`` is on). Approval: ``require_plan_approval``.

    Dry runs: with ``dry_run=True`` a run plans and validates as usual, then
    stops before approval and before any step: the result's ``success`` is
    the plan's validity and its ``dry_run_report`` shows what would have
    run. ``await pattern.simulate(agent, plan)`` gives that report for a plan
    you have, without any model call.

    The pattern also drives an :class:`~waygraph.planning.Agent`:
    ``await pattern.execute(agent, query)``, ``generate_plan(agent, query)``,
    ``execute_plan(agent, plan)``, ``revise_plan(agent, state, reason)``,
    ``simulate(agent, plan)``, and ``get_plan()`` / ``get_execution_state()``
    for the latest of those runs.

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
    dry_run: bool = False
    planning_model: str | None = Field(default=None, min_length=1)

    _last: _LastRun = PrivateAttr(default_factory=_LastRun)

    # ------------------------------------------------------------ driving an agent

    def _engine(self, agent: Agent | PlanningAgent, *, remember: bool = True) -> PlanningAgent:
        from waygraph.planning._agent import PlanningAgent
        from waygraph.planning._facade import Agent

        if isinstance(agent, Agent):
            engine = agent.engine(self)
        elif isinstance(agent, PlanningAgent):
            if agent.pattern != self:
                raise ConfigError(
                    "this PlanningAgent was built with another pattern; "
                    "call its own methods, or pass an Agent"
                )
            engine = agent
        else:
            raise ConfigError(f"expected an Agent, got {type(agent).__name__}")
        if remember:
            self._last.engine = engine
        return engine

    async def generate_plan(self, agent: Agent | PlanningAgent, query: str) -> Plan:
        """A validated plan for ``query`` from ``agent``'s planning model (nothing runs).

        Raises :class:`~waygraph.planning.InvalidPlanError` when the model's plan
        stays invalid after the repair attempts.
        """
        return await self._engine(agent).generate_plan(query)

    async def execute_plan(self, agent: Agent | PlanningAgent, plan: Plan) -> PlanExecutionResult:
        """Validate and run ``plan`` with ``agent``'s tools (passing it approves it)."""
        return await self._engine(agent).execute_plan(plan)

    async def execute(self, agent: Agent | PlanningAgent, query: str) -> PlanExecutionResult:
        """Plan, approve and run ``query``; never raises for an invalid or rejected plan."""
        return await self._engine(agent).execute(query)

    async def simulate(
        self, agent: Agent | PlanningAgent, plan: Plan | Mapping[str, Any]
    ) -> DryRunReport:
        """Validate ``plan`` and show what would run with ``agent``'s tools; nothing runs.

        No tool and no model is called, and the pattern's latest run
        (``get_plan``) is left as it was. ``plan`` may also be a plan's JSON
        object (its problems are reported). The report lists the dependency
        layers, the batches each would run in under ``max_parallel``, the
        critical path and the estimated tokens against ``token_budget``.

        Example:
            >>> import asyncio
            >>> from waygraph.planning import Agent, OpenAILLM
            >>> def fetch(url: str) -> str:
            ...     return url
            >>> agent = Agent(tools=[fetch], llm=OpenAILLM("m", base_url="http://127.0.0.1:9/v1"))
            >>> plan = Plan(goal="g", steps=[
            ...     {"id": "a", "action": "fetch", "parameters": {"url": "x"}},
            ...     {"id": "b", "action": "fetch", "parameters": {"url": "y"}}])
            >>> pattern = PlanningPattern(execution_mode="parallel")
            >>> report = asyncio.run(pattern.simulate(agent, plan))
            >>> report.valid, report.layers[0].batches
            (True, (('a', 'b'),))
        """
        from waygraph.planning._dryrun import simulate_plan

        if not isinstance(plan, Plan | Mapping):
            raise ConfigError(
                f"simulate: plan must be a Plan or a plan's JSON object, not {type(plan).__name__}"
            )
        engine = self._engine(agent, remember=False)
        return simulate_plan(plan, engine.tools, engine.pattern)

    async def revise_plan(
        self,
        agent: Agent | PlanningAgent,
        state: PlanExecutionState | Plan | None = None,
        reason: str | None = None,
        *,
        current_state: PlanExecutionState | Plan | None = None,
    ) -> Plan:
        """A revised whole plan given ``reason``, from the plan in ``state`` (None: the latest).

        ``current_state`` is document 004's name for ``state`` (give one;
        both is an :class:`~waygraph.errors.InputError`, as is no ``reason``).
        Run the new plan with :meth:`execute_plan`. While a plan is running, ask for a
        revision with ``PlanningAgent.request_revision(reason)`` instead.
        """
        if state is not None and current_state is not None:
            raise InputError(
                "revise_plan takes state or current_state (document 004's name for it), not both"
            )
        if not reason:
            raise InputError("revise_plan needs a reason: revise_plan(agent, state, reason)")
        state = state if state is not None else current_state
        plan = state.plan if isinstance(state, PlanExecutionState) else state
        return await self._engine(agent).revise_plan(reason, plan=plan)

    def get_plan(self) -> Plan | None:
        """The plan of the latest run this pattern drove (None before one)."""
        engine = self._last.engine
        return None if engine is None else engine.get_plan()

    def get_execution_state(self) -> PlanExecutionState | None:
        """The execution state of the latest run this pattern drove (None before one)."""
        engine = self._last.engine
        return None if engine is None else engine.get_execution_state()

    # The last engine holds HTTP clients and tasks: a copy or a pickle of the
    # pattern starts with none, so it never reports another pattern's run.

    def __getstate__(self) -> dict[Any, Any]:
        state = super().__getstate__()
        state["__pydantic_private__"] = {"_last": _LastRun()}
        return state

    def __copy__(self) -> PlanningPattern:
        copied = super().__copy__()
        object.__setattr__(copied, "__pydantic_private__", {"_last": _LastRun()})
        return copied

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> PlanningPattern:
        memo = {} if memo is None else memo
        memo[id(self._last)] = _LastRun()  # deepcopy then takes a fresh holder as the copy
        return super().__deepcopy__(memo)
