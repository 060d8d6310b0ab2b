"""Revising a generated plan while it runs: when, with which strategy, and applying it.

A mixin of :class:`~waygraph.planning._executor.PlanRun` (the scheduler).
Revisions happen only when no step is running: a trigger stops new starts,
the running steps finish, then the revision is applied to a quiet plan.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from waygraph.engine import dag
from waygraph.errors import InvalidPlanError, LLMError
from waygraph.planning import _prompts as prompts
from waygraph.planning._models import (
    Plan,
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
from waygraph.planning._references import rename_reference
from waygraph.planning._runtime import call_hook

if TYPE_CHECKING:
    from collections.abc import Mapping

    from waygraph.engine.dag import DagRun
    from waygraph.planning._journal import Journal
    from waygraph.planning._models import PlanExecutionState
    from waygraph.planning._pattern import PlanningPattern
    from waygraph.planning._planner import PlanGenerator
    from waygraph.planning._runtime import Meter, RunCallbacks
    from waygraph.planning._tools import ToolRegistry

__all__ = ["FAILURES", "Revising", "RevisionRequest"]

log = logging.getLogger("waygraph.planning")

FAILURES = (
    RevisionTrigger.STEP_FAILED,
    RevisionTrigger.FAILURE_RATE,
    RevisionTrigger.OUTPUT_MISMATCH,
)


@dataclass
class RevisionRequest:
    trigger: RevisionTrigger
    reason: str
    step_id: str | None = None
    strategy: RevisionStrategy | None = None


class Revising:
    """Revision of the running plan (a mixin of the scheduler)."""

    if TYPE_CHECKING:
        # What the scheduler (waygraph.planning._executor.PlanRun) provides.
        plan: Plan
        goal: str
        planner: PlanGenerator
        pattern: PlanningPattern
        tools: ToolRegistry
        hooks: RunCallbacks
        meter: Meter
        depth: int
        outputs: dict[str, Any]
        outer_ids: frozenset[str]
        state: DagRun
        results: dict[str, StepResult]
        replaced: dict[str, StepResult]
        mismatched: dict[str, Any]
        revisions: list[PlanRevision]
        journal: Journal | None
        revision_attempts: int
        applied_revisions: int
        budget_flagged: bool

        @property
        def status(self) -> Mapping[str, StepStatus]: ...
        @property
        def by_strategy(self) -> frozenset[str]: ...
        @property
        def stop_reason(self) -> str | None: ...
        def snapshot(self) -> PlanExecutionState: ...
        def _stop(self, reason: str) -> None: ...
        def _update_skips(self) -> None: ...
        async def _notify(self, name: str, **kwargs: Any) -> None: ...

    def _can_revise(self, *, requested: bool = False) -> bool:
        allowed = self.pattern.allow_revision or requested
        return allowed and self.revision_attempts < self.pattern.max_revisions

    def _problem_step(self, request: RevisionRequest) -> PlanStep | None:
        if request.step_id is None or request.trigger not in FAILURES:
            return None
        if self.status.get(request.step_id) != StepStatus.FAILED:
            return None
        return self.plan.step(request.step_id)

    async def _revise(self, request: RevisionRequest) -> None:
        step = self._problem_step(request)
        if request.trigger in FAILURES and step is None:
            return  # already dealt with by an earlier revision
        if not self._can_revise(requested=request.trigger == RevisionTrigger.USER_REQUEST):
            self._after_failed_revision(request, step)
            return
        strategy = request.strategy or self.pattern.revision_strategy
        decision = await self._decide(request, strategy)
        if decision is not None:
            strategy = decision.strategy
        self.revision_attempts += 1
        old_plan = self.plan
        applied, note = False, ""
        if strategy == RevisionStrategy.ASK_USER:
            self._stop(
                f"revision ({request.trigger.value}) needed a decision and got none: "
                f"{request.reason}"
            )
        elif strategy == RevisionStrategy.ABORT:
            self._stop(f"aborted by the {request.trigger.value} revision: {request.reason}")
        elif strategy == RevisionStrategy.SKIP_AND_CONTINUE:
            applied = self._skip(step, request)
        else:
            try:
                new_plan, carried = await self._new_plan(request, strategy, step, decision)
            except (InvalidPlanError, LLMError) as exc:
                note = f" (revision failed: {exc})"
            except Exception as exc:
                # A custom model's own error must not lose the run's results.
                log.exception("plan revision failed")
                note = f" (revision failed: {exc!r})"
            else:
                self._apply(new_plan, carried)
                applied = True
        self.revisions.append(
            PlanRevision(
                trigger=request.trigger,
                strategy=strategy,
                reason=request.reason + note,
                step_id=request.step_id,
                old_plan=old_plan,
                new_plan=self.plan if applied else None,
                applied=applied,
            )
        )
        if applied:
            self.applied_revisions += 1
            self.budget_flagged = False
        if self.journal is not None:
            self.journal.checkpoint()
        await self._notify("on_plan_revised", revision=self.revisions[-1])
        if not applied and self.stop_reason is None:
            self._after_failed_revision(request, self._problem_step(request), note)

    async def _decide(
        self, request: RevisionRequest, strategy: RevisionStrategy
    ) -> RevisionDecision | None:
        hook = self.hooks.on_revision_needed
        if hook is None:
            return None
        try:
            decision = await call_hook(
                hook,
                "on_revision_needed",
                trigger=request.trigger,
                reason=request.reason,
                step_id=request.step_id,
                strategy=strategy,
                state=self.snapshot(),
                depth=self.depth,
            )
        except Exception:
            log.exception("on_revision_needed failed; using the configured strategy")
            return None
        if isinstance(decision, RevisionStrategy | str) and not isinstance(decision, bool):
            decision = RevisionDecision.model_validate({"strategy": decision})
        return decision if isinstance(decision, RevisionDecision) else None

    def _after_failed_revision(
        self, request: RevisionRequest, step: PlanStep | None, note: str = ""
    ) -> None:
        """No revision could help: a failed step is handled as if revision were off."""
        if step is None:
            return
        if self.pattern.continue_on_failure:
            self._update_skips()
        else:
            self._stop(f"step {step.id!r} failed: {self.results[step.id].error}{note}")

    def _skip(self, step: PlanStep | None, request: RevisionRequest) -> bool:
        if step is None:
            return True  # nothing to skip: carry on with the plan as it is
        previous = self.results[step.id]
        if request.trigger == RevisionTrigger.OUTPUT_MISMATCH:
            # Skipping the check: the output is accepted as it is.
            output = self.mismatched.pop(step.id)
            self.state = dag.accept(self.state, step.id)
            self.outputs[step.id] = output
            self.results[step.id] = previous.model_copy(
                update={"status": StepStatus.COMPLETED, "output": output}
            )
        else:
            self.state = dag.waive(self.state, step.id)
            self.results[step.id] = previous.model_copy(
                update={
                    "status": StepStatus.SKIPPED,
                    "error": f"skipped by skip_and_continue after: {previous.error}",
                }
            )
        self._update_skips()  # rescans: the skipped step may have freed its dependents
        return True

    def _kept_steps(self) -> list[PlanStep]:
        return [
            s
            for s in self.plan.steps
            if self.status[s.id] == StepStatus.COMPLETED or s.id in self.by_strategy
        ]

    def _replace_remaining(self, new_steps: tuple[PlanStep, ...]) -> Plan:
        return self.plan.with_steps([*self._kept_steps(), *new_steps])

    def _insert_recovery(self, failed: PlanStep, recovery: tuple[PlanStep, ...]) -> Plan:
        """Put ``recovery`` where ``failed`` was; its last step stands in for ``failed``."""
        if not recovery:
            return self.plan  # an empty recovery is reported by validation as empty_plan
        stand_in = recovery[-1].id
        known = set(self.plan.step_ids) | {s.id for s in recovery}
        steps: list[PlanStep] = []
        for step in self.plan.steps:
            if step.id == failed.id:
                steps.extend(recovery)
                continue
            if failed.id in step.dependencies:
                step = step.model_copy(
                    update={
                        "dependencies": tuple(
                            stand_in if d == failed.id else d for d in step.dependencies
                        ),
                        "parameters": rename_reference(step.parameters, failed.id, stand_in, known),
                    }
                )
            steps.append(step)
        return self.plan.with_steps(steps)

    async def _new_plan(
        self,
        request: RevisionRequest,
        strategy: RevisionStrategy,
        step: PlanStep | None,
        decision: RevisionDecision | None,
    ) -> tuple[Plan, set[str]]:
        """The revised plan and the ids of the steps carried over from the current one."""
        kept = [s.id for s in self._kept_steps()]
        external = self.outer_ids

        def check(plan: Plan) -> list[PlanProblem]:
            return self.planner.validate(plan, self.meter, depth=self.depth, external=external)

        if decision is not None and decision.plan is not None:
            new_plan = self.planner.normalize(self._replace_remaining(decision.plan.steps))
            problems = check(new_plan)
            if problems:
                raise InvalidPlanError(problems, plan=new_plan)
            return new_plan, set(kept)
        statuses = {sid: s.value for sid, s in self.status.items()}
        budget = self.planner.budget_left(self.meter) if self.depth == 0 else None
        if strategy == RevisionStrategy.INSERT_RECOVERY and step is not None:
            messages = prompts.recovery_messages(
                self.goal,
                self.plan,
                statuses,
                self.outputs,
                kept,
                step,
                request.reason,
                self.pattern,
                self.tools,
                depth=self.depth,
                budget_left=budget,
            )
            recovered = await self.planner.request_plan(
                messages,
                self.meter,
                check=check,
                build=lambda plan: self._insert_recovery(step, plan.steps),
            )
            return recovered, set(self.plan.step_ids) - {step.id}
        messages = prompts.replan_messages(
            self.goal,
            self.plan,
            statuses,
            self.outputs,
            kept,
            request.reason,
            self.pattern,
            self.tools,
            depth=self.depth,
            budget_left=budget,
        )
        replanned = await self.planner.request_plan(
            messages,
            self.meter,
            check=check,
            build=lambda plan: self._replace_remaining(plan.steps),
        )
        return replanned, set(kept)

    def _apply(self, new_plan: Plan, carried: set[str]) -> None:
        """Switch to ``new_plan``; steps not in ``carried`` are new (or replaced) and pending."""
        for sid in self.plan.step_ids:
            if sid in carried:
                continue
            previous = self.results.get(sid)
            self.replaced[sid] = StepResult(
                step_id=sid,
                status=StepStatus.REVISED,
                output=previous.output if previous else None,
                error=previous.error if previous else None,
                attempts=previous.attempts if previous else 0,
                token_usage=previous.token_usage if previous else TokenUsage(),
            )
            self.results.pop(sid, None)
            self.mismatched.pop(sid, None)
        self.state = dag.revise(self.state, new_plan.step_ids, carried)
        self.plan = new_plan
        self._update_skips()

    # ------------------------------------------------------------ the end
