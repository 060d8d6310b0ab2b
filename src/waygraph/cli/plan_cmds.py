"""``waygraph plan "GOAL"``: a model writes a plan, waygraph runs it as a DAG, you watch.

The command builds a :class:`~waygraph.planning.PlanningAgent` over an
OpenAI-compatible endpoint with tools confined to a workspace folder
(``shell``, ``write_file``, ``read_file``) plus any functions ``--tools``
names, optionally has a person approve the plan at the console
(``--approve``), and shows the steps as they start and finish: a live table
on a terminal, one line per event otherwise (so the output can be piped and
tested). ``--json`` prints the :class:`~waygraph.planning.PlanExecutionResult`.
``--dry-run`` plans and validates, then prints what would run instead of
running it (:mod:`waygraph.cli.plan_dryrun`); the run itself, and what
Ctrl-C leaves of it, is :mod:`waygraph.cli.plan_run`.

Every run is stored (``--store``, default: the Navigator's store) as it
goes; ``--resume RUN_ID`` continues one after a crash, a kill or Ctrl-C
without calling again a step whose result was committed.

Exit codes: 0 the plan succeeded; 1 it ran, or was refused or invalid, and
did not succeed; 2 a usage or input error, including a model that cannot be
reached or answers with an error while planning; 130 stopped by Ctrl-C
(partial results are shown).
"""

from __future__ import annotations

import functools
import json
import os
import sys
import threading
from collections.abc import Callable, Coroutine
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import urlparse

import typer

from waygraph._extras import require
from waygraph.cli._preflight import NoPreflightOption
from waygraph.cli.app import (
    ApiKeyOption,
    LlmOption,
    MaxTokensOption,
    StructuredOutput,
    StructuredOutputOption,
    app,
    console,
    err_console,
    friendly_errors,
    plain,
)
from waygraph.errors import ConfigError

if TYPE_CHECKING:
    from waygraph.cli.plan_view import LiveView, PlainView
    from waygraph.planning import Plan, PlanExecutionResult

__all__ = ["plan_command"]


class Mode(StrEnum):
    """``--mode``: the values of :class:`waygraph.planning.ExecutionMode`.

    Spelled here so that building the command (for ``waygraph --help`` and
    every other command) does not import the planning package and pydantic;
    a test checks the two enums name the same modes.
    """

    SEQUENTIAL = "sequential"
    PARALLEL = "parallel"
    ADAPTIVE = "adaptive"


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


#: ``--max-tokens`` of ``waygraph plan``: a plan of a dozen steps with their arguments.
PLAN_MAX_TOKENS = 2048


