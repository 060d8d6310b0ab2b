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
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from waygraph import tracing
from waygraph.engine import dag
from waygraph.engine.dag import DagIndex, DagRun, can_start
from waygraph.planning._llm import LLM
from waygraph.planning._models import (
    ExecutionMode,
    Plan,
    PlanExecutionResult,
    PlanExecutionState,
    PlanRevision,
    PlanStep,
    RevisionTrigger,
    StepResult,
    StepStatus,
    _now,
)
from waygraph.planning._planner import PlanGenerator
from waygraph.planning._revising import Revising, RevisionRequest
from waygraph.planning._runtime import Meter, RunCallbacks
from waygraph.planning._step_calls import StepCalls, StepOutcome, describe

if TYPE_CHECKING:
    from waygraph.planning._journal import Journal

__all__ = ["PlanRun"]

log = logging.getLogger("waygraph.planning")


class PlanRun(StepCalls, Revising):
    """One execution of a validated plan (a sub-plan gets its own, nested run)."""

    def __init__(
        self,
        plan: Plan,
        goal: str,
        *,
        planner: PlanGenerator,
        llm: LLM,
        hooks: RunCallbacks,
        meter: Meter,
        calls: dict[str, asyncio.Future[Any]],
        depth: int = 0,
        outer_results: Mapping[str, Any] | None = None,
        outer_ids: frozenset[str] = frozenset(),
        journal: Journal | None = None,
    ) -> None:
        # The plan's indexes (set with it) need these two first.
        self.outer_ids = outer_ids
        self.pattern = planner.pattern
        self.initial_plan = plan
        self.plan = plan
        self.goal = goal
        self.planner = planner
        self.tools = planner.tools
        self.llm = llm
        self.hooks = hooks
        self.meter = meter
        self.calls = calls
        self.depth = depth
        #: Commits each step's result to the store (top-level runs with a store).
        self.journal = journal
        #: Where each step is (an immutable value, replaced at every change: engine.dag).
        self.state = DagRun.of(plan.step_ids)
        self.results: dict[str, StepResult] = {}
        self.outputs: dict[str, Any] = dict(outer_results or {})
        self.mismatched: dict[str, Any] = {}
        self.replaced: dict[str, StepResult] = {}
        self.running: dict[str, asyncio.Task[StepOutcome]] = {}
        self.revisions: list[PlanRevision] = []
        self.revision_attempts = 0
        self.applied_revisions = 0
        self.sub_revisions = 0
        self.requests: list[RevisionRequest] = []
        self.budget_flagged = False
        self.started_at = _now()
        self.finished_at: Any = None
        self._wake = asyncio.Event()
        self._done: collections.deque[str] = collections.deque()

    # ------------------------------------------------------------ the state, read-only

    @property
    def status(self) -> Mapping[str, StepStatus]:
        """Each step's status now (read-only: changes go through ``engine.dag``)."""
        return self.state.statuses

    @property
    def by_strategy(self) -> frozenset[str]:
        """Steps the ``skip_and_continue`` strategy skipped on purpose."""
        return self.state.waived

    @property
    def stop_reason(self) -> str | None:
        """Why the run stopped starting steps, or None."""
        return self.state.stop_reason

    # ------------------------------------------------------------ the plan and its indexes

    @property
    def plan(self) -> Plan:
        """The plan being run (replaced by revisions and decomposed sub-plans)."""
        return self._plan

    @plan.setter
    def plan(self, plan: Plan) -> None:
        # Indexes per plan keep each step's scheduling work independent of
        # the plan's size (bench/dag.py measures it).
        self._plan = plan
        self._by_id = {s.id: s for s in plan.steps}
        self._order = {s.id: i for i, s in enumerate(plan.steps)}
        # The engine's DAG rules decide readiness and skips; this class runs steps.
        self._dag = DagIndex.of_dependencies({s.id: s.dependencies for s in plan.steps})
        self._dependents = self._dag.dependents
        self._known = frozenset(self._by_id) | self.outer_ids
        self._priority = self._priorities(plan)
        self._rescan()

    def _priorities(self, plan: Plan) -> dict[str, tuple[int, int]]:
        """Sort keys for ready steps: plan order, or in parallel modes the longest chain first.

        A step with more steps waiting behind it in a chain starts first
        (plan order breaks ties), so the critical path is never queued
        behind side branches; sequential mode keeps plan order.
        """
        if self.pattern.execution_mode == ExecutionMode.SEQUENTIAL:
            return {sid: (0, i) for sid, i in self._order.items()}
        # Longest chain of dependents below each step, leaves first (Kahn's order).
        below = {sid: 0 for sid in self._by_id}
        waiting = {sid: len(self._dependents.get(sid, ())) for sid in self._by_id}
        ready = [sid for sid, n in waiting.items() if n == 0]
        while ready:
            sid = ready.pop()
            for dep in self._by_id[sid].dependencies:
                if dep in below:  # not an outer step's id
                    below[dep] = max(below[dep], below[sid] + 1)
                    waiting[dep] -= 1
                    if waiting[dep] == 0:
                        ready.append(dep)
        return {sid: (-below[sid], i) for sid, i in self._order.items()}

    def _rescan(self) -> None:
        """Look at every step at the next scheduling pass (after anything but a plain finish)."""
        self._candidates: set[str] | None = None

    def _consider(self, step_ids: Iterable[str]) -> None:
        """Look at these steps at the next scheduling pass."""
        if self._candidates is not None:
            self._candidates.update(step_ids)

    # ------------------------------------------------------------ public

    def request_revision(self, request: RevisionRequest) -> None:
        """Queue a revision; it is applied once the running steps finish."""
        self.requests.append(request)
        self._wake.set()

    def snapshot(self) -> PlanExecutionState:
        """The run's state now (an immutable copy)."""
        statuses = {sid: StepStatus.REVISED for sid in self.replaced}
        statuses.update(self.status)
        return PlanExecutionState(
            goal=self.goal,
            plan=self.plan,
            statuses=statuses,
            results={**self.replaced, **self.results},
            running=tuple(self.running),
            revisions=tuple(self.revisions),
            revision_count=self.applied_revisions + self.sub_revisions,
            token_usage=self.meter.total,
            depth=self.depth,
            started_at=self.started_at,
            finished_at=self.finished_at,
            stop_reason=self.stop_reason,
        )

    async def run(self) -> PlanExecutionResult:
        """Run until every step finished, was skipped or blocked, or the run stopped."""
        run_id = self.journal.run_id if self.journal is not None else None
        with tracing.plan_span(self.goal, depth=self.depth, run_id=run_id) as span:
            return span.done(await self._run())

    async def _run(self) -> PlanExecutionResult:
        clock = time.perf_counter()
        try:
            while True:
                if not self.requests and self.stop_reason is None:
                    self._start_ready()
                if not self.running:
                    if self.requests and self.stop_reason is None:
                        await self._revise(self.requests.pop(0))
                        continue
                    break
                if not self._done:
                    # Woken by a step's done callback or a revision request.
                    self._wake.clear()
                    await self._wake.wait()
                while self._done:
                    await self._finish_done()
        finally:
            for task in self.running.values():
                task.cancel()
        return self._result(time.perf_counter() - clock)

    async def _finish_done(self) -> None:
        """Finish the steps whose tasks ended: failures first, then by priority.

        A failure may stop the run, and then nothing new may start, whatever
        else ended in the same turn of the event loop.
        """
        last = (0, len(self._order))
        ended = [(sid, self.running.pop(sid)) for sid in self._done if sid in self.running]
        self._done.clear()
        outcomes = [(sid, self._outcome_of(task)) for sid, task in ended]
        outcomes.sort(
            key=lambda item: (
                item[1].ok and item[1].mismatch is None,
                self._priority.get(item[0], last),
            )
        )
        for step_id, outcome in outcomes:
            await self._finish(step_id, outcome)

    async def _notify(self, name: str, **kwargs: Any) -> None:
        """Call an observing hook with the run's ``state`` and ``depth``.

        The snapshot costs more than the rest of a step's bookkeeping, so it
        is built only when the hook is set.
        """
        if getattr(self.hooks, name) is not None:
            await self.hooks.notify(name, state=self.snapshot(), depth=self.depth, **kwargs)

    def _step_done(self, step_id: str) -> None:
        # A done callback, not asyncio.wait: re-arming a wait on every running
        # task at each wake costs more than the steps' own bookkeeping.
        self._done.append(step_id)
        self._wake.set()

    # ------------------------------------------------------------ scheduling

    def _exclusive(self, step: PlanStep) -> bool:
        tool = self.tools.get(step.action)
        return tool is not None and tool.side_effects

    def _start_ready(self) -> None:
        """Start the ready steps, up to the mode's limit, in priority order (:meth:`_priorities`).

        Only candidates are looked at: the dependents of steps that finished
        since the last pass and the steps a limit held back, or every step
        after a revision, a skip or a new plan. A step becomes ready only in
        one of those ways, so no ready step is missed.
        """
        mode = self.pattern.execution_mode
        limit = 1 if mode == ExecutionMode.SEQUENTIAL else self.pattern.max_parallel
        pending = (
            self._order.keys()
            if self._candidates is None
            else self._candidates & self._order.keys()
        )
        ids = sorted(pending, key=self._priority.__getitem__)
        self._candidates = set()
        for index, step_id in enumerate(ids):
            step = self._by_id[step_id]
            if len(self.running) >= limit:
                self._candidates.update(ids[index:])
                return
            if not can_start(self._dag, step_id, self.status, self.by_strategy):
                continue
            if (
                mode == ExecutionMode.ADAPTIVE
                and self.running
                and (
                    self._exclusive(step)
                    or any(self._exclusive(self._by_id[r]) for r in self.running)
                )
            ):
                # A side-effect step runs alone; later steps wait so it is not starved.
                self._candidates.update(ids[index:])
                return
            self.state = dag.start(self.state, (step.id,))
            work = tracing.step_span(
                self._execute(step), step.id, step.action, _failure, self.applied_revisions
            )
            task = asyncio.create_task(work, name=f"waygraph-step-{step.id}")

            def done(_task: asyncio.Task[StepOutcome], step_id: str = step.id) -> None:
                self._step_done(step_id)

            task.add_done_callback(done)
            self.running[step.id] = task
            if self.journal is not None:
                self.journal.started(step.id)

    @staticmethod
    def _outcome_of(task: asyncio.Task[StepOutcome]) -> StepOutcome:
        try:
            return task.result()
        except Exception as exc:  # a scheduler bug must not lose the other steps' results
            log.exception("step task failed unexpectedly")
            return StepOutcome(error=describe(exc, None))

    # ------------------------------------------------------------ one step

    async def _finish(self, step_id: str, outcome: StepOutcome) -> None:
        step = self._by_id[step_id]
        self._consider(self._dependents.get(step_id, ()))
        if outcome.subplan is not None:
            step = step.model_copy(update={"subplan": outcome.subplan})
            self.plan = self.plan.with_steps(
                [step if s.id == step_id else s for s in self.plan.steps]
            )
        if outcome.subplan_result is not None:
            self.sub_revisions += outcome.subplan_result.revision_count
        self.meter.add(outcome.usage)
        status = StepStatus.COMPLETED if outcome.ok else StepStatus.FAILED
        error = outcome.error
        if outcome.ok and outcome.mismatch is not None:
            status = StepStatus.FAILED
            error = f"the output does not match expected_output: {outcome.mismatch}"
            self.mismatched[step_id] = outcome.output
        self.state = dag.finish(self.state, step_id, ok=status == StepStatus.COMPLETED)
        if status == StepStatus.COMPLETED:
            self.outputs[step_id] = outcome.output
        usage = outcome.usage
        if outcome.subplan_result is not None:
            usage = usage + outcome.subplan_result.token_usage
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
            subplan_result=outcome.subplan_result,
        )
        self.results[step_id] = result
        if self.journal is not None:
            self.journal.finished(result)
        await self._notify("on_step_complete", step=step, result=result)
        if status == StepStatus.FAILED:
            trigger = (
                RevisionTrigger.OUTPUT_MISMATCH
                if outcome.mismatch is not None
                else RevisionTrigger.STEP_FAILED
            )
            self._on_failure(step_id, trigger)
        elif outcome.new_information and self._can_revise():
            self.request_revision(
                RevisionRequest(
                    RevisionTrigger.NEW_INFORMATION,
                    f"step {step_id} reported: {outcome.new_information}",
                    step_id,
                )
            )
        self._check_budget()

    def _on_failure(self, step_id: str, trigger: RevisionTrigger, *, revise: bool = True) -> None:
        error = self.results[step_id].error
        failed, done = self.state.failure_counts()
        rate = failed / done if done else 0.0
        cof = self.pattern.continue_on_failure
        if trigger == RevisionTrigger.STEP_FAILED and cof:
            # Failures are tolerated until too many steps fail.
            revise = revise and rate > self.pattern.revision_threshold
            trigger = RevisionTrigger.FAILURE_RATE
        if revise and self._can_revise():
            reason = f"step {step_id} failed: {error}"
            if trigger == RevisionTrigger.FAILURE_RATE:
                reason += (
                    f" ({failed} of {done} finished steps failed, over the "
                    f"revision_threshold of {self.pattern.revision_threshold:g})"
                )
            self.request_revision(RevisionRequest(trigger, reason, step_id))
        elif cof:
            self._update_skips()
        else:
            self._stop(f"step {step_id!r} failed: {error}")

    def _check_budget(self) -> None:
        budget = self.pattern.token_budget
        if budget is None:
            return
        used = self.meter.root.total.total_tokens
        if used >= budget:
            self._stop(f"token budget exhausted: {used} of {budget} tokens used")
            return
        ahead = sum(
            s.estimated_tokens for s in self.plan.steps if self.status[s.id] == StepStatus.PENDING
        )
        if used + ahead > budget and not self.budget_flagged and self._can_revise():
            self.budget_flagged = True
            self.request_revision(
                RevisionRequest(
                    RevisionTrigger.BUDGET_LOW,
                    f"{used} of {budget} budget tokens are used and the remaining steps are "
                    f"estimated at {ahead} more",
                )
            )

    def _update_skips(self) -> None:
        """Skip steps behind a failed or skipped dependency; un-skip the rest (engine rules)."""
        self._rescan()
        self.state, skipped, unskipped = dag.settle(self._dag, self.state)
        for step_id, cause in skipped.items():  # causes come first
            verb = "failed" if self.status[cause] == StepStatus.FAILED else "was skipped"
            self.results[step_id] = StepResult(
                step_id=step_id,
                status=StepStatus.SKIPPED,
                error=f"not run: its dependency {cause!r} {verb}",
            )
        for step_id in unskipped:
            self.results.pop(step_id, None)

    def _stop(self, reason: str) -> None:
        if self.stop_reason is None:
            self.state = dag.stop(self.state, reason)
            self.requests.clear()

    # ------------------------------------------------------------ revision

    def _result(self, elapsed: float) -> PlanExecutionResult:
        self.state, blocked = dag.block(self.state)
        for step_id in blocked:
            self.results[step_id] = StepResult(
                step_id=step_id, status=StepStatus.BLOCKED, error=f"not run: {self.stop_reason}"
            )
        self.finished_at = _now()
        success = self.state.succeeded()
        ordered = {sid: self.results[sid] for sid in self.plan.step_ids if sid in self.results}
        for sid, result in self.replaced.items():
            ordered.setdefault(sid, result)
        return PlanExecutionResult(
            success=success,
            plan=self.initial_plan,
            final_plan=self.plan,
            step_results=ordered,
            final_output=self._final_output() if success else self._failure_text(),
            revision_count=self.applied_revisions + self.sub_revisions,
            execution_state=self.snapshot(),
            token_usage=self.meter.total,
            execution_time=elapsed,
        )

    def _final_output(self) -> Any:
        outputs = {
            s.id: self.outputs.get(s.id)
            for s in self.plan.leaves()
            if self.status[s.id] == StepStatus.COMPLETED
        }
        if len(outputs) == 1:
            return next(iter(outputs.values()))
        return outputs

    def _failure_text(self) -> str:
        parts = [self.stop_reason] if self.stop_reason else []
        for sid in self.plan.step_ids:
            result = self.results.get(sid)
            already_named = f"step {sid!r} failed" in (self.stop_reason or "")
            if self.status[sid] == StepStatus.FAILED and result is not None and not already_named:
                parts.append(f"step {sid!r} failed: {result.error}")
        skipped = [
            sid
            for sid in self.plan.step_ids
            if self.status[sid] == StepStatus.SKIPPED and sid not in self.by_strategy
        ]
        blocked = self._ids_with(StepStatus.BLOCKED)
        if skipped:
            parts.append(f"skipped after a failed dependency: {', '.join(skipped)}")
        if blocked:
            parts.append(f"not run: {', '.join(blocked)}")
        return "The plan did not complete: " + "; ".join(parts)

    def _ids_with(self, status: StepStatus) -> list[str]:
        return self.state.with_(status)


def _failure(outcome: StepOutcome) -> str | None:
    """Why a step's execution failed (its span's error status), or None."""
    if not outcome.ok:
        return outcome.error or "the step failed"
    return None if outcome.mismatch is None else f"output mismatch: {outcome.mismatch}"
