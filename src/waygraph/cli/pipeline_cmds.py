"""``waygraph run PIPELINE``: execute an Attractor pipeline (:func:`waygraph.run_pipeline`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from waygraph.cli.app import (
    ApiKeyOption,
    ContextTokensOption,
    JsonOption,
    LlmOption,
    MaxTokensOption,
    ToolProtocol,
    ToolProtocolOption,
    app,
    console,
    err_console,
    friendly_errors,
    plain,
    print_json,
)
from waygraph.errors import ConfigError

__all__ = ["read_answers", "run_command"]

#: Most answers an ``--answers`` file may hold (each is one human gate's answer).
MAX_ANSWERS = 10_000


def read_answers(path: Path) -> list[str]:
    """The answers in ``path``: a JSON list of strings, else one answer per non-blank line.

    Example:
        >>> import tempfile
        >>> file = Path(tempfile.mkdtemp()) / "answers.txt"
        >>> _ = file.write_text("approve\\n\\n[F] Fix\\n")
        >>> read_answers(file)
        ['approve', '[F] Fix']
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read --answers {path}: {exc}") from None
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"--answers {path} is not a JSON list: {exc}") from None
        if not isinstance(data, list) or not all(isinstance(a, str) for a in data):
            raise ConfigError(f"--answers {path} must be a JSON list of strings")
        answers = data
    else:
        answers = [line.strip() for line in text.splitlines() if line.strip()]
    if len(answers) > MAX_ANSWERS:
        raise ConfigError(f"--answers {path} holds more than {MAX_ANSWERS} answers")
    return answers


def _read_stdin(prompt: str) -> str:
    """A console answer; prompts go to stderr so ``--json`` output stays one object."""
    sys.stderr.write(prompt)
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line.rstrip("\n")


def _progress(event: Any) -> None:
    """One line per finished or failed stage, on stderr."""
    from waygraph.pipelines.context import StageCompleted, StageFailed, StageRetrying

    if isinstance(event, StageCompleted):
        err_console.print(f"[green]✓[/] {plain(event.name)}", highlight=False)
    elif isinstance(event, StageFailed) and not event.will_retry:
        err_console.print(f"[red]✗[/] {plain(event.name)}: {plain(event.error)}", highlight=False)
    elif isinstance(event, StageRetrying):
        err_console.print(
            f"[yellow]↻[/] {plain(event.name)}: attempt {plain(event.attempt)}", highlight=False
        )


def _interviewer(
    *, simulate: bool, auto_approve: bool, answers: Path | None, store: str | None
) -> Any:
    from waygraph.pipelines.interviewers import (
        AutoApproveInterviewer,
        ConsoleInterviewer,
        QueueInterviewer,
    )

    if answers is not None:
        return QueueInterviewer(read_answers(answers))
    if auto_approve or simulate:
        return AutoApproveInterviewer()
    if store is not None:
        return None  # the runner asks through the store: dashboard, API, `sessions answer`
    return ConsoleInterviewer(
        read=_read_stdin, write=lambda text: err_console.print(text, markup=False)
    )


