"""The agent under test in its three modes: ``baseline``, ``guided`` and ``planned``.

- ``baseline``: the tool-calling loop of :mod:`waygraph.eval.loop`, no waygraph.
- ``guided``: the same loop with a :class:`~waygraph.navigator.Navigator` over
  the plan library; guidance is injected before every model call and every
  tool result is verified against the current node.
- ``planned``: the planning agent (:mod:`waygraph.planning`) asks the model for
  a plan whose steps call the same two tools, validates it and runs it.

Each returns a :class:`ModeOutcome`; the task's checker decides success.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from waygraph._extras import require
from waygraph.chat import DEFAULT_MAX_TOKENS, ChatClient
from waygraph.errors import LLMError
from waygraph.eval import loop
from waygraph.eval.suite import EvalTask
from waygraph.hooks import Hooks
from waygraph.library import Library
from waygraph.navigator import Navigator

__all__ = ["MODES", "EvalMode", "ModeOutcome", "ModelSettings", "run_mode"]


class EvalMode(StrEnum):
    """How an eval task is run (not a run kind: ``planned`` and ``baseline`` store no run).

    Example:
        >>> EvalMode("guided") is EvalMode.GUIDED, EvalMode.GUIDED == "guided"
        (True, True)
    """

    BASELINE = "baseline"
    GUIDED = "guided"
    PLANNED = "planned"


#: Every mode, in report order.
MODES: tuple[str, ...] = tuple(m.value for m in EvalMode)

PLANNING_PROMPT = (
    "You are a careful software engineer planning work in a project folder. Break the "
    "user's request into the fewest steps that finish it, each calling one tool: `shell` "
    "runs one command in the project folder, `write_file` writes a whole file there. "
    "Include steps that check the result (run the tests or the check the user names). "
    "Reply with one JSON object and nothing else."
)


@dataclass(frozen=True)
class ModelSettings:
    """Where the model under test is: an OpenAI-compatible server and a model name."""

    base_url: str
    model: str
    api_key: str = "not-needed"
    timeout: float = 120.0
    command_timeout: float = 60.0
    #: Tokens a reply may have (None: the server's default).
    max_tokens: int | None = DEFAULT_MAX_TOKENS
    #: How tools reach the model: ``native``, ``text`` or ``auto`` (:mod:`waygraph.chat`).
    tool_protocol: str = "auto"
    #: The model's context size in tokens (None: what the server says, else no limit).
    context_tokens: int | None = None


@dataclass
class ModeOutcome:
    """What a mode reports about one run (the checker adds success)."""

    tool_calls: int = 0
    tokens: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_calls: int = 0
    verification_failures: int | None = None
    escalated: bool = False
    plan: str | None = None
    plan_status: str | None = None
    answer: str | None = None
    #: The mode declared the work done: the guiding plan completed, the planned
    #: run succeeded, or (no plan guiding) the model gave its final answer.
    completed: bool = False
    #: The model server failed and the run stopped there (the counts are kept).
    error: str | None = None
    #: Document 004's success criteria as Record fields (planned mode only).
    criteria: dict[str, Any] = field(default_factory=dict)


def run_mode(
    mode: str,
    task: EvalTask,
    workspace: Path,
    settings: ModelSettings,
    *,
    library: Library | None = None,
) -> ModeOutcome:
    """Run ``task`` in ``workspace`` in ``mode``; a model server that fails ends the run
    with the outcome's ``error`` set and the counts of what it did kept."""
    if mode == "planned":
        return _planned(task, workspace, settings)
    require("llm", "openai", purpose="waygraph eval")
    client = ChatClient(
        settings.base_url,
        model=settings.model,
        api_key=settings.api_key,
        timeout=settings.timeout,
        max_retries=1,
        max_tokens=settings.max_tokens,
        tool_protocol=settings.tool_protocol,
        context_tokens=settings.context_tokens,
    )
    hooks: Hooks | None = None
    session = f"eval-{task.id}-{uuid.uuid4().hex[:8]}"
    if mode == EvalMode.GUIDED:
        navigator = Navigator(
            library,
            store="memory://",
            workspace=workspace,
            strict=True,
            tools={"code_execution_tool": "shell", "write_file": "write_file"},
        )
        hooks = Hooks(session, navigator=navigator, strict=True)
    elif mode != EvalMode.BASELINE:
        raise ValueError(f"unknown mode {mode!r}; modes: {', '.join(MODES)}")
    try:
        result = loop.run_agent(
            task.request,
            client=client,
            model=settings.model,
            workspace=workspace,
            hooks=hooks,
            max_steps=task.max_steps,
            command_timeout=settings.command_timeout,
        )
        outcome = ModeOutcome(
            tool_calls=len(result.steps),
            tokens=result.tokens,
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            model_calls=result.model_calls,
            answer=result.answer,
            completed=result.answer is not None and result.error is None,
            error=result.error,
        )
        if hooks is not None and hooks.navigator is not None:
            run = result.run or {}
            if result.run is not None:  # a plan guided the run: its status decides
                outcome.completed = run.get("status") == "completed"
            outcome.verification_failures = _task_failures(hooks.navigator, session, run)
            outcome.escalated = run.get("status") == "escalated"
            outcome.plan = run.get("plan_id")
            outcome.plan_status = run.get("status")
        return outcome
    finally:
        client.close()
        if hooks is not None:
            hooks.close()


