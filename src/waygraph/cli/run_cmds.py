"""Run commands: match, play, sessions, demo."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.panel import Panel
from rich.table import Table

from waygraph.cli.app import (
    AllowCommandsOption,
    LibraryOption,
    app,
    console,
    friendly_errors,
    load,
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
            f"[green]{winner.plan_id}[/] activates (score {winner.score}; "
            f"triggers: {', '.join(winner.hits)})"
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


# ---------------------------------------------------------------- play

PLAY_HELP = (
    "Type a tool's output and press Enter (it is verified as the tool result), "
    "'!command' to run a real command and use its output and exit code, "
    "':exit N text' to give an exit code, ':say text' for what the model tells the user "
    "(a claim, never evidence), ':rewind', ':state', ':reset' or ':quit'."
)


@app.command()
@friendly_errors
def play(
    plan: Annotated[str | None, typer.Argument(help="Plan id to start (else match a message).")] = (
        None
    ),
    message: Annotated[
        str | None, typer.Option("--message", "-m", help="User message to match a plan with.")
    ] = None,
    domain: Annotated[str | None, typer.Option(help="Domain for matching.")] = None,
    store: StoreOption = None,
    workspace: Annotated[
        Path | None, typer.Option(help="Folder where '!command' runs and files are checked.")
    ] = None,
    library: LibraryOption = None,
    allow_commands: AllowCommandsOption = False,
) -> None:
    """Walk through a plan interactively, seeing what the model would see."""
    from waygraph.navigator import Navigator

    lib = load(library)
    root = (workspace or Path.cwd()).resolve()
    nav = Navigator(
        lib,
        store=store or "memory://",
        workspace=root,
        strict=True,
        allow_commands=allow_commands,
    )
    session = "play"
    nav.reset(session)
    if plan:
        guidance = nav.start(session, plan)
    else:
        text = message if message is not None else typer.prompt("User message")
        guidance = nav.turn(session, user_message=text, domain=domain)
        if guidance.run is None:
            console.print("No plan activates for that message; try `waygraph match --explain`.")
            raise typer.Exit(1)
    console.print(f"[dim]{PLAY_HELP}[/]")
    _show_guidance(guidance)
    count = 0
    while guidance.active:
        try:
            line = input("tool output> ")
        except EOFError:
            break
        count += 1
        if line.strip() in (":quit", ":q"):
            break
        if line.strip() == ":state":
            _print_json(nav.state(session))
            continue
        if line.strip() == ":rewind":
            guidance = nav.rewind(session)
            _show_guidance(guidance)
            continue
        if line.strip() == ":reset":
            nav.reset(session)
            console.print("Session reset.")
            break
        if line.startswith(":say"):
            # What the model would tell the user: a claim, never evidence.
            guidance = nav.turn(
                session,
                tool_output=line[4:].strip(),
                source="model",
                final=True,
                observation_id=f"play-{count}",
            )
            _show_guidance(guidance)
            continue
        output, exit_code = _tool_result(line, root)
        guidance = nav.turn(
            session,
            tool_output=output,
            exit_code=exit_code,
            observation_id=f"play-{count}",
            tool_args=line[1:] if line.startswith("!") else None,
        )
        _show_guidance(guidance)
    state = nav.state(session)
    if state:
        console.print(f"Run {state['status']}; path: {' → '.join(state['path'])}")


def _tool_result(line: str, root: Path) -> tuple[str, int | None]:
    if line.startswith("!"):
        proc = subprocess.run(
            line[1:], shell=True, cwd=root, capture_output=True, text=True, timeout=300
        )
        output = (proc.stdout + proc.stderr).rstrip()
        console.print(Panel(output or "(no output)", title=f"exit code {proc.returncode}"))
        return output, proc.returncode
    if line.startswith(":exit"):
        parts = line.split(maxsplit=2)
        try:
            code = int(parts[1])
        except (IndexError, ValueError):
            console.print("usage: :exit N output text")
            return "", None
        return (parts[2] if len(parts) > 2 else ""), code
    return line.replace("\\n", "\n"), None


def _show_guidance(guidance: Any) -> None:
    for event in guidance.events:
        kind = event.type
        if kind == "node_verified":
            mark = "[green]✓ passed[/]" if event.passed else "[red]✗ failed[/]"
            console.print(f"{mark} verification at {event.node}")
        elif kind == "edge_followed":
            console.print(f"→ {event.node} --{event.condition}--> {event.to}")
        elif kind == "retry_triggered":
            console.print(f"↻ {event.node}: attempt {event.attempt}")
        elif kind in ("plan_escalated", "plan_expired", "plan_aborted", "plan_completed"):
            console.print(f"[bold]{kind}[/] {event.get('reason') or ''}")
        elif kind == "stall":
            console.print(f"[yellow]stall[/] {event.reason}")
    if guidance.text:
        console.print(Panel(guidance.text, title="guidance for the model", border_style="dim"))


# ---------------------------------------------------------------- sessions

sessions_app = typer.Typer(help="Inspect and reset stored sessions.", no_args_is_help=True)
app.add_typer(sessions_app, name="sessions")

WorkspaceOption = Annotated[
    Path | None,
    typer.Option("--workspace", help="Also list session plans kept under WORKSPACE/.sessions."),
]


def _navigator(store: str | None, library: Path | None) -> Any:
    from waygraph.navigator import Navigator

    return Navigator(load(library, validate=False), store=store, strict=True)


@sessions_app.command("list")
@friendly_errors
def sessions_list(
    store: StoreOption = None,
    workspace: WorkspaceOption = None,
    status: Annotated[str | None, typer.Option(help="Only runs with this status.")] = None,
    as_json: JsonOption = False,
    library: LibraryOption = None,
) -> None:
    """List sessions with their latest run."""
    nav = _navigator(store, library)
    rows = []
    for session in nav.sessions():
        state = nav.state(session)
        if state is None or (status and state.get("status") != status):
            continue
        rows.append(
            {
                "session": session,
                "plan": state.get("plan_id"),
                "status": state.get("status"),
                "current_node": state.get("current_node"),
                "attempts": state.get("attempts"),
                "turn": state.get("turn"),
            }
        )
    plans = _session_plans(workspace)
    if as_json:
        _print_json({"sessions": rows, "session_plans": plans})
        return
    table = Table(
        "session",
        "plan",
        "status",
        "current node",
        "attempts",
        "turn",
        title=f"sessions in {nav.store.url}",
    )
    for r in rows:
        table.add_row(
            *(str(r[k]) for k in ("session", "plan", "status", "current_node", "attempts", "turn"))
        )
    console.print(table)
    if workspace is not None:
        ptable = Table(
            "session", "goal", "status", "steps", "updated", title=f"session plans in {workspace}"
        )
        for p in plans:
            ptable.add_row(
                str(p.get("session_id")),
                str(p.get("goal", ""))[:60],
                str(p.get("status")),
                f"{p.get('steps_done', 0)}/{p.get('steps_total', 0)}",
                str(p.get("updated_at", "")),
            )
        console.print(ptable)


def _session_plans(workspace: Path | None) -> list[dict[str, Any]]:
    if workspace is None:
        return []
    from waygraph.sessions import list_session_plans

    return list_session_plans(workspace)


@sessions_app.command("show")
@friendly_errors
def sessions_show(
    session_id: str,
    store: StoreOption = None,
    workspace: WorkspaceOption = None,
    as_json: JsonOption = False,
    library: LibraryOption = None,
) -> None:
    """Show a session's latest run record (or its session plan with --workspace)."""
    if workspace is not None:
        from waygraph.sessions import load_session_plan, render_summary

        plan = load_session_plan(workspace, session_id)
        if plan is None:
            console.print(f"No session plan for {session_id!r} in {workspace}.")
            raise typer.Exit(1)
        if as_json:
            _print_json(plan)
        else:
            # The summary holds [waygraph] and the model's own brackets: not markup.
            console.print(render_summary(plan), markup=False)
        return
    nav = _navigator(store, library)
    state = nav.state(session_id)
    if state is None:
        console.print(f"No run for session {session_id!r} in {nav.store.url}.")
        raise typer.Exit(1)
    if as_json:
        _print_json(state)
        return
    console.print(nav.summary(session_id))
    table = Table("node", "outcome", "attempts")
    for node, st in state.get("visited", {}).items():
        table.add_row(node, st["outcome"], str(st["attempts"]))
    console.print(table)
    console.print("Path: " + " → ".join(state.get("path", [])))
    text = nav.context(session_id)
    if text:
        console.print(Panel(text, title="guidance for the model", border_style="dim"))


