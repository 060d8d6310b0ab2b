"""``waygraph plan --dry-run``: plan and validate, show what would run, run nothing.

The planning model writes the plan as for a real run (invalid plans are sent
back to it as usual); then, instead of running it, the command prints the
:class:`~waygraph.planning.DryRunReport`: a table of the dependency layers
and their batches under ``--max-parallel``, the critical path, the estimated
tokens against ``--token-budget``, and every validation problem. With
``--json`` stdout carries the report's JSON and nothing else.

Exit codes: 0 the plan is valid; 1 it is not; 2 no plan could be made (the
model cannot be reached or answers with an error); 130 stopped by Ctrl-C.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from waygraph.cli.app import console, err_console, plain

if TYPE_CHECKING:
    from waygraph.planning import DryRunReport, PlanExecutionResult, PlanningAgent

__all__ = ["count", "render_report", "run_dry"]

#: Characters of a step's parameters shown in the table.
PARAMETER_CHARS = 48


def count(n: int, word: str) -> str:
    """``n`` and ``word``, plural unless ``n`` is 1."""
    return f"{n} {word}{'s' * (n != 1)}"


def _parameters(parameters: dict[str, Any]) -> str:
    text = ", ".join(f"{key}={value!r}" for key, value in parameters.items())
    return text if len(text) <= PARAMETER_CHARS else text[: PARAMETER_CHARS - 3] + "..."


def render_report(report: DryRunReport) -> RenderableType:
    """The report for a person: a table of layers and batches, then the totals and problems.

    Example:
        >>> from rich.console import Console
        >>> from waygraph.planning import DryRunReport
        >>> screen = Console(width=100, record=True, file=open("/dev/null", "w"))
        >>> screen.print(render_report(DryRunReport(goal="g", valid=True)))
        >>> "valid: 0 steps" in screen.export_text()
        True
    """
    parts: list[RenderableType] = []
    steps = {} if report.plan is None else {s.id: s for s in report.plan.steps}
    on_path = set(report.critical_path)
    if report.layers or report.unschedulable:
        table = Table(title=f"dry run: {plain(report.goal)}", title_justify="left")
        for column in ("layer", "batch", "step", "call", "after", "tokens"):
            table.add_column(column, justify="right" if column == "tokens" else "left")
        for layer in report.layers:
            for number, batch in enumerate(layer.batches, 1):
                for position, sid in enumerate(batch):
                    step = steps[sid]
                    table.add_row(
                        str(layer.index) if number == 1 and position == 0 else "",
                        str(number) if position == 0 else "",
                        Text(f"{sid} *", style="bold") if sid in on_path else Text(sid),
                        plain(f"{step.action}({_parameters(step.parameters)})"),
                        plain(", ".join(step.dependencies) or "-"),
                        str(step.estimated_tokens or "-"),
                    )
            table.add_section()
        for sid in report.unschedulable:
            step = steps[sid]
            table.add_row(
                Text("never", style="red"),
                "",
                Text(sid, style="red"),
                plain(f"{step.action}({_parameters(step.parameters)})"),
                plain(", ".join(step.dependencies) or "-"),
                str(step.estimated_tokens or "-"),
            )
        parts.append(table)
        if report.unschedulable:
            parts.append(
                Text(
                    "never: on a dependency cycle, waiting on an unknown step, or behind one",
                    style="red",
                )
            )
        parts.append(
            Text(
                f"batches: steps of one batch may run at the same time (at most "
                f"{report.concurrency} at once, {report.execution_mode.value} mode); "
                "* marks the critical path",
                style="dim",
            )
        )
    if report.critical_path:
        parts.append(
            Text(
                f"critical path: {' -> '.join(report.critical_path)} "
                f"({count(len(report.critical_path), 'step')}, "
                f"{count(report.critical_path_tokens, 'token')})"
            )
        )
    tokens = f"tokens: {report.estimated_tokens} estimated"
    if report.token_budget is None:
        tokens += ", no token budget"
    else:
        tokens += (
            f", budget {report.token_budget} ({report.tokens_spent} spent planning, "
            f"{report.budget_left} left)"
        )
    parts.append(Text(tokens, style="bold red" if report.over_budget else ""))
    parts.extend(Text(f"note: {note}", style="dim") for note in report.notes)
    if report.problems:
        parts.append(Text("problems:", style="bold red"))
        parts.extend(Text(f"- {problem}") for problem in report.problems)
    parts.append(Text(report.summary(), style="bold green" if report.valid else "bold red"))
    return Group(*parts)


def run_dry(
    agent: PlanningAgent,
    goal: str,
    context: str | None,
    *,
    as_json: bool,
    model_hint: str,
) -> int:
    """Plan ``goal`` with a ``dry_run`` agent, print the report; the exit code.

    ``model_hint`` ends the error line when no plan could be made (which
    server and model were asked).
    """

    async def main() -> PlanExecutionResult:
        try:
            return await agent.execute(goal, context=context)
        finally:
            # This event loop ends here: release the HTTP clients bound to it.
            models = {id(agent.llm): agent.llm, id(agent.planning_llm): agent.planning_llm}
            for llm in models.values():
                aclose = getattr(llm, "aclose", None)
                if aclose is not None:
                    with contextlib.suppress(Exception):
                        await aclose()

    try:
        result = asyncio.run(main())
    except KeyboardInterrupt:
        err_console.print("interrupted (Ctrl-C) while planning; nothing ran", highlight=False)
        return 130
    report = result.dry_run_report
    if report is None:  # the agent's pattern is always a dry run here; never expected
        raise RuntimeError("the dry run returned no report")
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    no_plan = next((p for p in report.problems if p.code == "no_plan"), None)
    if no_plan is not None:
        # The model could not be used at all (unreachable, HTTP error): a usage error.
        err_console.print(
            f"[bold red]error:[/] {plain(no_plan.message)} ({plain(model_hint)})",
            highlight=False,
            soft_wrap=True,
        )
        return 2
    if not as_json:
        console.print(render_report(report), highlight=False, soft_wrap=True)
    return 0 if report.valid else 1
