"""Callbacks (modify, reject, observe) and interactive console approval."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from waygraph.planning import (
    ConsoleApproval,
    OpenAILLM,
    Plan,
    PlanningAgent,
    PlanningPattern,
    PlanRejectedError,
    render_plan,
)
from waygraph.testing import ScriptedChatServer

pytestmark = pytest.mark.timeout(30)


def step(
    step_id: str, action: str = "record", deps: tuple[str, ...] = (), **params: Any
) -> dict[str, Any]:
    return {
        "id": step_id,
        "action": action,
        "parameters": params or {"text": step_id},
        "dependencies": list(deps),
    }


PLAN_JSON = json.dumps(
    {"goal": "write notes", "steps": [step("a"), step("b", deps=("a",), text="after $a")]}
)


@contextmanager
def scripted(*replies: Any) -> Iterator[OpenAILLM]:
    with ScriptedChatServer(list(replies or [PLAN_JSON])) as server:
        yield OpenAILLM(
            "scripted", base_url=server.base_url, api_key="test", max_retries=0, timeout=5
        )


class Notebook:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def tools(self) -> list[Any]:
        def record(text: str) -> str:
            """Write a line in the notebook."""
            self.lines.append(text)
            return text.upper()

        def shout(text: str) -> str:
            return text.upper() + "!"

        return [record, shout]


# ------------------------------------------------------------------ callbacks


def test_on_plan_generated_may_modify_the_plan():
    book = Notebook()

    def on_plan_generated(*, plan: Plan, goal: str, **future):
        assert goal == "write notes"
        return plan.with_steps(
            [plan.step("a").model_copy(update={"parameters": {"text": "edited"}})]
        )

    with scripted() as llm:
        agent = PlanningAgent(llm, tools=book.tools(), on_plan_generated=on_plan_generated)
        result = agent.run("write notes")
    assert result.success
    assert book.lines == ["edited"]
    assert result.plan.step_ids == ["a"]


def test_a_modified_plan_is_validated_again():
    book = Notebook()

    async def on_plan_generated(*, plan: Plan, **future):
        return plan.with_steps([plan.step("a").model_copy(update={"action": "erase"})])

    with scripted() as llm:
        result = PlanningAgent(llm, tools=book.tools(), on_plan_generated=on_plan_generated).run(
            "write notes"
        )
    assert not result.success
    assert book.lines == []
    assert "unknown tool 'erase'" in result.final_output


def test_on_plan_generated_returning_nothing_keeps_the_plan():
    book = Notebook()
    with scripted() as llm:
        result = PlanningAgent(llm, tools=book.tools(), on_plan_generated=lambda **kw: None).run(
            "write notes"
        )
    assert result.success and book.lines == ["a", "after A"]


@pytest.mark.parametrize(("verdict", "reason"), [
    (False, "plan rejected by on_plan_approved"),
    (PlanRejectedError("too risky"), "too risky"),
    (KeyError("boom"), "plan not run: on_plan_approved raised KeyError('boom')"),
    (None, "plan not run: on_plan_approved returned None, not True, False or a plan"),
    ("yes", "plan not run: on_plan_approved returned 'yes', not True, False or a plan"),
])  # fmt: skip
def test_on_plan_approved_may_reject_and_nothing_runs(verdict, reason):
    book = Notebook()

    def on_plan_approved(**kwargs):
        if isinstance(verdict, Exception):
            raise verdict
        return verdict

    with scripted() as llm:
        result = PlanningAgent(llm, tools=book.tools(), on_plan_approved=on_plan_approved).run(
            "write notes"
        )
    assert not result.success
    assert result.final_output == reason
    assert book.lines == [] and result.step_results == {}
    assert result.plan is not None


def test_on_plan_approved_may_return_an_edited_plan():
    book = Notebook()

    async def on_plan_approved(*, plan: Plan, **future):
        return plan.with_steps([plan.step("a")])

    with scripted() as llm:
        result = PlanningAgent(llm, tools=book.tools(), on_plan_approved=on_plan_approved).run(
            "write notes"
        )
    assert result.success and book.lines == ["a"]


def test_step_callbacks_observe_every_step_and_their_errors_do_not_stop_the_run():
    book = Notebook()
    events: list[tuple[str, str]] = []

    def on_step_start(*, step, state, depth, **future):
        events.append(("start", step.id))
        raise RuntimeError("a broken observer")

    async def on_step_complete(*, step, result, state, **future):
        events.append(("complete", f"{step.id}:{result.status.value}:{result.output}"))

    with scripted() as llm:
        result = PlanningAgent(
            llm, tools=book.tools(), on_step_start=on_step_start, on_step_complete=on_step_complete
        ).run("write notes")
    assert result.success
    assert events == [
        ("start", "a"),
        ("complete", "a:completed:A"),
        ("start", "b"),
        ("complete", "b:completed:AFTER A"),
    ]


# ------------------------------------------------------------------ console approval


def console(*answers: str, **options: Any) -> tuple[ConsoleApproval, list[str]]:
    pending = iter(answers)
    shown: list[str] = []
    return ConsoleApproval(
        input=lambda prompt: next(pending), output=shown.append, **options
    ), shown


PLAN = Plan(
    goal="write notes", steps=[step("a"), step("b", deps=("a",), text="after $a"), step("c")]
)


def approve(approval: ConsoleApproval, plan: Plan = PLAN) -> Any:
    return asyncio.run(approval(plan=plan, goal=plan.goal))


def test_console_shows_the_plan_and_approves_it_unchanged():
    approval, shown = console("approve")
    assert approve(approval) is True
    assert shown[0] == render_plan(PLAN)
    assert '  2. b  record(text="after $a")  after: a' in shown[0]


def test_console_rejects_with_a_reason():
    approval, _ = console("reject not today")
    with pytest.raises(PlanRejectedError, match="rejected at the console: not today"):
        approve(approval)


def test_console_edits_steps():
    approval, shown = console(
        "edit a parameters.text=\"hello\"",
        "edit b action=shout",
        "edit c parameters={\"text\": \"json\"}",
        "e c description=Say it loud",
        "edit c colour=red",
        "a",
    )  # fmt: skip
    plan = approve(approval)
    assert plan.step("a").parameters == {"text": "hello"}
    assert plan.step("b").action == "shout"
    assert plan.step("c").parameters == {"text": "json"}
    assert plan.step("c").description == "Say it loud"
    assert any(line.startswith("not changed: cannot edit 'colour'") for line in shown)
    assert PLAN.step("a").parameters == {"text": "a"}  # the original is untouched


def test_console_reorders_steps_and_changes_dependencies():
    approval, shown = console(
        "order c a b", "order a b", "deps c a,b", "deps b", "d x a", "approve"
    )
    plan = approve(approval)
    assert plan.step_ids == ["c", "a", "b"]
    assert plan.step("c").dependencies == ("a", "b")
    assert plan.step("b").dependencies == ()
    assert "not changed: list every step id once: c a b" in shown
    assert any(line.startswith("not changed: no step 'x'") for line in shown)


def test_console_warns_about_edits_that_make_a_cycle():
    approval, shown = console("deps a b", "approve")
    plan = approve(approval)
    assert plan.step("a").dependencies == ("b",)
    assert any("dependencies form a cycle: a -> b -> a" in line for line in shown)


def test_console_help_and_show():
    approval, shown = console("?", "show", "a")
    approve(approval)
    assert any(line.startswith("Commands:") for line in shown)
    assert shown.count(render_plan(PLAN)) == 2


@pytest.mark.parametrize(("default", "expected"), [("approve", True), ("reject", None)])
def test_console_timeout_applies_the_default(default, expected):
    release = threading.Event()

    def never_answers(prompt: str) -> str:
        release.wait(5)  # a person away from the keyboard
        return "reject"

    shown: list[str] = []
    approval = ConsoleApproval(
        input=never_answers, output=shown.append, timeout=0.05, default=default
    )
    try:
        if expected is None:
            with pytest.raises(PlanRejectedError, match="rejected by default"):
                approve(approval)
        else:
            assert approve(approval) is expected
    finally:
        release.set()
    assert f"no answer within 0.05 s: {default} (the default)" in shown


def test_end_of_input_applies_the_default():
    def closed(prompt: str) -> str:
        raise EOFError

    approval = ConsoleApproval(input=closed, output=lambda text: None, default="approve")
    assert approve(approval) is True


def test_required_approval_without_a_callback_asks_at_the_console(monkeypatch):
    book = Notebook()
    answers = iter(['edit a parameters.text="from the console"', "approve"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(answers))
    monkeypatch.setattr("builtins.print", lambda *args, **kwargs: None)
    with scripted() as llm:
        agent = PlanningAgent(
            llm, tools=book.tools(), pattern=PlanningPattern(require_plan_approval=True)
        )
        assert isinstance(agent.hooks.on_plan_approved, ConsoleApproval)
        result = agent.run("write notes")
    assert result.success
    assert book.lines == ["from the console", "after FROM THE CONSOLE"]


def test_execute_plan_is_not_asked_for_approval():
    book = Notebook()

    def refuse(**kwargs):
        raise AssertionError("execute_plan runs the plan it is given")

    async def main():
        agent = PlanningAgent(object(), tools=book.tools(), on_plan_approved=refuse)
        return await agent.execute_plan(Plan(goal="g", steps=[step("a")]))

    assert asyncio.run(main()).success


def test_a_failing_on_plan_generated_means_the_plan_is_not_run():
    book = Notebook()

    def on_plan_generated(**kwargs):
        raise ValueError("broken hook")

    with scripted() as llm:
        result = PlanningAgent(llm, tools=book.tools(), on_plan_generated=on_plan_generated).run(
            "write notes"
        )
    assert not result.success and book.lines == []
    assert result.final_output == "plan not run: on_plan_generated raised ValueError('broken hook')"
