"""``waygraph plan "GOAL"``: a model writes a plan, waygraph runs it as a DAG, you watch.

The command builds a :class:`~waygraph.planning.PlanningAgent` over an
OpenAI-compatible endpoint with tools confined to a workspace folder
(``shell``, ``write_file``, ``read_file``) plus any functions ``--tools``
names, optionally has a person approve the plan at the console
(``--approve``), and shows the steps as they start and finish: a live table
on a terminal, one line per event otherwise (so the output can be piped and
tested). ``--json`` prints the :class:`~waygraph.planning.PlanExecutionResult`.

Exit codes: 0 the plan succeeded; 1 it ran, or was refused or invalid, and
did not succeed; 2 a usage or input error, including a model that cannot be
reached or answers with an error while planning; 130 stopped by Ctrl-C
(partial results are shown).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import urlparse

import typer
from pydantic import Field
from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from waygraph.cli.app import app, console, err_console, friendly_errors
from waygraph.errors import ConfigError
from waygraph.eval.loop import COMMAND_TIMEOUT, run_shell
from waygraph.eval.loop import write_file as write_in_workspace
from waygraph.planning import ExecutionMode, StepStatus

if TYPE_CHECKING:
    from waygraph.planning import (
        Plan,
        PlanExecutionResult,
        PlanExecutionState,
        PlanningAgent,
        PlanStep,
        StepResult,
    )

__all__ = ["CommandFailed", "load_tools", "plan_command", "workspace_tools"]

#: Characters of a step's result shown in a table cell or a progress line.
RESULT_CHARS = 70
#: Largest file ``read_file`` returns whole (a model cannot use more in one step anyway).
READ_LIMIT = 1_000_000
#: Names of the workspace tools (a ``--tools`` function may not reuse them).
WORKSPACE_TOOLS = ("shell", "write_file", "read_file")

_STATUS_STYLE = {
    StepStatus.PENDING: "dim",
    StepStatus.RUNNING: "bold yellow",
    StepStatus.COMPLETED: "green",
    StepStatus.FAILED: "bold red",
    StepStatus.SKIPPED: "magenta",
    StepStatus.BLOCKED: "red",
    StepStatus.REVISED: "blue",
}


# ------------------------------------------------------------------ tools


class CommandFailed(RuntimeError):
    """A ``shell`` command exited with a non-zero code, which fails its step."""


def workspace_tools(
    workspace: Path, *, timeout: float = COMMAND_TIMEOUT
) -> list[Callable[..., str]]:
    """The ``shell``, ``write_file`` and ``read_file`` tools, confined to ``workspace``.

    They use the eval loop's confinement (``waygraph.eval.loop``): commands run
    in the folder with a minimal environment and ``timeout``, and commands or
    paths that leave it are refused. That keeps an honest model inside; it is
    not a sandbox against a hostile one. A refused or failing call raises, so
    the step fails (and is retried, falls back or triggers a revision).

    Example:
        >>> import tempfile
        >>> shell, write_file, read_file = workspace_tools(Path(tempfile.mkdtemp()))
        >>> write_file("notes/a.txt", "hi")
        'wrote notes/a.txt (1 lines, 2 bytes)'
        >>> read_file("notes/a.txt"), shell("cat notes/a.txt")
        ('hi', 'hi')
    """
    root = workspace.resolve()

    def shell(
        command: Annotated[str, Field(description="One shell command, e.g. `ls -la`.")],
    ) -> str:
        """Run one shell command in the workspace folder and return its output (stdout and
        stderr together); a non-zero exit code fails the step. Paths must stay inside the
        workspace."""
        output, code = run_shell(command, root, timeout)
        if code != 0:
            raise CommandFailed(f"exit code {code}: {_tail(output)}")
        return output

    def write_file(
        path: Annotated[str, Field(description="Path relative to the workspace.")],
        content: Annotated[str, Field(description="The whole new content of the file.")],
    ) -> str:
        """Write (create or replace) a text file in the workspace folder; missing folders
        are created."""
        message, code = write_in_workspace(path, content, root)
        if code != 0:
            raise OSError(message)
        return message

    def read_file(
        path: Annotated[str, Field(description="Path relative to the workspace.")],
    ) -> str:
        """Read a text file in the workspace folder and return its content."""
        target = (root / path).resolve()
        if (
            not path
            or Path(path).is_absolute()
            or path.startswith("~")
            or root not in target.parents
        ):
            raise PermissionError(f"refused: {path!r} leaves the workspace")
        if not target.is_file():
            raise FileNotFoundError(f"no file {path!r} in the workspace")
        if target.stat().st_size > READ_LIMIT:
            raise ValueError(f"{path!r} is larger than {READ_LIMIT} bytes; read a part with shell")
        return target.read_text(encoding="utf-8", errors="replace")

    return [shell, write_file, read_file]


def _tail(output: str, limit: int = 400) -> str:
    """The end of a command's output (where the error usually is), on one line."""
    text = " ".join(output.split())
    return text if len(text) <= limit else "..." + text[-limit:]