def _task_failures(navigator: Navigator, session: str, run: dict[str, Any]) -> int:
    """Failed verifications of task nodes (a decision taking its other branch is no failure)."""
    plan = navigator.library.get(run.get("plan_id") or "")
    if plan is None:
        return 0
    nodes = plan.graph.nodes
    return sum(
        1
        for e in navigator.events(session)
        if e.get("type") == "node_verified"
        and not e.get("passed")
        and getattr(nodes.get(e.get("node") or ""), "type", None) == "task"
    )


def _planned(task: EvalTask, workspace: Path, settings: ModelSettings) -> ModeOutcome:
    from waygraph.eval.metrics import plan_criteria
    from waygraph.planning import LLMResponse, OpenAILLM, PlanningAgent, PlanningPattern, Tool

    outcome = ModeOutcome(verification_failures=0)

    def shell(command: str, expect_failure: bool = False) -> str:
        """Run one shell command in the project folder and return its output. A non-zero
        exit code fails the step unless expect_failure is true (a command run to show a
        failure, like a failing test)."""
        outcome.tool_calls += 1
        output, code = loop.run_shell(command, workspace, settings.command_timeout)
        if code != 0 and not expect_failure:
            outcome.verification_failures = (outcome.verification_failures or 0) + 1
            raise RuntimeError(f"exit code {code}: {output[-2000:]}")
        return f"exit code {code}\n{output}"

    def write_file(path: str, content: str) -> str:
        """Write (create or replace) a text file in the project folder."""
        outcome.tool_calls += 1
        message, code = loop.write_file(path, content, workspace)
        if code != 0:
            outcome.verification_failures = (outcome.verification_failures or 0) + 1
            raise RuntimeError(message)
        return message

    llm = OpenAILLM(
        settings.model,
        base_url=settings.base_url,
        api_key=settings.api_key,
        timeout=settings.timeout,
        max_retries=1,
        max_tokens=settings.max_tokens,
    )
    pattern = PlanningPattern(
        max_steps=task.max_steps,
        planning_prompt=PLANNING_PROMPT,
        retry_failed_steps=0,
        step_timeout=settings.command_timeout + 5,
        max_revisions=2,
    )
    tools: list[Any] = [
        Tool(shell, name="shell", side_effects=True),
        Tool(write_file, name="write_file", side_effects=True),
    ]
    # Plan validity: how many plan replies it took to get the first valid plan.
    asked = {"plans": 0, "until_valid": 0}

    class CountingPlans:
        async def complete(self, messages: Any, **kwargs: Any) -> LLMResponse:
            if kwargs.get("schema_name") == "plan":
                asked["plans"] += 1
            return await llm.complete(messages, **kwargs)

    def plan_generated(plan: Any) -> None:
        asked["until_valid"] = asked["plans"]

    agent = PlanningAgent(
        llm,
        tools=tools,
        pattern=pattern,
        planning_llm=CountingPlans(),
        on_plan_generated=plan_generated,
    )
    try:
        result = agent.run(task.request)
    except LLMError as exc:
        # The tool calls made so far are kept: the run is an error, not a blank.
        outcome.error = str(exc)
        return outcome
    if asked["until_valid"] or result.problems:
        # A plan came back valid, or stayed invalid (not: the server failed first).
        outcome.criteria = {
            "plan_valid": asked["until_valid"] == 1,
            "revisions": result.revision_count,
            **plan_criteria(result.plan),
        }
    outcome.tokens = result.token_usage.total_tokens
    outcome.prompt_tokens = result.token_usage.prompt_tokens
    outcome.completion_tokens = result.token_usage.completion_tokens
    outcome.escalated = not result.success
    outcome.plan = "generated" if result.plan is not None else None
    outcome.plan_status = "completed" if result.success else "failed"
    outcome.completed = result.success
    outcome.answer = str(result.final_output)[:500] if result.final_output is not None else None
    return outcome
