"""Running one step of a generated plan: its action with retries and fallback, or its sub-plan.

:class:`StepRunner` is a part of :class:`~waygraph.planning._executor.PlanRun`
(the scheduler): it reads the run's setup and frozen state through the run,
and hands a :class:`StepOutcome` back; the run alone changes its state. A
step's action is tried ``1 + retry_failed_steps`` times, each call bounded by
``step_timeout``, then its ``fallback_action`` once; identical calls share
one result unless the tool has side effects.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from waygraph.errors import InvalidPlanError, LLMError, PlanParseError
from waygraph.planning import _prompts as prompts
from waygraph.planning._json import extract_json
from waygraph.planning._models import Plan, PlanExecutionResult, PlanStep, TokenUsage, _now
from waygraph.planning._references import substitute
from waygraph.planning._tools import StepContext
from waygraph.planning._validate import ancestors

if TYPE_CHECKING:
    from waygraph.planning._executor import PlanRun

__all__ = ["FAILED", "StepOutcome", "StepRunner", "describe"]

log = logging.getLogger("waygraph.planning")

FAILED = object()  # what a shared call resolves to when it failed


@dataclass
class StepOutcome:
    """What one step's task hands back to the scheduler."""

    ok: bool = False
    output: Any = None
    error: str | None = None
    attempts: int = 0
    used_fallback: bool = False
    reused: bool = False
    mismatch: str | None = None
    new_information: str | None = None
    usage: TokenUsage = field(default_factory=TokenUsage)
    started_at: Any = None
    duration: float = 0.0
    subplan: Plan | None = None
    subplan_result: PlanExecutionResult | None = None
    errors: list[str] = field(default_factory=list)


def describe(exc: BaseException, timeout: float | None) -> str:
    if isinstance(exc, TimeoutError):
        return f"timed out after {timeout:g} s" if timeout else "timed out"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _call_key(tool: str, parameters: Any) -> str | None:
    try:
        return json.dumps([tool, parameters], sort_keys=True)
    except (TypeError, ValueError):
        return None  # not comparable as data: never shared


class _Outputs(Mapping[str, Any]):
    """The run's step outputs as they are now (a tool sees steps that finish while it runs)."""

    def __init__(self, run: PlanRun) -> None:
        self._run = run

    def __getitem__(self, key: str) -> Any:
        return self._run.state.outputs[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._run.state.outputs)

    def __len__(self) -> int:
        return len(self._run.state.outputs)


class StepRunner:
    """Runs one step of a :class:`~waygraph.planning._executor.PlanRun` (a part of it)."""

    def __init__(self, run: PlanRun) -> None:
        self._run = run

    async def execute(self, step: PlanStep) -> StepOutcome:
        """Run ``step`` (its action, retries, fallback, check, or its sub-plan)."""
        return await self._execute(step)

    async def _execute(self, step: PlanStep) -> StepOutcome:
        outcome = StepOutcome(started_at=_now())
        clock = time.perf_counter()
        run = self._run
        await run.notify("on_step_start", step=step)
        context = StepContext(
            step=step,
            goal=run.goal,
            results=_Outputs(run),
            llm=run.setup.llm,
            depth=run.setup.depth,
        )
        try:
            if step.is_composite:
                await self._run_composite(step, context, outcome)
            else:
                await self._run_action(step.action, step.parameters, context, outcome)
            if not outcome.ok and step.fallback_action:
                params = (
                    step.parameters
                    if step.fallback_parameters is None
                    else step.fallback_parameters
                )
                await self._run_action(
                    step.fallback_action, params, context, outcome, fallback=True
                )
            if outcome.ok and step.expected_output and run.setup.pattern.check_expected_output:
                await self._judge(step, context, outcome)
        except Exception as exc:
            outcome.ok = False
            outcome.errors.append(describe(exc, None))
        outcome.error = None if outcome.ok else "; ".join(outcome.errors) or "failed"
        outcome.usage = context.token_usage
        outcome.new_information = "; ".join(context.new_information) or None
        outcome.duration = time.perf_counter() - clock
        return outcome

    async def _run_action(
        self,
        action: str,
        parameters: Mapping[str, Any],
        context: StepContext,
        outcome: StepOutcome,
        *,
        fallback: bool = False,
    ) -> None:
        pattern = self._run.setup.pattern
        tries = 1 if fallback else 1 + pattern.retry_failed_steps
        for attempt in range(1, tries + 1):
            if not fallback:
                outcome.attempts = attempt
            try:
                outcome.output, outcome.reused = await self._call(action, parameters, context)
            except Exception as exc:
                label = f"fallback {action}" if fallback else f"attempt {attempt}"
                outcome.errors.append(f"{label}: {describe(exc, pattern.step_timeout)}")
                continue
            outcome.ok = True
            outcome.used_fallback = fallback
            return

    async def _call(
        self, action: str, parameters: Mapping[str, Any], context: StepContext
    ) -> tuple[Any, bool]:
        """Call a tool with resolved parameters; reuse an identical earlier call's result."""
        run = self._run
        setup = run.setup
        tool = setup.tools[action]
        resolved = substitute(dict(parameters), run.state.outputs, run.index.known)
        key = None if tool.side_effects else _call_key(action, resolved)
        future: asyncio.Future[Any] | None = None
        if key is not None:
            while (earlier := setup.calls.get(key)) is not None:
                value = await asyncio.shield(earlier)
                if value is not FAILED:
                    return value, True
            future = asyncio.get_running_loop().create_future()
            setup.calls[key] = future
        try:
            # asyncio.timeout, not wait_for: no extra task (and loop turns) per call.
            async with asyncio.timeout(setup.pattern.step_timeout):
                value = await tool.call(resolved, context)
        except BaseException:
            if future is not None and key is not None:
                # Waiting steps make their own call: a failure is not a result to share.
                setup.calls.pop(key, None)
                future.set_result(FAILED)
            raise
        if future is not None:
            future.set_result(value)
        return value, False

    async def _judge(self, step: PlanStep, context: StepContext, outcome: StepOutcome) -> None:
        schema = prompts.EXPECTATION_SCHEMA if self._run.setup.pattern.structured_output else None
        reply = await context.complete(
            prompts.expectation_messages(step, outcome.output), json_schema=schema
        )
        try:
            verdict = extract_json(reply.text)
        except PlanParseError:
            log.warning("expected-output check gave no JSON for step %s; accepting it", step.id)
            return
        if isinstance(verdict, dict) and verdict.get("matches", True) is False:
            outcome.mismatch = str(verdict.get("reason") or "no reason given")

    async def _run_composite(
        self, step: PlanStep, context: StepContext, outcome: StepOutcome
    ) -> None:
        run = self._run
        setup = run.setup
        available = sorted(ancestors(run.plan, step.id) | setup.outer_ids)
        sub = step.subplan
        outcome.attempts = 1
        if sub is None:
            try:
                sub = await setup.planner.decompose(
                    step,
                    run.goal,
                    run.state.outputs,
                    available,
                    setup.meter,
                    depth=setup.depth + 1,
                )
            except (InvalidPlanError, LLMError) as exc:
                outcome.errors.append(f"decomposition failed: {exc}")
                return
            outcome.subplan = sub
        child = type(run).of(
            sub,
            step.description or sub.goal,
            setup.nested(frozenset(available)),
            outer_results=run.state.outputs,
        )
        result = await child.run()
        outcome.subplan_result = result
        if result.success:
            outcome.ok = True
            outcome.output = result.final_output
        else:
            outcome.errors.append(f"sub-plan failed: {result.final_output}")
