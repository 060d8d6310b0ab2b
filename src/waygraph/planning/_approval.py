"""Interactive approval of a plan (and of revisions) at the console.

:class:`ConsoleApproval` is an ``on_plan_approved`` callback: it shows the
plan and reads commands until the person approves or rejects it. It can also
answer ``on_revision_needed`` (the ``ask_user`` strategy). Input is read in a
daemon thread, so a ``timeout`` can apply the configured default while the
event loop keeps running; pass ``input``/``output`` functions to script it.

Example:
    >>> import asyncio
    >>> from waygraph.planning import Plan
    >>> plan = Plan(goal="g", steps=[{"id": "a", "action": "t"}, {"id": "b", "action": "t"}])
    >>> answers = iter(["deps b a", "approve"])
    >>> approval = ConsoleApproval(input=lambda prompt: next(answers), output=lambda text: None)
    >>> asyncio.run(approval(plan=plan)).step("b").dependencies
    ('a',)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Callable
from typing import Any, Literal

from waygraph.errors import PlanRejectedError
from waygraph.planning._models import Plan, PlanStep, RevisionDecision, RevisionStrategy
from waygraph.planning._runtime import Hook, call_hook
from waygraph.planning._validate import structural_problems

__all__ = ["ConsoleApproval", "approve"]

log = logging.getLogger("waygraph.planning")

HELP = """Commands:
  a, approve                 run the plan as shown
  r, reject [reason]         do not run it
  e, edit ID FIELD=VALUE     change a step; FIELD is description, action, expected_output,
                             fallback_action, parameters (a JSON object) or
                             parameters.NAME (a JSON value, or plain text)
  o, order ID ID ...         put the steps in this order (every id once)
  d, deps ID [ID,ID...]      set a step's dependencies (none when no ids are given)
  s, show                    show the plan again
  h, help                    show this help"""

_EDITABLE = ("description", "action", "expected_output", "fallback_action", "parameters")
_TIMED_OUT = object()

_REVISION_CHOICES = {
    "r": RevisionStrategy.REPLAN_REMAINING,
    "i": RevisionStrategy.INSERT_RECOVERY,
    "s": RevisionStrategy.SKIP_AND_CONTINUE,
    "a": RevisionStrategy.ABORT,
}


class ConsoleApproval:
    """Approve, reject or edit a plan at the console.

    ``timeout`` (seconds) bounds each answer; when it passes, ``default``
    (``"approve"`` or ``"reject"``) decides the plan and ``revision_default``
    a revision. End of input also applies the default.

    Example:
        >>> approval = ConsoleApproval(timeout=30, default="approve")
        >>> approval.default
        'approve'
    """

    def __init__(
        self,
        *,
        input: Callable[[str], str] | None = None,
        output: Callable[[str], None] | None = None,
        timeout: float | None = None,
        default: Literal["approve", "reject"] = "reject",
        revision_default: RevisionStrategy | str = RevisionStrategy.ABORT,
    ) -> None:
        import builtins

        self._input = input or builtins.input
        self._output = output or print
        self.timeout = timeout
        self.default = default
        self.revision_default = RevisionStrategy(revision_default)

    # ------------------------------------------------------------ plan approval

    async def __call__(self, *, plan: Plan, **future_kwargs: Any) -> Plan | bool:
        """Show ``plan`` and return it (edited or not) when approved.

        Raises :class:`PlanRejectedError` with the person's reason when rejected.
        """
        current, edited = plan, False
        self._output(render_plan(current))
        self._output("Approve this plan? (h for help)")
        while True:
            answer = await self._ask("> ")
            if answer is _TIMED_OUT or answer is None:
                why = "no answer" if answer is None else f"no answer within {self.timeout:g} s"
                self._output(f"{why}: {self.default} (the default)")
                if self.default == "approve":
                    return current if edited else True
                raise PlanRejectedError(f"plan rejected by default ({why})")
            command, _, rest = str(answer).strip().partition(" ")
            command, rest = command.lower(), rest.strip()
            if command in ("a", "approve", "y", "yes"):
                return current if edited else True
            if command in ("r", "reject", "n", "no"):
                raise PlanRejectedError(
                    "plan rejected at the console" + (f": {rest}" if rest else "")
                )
            try:
                if command in ("e", "edit"):
                    current = _edit(current, rest)
                elif command in ("o", "order"):
                    current = _reorder(current, rest.split())
                elif command in ("d", "deps"):
                    current = _set_dependencies(current, rest)
                elif command in ("s", "show"):
                    self._output(render_plan(current))
                    continue
                else:
                    self._output(HELP)
                    continue
            except ValueError as exc:
                self._output(f"not changed: {exc}")
                continue
            edited = True
            self._output(render_plan(current))
            for problem in structural_problems(current):
                self._output(f"warning: {problem}")

    # ------------------------------------------------------------ revisions

    async def on_revision_needed(
        self,
        *,
        trigger: str,
        reason: str,
        step_id: str | None = None,
        **future_kwargs: Any,
    ) -> RevisionDecision:
        """Ask which revision strategy to apply (use as ``on_revision_needed``)."""
        where = f" at step {step_id}" if step_id else ""
        self._output(f"Revision needed ({trigger}){where}: {reason}")
        self._output(
            "  r  replan the remaining steps\n  i  insert recovery steps\n"
            "  s  skip the step and continue\n  a  abort the run"
        )
        default_key = next(k for k, v in _REVISION_CHOICES.items() if v == self.revision_default)
        while True:
            answer = await self._ask(f"choice [{default_key}]: ")
            if answer is _TIMED_OUT or answer is None or not str(answer).strip():
                self._output(f"using the default: {self.revision_default.value}")
                return RevisionDecision(
                    strategy=self.revision_default, reason="default at the console"
                )
            key = str(answer).strip().lower()[:1]
            if key in _REVISION_CHOICES:
                return RevisionDecision(
                    strategy=_REVISION_CHOICES[key], reason="chosen at the console"
                )
            self._output("answer r, i, s or a")

    # ------------------------------------------------------------ input

    async def _ask(self, prompt: str) -> Any:
        """One line of input, None at end of input, ``_TIMED_OUT`` after the timeout."""
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[Any] = loop.create_future()

        def settle(value: Any) -> None:
            if not answer.done():
                answer.set_result(value)

        def read() -> None:
            try:
                value: Any = self._input(prompt)
            except (EOFError, KeyboardInterrupt):
                value = None
            # The loop may have closed while a person was still typing.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle, value)

        # A daemon thread: an unanswered prompt must not keep the process alive.
        threading.Thread(target=read, name="waygraph-approval", daemon=True).start()
        try:
            return await asyncio.wait_for(answer, self.timeout)
        except TimeoutError:
            return _TIMED_OUT


def render_plan(plan: Plan) -> str:
    """The plan as numbered lines for a person to read.

    Example:
        >>> print(render_plan(Plan(goal="g", steps=[{"id": "a", "action": "t",
        ...                                          "parameters": {"x": 1}}])))
        Plan: g (1 step)
          1. a  t(x=1)  after: -
    """
    count = len(plan.steps)
    head = f"Plan: {plan.goal} ({count} step{'s' if count != 1 else ''}"
    if plan.estimated_total_tokens:
        head += f", ~{plan.estimated_total_tokens} tokens"
    lines = [head + ")"]
    for i, step in enumerate(plan.steps, 1):
        args = ", ".join(f"{k}={json.dumps(v, default=str)}" for k, v in step.parameters.items())
        deps = ", ".join(step.dependencies) or "-"
        lines.append(f"  {i}. {step.id}  {step.action}({args})  after: {deps}")
        if step.description:
            lines.append(f"       {step.description}")
        if step.fallback_action:
            lines.append(f"       fallback: {step.fallback_action}")
    return "\n".join(lines)


def _replace(plan: Plan, step: PlanStep) -> Plan:
    return plan.with_steps([step if s.id == step.id else s for s in plan.steps])


def _find(plan: Plan, step_id: str) -> PlanStep:
    try:
        return plan.step(step_id)
    except KeyError as exc:
        raise ValueError(exc.args[0]) from None


def _edit(plan: Plan, rest: str) -> Plan:
    step_id, _, assignment = rest.partition(" ")
    field, sep, value = assignment.partition("=")
    field, value = field.strip(), value.strip()
    if not step_id or not sep:
        raise ValueError("write: edit ID FIELD=VALUE")
    step = _find(plan, step_id)
    if field.startswith("parameters."):
        name = field.removeprefix("parameters.")
        return _replace(
            plan,
            step.model_copy(update={"parameters": {**step.parameters, name: _json_or_text(value)}}),
        )
    if field not in _EDITABLE:
        raise ValueError(
            f"cannot edit {field!r}; editable: {', '.join(_EDITABLE)}, parameters.NAME"
        )
    if field == "parameters":
        parsed = _json_or_text(value)
        if not isinstance(parsed, dict):
            raise ValueError('parameters must be a JSON object, e.g. {"query": "x"}')
        return _replace(plan, step.model_copy(update={"parameters": parsed}))
    if field == "action" and not value:
        raise ValueError("action cannot be empty")
    # An empty optional field (expected_output, fallback_action) means "none".
    cleared = value if field in ("description", "action") else (value or None)
    return _replace(plan, step.model_copy(update={field: cleared}))


def _json_or_text(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value


def _reorder(plan: Plan, order: list[str]) -> Plan:
    if sorted(order) != sorted(plan.step_ids):
        raise ValueError(f"list every step id once: {' '.join(plan.step_ids)}")
    return plan.with_steps([plan.step(sid) for sid in order])


def _set_dependencies(plan: Plan, rest: str) -> Plan:
    step_id, _, deps_text = rest.partition(" ")
    if not step_id:
        raise ValueError("write: deps ID [ID,ID...]")
    step = _find(plan, step_id)
    deps = tuple(d for d in deps_text.replace(",", " ").split() if d != "-")
    unknown = [d for d in deps if d not in plan.step_ids]
    if unknown:
        raise ValueError(f"unknown step {unknown[0]!r}; steps: {', '.join(plan.step_ids)}")
    return _replace(plan, step.model_copy(update={"dependencies": deps}))


async def approve(hook: Hook | None, plan: Plan, goal: str) -> Plan | str:
    """The plan ``on_plan_approved`` (``hook``) lets run, or why it must not run."""
    if hook is None:
        return plan
    try:
        verdict = await call_hook(hook, "on_plan_approved", plan=plan, goal=goal)
    except PlanRejectedError as exc:
        return str(exc)
    except Exception as exc:
        log.exception("on_plan_approved failed")
        return f"plan not run: on_plan_approved raised {exc!r}"
    if verdict is False:
        return "plan rejected by on_plan_approved"
    if isinstance(verdict, Plan):
        return verdict
    if verdict is not True:
        # Fail closed: a callback that forgot to answer has not approved anything.
        return f"plan not run: on_plan_approved returned {verdict!r}, not True, False or a plan"
    return plan
