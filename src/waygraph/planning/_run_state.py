"""A generated plan's run as one frozen value, and the pure transitions that change it.

Where each step stands is the engine's :class:`~waygraph.engine.dag.DagRun`,
changed only by :mod:`waygraph.engine.dag`'s transitions (which decide
readiness and skips); a :class:`RunState` holds it with what the run has
produced so far: the plan (revisions replace it), the steps' results and
outputs, the revisions and their counts. Every function here takes a
``RunState`` and returns a new one, leaving the one it was given as it was;
:class:`~waygraph.planning._executor.PlanRun` keeps the latest and commits
it through its journal. Nothing here does I/O or reads a clock (times are
passed in).

Example:
    >>> from waygraph.planning._models import Plan, StepResult
    >>> plan = Plan(goal="g", steps=[{"id": "a", "action": "t"}])
    >>> before = RunState.of(plan, "g", started_at=None)
    >>> after = finish(start(before, "a"), StepResult(step_id="a", status="completed", output=1))
    >>> before.status["a"].value, after.status["a"].value, after.outputs["a"]
    ('pending', 'completed', 1)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, TypeVar, cast

from waygraph.engine import dag
from waygraph.engine.dag import DagIndex, DagRun
from waygraph.planning._models import (
    Plan,
    PlanRevision,
    StepResult,
    StepStatus,
    TokenUsage,
)

__all__ = [
    "RunState",
    "accept",
    "block",
    "count_attempt",
    "finish",
    "flag_budget",
    "record_revision",
    "revise",
    "settle",
    "start",
    "stop",
    "waive",
]

_V = TypeVar("_V")
_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _empty() -> Mapping[str, Any]:
    return _EMPTY


def _frozen(values: Mapping[str, _V]) -> Mapping[str, _V]:
    return values if type(values) is MappingProxyType else MappingProxyType(dict(values))


def _copy(values: Mapping[str, _V]) -> dict[str, _V]:
    # The view's copy() is the dict's own C copy (see DagRun.changed): a step
    # changes two or three of these, so it must not go key by key.
    return cast("MappingProxyType[str, _V]", values).copy()


def _put(values: Mapping[str, _V], key: str, value: _V) -> Mapping[str, _V]:
    copy = _copy(values)
    copy[key] = value
    return MappingProxyType(copy)


def _without(values: Mapping[str, _V], keys: Iterable[str]) -> Mapping[str, _V]:
    gone = [k for k in keys if k in values]
    if not gone:
        return values
    copy = _copy(values)
    for key in gone:
        del copy[key]
    return MappingProxyType(copy)


@dataclass(frozen=True, slots=True)
class RunState:
    """Everything one run of a generated plan is at one moment (an immutable value).

    ``dag``: where each step stands (the engine's); ``results``: each step's
    :class:`StepResult` so far; ``outputs``: completed steps' outputs (and an
    outer plan's, for a sub-plan); ``mismatched``: outputs that failed their
    ``expected_output`` check, kept in case a revision accepts them;
    ``replaced``: results of steps a revision replaced; ``revisions`` and
    the counts a resume needs. Mappings are read-only.

    Example:
        >>> from waygraph.planning._models import Plan
        >>> state = RunState.of(Plan(goal="g", steps=[{"id": "a", "action": "t"}]), "g",
        ...                     started_at=None)
        >>> state.results["a"] = None
        Traceback (most recent call last):
        ...
        TypeError: 'mappingproxy' object does not support item assignment
    """

    goal: str
    initial_plan: Plan
    plan: Plan
    dag: DagRun
    started_at: Any
    results: Mapping[str, StepResult] = field(default_factory=_empty)
    outputs: Mapping[str, Any] = field(default_factory=_empty)
    mismatched: Mapping[str, Any] = field(default_factory=_empty)
    replaced: Mapping[str, StepResult] = field(default_factory=_empty)
    revisions: tuple[PlanRevision, ...] = ()
    revision_attempts: int = 0
    applied_revisions: int = 0
    sub_revisions: int = 0
    budget_flagged: bool = False
    finished_at: Any = None

    def __post_init__(self) -> None:
        for name in ("results", "outputs", "mismatched", "replaced"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))

    @classmethod
    def of(
        cls, plan: Plan, goal: str, *, started_at: Any, outer_results: Mapping[str, Any] = _EMPTY
    ) -> RunState:
        """A run of ``plan`` that has not started a step (a sub-plan sees ``outer_results``)."""
        return cls(
            goal=goal,
            initial_plan=plan,
            plan=plan,
            dag=DagRun.of(plan.step_ids),
            started_at=started_at,
            outputs=outer_results,
        )

    @property
    def status(self) -> Mapping[str, StepStatus]:
        """Each step's status (the engine's ``DagRun.statuses``)."""
        return self.dag.statuses

    @property
    def waived(self) -> frozenset[str]:
        """Steps the ``skip_and_continue`` strategy skipped on purpose."""
        return self.dag.waived

    @property
    def stop_reason(self) -> str | None:
        """Why the run stopped starting steps, or None."""
        return self.dag.stop_reason

    @property
    def revision_count(self) -> int:
        """Revisions applied to this run and to its sub-plans."""
        return self.applied_revisions + self.sub_revisions


def start(state: RunState, step_id: str) -> RunState:
    """``step_id`` (pending) is running."""
    return replace(state, dag=dag.start(state.dag, (step_id,)))


def finish(
    state: RunState,
    result: StepResult,
    *,
    mismatched: bool = False,
    plan: Plan | None = None,
    sub_revisions: int = 0,
) -> RunState:
    """A running step ended with ``result`` (completed or failed).

    ``mismatched``: it failed only its ``expected_output`` check (its output
    is kept aside); ``plan``: the plan with the sub-plan the step decomposed
    into; ``sub_revisions``: revisions its sub-plan applied.
    """
    sid = result.step_id
    ok = result.status == StepStatus.COMPLETED
    return replace(
        state,
        dag=dag.finish(state.dag, sid, ok=ok),
        results=_put(state.results, sid, result),
        outputs=_put(state.outputs, sid, result.output) if ok else state.outputs,
        mismatched=_put(state.mismatched, sid, result.output) if mismatched else state.mismatched,
        sub_revisions=state.sub_revisions + sub_revisions,
        plan=state.plan if plan is None else plan,
    )


def settle(state: RunState, index: DagIndex) -> tuple[RunState, dict[str, str]]:
    """Skip steps behind a failed or skipped dependency, un-skip the rest (``engine.dag.settle``).

    Returns the new state and ``{skipped step: its cause}``.
    """
    run, skipped, unskipped = dag.settle(index, state.dag)
    if not skipped and not unskipped:
        return replace(state, dag=run), skipped
    results = _copy(state.results)
    for step_id, cause in skipped.items():  # causes come first
        verb = "failed" if run.statuses[cause] == StepStatus.FAILED else "was skipped"
        results[step_id] = StepResult(
            step_id=step_id,
            status=StepStatus.SKIPPED,
            error=f"not run: its dependency {cause!r} {verb}",
        )
    for step_id in unskipped:
        results.pop(step_id, None)
    return replace(state, dag=run, results=MappingProxyType(results)), skipped


def stop(state: RunState, reason: str) -> RunState:
    """No step starts any more, for ``reason`` (a stopped run keeps its first reason)."""
    return replace(state, dag=dag.stop(state.dag, reason))


def block(state: RunState, *, now: Any) -> RunState:
    """The run ended at ``now``; a stopped run's pending and running steps are blocked."""
    run, blocked = dag.block(state.dag)
    results = _copy(state.results) if blocked else state.results
    for step_id in blocked:
        cast("dict[str, StepResult]", results)[step_id] = StepResult(
            step_id=step_id, status=StepStatus.BLOCKED, error=f"not run: {state.stop_reason}"
        )
    return replace(state, dag=run, results=results, finished_at=now)


