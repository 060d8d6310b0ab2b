"""Data of the planning agent: plans, steps, results, revisions, token usage.

Every model is immutable: build a changed copy with ``model_copy(update=...)``
(or the helpers such as :meth:`Plan.with_steps`). A plan from a model is
lenient about what models commonly get wrong in harmless ways (integer ids, a
single dependency given as a string, ``null`` for an optional field); only
``goal`` and each step's ``id``, ``action``, ``parameters`` and
``dependencies`` are required in the JSON a model writes.

Example:
    >>> plan = Plan(goal="greet", steps=[
    ...     PlanStep(id="name", action="lookup_name", parameters={}),
    ...     PlanStep(id="hi", action="greet", parameters={"who": "$name"},
    ...              dependencies=["name"], estimated_tokens=50)])
    >>> [s.id for s in plan.roots()], plan.estimated_total_tokens
    (['name'], 50)
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from waygraph.model._status import NodeStatus

if TYPE_CHECKING:
    from waygraph import model as graph_model

__all__ = [
    "DECOMPOSE",
    "DryRunLayer",
    "DryRunReport",
    "ExecutionMode",
    "Plan",
    "PlanExecutionResult",
    "PlanExecutionState",
    "PlanProblem",
    "PlanRevision",
    "PlanStep",
    "RevisionDecision",
    "RevisionStrategy",
    "RevisionTrigger",
    "StepResult",
    "StepStatus",
    "TokenUsage",
]

#: The action of a step that hierarchical planning turns into a sub-plan.
DECOMPOSE = "decompose"


def _now() -> datetime:
    return datetime.now(UTC)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", arbitrary_types_allowed=True)


# ------------------------------------------------------------------ enums


#: Where a step is: the model's node status (a step is a node), under the
#: Planning pattern's name, kept for its users.
StepStatus = NodeStatus


class ExecutionMode(StrEnum):
    """How ready steps are scheduled (plain strings are accepted too)."""

    SEQUENTIAL = "sequential"
    PARALLEL = "parallel"
    ADAPTIVE = "adaptive"


class RevisionStrategy(StrEnum):
    """What a revision does (see docs/planning.md, "Revision")."""

    REPLAN_REMAINING = "replan_remaining"
    INSERT_RECOVERY = "insert_recovery"
    SKIP_AND_CONTINUE = "skip_and_continue"
    ABORT = "abort"
    ASK_USER = "ask_user"


class RevisionTrigger(StrEnum):
    """Why a revision was considered."""

    STEP_FAILED = "step_failed"
    OUTPUT_MISMATCH = "output_mismatch"
    FAILURE_RATE = "failure_rate"
    NEW_INFORMATION = "new_information"
    USER_REQUEST = "user_request"
    BUDGET_LOW = "budget_low"


# ------------------------------------------------------------------ tokens


class TokenUsage(_Frozen):
    """Tokens counted from model responses; ``a + b`` adds two counts.

    Example:
        >>> (TokenUsage(prompt_tokens=3, completion_tokens=2)
        ...  + TokenUsage(prompt_tokens=1, completion_tokens=1)).total_tokens
        7
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    @model_validator(mode="before")
    @classmethod
    def _total(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("total_tokens") is None:
            data = {
                **data,
                "total_tokens": int(data.get("prompt_tokens") or 0)
                + int(data.get("completion_tokens") or 0),
            }
        return data

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
        )


# ------------------------------------------------------------------ plans


class PlanProblem(NamedTuple):
    """One reason a plan cannot run: a stable ``code``, a message, the step."""

    code: str
    message: str
    step_id: str | None = None

    def __str__(self) -> str:
        return f"step {self.step_id!r}: {self.message}" if self.step_id else self.message


def _as_id(value: Any) -> Any:
    # Models often number steps 1, 2, 3; ids are strings everywhere else.
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


