"""How ``waygraph plan`` runs its agent: until the plan ends, or Ctrl-C stops it.

Kept apart from :mod:`waygraph.cli.plan_cmds` (the command's options and
set-up): the event loop, the signal handlers that cancel the run, closing the
model clients, and the partial result an interrupted run leaves.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from waygraph.cli.app import err_console

if TYPE_CHECKING:
    from waygraph.planning import PlanExecutionResult, PlanningAgent

__all__ = ["interrupted_result", "run_plan"]


def interrupted_result(agent: PlanningAgent, clock: float) -> PlanExecutionResult:
    """What an interrupted run leaves: the steps that finished, and what was still to do.

    ``clock`` is the :func:`time.perf_counter` reading when the run started.

    Example:
        >>> import time
        >>> from waygraph.planning import PlanningAgent
        >>> def echo(text: str) -> str:
        ...     '''Say ``text`` back.'''
        ...     return text
        >>> agent = PlanningAgent(object(), tools=[echo], store="memory://")
        >>> interrupted_result(agent, time.perf_counter()).final_output
        'interrupted (Ctrl-C) before the plan ran'
    """
    from waygraph.planning import PlanExecutionResult, StepStatus, TokenUsage

    state = agent.get_execution_state()
    plan = agent.get_plan()
    if state is None:
        why = "interrupted (Ctrl-C) before the plan ran"
        results: dict[str, Any] = {}
    else:
        results = dict(state.results)
        parts = []
        for label, status in (
            ("completed", StepStatus.COMPLETED),
            ("failed", StepStatus.FAILED),
            ("running when stopped", StepStatus.RUNNING),
            ("not started", StepStatus.PENDING),
        ):
            ids = state.with_status(status)
            if ids:
                parts.append(f"{label}: {', '.join(ids)}")
        why = "interrupted (Ctrl-C); " + "; ".join(parts)
    return PlanExecutionResult(
        success=False,
        plan=plan,
        final_plan=state.plan if state is not None else plan,
        step_results=results,
        final_output=why,
        revision_count=state.revision_count if state is not None else 0,
        execution_state=state,
        token_usage=state.token_usage if state is not None else TokenUsage(),
        execution_time=time.perf_counter() - clock,
    )


def run_plan(
    agent: PlanningAgent,
    start: Callable[[], Coroutine[Any, Any, PlanExecutionResult]],
    show: Callable[[PlanExecutionResult, bool], None],
    interrupted_event: threading.Event,
) -> tuple[PlanExecutionResult, bool]:
    """Run ``start()`` (a new run or a resume); Ctrl-C or SIGTERM stops it.

    Returns the result and whether the run was interrupted; the partial
    result is then shown at once.

    Stopping sets ``interrupted_event``, which kills the workspace tools'
    running commands. ``show`` runs inside the event loop, before the loop
    waits for tool threads that are still busy (Python cannot stop a thread:
    your own tools end when they end). A second Ctrl-C quits at once.

    Example:
        >>> import threading
        >>> from types import SimpleNamespace
        >>> agent = SimpleNamespace(llm=None, planning_llm=None)  # a PlanningAgent's clients
        >>> async def start():
        ...     return SimpleNamespace(success=True, execution_state=None)
        >>> result, interrupted = run_plan(agent, start, lambda r, i: None, threading.Event())
        >>> result.success, interrupted
        (True, False)
    """
    # Imported here, not at the top: every other command starts without asyncio.
    import asyncio

    from waygraph.planning import StepStatus

    clock = time.perf_counter()
    outcome: dict[str, tuple[PlanExecutionResult, bool]] = {}

    async def main() -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(start())
        stopped = False

        def stop() -> None:
            nonlocal stopped
            stopped = True
            interrupted_event.set()
            task.cancel()

        installed = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            # Not possible outside the main thread or on Windows: Ctrl-C then
            # arrives as KeyboardInterrupt, handled below.
            with contextlib.suppress(ValueError, NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop)
                installed.append(sig)
        try:
            try:
                result, interrupted = await task, False
            except asyncio.CancelledError:
                if not stopped:
                    raise
                result, interrupted = interrupted_result(agent, clock), True
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)
            for llm in {
                id(agent.llm): agent.llm,
                id(agent.planning_llm): agent.planning_llm,
            }.values():
                aclose = getattr(llm, "aclose", None)
                if aclose is not None:
                    with contextlib.suppress(Exception):
                        await aclose()
        outcome["result"] = (result, interrupted)
        show(result, interrupted)
        state = result.execution_state
        if interrupted and state is not None and state.with_status(StepStatus.RUNNING):
            err_console.print(
                "waiting for the running steps' tools to end (Ctrl-C again to quit now)",
                highlight=False,
                soft_wrap=True,
            )

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        interrupted_event.set()
        if "result" in outcome:
            # Already shown: a second Ctrl-C while tool threads finish. Leave now.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(130)
        result = interrupted_result(agent, clock)
        show(result, True)
        return result, True
    return outcome["result"]