def load_tools(target: str) -> list[Callable[..., Any]]:
    """The functions ``--tools MODULE[:ATTR]`` names.

    ``ATTR`` names a list (or tuple) of functions, or one function; without
    it, every public function (name not starting with ``_``) the module
    itself defines. Errors are :class:`ConfigError` naming the module.

    Example:
        >>> [f.__name__ for f in load_tools("json:dumps")]
        ['dumps']
    """
    # Imported here: importing event_cmds registers its commands, and the import
    # order in waygraph.cli sets the order `waygraph --help` lists them in.
    from waygraph.cli.event_cmds import load_user_module

    module, attr = load_user_module(target)
    where = getattr(module, "__file__", None) or module.__name__
    if attr is None:
        found = [
            value
            for name, value in vars(module).items()
            if not name.startswith("_")
            and inspect.isfunction(value)
            and value.__module__ == module.__name__
        ]
        if not found:
            raise ConfigError(
                f"{where}: defines no public functions to use as tools; define some, "
                "or name a list of them as MODULE:ATTR"
            )
        return found
    if not hasattr(module, attr):
        raise ConfigError(f"{where}: has no attribute {attr!r} (expected a list of functions)")
    value = getattr(module, attr)
    items = list(value) if isinstance(value, list | tuple) else [value]
    not_callable = [repr(item)[:40] for item in items if not callable(item)]
    if not items or not_callable:
        raise ConfigError(
            f"{where}:{attr} must be a list of functions; "
            + (f"not callable: {', '.join(not_callable)}" if not_callable else "it is empty")
        )
    return items


def _workspace_context(root: Path) -> str:
    """What the planning model is told about the workspace: where paths start, what is there."""
    try:
        names = sorted(
            p.name + ("/" if p.is_dir() else "")
            for p in root.iterdir()
            if not p.name.startswith(".")
        )
    except OSError:
        names = []
    shown = ", ".join(names[:40]) + (f" and {len(names) - 40} more" if len(names) > 40 else "")
    holds = f"It holds: {shown}." if names else "It is empty."
    return (
        "The shell, write_file and read_file tools work inside one folder, the workspace; "
        f"give paths relative to it. {holds}"
    )


# ------------------------------------------------------------------ the view


