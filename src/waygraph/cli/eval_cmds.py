"""``waygraph eval``: measure whether plans make a model finish real multi-step work.

Runs the shipped task suite against any OpenAI-compatible endpoint in the
chosen modes and writes ``results.json`` and ``report.html`` (see
docs/eval.md); ``--compliance`` runs the single-turn compliance fixtures
instead; ``--list`` prints the task ids.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from waygraph._extras import require
from waygraph.cli._preflight import NoPreflightOption
from waygraph.cli.app import (
    ApiKeyOption,
    ContextTokensOption,
    LibraryOption,
    LlmOption,
    MaxTokensOption,
    ToolProtocol,
    ToolProtocolOption,
    app,
    console,
    err_console,
    friendly_errors,
    plain,
)
from waygraph.errors import ConfigError

if TYPE_CHECKING:
    from waygraph.eval.compliance import Fixture
    from waygraph.eval.runner import Record
    from waygraph.eval.suite import EvalTask

__all__ = ["eval_command"]


def _progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"),
        console=err_console,
        transient=False,
    )


@app.command("eval")
@friendly_errors
def eval_command(
    llm: LlmOption = None,
    model: Annotated[str | None, typer.Option("--model", help="Model name on that server.")] = None,
    mode: Annotated[
        str,
        typer.Option("--mode", help="Comma-separated modes: baseline, guided, planned."),
    ] = "baseline,guided",
    tasks: Annotated[
        str | None,
        typer.Option("--tasks", help="EvalTask ids to run: comma-separated globs or substrings."),
    ] = None,
    repeat: Annotated[int, typer.Option("--repeat", min=1, help="Runs per task and mode.")] = 1,
    out: Annotated[
        Path, typer.Option("--out", help="Folder for results.json and report.html.")
    ] = Path("eval-results"),
    jobs: Annotated[int, typer.Option("--jobs", min=1, help="Runs at the same time.")] = 2,
    api_key: ApiKeyOption = None,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds to wait for one model reply.")
    ] = 120.0,
    max_tokens: MaxTokensOption = 1024,
    tool_protocol: ToolProtocolOption = ToolProtocol.AUTO,
    context_tokens: ContextTokensOption = None,
    no_preflight: NoPreflightOption = False,
    list_tasks: Annotated[
        bool, typer.Option("--list", help="Print the task ids, one per line, and exit.")
    ] = False,
    compliance: Annotated[
        bool, typer.Option("--compliance", help="Run the single-turn compliance fixtures instead.")
    ] = False,
    fixtures: Annotated[
        Path | None,
        typer.Option("--fixtures", help="Compliance fixtures file (JSON or YAML list)."),
    ] = None,
    library: LibraryOption = None,
    scripted: Annotated[
        str | None,
        typer.Option(
            "--scripted",
            help="Run a scripted model instead of a real one: diligent, sloppy, mixed or "
            "liars (six ways to claim work not done; the report counts false completions).",
        ),
    ] = None,
) -> None:
    """Run the eval task suite against a model and report success per mode."""
    from waygraph.eval.runner import parse_modes
    from waygraph.eval.suite import select_tasks

    if list_tasks:
        for task in select_tasks(tasks):
            typer.echo(task.id)
        return
    # Every run talks to its model through the openai client, scripted ones too.
    require("llm", "openai", purpose="waygraph eval")
    # How each request is shaped: the same for a scripted model and a real one.
    knobs: dict[str, Any] = {
        "max_tokens": max_tokens or None,
        "tool_protocol": tool_protocol.value,
        "context_tokens": context_tokens,
    }
    if scripted is not None:
        chosen = select_tasks(tasks)
        _scripted(scripted, mode, chosen, repeat, out, jobs, library, compliance, **knobs)
        return
    if not llm or not model:
        raise ConfigError(
            "--llm URL and --model NAME are required, e.g. "
            "waygraph eval --llm http://localhost:11434/v1 --model qwen2.5-coder:7b"
        )
    key = api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
    # Local mistakes first, then the endpoint, then work: a model server that
    # does not answer is one line and nothing is written.
    from waygraph.cli._preflight import check_endpoint
    from waygraph.eval.compliance import load_fixtures

    fixture_run = compliance or fixtures is not None
    chosen_fixtures = load_fixtures(fixtures) if fixture_run else []
    chosen = [] if fixture_run else select_tasks(tasks)
    if not fixture_run:
        parse_modes(mode)
    check_endpoint(llm, api_key=key, timeout=0 if no_preflight else None)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"--out {out}: cannot create the folder: {exc.strerror or exc}") from None
    if fixture_run:
        _compliance(llm, model, key, timeout, chosen_fixtures, out, jobs, **knobs)
        return
    _suite(llm, model, key, timeout, mode, chosen, repeat, out, jobs, library, **knobs)


def _suite(
    llm: str,
    model: str,
    key: str,
    timeout: float,
    mode: str,
    chosen: list[EvalTask],
    repeat: int,
    out: Path,
    jobs: int,
    library: Path | None,
    *,
    max_tokens: int | None = 1024,
    tool_protocol: str = "auto",
    context_tokens: int | None = None,
) -> None:
    from waygraph.eval.metrics import summary_line
    from waygraph.eval.report import render_html, terminal_table, token_table
    from waygraph.eval.runner import (
        EvalConfig,
        parse_modes,
        run_eval,
        sort_records,
        write_records,
    )

    modes = parse_modes(mode)
    config = EvalConfig(
        base_url=llm,
        model=model,
        api_key=key,
        modes=modes,
        tasks=chosen,
        repeat=repeat,
        jobs=jobs,
        timeout=timeout,
        library=library,
        max_tokens=max_tokens,
        tool_protocol=tool_protocol,
        context_tokens=context_tokens,
    )
    total = len(chosen) * len(modes) * repeat
    results, report = out / "results.json", out / "report.html"
    finished: list[Record] = []
    try:
        with _progress() as progress:
            bar = progress.add_task("eval", total=total, last="")

            def advance(record: Record) -> None:
                # Each finished run is on disk at once: an eval of real models
                # takes long, and an interrupted one keeps what it did.
                finished.append(record)
                write_records(sort_records(finished, chosen, modes), results)
                mark = "[green]ok[/]" if record.success else "[red]failed[/]"
                progress.update(
                    bar, advance=1, last=f"{plain(record.task)} {plain(record.mode)}: {mark}"
                )

            records = run_eval(config, on_record=advance)
    except KeyboardInterrupt:
        records = sort_records(finished, chosen, modes)
        write_records(records, results)
        report.write_text(render_html(records, model=model, endpoint=llm), encoding="utf-8")
        err_console.print(
            f"interrupted: {len(records)} of {total} runs finished; wrote {results} and "
            f"{report}; runs not started were cancelled",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        _abandon(130)
        return
    write_records(records, results)
    report.write_text(render_html(records, model=model, endpoint=llm), encoding="utf-8")
    console.print(terminal_table(records))
    console.print(token_table(records))
    typer.echo(summary_line(records))
    err_console.print(
        f"wrote {results} and {report}", markup=False, highlight=False, soft_wrap=True
    )
    _fail_on_errors([r.error for r in records], "runs")


def _abandon(code: int) -> None:
    """Exit now with ``code``, without waiting for the runs still in flight (a model call
    can take minutes, and Ctrl-C means now); their temporary workspaces are left."""
    import sys

    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _scripted(
    kind: str,
    mode: str,
    chosen: list[EvalTask],
    repeat: int,
    out: Path,
    jobs: int,
    library: Path | None,
    compliance: bool,
    **knobs: Any,
) -> None:
    """The suite against a scripted model served on a local port (no model needed)."""
    from waygraph.eval.runner import parse_modes
    from waygraph.eval.scripted import KINDS, ScriptedModel
    from waygraph.testing import ScriptedChatServer

    if kind not in KINDS:
        raise ConfigError(f"--scripted: no scripted model {kind!r}; choose {', '.join(KINDS)}")
    if compliance:
        raise ConfigError("--scripted runs the task suite; --compliance needs a real model")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"--out {out}: cannot create the folder: {exc.strerror or exc}") from None
    modes = parse_modes(mode)
    # Enough replies for every model call any run can make (steps, pushbacks, plans).
    calls = sum(task.max_steps + 8 for task in chosen) * len(modes) * repeat
    name = f"scripted-{kind}"
    policy = ScriptedModel(kind, chosen)
    with ScriptedChatServer([policy] * calls, model=name) as server:
        _suite(
            server.base_url,
            name,
            "not-needed",
            60.0,
            mode,
            chosen,
            repeat,
            out,
            jobs,
            library,
            **knobs,
        )


def _compliance(
    llm: str,
    model: str,
    key: str,
    timeout: float,
    chosen: list[Fixture],
    out: Path,
    jobs: int,
    **knobs: Any,
) -> None:
    from waygraph.eval.compliance import run_compliance
    from waygraph.eval.modes import ModelSettings

    settings = ModelSettings(base_url=llm, model=model, api_key=key, timeout=timeout, **knobs)
    with _progress() as progress:
        bar = progress.add_task("compliance", total=len(chosen), last="")
        results = run_compliance(
            chosen,
            settings,
            jobs=jobs,
            on_result=lambda r: progress.update(bar, advance=1, last=plain(r.test_id)),
        )
    path = out / "compliance.json"
    path.write_text(
        json.dumps([r.model_dump(mode="json") for r in results], indent=2) + "\n", encoding="utf-8"
    )
    table = Table(title="waygraph eval --compliance", title_justify="left")
    for column in ("fixture", "node type", "passed", "matched"):
        table.add_column(column)
    for r in results:
        matched = ", ".join([*r.matched_success, *(f"NOT {k}" for k in r.matched_failure)])
        table.add_row(
            plain(r.test_id),
            plain(r.node_type),
            "[green]yes[/]" if r.passed else "[red]no[/]",
            plain(r.error or matched or "-"),
        )
    console.print(table)
    passed = sum(r.passed for r in results)
    typer.echo(f"compliance: {passed}/{len(results)} fixtures passed ({passed / len(results):.0%})")
    err_console.print(f"wrote {path}", markup=False, highlight=False, soft_wrap=True)
    _fail_on_errors([r.error for r in results], "fixtures")


def _fail_on_errors(errors: list[str | None], what: str) -> None:
    """Exit 1 when any run errored (a model that did not answer is not a measurement)."""
    found = [e for e in errors if e]
    if found:
        err_console.print(
            f"error: {len(found)} of {len(errors)} {what} errored, so these figures do not "
            f"measure the model; the first: {found[0]}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(1)
