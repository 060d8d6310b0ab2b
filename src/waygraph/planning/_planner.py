"""Asking the planning model for plans: the request, JSON extraction, validation
and the send-back-to-model loop, shared by generation, revision and decomposition.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any

from waygraph.errors import InvalidPlanError, PlanParseError
from waygraph.planning import _prompts as prompts
from waygraph.planning._json import extract_json
from waygraph.planning._llm import LLM, LLMResponse, Message
from waygraph.planning._models import Plan, PlanProblem, PlanStep
from waygraph.planning._pattern import PlanningPattern
from waygraph.planning._prompts import plan_json_schema
from waygraph.planning._runtime import Meter
from waygraph.planning._tools import ToolRegistry
from waygraph.planning._validate import add_implied_dependencies, parse_plan, validate_plan

__all__ = ["PlanGenerator"]

log = logging.getLogger("waygraph.planning")

Check = Callable[[Plan], list[PlanProblem]]


class PlanGenerator:
    """Plans with one model, one tool registry and one pattern."""

    def __init__(
        self,
        llm: LLM,
        tools: ToolRegistry,
        pattern: PlanningPattern,
        *,
        on_rejected: Callable[..., Awaitable[None]] | None = None,
    ) -> None:
        self.llm = llm
        # Told of each plan sent back, as it happens (``waygraph plan`` prints them).
        self._on_rejected = on_rejected
        self.tools = tools
        self.pattern = pattern
        self.schema = plan_json_schema(
            hierarchical=pattern.hierarchical, require_dependencies=pattern.require_dependencies
        )

    # ------------------------------------------------------------ checks

    def budget_left(self, meter: Meter) -> int | None:
        """Tokens of the budget not yet spent in this call (None: no budget)."""
        if self.pattern.token_budget is None:
            return None
        return max(0, self.pattern.token_budget - meter.root.total.total_tokens)

    def normalize(self, plan: Plan) -> Plan:
        """Add the dependencies references imply when they are not required to be listed."""
        return plan if self.pattern.require_dependencies else add_implied_dependencies(plan)

    def validate(
        self, plan: Plan, meter: Meter, *, depth: int = 0, external: Collection[str] = ()
    ) -> list[PlanProblem]:
        """Every reason ``plan`` cannot run now (the budget counts what is spent)."""
        budget = self.budget_left(meter) if depth == 0 else None
        return validate_plan(
            plan, self.tools, self.pattern, depth=depth, external=external, budget_left=budget
        )

    # ------------------------------------------------------------ model calls

    async def ask(
        self,
        messages: Sequence[Message],
        meter: Meter,
        *,
        schema: Mapping[str, Any] | None,
        schema_name: str,
    ) -> LLMResponse:
        """One model call; its tokens count toward ``meter``."""
        json_schema = schema if self.pattern.structured_output else None
        reply = await self.llm.complete(messages, json_schema=json_schema, schema_name=schema_name)
        meter.add(reply.usage)
        return reply

    async def request_plan(
        self,
        messages: Sequence[Message],
        meter: Meter,
        *,
        check: Check,
        build: Callable[[Plan], Plan] = lambda plan: plan,
        review: bool = False,
    ) -> Plan:
        """Ask for a plan until it passes ``check``, sending problems back to the model.

        ``build`` turns the model's plan into the plan that is checked (a
        revision merges it with the finished steps). After
        ``plan_repair_attempts`` send-backs, raises :class:`InvalidPlanError`.
        """
        history = list(messages)
        attempts = 1 + self.pattern.plan_repair_attempts
        plan: Plan | None = None
        problems: list[PlanProblem] = []
        for attempt in range(1, attempts + 1):
            reply = await self.ask(history, meter, schema=self.schema, schema_name="plan")
            plan, problems = await self._read(reply.text, meter, check, build, review)
            if not problems and plan is not None:
                return plan
            log.info("plan attempt %d/%d has %d problem(s)", attempt, attempts, len(problems))
            if self._on_rejected is not None:
                await self._on_rejected(problems=list(problems), attempt=attempt, attempts=attempts)
            history += [
                {"role": "assistant", "content": reply.text},
                prompts.repair_message(problems),
            ]
        raise InvalidPlanError(problems, plan=plan, attempts=attempts)

    async def _read(
        self, text: str, meter: Meter, check: Check, build: Callable[[Plan], Plan], review: bool
    ) -> tuple[Plan | None, list[PlanProblem]]:
        try:
            data = extract_json(text)
        except PlanParseError as exc:
            return None, [PlanProblem("not_json", str(exc))]
        parsed, problems = parse_plan(data, require_dependencies=self.pattern.require_dependencies)
        if parsed is None:
            return None, problems
        plan = self.normalize(build(parsed))
        problems = check(plan)
        if not problems and review:
            problems = await self.review(plan, meter)
        return plan, problems

    async def generate(self, goal: str, context: str | None, meter: Meter) -> Plan:
        """A validated plan for ``goal`` (reviewed when ``feasibility_review`` is on)."""
        messages = prompts.planning_messages(
            goal, context, self.pattern, self.tools, budget_left=self.budget_left(meter)
        )
        return await self.request_plan(
            messages,
            meter,
            check=lambda plan: self.validate(plan, meter),
            review=self.pattern.feasibility_review,
        )

    async def review(self, plan: Plan, meter: Meter) -> list[PlanProblem]:
        """The model's feasibility review as problems (none when it cannot answer)."""
        reply = await self.ask(
            prompts.feasibility_messages(plan, self.tools),
            meter,
            schema=prompts.FEASIBILITY_SCHEMA,
            schema_name="review",
        )
        try:
            verdict = extract_json(reply.text)
        except PlanParseError:
            # The review advises; an unreadable answer must not block a valid plan.
            log.warning("feasibility review gave no JSON; accepting the plan")
            return []
        if not isinstance(verdict, dict) or verdict.get("feasible", True) is not False:
            return []
        found = [str(p) for p in verdict.get("problems") or []] or ["no reason given"]
        return [PlanProblem("infeasible", f"the feasibility review found: {p}") for p in found]

    async def revise(self, plan: Plan, feedback: str, meter: Meter) -> Plan:
        """A new whole plan for ``plan.goal`` that takes ``feedback`` into account."""
        messages = prompts.planning_messages(
            plan.goal, None, self.pattern, self.tools, budget_left=self.budget_left(meter)
        )
        messages += [
            {"role": "assistant", "content": plan.model_dump_json(exclude={"created_at"})},
            {
                "role": "user",
                "content": f"Revise the plan: {feedback}\n\n"
                "Reply with the whole revised plan as one JSON object.",
            },
        ]
        return await self.request_plan(messages, meter, check=lambda p: self.validate(p, meter))

    async def decompose(
        self,
        step: PlanStep,
        parent_goal: str,
        results: Mapping[str, Any],
        available: Sequence[str],
        meter: Meter,
        *,
        depth: int,
    ) -> Plan:
        """The sub-plan of a composite ``step``, validated at ``depth``."""
        messages = prompts.decomposition_messages(
            parent_goal, step, results, available, self.pattern, self.tools, depth=depth
        )
        return await self.request_plan(
            messages,
            meter,
            check=lambda sub: self.validate(sub, meter, depth=depth, external=available),
        )