def _text(value: Any) -> str:
    """A step's output as text: strings as they are, anything else as JSON."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def _short(value: Any, limit: int = RESULT_CHARS) -> str:
    """One line of at most ``limit`` characters."""
    text = " ".join(_text(value).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class _Row:
    step: PlanStep
    depth: int
    status: StepStatus = StepStatus.PENDING
    started: float | None = None
    result: StepResult | None = None
    announced: bool = False  # a progress line told how it ended


class RunView:
    """Follows a run through the agent's callbacks; subclasses show it.

    Callbacks come from the event loop's thread; the live view renders from
    its refresh thread, hence the lock.
    """

    def __init__(self) -> None:
        self.rows: dict[tuple[int, str], _Row] = {}
        self.revisions: list[str] = []
        self.tokens = 0
        self.clock = time.perf_counter()
        self._lock = threading.Lock()

    # -- hooks for subclasses

    def planning(self, what: str) -> None:
        """Planning has begun."""

    def start(self) -> None:
        """The plan is about to run."""

    def stop(self) -> None:
        """The run is over (or interrupted)."""

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Get out of the way of a question asked at the console."""
        yield

    def _event(self, kind: str, row: _Row | None, text: str = "") -> None:
        """A step started or ended, a revision was considered."""

    # -- the agent's callbacks (keyword arguments only, as the agent calls them)

    def plan_ready(self, *, plan: Plan, **future_kwargs: Any) -> None:
        with self._lock:
            # Called before anything runs (again after an edit at the console).
            self.rows = {(0, step.id): _Row(step, 0) for step in plan.steps}
        self._event("plan", None, self._plan_line(plan))

    def on_step_start(
        self, *, step: PlanStep, state: PlanExecutionState, depth: int = 0, **future_kwargs: Any
    ) -> None:
        with self._lock:
            self._sync(state, depth)
            row = self._row(step, depth)
            row.status, row.started, row.result = StepStatus.RUNNING, time.perf_counter(), None
        self._event("start", row)

    def on_step_complete(
        self,
        *,
        step: PlanStep,
        result: StepResult,
        state: PlanExecutionState,
        depth: int = 0,
        **future_kwargs: Any,
    ) -> None:
        with self._lock:
            self._sync(state, depth)
            row = self._row(step, depth)
            row.status, row.result, row.announced = result.status, result, True
        self._event("end", row)

    def on_revision_needed(
        self,
        *,
        trigger: str,
        reason: str,
        step_id: str | None = None,
        strategy: str | None = None,
        **future_kwargs: Any,
    ) -> None:
        where = f" at {step_id}" if step_id else ""
        line = f"{_value(trigger)}{where} -> {_value(strategy)}: {_short(reason, 120)}"
        with self._lock:
            self.revisions.append(line)
        self._event("revision", None, line)

    def finish(self, result: PlanExecutionResult) -> None:
        """Take the final statuses from ``result`` (skips, blocks, revisions)."""
        with self._lock:
            if result.execution_state is not None:
                self._sync(result.execution_state, 0)
                self.tokens = result.token_usage.total_tokens
            for sid, step_result in result.step_results.items():
                row = self.rows.get((0, sid))
                if row is not None:
                    row.status, row.result = step_result.status, step_result
            unannounced = [
                r
                for r in self.rows.values()
                if not r.announced and r.status not in (StepStatus.PENDING, StepStatus.RUNNING)
            ]
            for row in unannounced:
                row.announced = True
        for row in unannounced:
            self._event("end", row)

    # -- bookkeeping

    def _row(self, step: PlanStep, depth: int) -> _Row:
        key = (depth, step.id)
        if key not in self.rows or self.rows[key].step != step:
            self.rows[key] = _Row(step, depth)
        return self.rows[key]

    def _sync(self, state: PlanExecutionState, depth: int) -> None:
        """Add steps a revision brought in; mark the ones it replaced."""
        if depth == 0:
            self.tokens = state.token_usage.total_tokens
        for step in state.plan.steps:
            row = self.rows.get((depth, step.id))
            if row is None or (row.step != step and row.status != StepStatus.RUNNING):
                self.rows[(depth, step.id)] = _Row(step, depth)
        for sid, status in state.statuses.items():
            row = self.rows.get((depth, sid))
            if row is not None and status in (
                StepStatus.REVISED,
                StepStatus.SKIPPED,
                StepStatus.BLOCKED,
            ):
                row.status = status

    @staticmethod
    def _plan_line(plan: Plan) -> str:
        count = len(plan.steps)
        return f"{count} step{'s' if count != 1 else ''} ({', '.join(plan.step_ids)})"

    def summary(self, result: PlanExecutionResult, interrupted: bool = False) -> str:
        """``success: 3 completed, 0 revisions, 181 tokens, 0.21 s``."""
        if interrupted:
            head = "interrupted"
        elif result.success:
            head = "success"
        else:
            head = "failed" if result.execution_state is not None else "not run"
        counts = Counter(r.status for r in self.rows.values())
        parts = [f"{counts[s]} {s.value}" for s in StepStatus if counts[s]]
        if head == "not run":
            parts = []  # every step is pending: nothing to count
        revisions = result.revision_count
        parts.append(f"{revisions} revision{'s' if revisions != 1 else ''}")
        parts.append(f"{result.token_usage.total_tokens} tokens")
        parts.append(f"{result.execution_time:.2f} s")
        return f"{head}: {', '.join(parts)}"