class PlanStep(_Frozen):
    """One step: call the tool ``action`` with ``parameters`` once every
    step in ``dependencies`` has completed.

    Parameters may reference earlier results as ``$step_id`` or ``${step_id}``
    (whole value or inside a string). ``fallback_action`` is a tool tried
    after the retries fail, with ``fallback_parameters`` (default: the step's
    parameters). ``subplan`` (hierarchical planning) holds the steps this step
    was decomposed into.

    Example:
        >>> PlanStep(id=1, action="search", parameters={"q": "x"}, dependencies="0").dependencies
        ('0',)
    """

    id: str = Field(min_length=1)
    description: str = ""
    action: str = Field(min_length=1)
    parameters: dict[str, Any] = Field(default_factory=dict)
    dependencies: tuple[str, ...] = ()
    expected_output: str | None = None
    fallback_action: str | None = None
    fallback_parameters: dict[str, Any] | None = None
    estimated_tokens: int = Field(default=0, ge=0)
    subplan: Plan | None = None

    @model_validator(mode="before")
    @classmethod
    def _lenient(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        # `null` for a field with a default means "not given".
        data = {k: v for k, v in data.items() if v is not None}
        if "id" in data:
            data["id"] = _as_id(data["id"])
        deps = data.get("dependencies")
        if isinstance(deps, str | int):
            deps = [deps]
        if isinstance(deps, list | tuple):
            data["dependencies"] = [_as_id(d) for d in deps]
        if data.get("fallback_action") == "":
            data.pop("fallback_action")
        sub = data.get("subplan")
        if isinstance(sub, dict) and not sub.get("goal"):
            # The schema lets a model nest just the steps; the step says what they are for.
            data["subplan"] = {**sub, "goal": data.get("description") or str(data.get("id"))}
        return data

    @property
    def is_composite(self) -> bool:
        """True when hierarchical planning turns this step into a sub-plan."""
        return self.subplan is not None or self.action == DECOMPOSE


class Plan(_Frozen):
    """A generated plan: a goal and steps forming a dependency DAG.

    ``estimated_total_tokens`` defaults to the sum of the steps' estimates.
    :meth:`to_graph_plan` compiles it into the shared graph model.

    Example:
        >>> plan = Plan(goal="g", steps=[{"id": "a", "action": "t"},
        ...                              {"id": "b", "action": "t", "dependencies": ["a"]}])
        >>> [s.id for s in plan.dependents("a")]
        ['b']
    """

    goal: str
    steps: tuple[PlanStep, ...] = ()
    success_criteria: tuple[str, ...] = ()
    created_at: datetime = Field(default_factory=_now)
    estimated_total_tokens: int = Field(default=0, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _lenient(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = {k: v for k, v in data.items() if v is not None}
        if isinstance(data.get("success_criteria"), str):
            data["success_criteria"] = [data["success_criteria"]]
        return data

    @model_validator(mode="after")
    def _estimate(self) -> Plan:
        summed = sum(step.estimated_tokens for step in self.steps)
        if summed > self.estimated_total_tokens:
            # A frozen model: set the derived default directly, once, at construction.
            self.__dict__["estimated_total_tokens"] = summed
        return self

    # -- lookups

    @property
    def step_ids(self) -> list[str]:
        """Step ids in plan order."""
        return [s.id for s in self.steps]

    def step(self, step_id: str) -> PlanStep:
        """The step with ``step_id`` (``KeyError`` naming the known ids if absent)."""
        for step in self.steps:
            if step.id == step_id:
                return step
        raise KeyError(f"no step {step_id!r} in the plan; steps: {', '.join(self.step_ids)}")

    def dependents(self, step_id: str) -> list[PlanStep]:
        """Steps that list ``step_id`` among their dependencies."""
        return [s for s in self.steps if step_id in s.dependencies]

    def roots(self) -> list[PlanStep]:
        """Steps without dependencies."""
        return [s for s in self.steps if not s.dependencies]

    def leaves(self) -> list[PlanStep]:
        """Steps no other step depends on."""
        needed = {d for s in self.steps for d in s.dependencies}
        return [s for s in self.steps if s.id not in needed]

    def with_steps(self, steps: list[PlanStep] | tuple[PlanStep, ...]) -> Plan:
        """A copy with other steps (the token estimate is recomputed)."""
        return Plan(
            goal=self.goal,
            steps=tuple(steps),
            success_criteria=self.success_criteria,
            created_at=self.created_at,
        )

    # -- the shared graph model

    def to_graph_plan(
        self, plan_id: str | None = None, *, name: str | None = None
    ) -> graph_model.Plan:
        """Compile into :class:`waygraph.model.Plan` (see ``waygraph.planning.to_graph_plan``)."""
        from waygraph.planning._graph import to_graph_plan

        return to_graph_plan(self, plan_id, name=name)

    @classmethod
    def from_graph_plan(cls, plan: graph_model.Plan) -> Plan:
        """Rebuild a generated plan from its compiled graph (the inverse of ``to_graph_plan``)."""
        from waygraph.planning._graph import from_graph_plan

        return from_graph_plan(plan)


# ------------------------------------------------------------------ results


class StepResult(_Frozen):
    """What happened to one step.

    ``attempts`` counts calls of the main action; ``used_fallback`` tells
    whether ``output`` came from the fallback action; ``reused`` that an
    identical earlier call's result was reused; ``error`` explains a failure,
    a skip or a block.
    """

    step_id: str
    status: StepStatus
    output: Any = None
    error: str | None = None
    attempts: int = 0
    used_fallback: bool = False
    reused: bool = False
    new_information: str | None = None
    token_usage: TokenUsage = TokenUsage()
    started_at: datetime | None = None
    finished_at: datetime | None = None
    duration: float = 0.0
    subplan_result: PlanExecutionResult | None = None


class PlanRevision(_Frozen):
    """One revision considered during a run, applied or not."""

    trigger: RevisionTrigger
    strategy: RevisionStrategy
    reason: str
    step_id: str | None = None
    old_plan: Plan
    new_plan: Plan | None = None
    applied: bool = False
    created_at: datetime = Field(default_factory=_now)


class RevisionDecision(_Frozen):
    """What ``on_revision_needed`` (or a person) decided.

    ``plan``, when given, replaces every step that has not completed (like
    ``replan_remaining`` without asking the model). The Planning pattern
    document's members are ready-made decisions: ``RevisionDecision.REPLAN``
    (replan the remaining steps), and one per strategy
    (``REPLAN_REMAINING``, ``INSERT_RECOVERY``, ``SKIP_AND_CONTINUE``,
    ``ABORT``, ``ASK_USER``).

    Example:
        >>> RevisionDecision(strategy="skip_and_continue").strategy
        <RevisionStrategy.SKIP_AND_CONTINUE: 'skip_and_continue'>
        >>> RevisionDecision.REPLAN.strategy
        <RevisionStrategy.REPLAN_REMAINING: 'replan_remaining'>
    """

    strategy: RevisionStrategy
    plan: Plan | None = None
    reason: str = ""

    REPLAN: ClassVar[RevisionDecision]
    REPLAN_REMAINING: ClassVar[RevisionDecision]
    INSERT_RECOVERY: ClassVar[RevisionDecision]
    SKIP_AND_CONTINUE: ClassVar[RevisionDecision]
    ABORT: ClassVar[RevisionDecision]
    ASK_USER: ClassVar[RevisionDecision]


for _strategy in RevisionStrategy:
    setattr(RevisionDecision, _strategy.name, RevisionDecision(strategy=_strategy))
RevisionDecision.REPLAN = RevisionDecision.REPLAN_REMAINING


class PlanExecutionState(_Frozen):
    """A snapshot of a run: the current plan and every step's status and result."""

    goal: str
    plan: Plan
    statuses: dict[str, StepStatus]
    results: dict[str, StepResult] = Field(default_factory=dict)
    running: tuple[str, ...] = ()
    revisions: tuple[PlanRevision, ...] = ()
    revision_count: int = 0
    token_usage: TokenUsage = TokenUsage()
    depth: int = 0
    started_at: datetime = Field(default_factory=_now)
    finished_at: datetime | None = None
    stop_reason: str | None = None

    # The Planning pattern document's names for the same data.

    @property
    def step_statuses(self) -> dict[str, StepStatus]:
        """Every step's status (the document's name for :attr:`statuses`)."""
        return self.statuses

    @property
    def step_results(self) -> dict[str, StepResult]:
        """Every finished step's result (the document's name for :attr:`results`)."""
        return self.results

    @property
    def current_step(self) -> str | None:
        """The step running now (the first of :attr:`running` in parallel runs), or None."""
        return self.running[0] if self.running else None

    @property
    def revision_history(self) -> list[PlanRevision]:
        """The revisions considered so far (the document's name for :attr:`revisions`)."""
        return list(self.revisions)

    @property
    def completed_at(self) -> datetime | None:
        """When the run ended (the document's name for :attr:`finished_at`)."""
        return self.finished_at

    def with_status(self, status: StepStatus) -> list[str]:
        """Ids of the steps with ``status``, in plan order."""
        return [sid for sid in self.plan.step_ids if self.statuses.get(sid) == status]

    @property
    def failure_rate(self) -> float:
        """Failed steps over finished (completed or failed) steps; 0 when none finished."""
        done = [s for s in self.statuses.values() if s in (StepStatus.COMPLETED, StepStatus.FAILED)]
        failed = sum(1 for s in done if s == StepStatus.FAILED)
        return failed / len(done) if done else 0.0


class PlanExecutionResult(_Frozen):
    """The outcome of ``execute`` / ``execute_plan``.

    ``success``: every step of ``final_plan`` completed (after retries,
    fallbacks and revisions) or was skipped by a chosen strategy.
    ``final_output``: the output of the single final step, or a dict of the
    final steps' outputs by id; on failure, text naming what went wrong.
    ``problems`` lists validation problems when the plan never ran.
    ``dry_run_report`` is set only by a dry run (``PlanningPattern(dry_run=True)``):
    no step ran, ``success`` says whether the plan is valid, and the
    :class:`~waygraph.planning.DryRunReport` shows what would have run.
    """

    success: bool
    plan: Plan | None = None
    final_plan: Plan | None = None
    step_results: dict[str, StepResult] = Field(default_factory=dict)
    final_output: Any = None
    revision_count: int = 0
    execution_state: PlanExecutionState | None = None
    token_usage: TokenUsage = TokenUsage()
    execution_time: float = 0.0
    problems: tuple[PlanProblem, ...] = ()
    dry_run_report: DryRunReport | None = None
    #: The stored run's id, for ``agent.resume(run_id)`` (None when nothing ran).
    run_id: str | None = None

    @field_validator("problems", mode="before")
    @classmethod
    def _problems(cls, value: Any) -> Any:
        return tuple(PlanProblem(*p) if isinstance(p, list | tuple) else p for p in value)


# ------------------------------------------------------------------ dry run
# What a dry run reports (waygraph.planning._dryrun works it out); a run's result
# carries one, so it is defined with the models it sits among.


def count(n: int, word: str) -> str:
    """``n`` and ``word``, plural unless ``n`` is 1: ``count(3, "step")`` is ``'3 steps'``."""
    return f"{n} {word}{'s' * (n != 1)}"


class DryRunLayer(_Frozen):
    """One dependency layer of a dry run.

    Layer 0 holds the steps without dependencies; layer *k* the steps whose
    longest chain of dependencies is *k* steps long. ``steps`` are in the
    order the scheduler picks ready steps (plan order in ``sequential``
    mode, longest chain behind a step first in the parallel modes);
    ``batches`` split them into groups that may run at the same time: at
    most the mode's concurrency each, and in ``adaptive`` mode a step whose
    tool has side effects alone.

    Example:
        >>> DryRunLayer(index=0, steps=("a", "b"), batches=(("a", "b"),)).batches
        (('a', 'b'),)
    """

    index: int = Field(ge=0)
    steps: tuple[str, ...]
    batches: tuple[tuple[str, ...], ...]
    estimated_tokens: int = Field(default=0, ge=0)


class DryRunReport(_Frozen):
    """What a plan would do if it ran; nothing ran to find out.

    ``valid`` is True when validation found no problem (``problems``), which
    is exactly when a run would start. ``layers`` are the dependency layers
    in order (see :class:`DryRunLayer`); ``unschedulable`` the steps that
    could never start (on a dependency cycle, waiting on an unknown step, or
    behind such a step). ``critical_path`` is the longest dependency chain in
    steps (ties: most estimated tokens, then plan order), with its
    ``critical_path_tokens``. ``concurrency`` is how many steps may run at
    once (1 in ``sequential`` mode, else ``max_parallel``) and
    ``peak_parallel`` the largest batch the plan reaches.

    Tokens: ``estimated_tokens`` is the plan's estimate (steps without one,
    ``unestimated_steps``, count 0); ``token_budget`` the pattern's budget,
    ``tokens_spent`` what this call already used (planning, in a dry-run
    ``execute``), ``budget_left`` what remains, and ``over_budget`` whether
    the estimate exceeds it (also an ``over_budget`` problem). ``notes``
    are caveats in words (sub-plans that are only planned when reached, ...).

    Example:
        >>> report = DryRunReport(goal="g", valid=False, problems=[
        ...     ("unknown_tool", "unknown tool 'serch'", "s1")])
        >>> report.problems[0].code, report.summary()
        ('unknown_tool', "invalid: 1 problem (unknown_tool at 's1'); nothing would run")
    """

    goal: str
    plan: Plan | None = None
    valid: bool
    problems: tuple[PlanProblem, ...] = ()
    execution_mode: ExecutionMode = ExecutionMode.SEQUENTIAL
    max_parallel: int = Field(default=3, ge=1)
    concurrency: int = Field(default=1, ge=1)
    peak_parallel: int = Field(default=0, ge=0)
    layers: tuple[DryRunLayer, ...] = ()
    unschedulable: tuple[str, ...] = ()
    critical_path: tuple[str, ...] = ()
    critical_path_tokens: int = Field(default=0, ge=0)
    estimated_tokens: int = Field(default=0, ge=0)
    unestimated_steps: tuple[str, ...] = ()
    token_budget: int | None = None
    tokens_spent: int = Field(default=0, ge=0)
    budget_left: int | None = None
    over_budget: bool = False
    notes: tuple[str, ...] = ()

    @field_validator("problems", mode="before")
    @classmethod
    def _problems(cls, value: Any) -> Any:
        # JSON gives a problem back as a list: [code, message, step_id].
        return tuple(PlanProblem(*p) if isinstance(p, list | tuple) else p for p in value)

    @property
    def step_count(self) -> int:
        """Steps in the plan (0 without one)."""
        return 0 if self.plan is None else len(self.plan.steps)

    def summary(self) -> str:
        """One line: valid or not, and the shape of the run.

        Example:
            >>> DryRunReport(goal="g", valid=True).summary()
            'valid: 0 steps in 0 layers, 1 at a time (sequential); estimated 0 tokens'
        """
        if not self.valid:
            shown = ", ".join(
                f"{p.code} at {p.step_id!r}" if p.step_id else p.code for p in self.problems[:3]
            )
            more = f", +{len(self.problems) - 3} more" if len(self.problems) > 3 else ""
            problems = count(len(self.problems), "problem")
            return f"invalid: {problems} ({shown}{more}); nothing would run"
        at_once = (
            "1 at a time"
            if self.concurrency == 1
            else f"up to {self.concurrency} at once, {self.peak_parallel} at most in this plan"
        )
        parts = [
            f"valid: {count(self.step_count, 'step')} in {count(len(self.layers), 'layer')}, "
            f"{at_once} ({self.execution_mode.value})"
        ]
        if self.critical_path:
            parts.append(
                f"critical path {' -> '.join(self.critical_path)} "
                f"({count(len(self.critical_path), 'step')})"
            )
        tokens = f"estimated {self.estimated_tokens} tokens"
        if self.budget_left is not None:
            tokens += f" of {self.budget_left} left in the budget"
        parts.append(tokens)
        return "; ".join(parts)


PlanStep.model_rebuild()
StepResult.model_rebuild()
PlanExecutionResult.model_rebuild()
