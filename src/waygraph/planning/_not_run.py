"""The results of calls that run no step: a dry run's report, or why a plan was not run."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from waygraph.planning._dryrun import dry_run_result, report_without_plan, simulate_plan
from waygraph.planning._models import Plan, PlanExecutionResult, PlanProblem

if TYPE_CHECKING:
    from waygraph.planning._pattern import PlanningPattern
    from waygraph.planning._runtime import Meter
    from waygraph.planning._tools import ToolRegistry

__all__ = ["dry_run", "not_run"]


def dry_run(
    plan: Plan | None,
    goal: str,
    pattern: PlanningPattern,
    tools: ToolRegistry,
    meter: Meter,
    clock: float,
    problems: Iterable[PlanProblem],
    why: str | None = None,
) -> PlanExecutionResult:
    """A dry run's result: the report on ``plan`` with the problems already found."""
    spent = meter.root.total.total_tokens
    if plan is None:
        # Planning failed before any plan existed: the report says why.
        found = list(problems) or [PlanProblem("no_plan", why or "no plan was made")]
        report = report_without_plan(goal, pattern, found, tokens_spent=spent)
    else:
        report = simulate_plan(plan, tools, pattern, tokens_spent=spent, problems=problems)
    return dry_run_result(
        report,
        plan=plan,
        token_usage=meter.total,
        execution_time=time.perf_counter() - clock,
        why=why if plan is None else None,
    )


def not_run(
    plan: Plan | None,
    why: str,
    pattern: PlanningPattern,
    tools: ToolRegistry,
    meter: Meter,
    clock: float,
    problems: Iterable[Any] = (),
    *,
    goal: str | None = None,
) -> PlanExecutionResult:
    """The result of a call whose plan did not run, for ``why`` (a dry run's report in dry runs)."""
    if pattern.dry_run and goal is not None:
        problems = list(problems)
        if plan is not None and not problems:
            # Rejected by on_plan_generated: the reason is the problem to report.
            problems = [PlanProblem("rejected", why)]
        return dry_run(plan, goal, pattern, tools, meter, clock, problems, why)
    return PlanExecutionResult(
        success=False,
        plan=plan,
        final_plan=plan,
        final_output=why,
        token_usage=meter.total,
        execution_time=time.perf_counter() - clock,
        problems=tuple(problems),
    )
