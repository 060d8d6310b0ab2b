"""Run commands: match and demo (play and sessions live in play_cmds and session_cmds)."""

from __future__ import annotations

import json
from enum import StrEnum
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


class Matching(StrEnum):
    """The values of ``--matching`` (:data:`waygraph.match.selector.MATCHING_MODES`)."""

    PHRASE = "phrase"
    SEMANTIC = "semantic"
    BOTH = "both"


@app.command()
@friendly_errors
def match(
    message: Annotated[str, typer.Argument(help="What the user said.")],
    domain: Annotated[str | None, typer.Option(help="The message's domain, if known.")] = None,
    allow: Annotated[
        list[str] | None, typer.Option("--allow", help="Only these plan ids may activate.")
    ] = None,
    explain: Annotated[
        bool, typer.Option(help="Show near misses and why they missed (and similarities).")
    ] = False,
    semantic: Annotated[
        bool,
        typer.Option(
            "--semantic",
            help="Match by meaning when no plan's triggers do (--matching both; needs "
            "pip install 'waygraph[semantic]').",
        ),
    ] = False,
    matching: Annotated[
        Matching | None,
        typer.Option(
            "--matching",
            help="phrase (triggers, the default), semantic (meaning only) or both.",
        ),
    ] = None,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="Store URL, for where plan embeddings are cached (default: the user data folder).",
            envvar="WAYGRAPH_STORE",
        ),
    ] = None,
    as_json: JsonOption = False,
    library: LibraryOption = None,
) -> None:
    """Show which plan a user message would activate, and why."""
    from waygraph.match import Matcher
    from waygraph.match._semantic_cache import cache_dir_for
    from waygraph.match.selector import PlanSelector
    from waygraph.store import default_store_url

    mode = matching.value if matching is not None else "both" if semantic else "phrase"
    selector = PlanSelector(mode, cache_dir=cache_dir_for(store or default_store_url()))
    lib = load(library)
    results = selector.match(lib, Matcher(lib), message, domain or None, allow or None)
    winner = next((m for m in results if m.activates), None)
    if as_json:
        _print_json(
            {
                "message": message,
                "domain": domain,
                "matching": mode,
                "activates": winner.plan_id if winner else None,
                "matched_by": winner.matched_by if winner else None,
                "matches": [m.to_dict() for m in results],
                "semantic_off": selector.failure,
            }
        )
        return
    if winner and winner.similarity is not None:
        console.print(
            f"[green]{plain(winner.plan_id)}[/] activates by meaning "
            f"(similarity {winner.similarity:.2f})"
        )
    elif winner:
        console.print(
            f"[green]{plain(winner.plan_id)}[/] activates (score {plain(winner.score)}; "
            f"triggers: {plain(', '.join(winner.hits))})"
        )
    else:
        console.print("No plan activates for this message.")
    if explain and results:
        _explain(results, winner)
    elif explain:
        console.print("No trigger of any plan appears in the message.")


def _explain(results: list[Any], winner: Any) -> None:
    """The table of ``waygraph match --explain``: every result and why it missed."""
    by_meaning = any(m.similarity is not None for m in results)
    columns = ["plan", "by", "score", "similarity", "triggers hit", "result"]
    table = Table(
        *(columns if by_meaning else [c for c in columns if c not in ("by", "similarity")])
    )
    for m in results:
        verdict = "[green]activates[/]" if m.activates else f"[yellow]{plain(m.reason)}[/]"
        if m.activates and m is not winner:
            verdict = "[green]would activate[/] (lower rank)"
        score = "-" if m.similarity is not None else str(m.score)
        cells = [m.plan_id, m.matched_by, score, _similarity(m), ", ".join(m.hits), verdict]
        if not by_meaning:
            cells = [cells[0], cells[2], cells[4], cells[5]]
        table.add_row(*cells)
    console.print(table)


def _similarity(m: Any) -> str:
    return "-" if m.similarity is None else f"{m.similarity:.2f}"


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
