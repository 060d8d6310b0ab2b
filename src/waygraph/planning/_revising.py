"""Revising a generated plan while it runs: when, with which strategy, and applying it.

:class:`Reviser` is a part of :class:`~waygraph.planning._executor.PlanRun`
(the scheduler): it reads the run's frozen state through the run, asks the
model or the callback for a new plan, and changes the run only with
:mod:`~waygraph.planning._run_state`'s transitions committed through it.
Revisions happen only when no step is running: a trigger stops new starts,
the running steps finish, then the revision is applied to a quiet plan.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from waygraph.errors import InvalidPlanError, LLMError
from waygraph.planning import _prompts as prompts
from waygraph.planning import _run_state as transitions
from waygraph.planning._models import (
    Plan,
    PlanProblem,
    PlanRevision,
    PlanStep,
    RevisionDecision,
    RevisionStrategy,
    RevisionTrigger,
    StepStatus,
)
from waygraph.planning._references import rename_reference
from waygraph.planning._runtime import call_hook

if TYPE_CHECKING:
    from waygraph.planning._executor import PlanRun

__all__ = ["FAILURES", "Reviser", "RevisionRequest"]

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


class Reviser:
    """Revises a :class:`~waygraph.planning._executor.PlanRun`'s plan (a part of it)."""

    def __init__(self, run: PlanRun) -> None:
        self._run = run

    def can_revise(self, *, requested: bool = False) -> bool:
        """Whether one more revision may be tried (``requested``: the user asked for it)."""
        pattern = self._run.setup.pattern
        allowed = pattern.allow_revision or requested
        return allowed and self._run.state.revision_attempts < pattern.max_revisions

    def _problem_step(self, request: RevisionRequest) -> PlanStep | None:
        if request.step_id is None or request.trigger not in FAILURES:
            return None
        if self._run.status.get(request.step_id) != StepStatus.FAILED:
            return None
        return self._run.plan.step(request.step_id)

    async def revise(self, request: RevisionRequest) -> None:
        """Handle ``request`` on a quiet run: decide, build and apply the revision, record it."""
        run = self._run
        step = self._problem_step(request)
        if request.trigger in FAILURES and step is None:
            return  # already dealt with by an earlier revision
        if not self.can_revise(requested=request.trigger == RevisionTrigger.USER_REQUEST):
            self._after_failed_revision(request, step)
            return
        strategy = request.strategy or run.setup.pattern.revision_strategy
        decision = await self._decide(request, strategy)
        if decision is not None:
            strategy = decision.strategy
        run.commit(transitions.count_attempt(run.state))
        old_plan = run.plan
        applied, note = False, ""
        if strategy == RevisionStrategy.ASK_USER:
            run.stop(
                f"revision ({request.trigger.value}) needed a decision and got none: "
                f"{request.reason}"
            )
        elif strategy == RevisionStrategy.ABORT:
            run.stop(f"aborted by the {request.trigger.value} revision: {request.reason}")
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
                run.commit(transitions.revise(run.state, new_plan, carried))
                run.settle()
                applied = True
        revision = PlanRevision(
            trigger=request.trigger,
            strategy=strategy,
            reason=request.reason + note,
            step_id=request.step_id,
            old_plan=old_plan,
            new_plan=run.plan if applied else None,
            applied=applied,
        )
        run.commit(transitions.record_revision(run.state, revision))
        run.checkpoint()
        await run.notify("on_plan_revised", revision=revision)
        if not applied and run.stop_reason is None:
            self._after_failed_revision(request, self._problem_step(request), note)

    async def _decide(
        self, request: RevisionRequest, strategy: RevisionStrategy
    ) -> RevisionDecision | None:
        run = self._run
        hook = run.setup.hooks.on_revision_needed
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
                state=run.snapshot(),
                depth=run.setup.depth,
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
        run = self._run
        if run.setup.pattern.continue_on_failure:
            run.settle()
        else:
            run.stop(f"step {step.id!r} failed: {run.results[step.id].error}{note}")

    def _skip(self, step: PlanStep | None, request: RevisionRequest) -> bool:
        if step is None:
            return True  # nothing to skip: carry on with the plan as it is
        run = self._run
        if request.trigger == RevisionTrigger.OUTPUT_MISMATCH:
            # Skipping the check: the output is accepted as it is.
            run.commit(transitions.accept(run.state, step.id))
        else:
            run.commit(transitions.waive(run.state, step.id))
        run.settle()  # rescans: the skipped step may have freed its dependents
        return True

    def _kept_steps(self) -> list[PlanStep]:
        state = self._run.state
        return [
            s
            for s in state.plan.steps
            if state.status[s.id] == StepStatus.COMPLETED or s.id in state.waived
        ]

    def _replace_remaining(self, new_steps: tuple[PlanStep, ...]) -> Plan:
        return self._run.plan.with_steps([*self._kept_steps(), *new_steps])

    def _insert_recovery(self, failed: PlanStep, recovery: tuple[PlanStep, ...]) -> Plan:
        """Put ``recovery`` where ``failed`` was; its last step stands in for ``failed``."""
        plan = self._run.plan
        if not recovery:
            return plan  # an empty recovery is reported by validation as empty_plan
        stand_in = recovery[-1].id
        known = set(plan.step_ids) | {s.id for s in recovery}
        steps: list[PlanStep] = []
        for step in plan.steps:
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
        return plan.with_steps(steps)

    async def _new_plan(
        self,
        request: RevisionRequest,
        strategy: RevisionStrategy,
        step: PlanStep | None,
        decision: RevisionDecision | None,
    ) -> tuple[Plan, set[str]]:
        """The revised plan and the ids of the steps carried over from the current one."""
        run, setup = self._run, self._run.setup
        planner, meter, depth = setup.planner, setup.meter, setup.depth
        kept = [s.id for s in self._kept_steps()]
        external = setup.outer_ids

        def check(plan: Plan) -> list[PlanProblem]:
            return planner.validate(plan, meter, depth=depth, external=external)

        if decision is not None and decision.plan is not None:
            new_plan = planner.normalize(self._replace_remaining(decision.plan.steps))
            problems = check(new_plan)
            if problems:
                raise InvalidPlanError(problems, plan=new_plan)
            return new_plan, set(kept)
        statuses = {sid: s.value for sid, s in run.status.items()}
        budget = planner.budget_left(meter) if depth == 0 else None
        if strategy == RevisionStrategy.INSERT_RECOVERY and step is not None:
            messages = prompts.recovery_messages(
                run.goal,
                run.plan,
                statuses,
                run.state.outputs,
                kept,
                step,
                request.reason,
                setup.pattern,
                setup.tools,
                depth=depth,
                budget_left=budget,
            )
            recovered = await planner.request_plan(
                messages,
                meter,
                check=check,
                build=lambda plan: self._insert_recovery(step, plan.steps),
            )
            return recovered, set(run.plan.step_ids) - {step.id}
        messages = prompts.replan_messages(
            run.goal,
            run.plan,
            statuses,
            run.state.outputs,
            kept,
            request.reason,
            setup.pattern,
            setup.tools,
            depth=depth,
            budget_left=budget,
        )
        replanned = await planner.request_plan(
            messages,
            meter,
            check=check,
            build=lambda plan: self._replace_remaining(plan.steps),
        )
        return replanned, set(kept)
