"""The pattern-style API: ``Agent``, ``PlanningCallbacks`` and the pattern's methods.

Code written against the planning pattern of the seed project builds an
``Agent`` from a pattern, tools, a model, a system prompt and a callbacks
object, and awaits ``agent.run(query)``; the pattern itself offers
``generate_plan``/``execute_plan``/``execute``/``revise_plan``. All of it is
a thin layer over :class:`PlanningAgent`, which does the work: an ``Agent``
keeps one ``PlanningAgent`` per pattern it is driven with.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING, Any, Literal

from waygraph.errors import ConfigError
from waygraph.planning._agent import PlanningAgent
from waygraph.planning._llm import LLM
from waygraph.planning._prompts import DEFAULT_PLANNING_PROMPT
from waygraph.planning._tools import Tool

if TYPE_CHECKING:
    from waygraph.planning._pattern import PlanningPattern
    from waygraph.store import Store

__all__ = ["CALLBACK_NAMES", "Agent", "PlanningCallbacks", "model_from_environment"]

#: The callbacks a :class:`PlanningCallbacks` may carry, in the order they fire.
CALLBACK_NAMES = (
    "on_plan_generated",
    "on_plan_approved",
    "on_step_start",
    "on_step_complete",
    "on_revision_needed",
    "on_plan_revised",
    "on_plan_rejected",
)


class PlanningCallbacks:
    """The planning callbacks as one object: pass functions, or subclass and define methods.

    Every callback is optional, called with keyword arguments only, and may
    be sync or async; see :class:`PlanningAgent` for what each may return.
    Unset callbacks are None.

    Example:
        >>> seen = []
        >>> callbacks = PlanningCallbacks(on_step_start=lambda step, **_: seen.append(step.id))
        >>> callbacks.on_step_start is not None, callbacks.on_plan_approved
        (True, None)
        >>> class Audit(PlanningCallbacks):
        ...     def on_step_complete(self, step, result, **future_kwargs):
        ...         print(step.id, result.status)
        >>> Audit().on_step_complete is not None
        True
    """

    # Class-level None so a subclass's methods are found unless a function
    # passed to __init__ replaces them on the instance.
    on_plan_generated: Callable[..., Any] | None = None
    on_plan_approved: Callable[..., Any] | None = None
    on_step_start: Callable[..., Any] | None = None
    on_step_complete: Callable[..., Any] | None = None
    on_revision_needed: Callable[..., Any] | None = None
    on_plan_revised: Callable[..., Any] | None = None
    on_plan_rejected: Callable[..., Any] | None = None

    def __init__(
        self,
        *,
        on_plan_generated: Callable[..., Any] | None = None,
        on_plan_approved: Callable[..., Any] | None = None,
        on_step_start: Callable[..., Any] | None = None,
        on_step_complete: Callable[..., Any] | None = None,
        on_revision_needed: Callable[..., Any] | None = None,
        on_plan_revised: Callable[..., Any] | None = None,
        on_plan_rejected: Callable[..., Any] | None = None,
    ) -> None:
        given = {
            "on_plan_generated": on_plan_generated,
            "on_plan_approved": on_plan_approved,
            "on_step_start": on_step_start,
            "on_step_complete": on_step_complete,
            "on_revision_needed": on_revision_needed,
            "on_plan_revised": on_plan_revised,
            "on_plan_rejected": on_plan_rejected,
        }
        for name, hook in given.items():
            if hook is not None:
                if not callable(hook):
                    raise ConfigError(f"PlanningCallbacks: {name} must be callable, not {hook!r}")
                setattr(self, name, hook)

    def as_keywords(self) -> dict[str, Callable[..., Any] | None]:
        """The callbacks as :class:`PlanningAgent` keyword arguments."""
        return {name: getattr(self, name, None) for name in CALLBACK_NAMES}

    def __repr__(self) -> str:
        set_ = [name for name, hook in self.as_keywords().items() if hook is not None]
        return f"{type(self).__name__}({', '.join(set_) or 'none set'})"


def _callbacks_keywords(callbacks: Any) -> dict[str, Callable[..., Any] | None]:
    if callbacks is None:
        return dict.fromkeys(CALLBACK_NAMES)
    if isinstance(callbacks, PlanningCallbacks):
        return callbacks.as_keywords()
    # Any object with some of the methods will do (duck typing, as the seed allowed).
    found = {name: getattr(callbacks, name, None) for name in CALLBACK_NAMES}
    if not any(found.values()):
        raise ConfigError(
            f"callbacks must be a PlanningCallbacks (or have one of {', '.join(CALLBACK_NAMES)}); "
            f"got {type(callbacks).__name__}"
        )
    for name, hook in found.items():
        if hook is not None and not callable(hook):
            raise ConfigError(f"callbacks.{name} must be callable, not {hook!r}")
    return found


def model_from_environment() -> LLM:
    """An :class:`OpenAILLM` for ``$OPENAI_MODEL`` at ``$OPENAI_BASE_URL``.

    The key is ``$OPENAI_API_KEY`` (local servers need none). Raises
    :class:`ConfigError` saying what to set when there is no model.

    Example:
        >>> import os
        >>> os.environ.update(OPENAI_MODEL="qwen2.5", OPENAI_BASE_URL="http://127.0.0.1:9/v1")
        >>> model_from_environment().model
        'qwen2.5'
        >>> for name in ("OPENAI_MODEL", "OPENAI_BASE_URL"):
        ...     del os.environ[name]
    """
    from waygraph.planning._llm import OpenAILLM

    model = os.environ.get("OPENAI_MODEL")
    base_url = os.environ.get("OPENAI_BASE_URL")
    key = os.environ.get("OPENAI_API_KEY")
    if not model or not (base_url or key):
        raise ConfigError(
            "Agent needs a model: pass llm=OpenAILLM(model, base_url=...), or set "
            "OPENAI_MODEL and OPENAI_BASE_URL (or OPENAI_API_KEY for OpenAI itself)"
        )
    return OpenAILLM(model, base_url=base_url, api_key=key or "not-needed")


class Agent:
    """An agent that plans with ``pattern``: ``await agent.run(query)``.

    ``llm`` executes (tools reach it through their ``StepContext``) and, unless
    ``planning_model`` is given, also plans; without it (as the Planning
    pattern document's examples write ``Agent(...)``), the model comes from
    the environment (:func:`model_from_environment`). ``system_prompt`` is the agent's
    standing instructions: the planning model reads them before waygraph's own
    planning instructions in every plan request (generation, repair,
    revision, decomposition). ``callbacks`` is a :class:`PlanningCallbacks`.
    ``store`` keeps every run so :meth:`resume` can continue it after a crash
    (default: the Navigator's store; see :class:`PlanningAgent`).

    Example:
        >>> from waygraph.planning import OpenAILLM, PlanningPattern
        >>> from waygraph.testing import ScriptedChatServer
        >>> def add(a: int, b: int) -> int:
        ...     return a + b
        >>> plan_json = ('{"goal": "add", "steps": [{"id": "s1", "action": "add",'
        ...              ' "parameters": {"a": 2, "b": 3}, "dependencies": []}]}')
        >>> import asyncio
        >>> with ScriptedChatServer([plan_json]) as server:
        ...     agent = Agent(pattern=PlanningPattern(), tools=[add], system_prompt="Be exact.",
        ...                   llm=OpenAILLM(base_url=server.base_url, model="m", api_key="k"))
        ...     result = asyncio.run(agent.run("add 2 and 3"))
        >>> result.success, result.final_output
        (True, 5)
    """

    def __init__(
        self,
        pattern: PlanningPattern | None = None,
        tools: Iterable[Callable[..., Any] | Tool] = (),
        llm: LLM | None = None,
        system_prompt: str | None = None,
        callbacks: PlanningCallbacks | Any = None,
        *,
        planning_model: LLM | None = None,
        side_effect_tools: Collection[str] = (),
        store: str | Store | Literal[False] | None = None,
    ) -> None:
        from waygraph.planning._pattern import PlanningPattern

        if llm is None:
            llm = model_from_environment()
        if pattern is not None and not isinstance(pattern, PlanningPattern):
            raise ConfigError(f"pattern must be a PlanningPattern, not {type(pattern).__name__}")
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise ConfigError(f"system_prompt must be text, not {type(system_prompt).__name__}")
        self.pattern = pattern or PlanningPattern()
        self.llm = llm
        self.planning_model = planning_model
        self.system_prompt = system_prompt or None
        self.callbacks = callbacks
        self._hooks: dict[str, Any] = dict(_callbacks_keywords(callbacks))
        self._tools = list(tools)
        self._side_effect_tools = tuple(side_effect_tools)
        self._store = store
        self._engines: list[tuple[PlanningPattern, PlanningAgent]] = []
        # Built now so a bad tool fails at construction, not at the first run.
        self._own = self.engine(self.pattern)

    @property
    def tools(self) -> dict[str, Tool]:
        """The registered tools by name."""
        return dict(self._own.tools.items())

    def engine(self, pattern: PlanningPattern) -> PlanningAgent:
        """The :class:`PlanningAgent` that runs this agent with ``pattern`` (one per pattern)."""
        for known, engine in self._engines:
            if known is pattern:
                return engine
        effective = pattern
        if self.system_prompt:
            opening = pattern.planning_prompt or DEFAULT_PLANNING_PROMPT
            effective = pattern.model_copy(
                update={"planning_prompt": f"{self.system_prompt}\n\n{opening}"}
            )
        engine = PlanningAgent(
            self.llm,
            tools=self._tools,
            pattern=effective,
            planning_llm=self.planning_model,
            side_effect_tools=self._side_effect_tools,
            store=self._store,
            **self._hooks,
        )
        self._engines.append((pattern, engine))
        return engine

    async def run(self, query: str) -> Any:
        """Plan, approve and run ``query`` with the agent's pattern; a :class:`PlanExecutionResult`.

        Never raises for an invalid or rejected plan: ``success`` is False and
        ``final_output`` says why.
        """
        return await self.pattern.execute(self, query)

    async def resume(self, run_id: str, *, takeover: bool = False) -> Any:
        """Continue the stored run ``run_id`` after a crash (see :meth:`PlanningAgent.resume`)."""
        return await self._own.resume(run_id, takeover=takeover)

    def get_plan(self) -> Any:
        """The plan of the latest run with the agent's own pattern (None before one)."""
        return self._own.get_plan()

    def get_execution_state(self) -> Any:
        """The execution state of the latest run with the agent's own pattern."""
        return self._own.get_execution_state()

    def __repr__(self) -> str:
        return f"Agent(tools={sorted(self.tools)}, pattern={self.pattern!r})"
