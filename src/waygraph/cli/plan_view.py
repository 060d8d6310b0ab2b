"""How ``waygraph plan`` shows a run: a live table on a terminal, one line per event otherwise."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from waygraph.cli.app import plain
from waygraph.planning import StepStatus

if TYPE_CHECKING:
    from waygraph.planning import (
        Plan,
        PlanExecutionResult,
        PlanExecutionState,
        PlanRevision,
        PlanStep,
        StepResult,
    )

__all__ = ["LiveView", "PlainView", "RunView", "as_text"]

#: Characters of a step's result shown in a table cell or a progress line.
RESULT_CHARS = 70

_STATUS_STYLE = {
    StepStatus.PENDING: "dim",
    StepStatus.RUNNING: "bold yellow",
    StepStatus.COMPLETED: "green",
    StepStatus.FAILED: "bold red",
    StepStatus.SKIPPED: "magenta",
    StepStatus.BLOCKED: "red",
    StepStatus.REVISED: "blue",
}


def as_text(value: Any) -> str:
    """A step's output as text: strings as they are, anything else as JSON."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def _short(value: Any, limit: int = RESULT_CHARS) -> str:
    """One line of at most ``limit`` characters."""
    text = " ".join(as_text(value).split())
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
        """Hook: one pending row per step of the plan about to run."""
        with self._lock:
            # Called before anything runs (again after an edit at the console).
            self.rows = {(0, step.id): _Row(step, 0) for step in plan.steps}
        self._event("plan", None, self._plan_line(plan))

    def on_step_start(
        self, *, step: PlanStep, state: PlanExecutionState, depth: int = 0, **future_kwargs: Any
    ) -> None:
        """Hook: mark the step running and start its clock."""
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
        """Hook: mark the step finished with its result."""
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
        """Hook: note a revision (trigger, step and chosen strategy) among the last ones."""
        where = f" at {step_id}" if step_id else ""
        line = f"{_value(trigger)}{where} -> {_value(strategy)}: {_short(reason, 120)}"
        with self._lock:
            self.revisions.append(line)
        self._event("revision", None, line)

    def on_plan_revised(
        self,
        *,
        revision: PlanRevision,
        state: PlanExecutionState,
        depth: int = 0,
        **future_kwargs: Any,
    ) -> None:
        """Show the revised plan's steps at once (not at the next step event)."""
        with self._lock:
            self._sync(state, depth)
        if revision.applied and revision.new_plan is not None:
            self._event("revised", None, self._plan_line(revision.new_plan))

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
        elif kind == "revised":
            self._line(f"revised:  {text}")
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
        """Print the run's summary line, then its output or what went wrong."""
        self._line(self.summary(result, interrupted))
        if result.success:
            self._line(f"output: {as_text(result.final_output).rstrip()}")
        elif result.final_output is not None:
            self._line(as_text(result.final_output).rstrip())


class LiveView(RunView):
    """A live table of the steps (a rich :class:`~rich.live.Live`), for a terminal."""

    def __init__(self, target: Console) -> None:
        super().__init__()
        self.console = target
        self._live: Live | None = None
        self._status: Any = None

    def planning(self, what: str) -> None:
        self._status = self.console.status(f"planning: {plain(what)}")
        self._status.start()

    def _end_planning(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def plan_ready(self, *, plan: Plan, **future_kwargs: Any) -> None:
        """End the planning spinner and show the plan's steps."""
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
        # Six text columns, then the step's output or error as it came.
        cells: list[tuple[str, str, str, str, str, str, Any]] = []
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
                plain(sid),
                plain(action),
                plain(after),
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
        """Print the run's summary line, then its output or what went wrong."""
        style = "green" if result.success else ("yellow" if interrupted else "red")
        line = self.summary(result, interrupted)
        head, _, rest = line.partition(":")
        self.console.print(
            Text.assemble((head, f"bold {style}"), ":" + rest), highlight=False, soft_wrap=True
        )
        if result.success:
            self.console.print(
                Text("output: " + as_text(result.final_output).rstrip()),
                highlight=False,
                soft_wrap=True,
            )
        elif result.final_output is not None:
            self.console.print(
                Text(as_text(result.final_output).rstrip()), highlight=False, soft_wrap=True
            )