@app.command("plan")
@friendly_errors
def plan_command(
    goal: Annotated[
        str | None,
        typer.Argument(
            help="What to achieve, in words (not with --resume).",
            metavar="GOAL",
            show_default=False,
        ),
    ] = None,
    llm: LlmOption = None,
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
    unconfined: Annotated[
        bool,
        typer.Option(
            "--unconfined",
            help="Run shell commands without kernel confinement (Landlock) where the kernel "
            "has none; without it the shell tool refuses there.",
        ),
    ] = False,
    allow_network: Annotated[
        bool,
        typer.Option(
            "--allow-network",
            help="Let confined shell commands open internet and UNIX sockets (refused by "
            "default: a plan's commands reach no server and no local daemon).",
        ),
    ] = False,
    mode: Annotated[
        Mode,
        typer.Option(
            "--mode",
            help="How ready steps run: sequential (one at a time), parallel (up to "
            "--max-parallel at once; the default here), adaptive (side-effect steps alone).",
            case_sensitive=False,
        ),
    ] = Mode.PARALLEL,
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
    api_key: ApiKeyOption = None,
    planning_model: Annotated[
        str | None,
        typer.Option("--planning-model", help="A different model to write and revise the plan."),
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", min=0.001, help="Seconds to wait for one model reply.")
    ] = 120.0,
    structured_output: StructuredOutputOption = StructuredOutput.AUTO,
    max_tokens: MaxTokensOption = PLAN_MAX_TOKENS,
    no_preflight: NoPreflightOption = False,
    token_budget: Annotated[
        int | None,
        typer.Option(
            "--token-budget",
            min=1,
            help="Tokens the whole call may use, planning included; the plan's estimate "
            "must fit what is left (default: no budget).",
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Plan and validate, then show what would run (layers, parallel batches, "
            "critical path, tokens) without running anything. Exit 0 when the plan is valid.",
        ),
    ] = False,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print the execution result (with --dry-run: the dry-run report) as JSON on "
            "stdout (progress on stderr).",
        ),
    ] = False,
    resume: Annotated[
        str | None,
        typer.Option(
            "--resume",
            metavar="RUN_ID",
            help="Continue a stored run (after a crash, a kill or Ctrl-C) instead of planning "
            "GOAL: steps whose result was saved are not run again. Give the same tools.",
        ),
    ] = None,
    takeover: Annotated[
        bool,
        typer.Option(
            "--takeover",
            help="With --resume: take the run over from the process holding it now (said "
            "first), instead of being refused until its lease expires.",
        ),
    ] = False,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            envvar="WAYGRAPH_STORE",
            help="Where runs are kept (a store URL). Default: $WAYGRAPH_STORE, else SQLite "
            "in your user data folder.",
        ),
    ] = None,
) -> None:
    """Have a model plan GOAL with your tools, then run the plan as a DAG and watch it.

    Exit code 0 when the plan succeeded, 1 when it did not (or was refused or
    invalid), 2 for usage or input errors (including a model that cannot be
    reached), 130 when stopped with Ctrl-C. With --dry-run nothing runs: exit
    code 0 when the plan is valid, 1 when it is not.
    """
    from waygraph.cli._preflight import check_endpoint
    from waygraph.cli.plan_dryrun import run_dry
    from waygraph.cli.plan_resume import announce_resume
    from waygraph.cli.plan_run import run_plan
    from waygraph.cli.plan_tools import (
        WORKSPACE_TOOLS,
        load_tools,
        workspace_context,
        workspace_tools,
    )
    from waygraph.cli.plan_view import LiveView, PlainView, as_text
    from waygraph.planning import (
        ConsoleApproval,
        ExecutionMode,
        OpenAILLM,
        Plan,
        PlanningAgent,
        PlanningPattern,
        ToolDefinitionError,
    )
    from waygraph.planning._journal import new_run_id

    if dry_run and approve:
        raise ConfigError(
            "--approve and --dry-run exclude each other: a dry run runs nothing, "
            "so there is nothing to approve"
        )
    if resume is not None:
        if goal is not None:
            raise ConfigError(
                f"--resume {resume} continues a stored run with its own goal; drop GOAL "
                f"({goal!r}) or drop --resume to plan it anew"
            )
        if dry_run:
            raise ConfigError("--resume and --dry-run exclude each other: a dry run stores nothing")
    elif goal is None or not goal.strip():
        raise ConfigError('the goal is empty; say what to achieve: waygraph plan "GOAL" ...')
    if takeover and resume is None:
        raise ConfigError("--takeover takes over a stored run: name it with --resume RUN_ID")
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

    interrupted_event = threading.Event()
    functions: list[Callable[..., Any]] = []
    if not no_workspace_tools:
        functions += workspace_tools(
            root,
            timeout=step_timeout,
            stop=interrupted_event,
            unconfined=unconfined,
            allow_network=allow_network,
        )
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
    # Before any work: a missing openai package or a model server that does not
    # answer is one line and exit 2, not a failed run.
    require("llm", "openai", purpose="waygraph plan")
    check_endpoint(llm, api_key=key, timeout=0 if no_preflight else None)
    client = functools.partial(
        OpenAILLM,
        base_url=llm,
        api_key=key,
        timeout=timeout,
        structured_output=structured_output,
        max_tokens=max_tokens or None,
    )
    execution_llm = client(model)
    planner_llm = client(planning_model) if planning_model else None
    pattern = PlanningPattern(
        execution_mode=ExecutionMode(mode.value),
        max_parallel=max_parallel,
        step_timeout=step_timeout,
        retry_failed_steps=retries,
        max_revisions=max_revisions,
        allow_revision=max_revisions > 0,
        token_budget=token_budget,
        dry_run=dry_run,
    )
    side_effect_tools = [] if no_workspace_tools else ["shell", "write_file"]
    context = None if no_workspace_tools else workspace_context(root)
    planner_name = planning_model or model
    if dry_run:
        try:
            dry_agent = PlanningAgent(
                execution_llm,
                tools=functions,
                pattern=pattern,
                planning_llm=planner_llm,
                side_effect_tools=side_effect_tools,
            )
        except ToolDefinitionError as exc:
            raise ConfigError(f"--tools: {exc}") from None
        (err_console if as_json else console).print(
            f"planning: asking {plain(planner_name)} at {plain(llm)} (dry run: nothing runs)",
            highlight=False,
            soft_wrap=True,
        )
        hint = f"is {llm} an OpenAI-compatible server with model {planner_name}?"
        assert goal is not None  # --dry-run refuses --resume above
        raise typer.Exit(run_dry(dry_agent, goal, context, as_json=as_json, model_hint=hint))

    shown_on = err_console if as_json else console
    view: PlainView | LiveView = (
        LiveView(shown_on) if shown_on.is_terminal else PlainView(err=as_json)
    )
    approval = ConsoleApproval(**_approval_io(as_json)) if approve else None

    run_id = resume or new_run_id()

    def plan_generated(*, plan: Plan, **future_kwargs: Any) -> None:
        # Said before anything runs, so a killed run can still be found.
        err_console.print(
            f"run {plain(run_id)} (stored in {plain(agent.store.url)}; if it stops, continue it "
            f"with waygraph plan --resume {plain(run_id)})",
            highlight=False,
            soft_wrap=True,
        )
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

    def plan_rejected(*, problems: Any, attempt: int, attempts: int, **future_kwargs: Any) -> None:
        # Each invalid plan is shown as it comes, even when a later one is valid.
        again = "sent back to the model" if attempt < attempts else "no attempts left"
        lines = [f"plan {attempt}/{attempts} is invalid ({again}):"]
        lines += [f"  - {plain(str(problem))}" for problem in problems]
        err_console.print("\n".join(lines), highlight=False, soft_wrap=True)

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
            side_effect_tools=side_effect_tools,
            on_plan_generated=plan_generated,
            on_plan_approved=plan_approved if approval is not None else None,
            on_step_start=view.on_step_start,
            on_step_complete=view.on_step_complete,
            on_revision_needed=revision_needed,
            on_plan_revised=view.on_plan_revised,
            store=store,
            on_plan_rejected=plan_rejected,
        )
    except ToolDefinitionError as exc:
        raise ConfigError(f"--tools: {exc}") from None

    if resume is not None:
        announce_resume(agent.store, resume, takeover=takeover, view=view)
    else:
        view.planning(f"asking {planner_name} at {llm}")

    def start() -> Coroutine[Any, Any, PlanExecutionResult]:
        if resume is not None:
            return agent.resume(resume, takeover=takeover)
        assert goal is not None
        return agent.execute(goal, context=context, run_id=run_id)

    def show(result: PlanExecutionResult, interrupted: bool) -> None:
        view.finish(result)
        view.stop()
        if result.plan is None and not interrupted:
            # No plan: the model could not be used (unreachable, HTTP error), or it
            # answered with plans too broken to read (its problems say so).
            message = as_text(result.final_output)
            if not result.problems:
                message += f" (is {llm} an OpenAI-compatible server with model {planner_name}?)"
            err_console.print(
                f"[bold red]error:[/] {plain(message)}",
                highlight=False,
                soft_wrap=True,
            )
        else:
            view.report(result, interrupted)
        if as_json:
            data = result.model_dump(mode="json", fallback=str, warnings=False)
            typer.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))

    try:
        result, interrupted = run_plan(agent, start, show, interrupted_event)
    finally:
        view.stop()
    if interrupted:
        if agent.run_id is not None and result.plan is not None:
            err_console.print(
                f"run {plain(agent.run_id)} is saved; continue it with: waygraph plan "
                f"--resume {plain(agent.run_id)} (and the same --llm, --model, tools)",
                highlight=False,
                soft_wrap=True,
            )
        raise typer.Exit(130)
    if result.plan is None and not result.problems:
        raise typer.Exit(2)  # the model could not be used: as for a usage error
    if not result.success:
        raise typer.Exit(1)