@app.command("run")
@friendly_errors
def run_command(
    pipeline: Annotated[
        Path, typer.Argument(help="The pipeline: an Attractor DOT file (or a JSON/YAML plan).")
    ],
    llm: LlmOption = None,
    model: Annotated[
        str | None,
        typer.Option("--model", help="Model for codergen stages (a node's llm_model wins)."),
    ] = None,
    api_key: ApiKeyOption = None,
    simulate: Annotated[
        bool,
        typer.Option(
            "--simulate",
            help="No model (--llm is ignored): codergen stages answer '[Simulated] ...' with "
            "SUCCESS and human gates take the first choice unless --answers says otherwise.",
        ),
    ] = False,
    auto_approve: Annotated[
        bool, typer.Option("--auto-approve", help="Human gates take their first choice.")
    ] = False,
    answers: Annotated[
        Path | None,
        typer.Option(
            "--answers",
            help="Answers for the human gates in order: a JSON list or one per line; "
            "once they run out a gate is skipped (and fails).",
        ),
    ] = None,
    allow_commands: Annotated[
        bool,
        typer.Option(
            "--allow-commands",
            help="Let tool nodes run their tool_command (confined to the workspace, no "
            "network). Off: a tool node fails saying so; nothing in the file runs.",
        ),
    ] = False,
    unconfined: Annotated[
        bool,
        typer.Option(
            "--unconfined",
            help="Run commands (tool nodes, the agent's shell) without the kernel's "
            "confinement to the workspace, where Landlock is missing. Not a sandbox.",
        ),
    ] = False,
    workspace: Annotated[
        Path | None,
        typer.Option(
            "--workspace",
            help="Folder the agent's tools and tool nodes work in (default: this folder).",
        ),
    ] = None,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="Store that records the run (sqlite:///PATH, file://DIR, postgresql://...; "
            "default: the user data folder's), so `waygraph sessions list` and the dashboard "
            "show it. Given here, its human gates wait for answers from the dashboard, the API "
            "or `waygraph sessions answer` (else they ask on the terminal).",
            envvar="WAYGRAPH_STORE",
        ),
    ] = None,
    resume: Annotated[
        str | None,
        typer.Option(
            "--resume",
            help="Continue run RUN_ID after its last finished node (from --store, else "
            "from the checkpoint.json of --logs).",
        ),
    ] = None,
    takeover: Annotated[
        bool,
        typer.Option(
            "--takeover",
            help="With --resume: continue the run even though another live process holds it "
            "(that process then stops at its next checkpoint).",
        ),
    ] = False,
    logs: Annotated[
        Path | None,
        typer.Option(
            "--logs",
            help="Run folder (prompt.md, response.md, status.json per node, checkpoint.json). "
            "Default: ./.waygraph-runs/RUN_ID.",
        ),
    ] = None,
    max_steps: Annotated[
        int,
        typer.Option("--max-steps", min=1, help="Stop a run (failed) after this many nodes."),
    ] = 1000,
    tool_protocol: ToolProtocolOption = ToolProtocol.AUTO,
    context_tokens: ContextTokensOption = None,
    max_tokens: MaxTokensOption = 1024,
    as_json: JsonOption = False,
) -> None:
    """Run an Attractor pipeline: each node's handler, a checkpoint after every node.

    Exits 0 when the run succeeds, 1 when it fails, 2 on a usage error.
    """
    from waygraph.pipelines.backends import AgentBackend
    from waygraph.pipelines.runner import MAX_STEPS, run_pipeline

    if auto_approve and answers is not None:
        raise ConfigError("--auto-approve and --answers both answer the gates: choose one")
    if not simulate and not llm:
        raise ConfigError(
            "waygraph run needs a model for its codergen stages: --llm URL --model NAME "
            "(an OpenAI-compatible endpoint), or --simulate to run without one"
        )
    if simulate:
        llm = None  # --simulate wins over a --llm (or $OPENAI_BASE_URL) given too
    if llm and not model:
        raise ConfigError("--llm needs --model NAME (the default model of codergen stages)")
    folder = (workspace or Path.cwd()).resolve()
    backend = None
    if llm and model:
        backend = AgentBackend(
            llm,
            model,
            folder,
            api_key=api_key,
            unconfined=unconfined,
            max_tokens=max_tokens or None,
            tool_protocol=tool_protocol.value,
            context_tokens=context_tokens,
        )
    from waygraph.store import default_store_url

    result = run_pipeline(
        pipeline,
        backend=backend,
        interviewer=_interviewer(
            simulate=simulate, auto_approve=auto_approve, answers=answers, store=store
        ),
        logs=logs,
        allow_commands=allow_commands,
        workspace=folder,
        unconfined=unconfined,
        store=store or default_store_url(),
        resume=resume,
        takeover=takeover,
        on_event=None if as_json else _progress,
        max_steps=max_steps or MAX_STEPS,
    )
    if as_json:
        print_json(result.as_json())
    else:
        colour = "green" if result.status == "success" else "red"
        console.print(
            f"[{colour}]{plain(result.status)}[/]: run {plain(result.run_id)}, "
            f"{len(result.path)} nodes: {plain(' → '.join(result.path))}",
            highlight=False,
        )
        if result.outcome.failure_reason:
            console.print(f"reason: {plain(result.outcome.failure_reason)}", highlight=False)
        console.print(f"run folder: {plain(result.logs_root)}", highlight=False)
    if result.status != "success":
        raise typer.Exit(1)