def waive(state: RunState, step_id: str) -> RunState:
    """``step_id`` (failed) is skipped on purpose: its dependents may run without it."""
    previous = state.results[step_id]
    skipped = previous.model_copy(
        update={
            "status": StepStatus.SKIPPED,
            "error": f"skipped by skip_and_continue after: {previous.error}",
        }
    )
    return replace(
        state, dag=dag.waive(state.dag, step_id), results=_put(state.results, step_id, skipped)
    )


def accept(state: RunState, step_id: str) -> RunState:
    """``step_id`` (failed only its output's check) completed after all, with that output."""
    output = state.mismatched[step_id]
    done = state.results[step_id].model_copy(
        update={"status": StepStatus.COMPLETED, "output": output}
    )
    return replace(
        state,
        dag=dag.accept(state.dag, step_id),
        mismatched=_without(state.mismatched, (step_id,)),
        outputs=_put(state.outputs, step_id, output),
        results=_put(state.results, step_id, done),
    )


def revise(state: RunState, new_plan: Plan, carried: set[str]) -> RunState:
    """Switch to ``new_plan``; steps not in ``carried`` are new (or replaced) and pending.

    A replaced step's result is kept in ``replaced`` (status ``revised``).
    Call :func:`settle` with the new plan's index next.
    """
    gone = [sid for sid in state.plan.step_ids if sid not in carried]
    replaced = _copy(state.replaced)
    for sid in gone:
        previous = state.results.get(sid)
        replaced[sid] = StepResult(
            step_id=sid,
            status=StepStatus.REVISED,
            output=previous.output if previous else None,
            error=previous.error if previous else None,
            attempts=previous.attempts if previous else 0,
            token_usage=previous.token_usage if previous else TokenUsage(),
        )
    return replace(
        state,
        plan=new_plan,
        dag=dag.revise(state.dag, new_plan.step_ids, carried),
        results=_without(state.results, gone),
        mismatched=_without(state.mismatched, gone),
        replaced=MappingProxyType(replaced),
    )


def count_attempt(state: RunState) -> RunState:
    """A revision is being tried (``max_revisions`` counts attempts)."""
    return replace(state, revision_attempts=state.revision_attempts + 1)


def record_revision(state: RunState, revision: PlanRevision) -> RunState:
    """``revision`` was tried; an applied one counts, and the budget may be flagged again."""
    changed = replace(state, revisions=(*state.revisions, revision))
    if revision.applied:
        changed = replace(
            changed, applied_revisions=state.applied_revisions + 1, budget_flagged=False
        )
    return changed


def flag_budget(state: RunState) -> RunState:
    """The remaining steps were estimated over the token budget (asked once per plan)."""
    return replace(state, budget_flagged=True)