def _value(item: Any) -> str:
    return str(getattr(item, "value", item))


class PlainView(RunView):
    """One line per event, for pipes, logs and tests.

    ``plan: 2 steps (s1, s2)``, ``start     s1  shell``, ``completed s1  0.01 s  hello``,
    ``revision  step_failed at s2 -> replan_remaining: ...``.
    """

    def __init__(self, *, err: bool = False) -> None:
        super().__init__()
        self.err = err

    def _line(self, text: str) -> None:
        typer.echo(text, err=self.err)

    def planning(self, what: str) -> None:
        self._line(f"planning: {what}")

    def _event(self, kind: str, row: _Row | None, text: str = "") -> None:
        if kind == "plan":
            self._line(f"plan: {text}")
        elif kind == "revision":
            self._line(f"revision  {text}")
        elif row is not None:
            name = "  " * row.depth + row.step.id
            if kind == "start":
                self._line(f"start     {name}  {row.step.action}")
                return
            result = row.result
            took = f"  {result.duration:.2f} s" if result and result.duration else ""
            detail = ""
            if result is not None:
                shown = result.error if result.status != StepStatus.COMPLETED else result.output
                detail = f"  {_short(shown)}" if shown not in (None, "") else ""
            self._line(f"{row.status.value:<9} {name}{took}{detail}")

    def report(self, result: PlanExecutionResult, interrupted: bool = False) -> None:
        self._line(self.summary(result, interrupted))
        if result.success:
            self._line(f"output: {_text(result.final_output).rstrip()}")
        elif result.final_output is not None:
            self._line(_text(result.final_output).rstrip())