@sessions_app.command("events")
@friendly_errors
def sessions_events(
    session_id: str,
    store: StoreOption = None,
    after: Annotated[int, typer.Option(help="Only events after this sequence number.")] = 0,
    as_json: JsonOption = False,
    library: LibraryOption = None,
) -> None:
    """Every stored event of a session's latest run."""
    nav = _navigator(store, library)
    events = nav.events(session_id, after)
    if as_json:
        _print_json({"session": session_id, "events": events})
        return
    table = Table("seq", "turn", "type", "node", "details")
    for e in events:
        details = {k: v for k, v in e.items() if k not in ("seq", "turn", "type", "node")}
        table.add_row(
            str(e["seq"]),
            str(e.get("turn")),
            e["type"],
            str(e.get("node")),
            json.dumps(details, ensure_ascii=False, default=str),
        )
    console.print(table)


@sessions_app.command("reset")
@friendly_errors
def sessions_reset(
    session_id: str, store: StoreOption = None, library: LibraryOption = None
) -> None:
    """Forget a session's plan (a running run is aborted; records stay)."""
    nav = _navigator(store, library)
    nav.reset(session_id)
    console.print(f"Session {session_id!r} reset.")


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
) -> None:
    """Watch an agent fix a real bug guided by the bugfix plan (real commands)."""
    from waygraph.demo import run_demo

    result = run_demo(
        break_fixes=break_fixes, store=store, llm_url=llm, model=model, console=console
    )
    if not break_fixes and result.status == "completed":
        console.print("\nRun [bold]waygraph demo --break[/] to watch the plan escalate instead.")
    if result.status != "completed":
        # The run did not finish its plan (with --break, by design): not a success.
        raise typer.Exit(1)
