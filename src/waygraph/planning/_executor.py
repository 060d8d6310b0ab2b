"""The scheduler: runs a validated plan as a DAG, recovers, revises.

A step is ready when every dependency completed (or was skipped by the
``skip_and_continue`` strategy). The loop waits on the running steps' tasks
and starts every ready step the moment the last dependency finishes (no
polling), up to the mode's limit: 1 (``sequential``), ``max_parallel``
(``parallel``), or ``max_parallel`` with tools that have side effects running
alone (``adaptive``). Among ready steps, plan order decides.

A step's action is tried ``1 + retry_failed_steps`` times, each call bounded
by ``step_timeout``; then its ``fallback_action`` once. Identical calls (same
tool, same resolved parameters) share one result within a call of the agent,
unless the tool has side effects.

Revisions happen only when no step is running: a trigger stops new starts,
the running steps finish, then the revision is applied to a quiet plan.

:class:`PlanRun` is a façade: the run is one frozen
:class:`~waygraph.planning._run_state.RunState`, changed only by that
module's pure transitions (over the engine's DAG transitions) and taken with
:meth:`PlanRun.commit`; its journal commits it to the store. Its fields read
through properties, and assigning one raises
:class:`~waygraph.errors.ReadOnlyFieldError` saying so. Running one step is
:class:`~waygraph.planning._step_calls.StepRunner`'s, revising the plan
:class:`~waygraph.planning._revising.Reviser`'s; both work through the run.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn

from waygraph import tracing
from waygraph.engine.dag import can_start
from waygraph.errors import ReadOnlyFieldError
from waygraph.planning import _run_state as transitions
from waygraph.planning._models import (
    ExecutionMode,
    Plan,
    PlanExecutionResult,
    PlanExecutionState,
    PlanStep,
    RevisionTrigger,
    StepResult,
    StepStatus,
    _now,
)
from waygraph.planning._plan_index import PlanIndex
from waygraph.planning._revising import Reviser, RevisionRequest
from waygraph.planning._run_result import result_of, snapshot_of
from waygraph.planning._run_state import RunState
from waygraph.planning._runtime import RunSetup
from waygraph.planning._step_calls import StepOutcome, StepRunner, describe

if TYPE_CHECKING:
    from waygraph.planning._journal import Journal

__all__ = ["PlanRun"]

log = logging.getLogger("waygraph.planning")

_READ_ONLY = (
    "PlanRun.{name} is read-only: a run changes only through a transition of its frozen "
    "state (waygraph.planning._run_state, over waygraph.engine.dag) taken with "
    "PlanRun.commit(new_state) and saved by its journal; to change a running plan, call "
    "PlanningAgent.request_revision(reason)"
)


class PlanRun:
    """One execution of a validated plan (a sub-plan gets its own, nested run).

    A façade over the frozen :class:`RunState` (:attr:`state`): every field
    reads through a property; assigning one raises
    :class:`~waygraph.errors.ReadOnlyFieldError`.
    """

    def __init__(self, state: RunState, setup: RunSetup, *, journal: Journal | None = None) -> None:
        self._setup = setup
        #: Commits each step's result to the store (top-level runs with a store).
        self._journal = journal
        self._state = state
        self._index = PlanIndex.of(state.plan, setup.outer_ids, setup.pattern.execution_mode)
        self._tasks: dict[str, asyncio.Task[StepOutcome]] = {}
        self._requests: list[RevisionRequest] = []
        self._wake = asyncio.Event()
        self._done: collections.deque[str] = collections.deque()
        self._candidates: set[str] | None = None
        self._steps = StepRunner(self)
        self._reviser = Reviser(self)

    @classmethod
    def of(
        cls,
        plan: Plan,
        goal: str,
        setup: RunSetup,
        *,
        outer_results: Mapping[str, Any] | None = None,
        journal: Journal | None = None,
    ) -> PlanRun:
        """A run of ``plan`` that has not started (a sub-plan sees ``outer_results``)."""
        state = RunState.of(plan, goal, started_at=_now(), outer_results=outer_results or {})
        return cls(state, setup, journal=journal)

    def __setattr__(self, name: str, value: Any) -> None:
        if not name.startswith("_"):
            raise ReadOnlyFieldError(_READ_ONLY.format(name=name))
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> NoReturn:
        raise ReadOnlyFieldError(_READ_ONLY.format(name=name))

    # ------------------------------------------------------------ the state, read-only

    @property
    def state(self) -> RunState:
        """The run now, as one frozen value."""
        return self._state

    @property
    def setup(self) -> RunSetup:
        """What the run works with (planner, models, hooks, meter, depth)."""
        return self._setup

    @property
    def index(self) -> PlanIndex:
        """The current plan, indexed for scheduling."""
        return self._index

    @property
    def journal(self) -> Journal | None:
        """Where the run is committed (None: kept nowhere, or a sub-plan)."""
        return self._journal

    @property
    def plan(self) -> Plan:
        """The plan being run (replaced by revisions and decomposed sub-plans)."""
        return self._state.plan

    @property
    def goal(self) -> str:
        return self._state.goal

    @property
    def status(self) -> Mapping[str, StepStatus]:
        """Each step's status now (changes go through ``engine.dag``)."""
        return self._state.status

    @property
    def results(self) -> Mapping[str, StepResult]:
        """Each step's result so far."""
        return self._state.results

    @property
    def stop_reason(self) -> str | None:
        """Why the run stopped starting steps, or None."""
        return self._state.stop_reason

    @property
    def running(self) -> tuple[str, ...]:
        """The steps running now, in the order they started."""
        return tuple(self._tasks)

    # ------------------------------------------------------------ changing it

    def commit(self, state: RunState) -> None:
        """Take ``state`` (a transition of :attr:`state`) as the run's; a new plan is indexed."""
        if state.plan is not self._index.plan:
            pattern = self._setup.pattern
            self._index = PlanIndex.of(state.plan, self._setup.outer_ids, pattern.execution_mode)
            self._candidates = None  # look at every step at the next pass
        self._state = state

    def stop(self, reason: str) -> None:
        """Start no more steps, for ``reason`` (the first reason given stays)."""
        if self._state.stop_reason is None:
            self.commit(transitions.stop(self._state, reason))
            self._requests.clear()

    def settle(self) -> None:
        """Skip steps behind a failed or skipped dependency; un-skip the rest (engine rules)."""
        self._candidates = None
        state, _ = transitions.settle(self._state, self._index.dag)
        self.commit(state)

    def checkpoint(self) -> None:
        """The run changed beyond one step (a revision): its journal saves the whole state."""
        if self._journal is not None:
            self._journal.checkpoint()

    def request_revision(self, request: RevisionRequest) -> None:
        """Queue a revision; it is applied once the running steps finish."""
        self._requests.append(request)
        self._wake.set()

    def handle_lost_failures(self, failed: Iterable[str]) -> None:
        """Decide about failures a crashed run committed but had not acted on (on resume)."""
        for step_id in failed:
            mismatch = (self.results[step_id].error or "").startswith("the output does not")
            trigger = RevisionTrigger.OUTPUT_MISMATCH if mismatch else RevisionTrigger.STEP_FAILED
            self._on_failure(step_id, trigger)

    # ------------------------------------------------------------ public

    def snapshot(self) -> PlanExecutionState:
        """The run's state now (an immutable copy)."""
        return snapshot_of(
            self._state,
            running=self._tasks,
            token_usage=self._setup.meter.total,
            depth=self._setup.depth,
        )

    async def run(self) -> PlanExecutionResult:
        """Run until every step finished, was skipped or blocked, or the run stopped."""
        run_id = self._journal.run_id if self._journal is not None else None
        with tracing.plan_span(self.goal, depth=self._setup.depth, run_id=run_id) as span:
            return span.done(await self._run())

    async def _run(self) -> PlanExecutionResult:
        clock = time.perf_counter()
        try:
            while True:
                if not self._requests and self.stop_reason is None:
                    self._start_ready()
                if not self._tasks:
                    if self._requests and self.stop_reason is None:
                        await self._reviser.revise(self._requests.pop(0))
                        continue
                    break
                if not self._done:
                    # Woken by a step's done callback or a revision request.
                    self._wake.clear()
                    await self._wake.wait()
                while self._done:
                    await self._finish_done()
        finally:
            for task in self._tasks.values():
                task.cancel()
        self.commit(transitions.block(self._state, now=_now()))
        usage = self._setup.meter.total
        elapsed = time.perf_counter() - clock
        return result_of(self._state, self.snapshot(), token_usage=usage, elapsed=elapsed)

    async def _finish_done(self) -> None:
        """Finish the steps whose tasks ended: failures first, then by priority.

        A failure may stop the run, and then nothing new may start, whatever
        else ended in the same turn of the event loop.
        """
        last = (0, len(self._index.order))
        priority = self._index.priority
        ended = [(sid, self._tasks.pop(sid)) for sid in self._done if sid in self._tasks]
        self._done.clear()
        outcomes = [(sid, self._outcome_of(task)) for sid, task in ended]
        outcomes.sort(
            key=lambda item: (item[1].ok and item[1].mismatch is None, priority.get(item[0], last))
        )
        for step_id, outcome in outcomes:
            await self._finish(step_id, outcome)

    async def notify(self, name: str, **kwargs: Any) -> None:
        """Call an observing hook with the run's ``state`` and ``depth``.

        The snapshot costs more than the rest of a step's bookkeeping, so it
        is built only when the hook is set.
        """
        hooks = self._setup.hooks
        if getattr(hooks, name) is not None:
            await hooks.notify(name, state=self.snapshot(), depth=self._setup.depth, **kwargs)

    def _step_done(self, step_id: str) -> None:
        # A done callback, not asyncio.wait: re-arming a wait on every running
        # task at each wake costs more than the steps' own bookkeeping.
        self._done.append(step_id)
        self._wake.set()

    # ------------------------------------------------------------ scheduling

    def _exclusive(self, step: PlanStep) -> bool:
        tool = self._setup.tools.get(step.action)
        return tool is not None and tool.side_effects

    def _start_ready(self) -> None:
        """Start the ready steps, up to the mode's limit, in priority order (``PlanIndex``).

        Only candidates are looked at: the dependents of steps that finished
        since the last pass and the steps a limit held back, or every step
        after a revision, a skip or a new plan. A step becomes ready only in
        one of those ways, so no ready step is missed.
        """
        pattern = self._setup.pattern
        mode = pattern.execution_mode
        limit = 1 if mode == ExecutionMode.SEQUENTIAL else pattern.max_parallel
        index = self._index
        pending = (
            index.order.keys()
            if self._candidates is None
            else self._candidates & index.order.keys()
        )
        ids = sorted(pending, key=index.priority.__getitem__)
        self._candidates = set()
        running = self._tasks
        for position, step_id in enumerate(ids):
            step = index.by_id[step_id]
            if len(running) >= limit:
                self._candidates.update(ids[position:])
                return
            state = self._state
            if not can_start(index.dag, step_id, state.status, state.waived):
                continue
            if (
                mode == ExecutionMode.ADAPTIVE
                and running
                and (self._exclusive(step) or any(self._exclusive(index.by_id[r]) for r in running))
            ):
                # A side-effect step runs alone; later steps wait so it is not starved.
                self._candidates.update(ids[position:])
                return
            self.commit(transitions.start(state, step.id))
            work = tracing.step_span(
                self._steps.execute(step),
                step.id,
                step.action,
                _failure,
                self._state.applied_revisions,
            )
            task = asyncio.create_task(work, name=f"waygraph-step-{step.id}")

            def done(_task: asyncio.Task[StepOutcome], step_id: str = step.id) -> None:
                self._step_done(step_id)

            task.add_done_callback(done)
            running[step.id] = task
            if self._journal is not None:
                self._journal.started(step.id)

    @staticmethod
    def _outcome_of(task: asyncio.Task[StepOutcome]) -> StepOutcome:
        try:
            return task.result()
        except Exception as exc:  # a scheduler bug must not lose the other steps' results
            log.exception("step task failed unexpectedly")
            return StepOutcome(error=describe(exc, None))

    # ------------------------------------------------------------ one step

    async def _finish(self, step_id: str, outcome: StepOutcome) -> None:
        step = self._index.by_id[step_id]
        if self._candidates is not None:
            self._candidates.update(self._index.dag.dependents.get(step_id, ()))
        plan = None
        if outcome.subplan is not None:
            step = step.model_copy(update={"subplan": outcome.subplan})
            plan = self.plan.with_steps([step if s.id == step_id else s for s in self.plan.steps])
        self._setup.meter.add(outcome.usage)
        status = StepStatus.COMPLETED if outcome.ok else StepStatus.FAILED
        error = outcome.error
        mismatched = outcome.ok and outcome.mismatch is not None
        if mismatched:
            status = StepStatus.FAILED
            error = f"the output does not match expected_output: {outcome.mismatch}"
        usage, sub = outcome.usage, outcome.subplan_result
        if sub is not None:
            usage = usage + sub.token_usage
        result = StepResult(
            step_id=step_id,
            status=status,
            output=outcome.output,
            error=error,
            attempts=outcome.attempts,
            used_fallback=outcome.used_fallback,
            reused=outcome.reused,
            new_information=outcome.new_information,
            token_usage=usage,
            started_at=outcome.started_at,
            finished_at=_now(),
            duration=outcome.duration,
            subplan_result=sub,
        )
        revisions = sub.revision_count if sub is not None else 0
        self.commit(
            transitions.finish(
                self._state, result, mismatched=mismatched, plan=plan, sub_revisions=revisions
            )
        )
        if self._journal is not None:
            self._journal.finished(result)
        await self.notify("on_step_complete", step=step, result=result)
        if status == StepStatus.FAILED:
            trigger = (
                RevisionTrigger.OUTPUT_MISMATCH
                if outcome.mismatch is not None
                else RevisionTrigger.STEP_FAILED
            )
            self._on_failure(step_id, trigger)
        elif outcome.new_information and self._reviser.can_revise():
            self.request_revision(
                RevisionRequest(
                    RevisionTrigger.NEW_INFORMATION,
                    f"step {step_id} reported: {outcome.new_information}",
                    step_id,
                )
            )
        self._check_budget()

    def _on_failure(self, step_id: str, trigger: RevisionTrigger) -> None:
        error = self.results[step_id].error
        failed, done = self._state.dag.failure_counts()
        rate = failed / done if done else 0.0
        pattern = self._setup.pattern
        cof = pattern.continue_on_failure
        revise = True
        if trigger == RevisionTrigger.STEP_FAILED and cof:
            # Failures are tolerated until too many steps fail.
            revise = rate > pattern.revision_threshold
            trigger = RevisionTrigger.FAILURE_RATE
        if revise and self._reviser.can_revise():
            reason = f"step {step_id} failed: {error}"
            if trigger == RevisionTrigger.FAILURE_RATE:
                reason += (
                    f" ({failed} of {done} finished steps failed, over the "
                    f"revision_threshold of {pattern.revision_threshold:g})"
                )
            self.request_revision(RevisionRequest(trigger, reason, step_id))
        elif cof:
            self.settle()
        else:
            self.stop(f"step {step_id!r} failed: {error}")

    def _check_budget(self) -> None:
        budget = self._setup.pattern.token_budget
        if budget is None:
            return
        used = self._setup.meter.root.total.total_tokens
        if used >= budget:
            self.stop(f"token budget exhausted: {used} of {budget} tokens used")
            return
        status = self.status
        ahead = sum(
            s.estimated_tokens for s in self.plan.steps if status[s.id] == StepStatus.PENDING
        )
        if used + ahead > budget and not self._state.budget_flagged and self._reviser.can_revise():
            self.commit(transitions.flag_budget(self._state))
            self.request_revision(
                RevisionRequest(
                    RevisionTrigger.BUDGET_LOW,
                    f"{used} of {budget} budget tokens are used and the remaining steps are "
                    f"estimated at {ahead} more",
                )
            )


def _failure(outcome: StepOutcome) -> str | None:
    """Why a step's execution failed (its span's error status), or None."""
    if not outcome.ok:
        return outcome.error or "the step failed"
    return None if outcome.mismatch is None else f"output mismatch: {outcome.mismatch}"
