"""Run commands: match and demo (play and sessions live in play_cmds and session_cmds)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.table import Table

from waygraph.cli._preflight import NoPreflightOption
from waygraph.cli.app import (
    ContextTokensOption,
    LibraryOption,
    MaxTokensOption,
    ToolProtocol,
    ToolProtocolOption,
    app,
    console,
    friendly_errors,
    load,
    plain,
)

StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        help="Store URL: sqlite:///PATH (default: the user data folder), file://DIR, "
        "memory://, postgresql://...",
        envvar="WAYGRAPH_STORE",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]


def _print_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


# ---------------------------------------------------------------- match


@app.command()
@friendly_errors
def match(
    message: Annotated[str, typer.Argument(help="What the user said.")],
    domain: Annotated[str | None, typer.Option(help="The message's domain, if known.")] = None,
    allow: Annotated[
        list[str] | None, typer.Option("--allow", help="Only these plan ids may activate.")
    ] = None,
    explain: Annotated[bool, typer.Option(help="Show near misses and why they missed.")] = False,
    as_json: JsonOption = False,
    library: LibraryOption = None,
) -> None:
    """Show which plan a user message would activate, and why."""
    from waygraph.match import Matcher

    lib = load(library)
    results = Matcher(lib).match(message, domain or None, allow or None, include_misses=True)
    winner = next((m for m in results if m.activates), None)
    if as_json:
        _print_json(
            {
                "message": message,
                "domain": domain,
                "activates": winner.plan_id if winner else None,
                "matches": [m.to_dict() for m in results],
            }
        )
        return
    if winner:
        console.print(
            f"[green]{plain(winner.plan_id)}[/] activates (score {plain(winner.score)}; "
            f"triggers: {plain(', '.join(winner.hits))})"
        )
    else:
        console.print("No plan activates for this message.")
    if explain and results:
        table = Table("plan", "score", "triggers hit", "result")
        for m in results:
            verdict = "[green]activates[/]" if m.activates else f"[yellow]{m.reason}[/]"
            if m.activates and m is not winner:
                verdict = "[green]would activate[/] (lower rank)"
            table.add_row(m.plan_id, str(m.score), ", ".join(m.hits), verdict)
        console.print(table)
    elif explain:
        console.print("No trigger of any plan appears in the message.")


# ---------------------------------------------------------------- demo


@app.command()
@friendly_errors
def demo(
    break_fixes: Annotated[
        bool, typer.Option("--break", help="Make every fix wrong, so the plan escalates.")
    ] = False,
    store: StoreOption = None,
    # No $OPENAI_BASE_URL here: `make demo` must stay the scripted demo on a
    # machine where that variable is set for other tools.
    llm: Annotated[
        str | None,
        typer.Option(
            "--llm",
            help="Base URL of an OpenAI-compatible API, e.g. http://localhost:11434/v1 (Ollama).",
        ),
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model name for --llm.")] = None,
    tool_protocol: ToolProtocolOption = ToolProtocol.AUTO,
    context_tokens: ContextTokensOption = None,
    max_turns: Annotated[
        int,
        typer.Option(
            "--max-turns",
            min=1,
            metavar="N",
            help="Turns the agent may take before the demo stops.",
        ),
    ] = 40,
    max_tokens: MaxTokensOption = 1024,
    no_preflight: NoPreflightOption = False,
) -> None:
    """Watch an agent fix a real bug guided by the bugfix plan (real commands)."""
    from waygraph.demo import run_demo

    result = run_demo(
        break_fixes=break_fixes,
        store=store,
        llm_url=llm,
        model=model,
        console=console,
        max_turns=max_turns,
        preflight=not no_preflight,
        tool_protocol=tool_protocol.value,
        context_tokens=context_tokens,
        max_tokens=max_tokens or None,
    )
    if not break_fixes and result.status == "completed":
        console.print("\nRun [bold]waygraph demo --break[/] to watch the plan escalate instead.")
    if result.status != "completed":
        # The run did not finish its plan (with --break, by design): not a success.
        raise typer.Exit(1)