class LiveView(RunView):
    """A live table of the steps (a rich :class:`~rich.live.Live`), for a terminal."""

    def __init__(self, target: Console) -> None:
        super().__init__()
        self.console = target
        self._live: Live | None = None
        self._status: Any = None

    def planning(self, what: str) -> None:
        self._status = self.console.status(f"planning: {escape(what)}")
        self._status.start()

    def _end_planning(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def plan_ready(self, *, plan: Plan, **future_kwargs: Any) -> None:
        self._end_planning()
        super().plan_ready(plan=plan)

    def start(self) -> None:
        self._end_planning()
        if self._live is None:
            self._live = Live(
                console=self.console,
                get_renderable=self.render,
                refresh_per_second=8,
                transient=False,
            )
            self._live.start()

    def stop(self) -> None:
        self._end_planning()
        if self._live is not None:
            self._live.stop()  # leaves the last table on the screen
            self._live = None

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        running = self._live is not None
        self.stop()
        try:
            yield
        finally:
            if running:
                self.start()

    def render(self) -> Group:
        """The table of steps and a line of totals."""
        now = time.perf_counter()
        with self._lock:
            rows = list(self.rows.values())
            revisions = list(self.revisions[-3:])
            tokens = self.tokens
        cells = []
        for row in rows:
            result, step = row.result, row.step
            if row.status == StepStatus.RUNNING and row.started is not None:
                took = f"{now - row.started:.1f} s"
            else:
                took = f"{result.duration:.2f} s" if result and result.duration else ""
            value = None
            if result is not None:
                value = result.output if row.status == StepStatus.COMPLETED else result.error
            cells.append(
                (
                    "  " * row.depth + step.id,
                    step.action + (" (fallback)" if result and result.used_fallback else ""),
                    ", ".join(step.dependencies) or "-",
                    row.status.value,
                    str(result.attempts) if result and result.attempts else "",
                    took,
                    value,
                )
            )
        # The result column gets what the other columns leave, so on a narrow
        # terminal it is the one cut short, not the ids and statuses.
        headers = ("step", "action", "after", "status", "tries", "time")
        used = sum(max([len(h), *(len(c[i]) for c in cells)]) + 3 for i, h in enumerate(headers))
        room = max(10, min(RESULT_CHARS, self.console.width - used - 4))
        table = Table(expand=False)
        for header in headers:
            right = header in ("tries", "time")
            table.add_column(header, no_wrap=True, justify="right" if right else "left")
        table.add_column("result", no_wrap=True, overflow="ellipsis")
        for row, (sid, action, after, status, tries, took, value) in zip(rows, cells, strict=True):
            shown = _short(value, room) if value not in (None, "") else ""
            table.add_row(
                sid,
                action,
                after,
                Text(status, style=_STATUS_STYLE[row.status]),
                tries,
                took,
                Text(shown, style="red" if row.status == StepStatus.FAILED else ""),
            )
        counts = Counter(r.status for r in rows)
        totals = ", ".join(f"{counts[s]} {s.value}" for s in StepStatus if counts[s])
        footer = Text(f"{totals} | {tokens} tokens | {now - self.clock:.1f} s", style="dim")
        parts: list[Any] = [table, footer]
        parts += [Text(f"revision: {line}", style="blue") for line in revisions]
        return Group(*parts)

    def report(self, result: PlanExecutionResult, interrupted: bool = False) -> None:
        style = "green" if result.success else ("yellow" if interrupted else "red")
        line = self.summary(result, interrupted)
        head, _, rest = line.partition(":")
        self.console.print(
            Text.assemble((head, f"bold {style}"), ":" + rest), highlight=False, soft_wrap=True
        )
        if result.success:
            self.console.print(
                Text("output: " + _text(result.final_output).rstrip()),
                highlight=False,
                soft_wrap=True,
            )
        elif result.final_output is not None:
            self.console.print(
                Text(_text(result.final_output).rstrip()), highlight=False, soft_wrap=True
            )


# ------------------------------------------------------------------ running


def _interrupted_result(agent: PlanningAgent, clock: float) -> PlanExecutionResult:
    """What an interrupted run leaves: the steps that finished, and what was still to do."""
    from waygraph.planning import PlanExecutionResult, TokenUsage

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


def _run(
    agent: PlanningAgent,
    goal: str,
    context: str | None,
    show: Callable[[PlanExecutionResult, bool], None],
) -> tuple[PlanExecutionResult, bool]:
    """Run ``goal``; Ctrl-C (or SIGTERM) stops it and the partial result is shown at once.

    ``show`` runs inside the event loop, before the loop waits for tool
    threads that are still busy (Python cannot stop a thread; a shell
    command ends by itself or at its timeout). A second Ctrl-C quits at once.
    """
    clock = time.perf_counter()
    outcome: dict[str, Any] = {}

    async def main() -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(agent.execute(goal, context=context))
        stopped = False

        def stop() -> None:
            nonlocal stopped
            stopped = True
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
                result, interrupted = _interrupted_result(agent, clock), True
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
                "waiting for the running steps' commands to end (Ctrl-C again to quit now)",
                highlight=False,
                soft_wrap=True,
            )

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        if "result" in outcome:
            # Already shown: a second Ctrl-C while tool threads finish. Leave now.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(130)
        result = _interrupted_result(agent, clock)
        show(result, True)
        return result, True
    return outcome["result"]


def _check_url(url: str) -> None:
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ConfigError(
            f"--llm {url!r} is not an http(s) URL; give the base URL of an OpenAI-compatible "
            "API, e.g. http://localhost:11434/v1"
        )


def _approval_io(to_stderr: bool) -> dict[str, Any]:
    """Where ConsoleApproval talks: stdout normally, stderr when stdout carries JSON."""
    if not to_stderr:
        return {}

    def ask(prompt: str) -> str:
        sys.stderr.write(prompt)
        sys.stderr.flush()
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        return line.rstrip("\n")

    return {"input": ask, "output": lambda text: typer.echo(text, err=True)}


@app.command("plan")
@friendly_errors
def plan_command(
    goal: Annotated[
        str, typer.Argument(help="What to achieve, in words.", metavar="GOAL", show_default=False)
    ],
    llm: Annotated[
        str | None,
        typer.Option(
            "--llm",
            help="Base URL of an OpenAI-compatible API, e.g. http://localhost:11434/v1 (Ollama).",
            envvar="OPENAI_BASE_URL",
        ),
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="Model that plans and executes.")
    ] = None,
    approve: Annotated[
        bool,
        typer.Option(
            "--approve",
            help="Show the plan and ask before running it: approve, edit or reject "
            "(revisions are asked too).",
        ),
    ] = False,
    workspace: Annotated[
        Path,
        typer.Option(
            "--workspace",
            help="Folder the shell, write_file and read_file tools are confined to.",
        ),
    ] = Path(),
    tools: Annotated[
        list[str] | None,
        typer.Option(
            "--tools",
            help="Your own tools: MODULE[:ATTR] (dotted name or .py path); ATTR names a list "
            "of functions, else every public function the module defines. Repeatable.",
        ),
    ] = None,
    no_workspace_tools: Annotated[
        bool,
        typer.Option(
            "--no-workspace-tools", help="Offer only the --tools functions (no shell and files)."
        ),
    ] = False,
    mode: Annotated[
        ExecutionMode,
        typer.Option(
            "--mode",
            help="How ready steps run: sequential (one at a time), parallel (up to "
            "--max-parallel at once; the default here), adaptive (side-effect steps alone).",
            case_sensitive=False,
        ),
    ] = ExecutionMode.PARALLEL,
    max_parallel: Annotated[
        int, typer.Option("--max-parallel", min=1, help="Steps running at the same time.")
    ] = 3,
    step_timeout: Annotated[
        float,
        typer.Option(
            "--step-timeout",
            min=0.001,
            help="Seconds one tool call may take (a shell command is killed then).",
        ),
    ] = 60.0,
    retries: Annotated[
        int, typer.Option("--retries", min=0, help="Times a failed step is tried again.")
    ] = 1,
    max_revisions: Annotated[
        int,
        typer.Option(
            "--max-revisions", min=0, help="Plan revisions allowed after failures (0: none)."
        ),
    ] = 3,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key", help="API key (default: $OPENAI_API_KEY; local servers need none)."
        ),
    ] = None,
    planning_model: Annotated[
        str | None,
        typer.Option("--planning-model", help="A different model to write and revise the plan."),
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", min=0.001, help="Seconds to wait for one model reply.")
    ] = 120.0,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="Print the execution result as JSON on stdout (progress on stderr)."
        ),
    ] = False,
) -> None:
    """Have a model plan GOAL with your tools, then run the plan as a DAG and watch it.

    Exit code 0 when the plan succeeded, 1 when it did not (or was refused or
    invalid), 2 for usage or input errors (including a model that cannot be
    reached), 130 when stopped with Ctrl-C.
    """
    from waygraph.planning import (
        ConsoleApproval,
        OpenAILLM,
        Plan,
        PlanningAgent,
        PlanningPattern,
        ToolDefinitionError,
    )

    if not goal.strip():
        raise ConfigError('the goal is empty; say what to achieve: waygraph plan "GOAL" ...')
    if not llm or not model:
        raise ConfigError(
            "--llm URL and --model NAME are required, e.g. "
            'waygraph plan "GOAL" --llm http://localhost:11434/v1 --model qwen2.5-coder:7b'
        )
    _check_url(llm)
    root = workspace.expanduser()
    if not root.is_dir():
        raise ConfigError(f"--workspace {workspace}: no such folder")
    root = root.resolve()

    functions: list[Callable[..., Any]] = []
    if not no_workspace_tools:
        functions += workspace_tools(root, timeout=step_timeout)
    for target in tools or []:
        functions += load_tools(target)
    if not functions:
        raise ConfigError("no tools: drop --no-workspace-tools or add --tools MODULE")
    seen: dict[str, str] = {}
    for fn in functions:
        name = getattr(fn, "__name__", "")
        if name in seen:
            hint = (
                "; rename yours or pass --no-workspace-tools"
                if name in WORKSPACE_TOOLS and not no_workspace_tools
                else ""
            )
            raise ConfigError(f"two tools are named {name!r}{hint}")
        seen[name] = name

    key = api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
    execution_llm = OpenAILLM(model, base_url=llm, api_key=key, timeout=timeout)
    planner_llm = (
        OpenAILLM(planning_model, base_url=llm, api_key=key, timeout=timeout)
        if planning_model
        else None
    )
    pattern = PlanningPattern(
        execution_mode=mode,
        max_parallel=max_parallel,
        step_timeout=step_timeout,
        retry_failed_steps=retries,
        max_revisions=max_revisions,
        allow_revision=max_revisions > 0,
    )

    target = err_console if as_json else console
    view: PlainView | LiveView = LiveView(target) if target.is_terminal else PlainView(err=as_json)
    approval = ConsoleApproval(**_approval_io(as_json)) if approve else None

    def plan_generated(*, plan: Plan, **future_kwargs: Any) -> None:
        view.plan_ready(plan=plan)
        if approval is None:
            view.start()

    async def plan_approved(*, plan: Plan, goal: str, **future_kwargs: Any) -> Plan | bool:
        assert approval is not None
        verdict = await approval(plan=plan, goal=goal)
        if isinstance(verdict, Plan):
            view.plan_ready(plan=verdict)
        view.start()
        return verdict

    async def revision_needed(**kwargs: Any) -> Any:
        view.on_revision_needed(**kwargs)
        if approval is None:
            return None  # the configured strategy (replan the remaining steps)
        with view.paused():
            return await approval.on_revision_needed(**kwargs)

    try:
        agent = PlanningAgent(
            execution_llm,
            tools=functions,
            pattern=pattern,
            planning_llm=planner_llm,
            side_effect_tools=[] if no_workspace_tools else ["shell", "write_file"],
            on_plan_generated=plan_generated,
            on_plan_approved=plan_approved if approval is not None else None,
            on_step_start=view.on_step_start,
            on_step_complete=view.on_step_complete,
            on_revision_needed=revision_needed,
        )
    except ToolDefinitionError as exc:
        raise ConfigError(f"--tools: {exc}") from None

    context = None if no_workspace_tools else _workspace_context(root)
    planner_name = planning_model or model
    view.planning(f"asking {planner_name} at {llm}")

    def show(result: PlanExecutionResult, interrupted: bool) -> None:
        view.finish(result)
        view.stop()
        if result.plan is None and not interrupted:
            # No plan at all: the model could not be used (unreachable, HTTP error).
            err_console.print(
                f"[bold red]error:[/] {escape(_text(result.final_output))} (is {escape(llm)} "
                f"an OpenAI-compatible server with model {escape(planner_name)}?)",
                highlight=False,
                soft_wrap=True,
            )
        else:
            view.report(result, interrupted)
        if as_json:
            data = result.model_dump(mode="json", fallback=str, warnings=False)
            typer.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))

    try:
        result, interrupted = _run(agent, goal, context, show)
    finally:
        view.stop()
    if interrupted:
        raise typer.Exit(130)
    if result.plan is None:
        raise typer.Exit(2)
    if not result.success:
        raise typer.Exit(1)
