"""``waygraph play``: walk a plan interactively, seeing what the model would see."""

from __future__ import annotations

import os
import shlex
import sys
import uuid
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any

import typer
from rich.panel import Panel

from waygraph.cli.app import (
    AllowCommandsOption,
    LibraryOption,
    app,
    console,
    find_plan,
    friendly_errors,
    load,
    plain,
    plan_file,
    print_json,
)
from waygraph.describe import describe_event
from waygraph.errors import ConfigError
from waygraph.sandbox import runner

PLAY_HELP = (
    "Type a tool's output and press Enter (it is verified as the tool result), "
    "'!command' to run a real command and use its output and exit code, "
    "':exit N text' to give an exit code, ':say text' for what the model tells the user "
    "(a claim, never evidence; a question waits for the user), ':user text' for what the "
    "user says (a person's answer: a human node's choice, a manual confirmation), "
    "':rewind', ':state', ':reset' or ':quit'."
)

#: Rich styles for the events worth a glance: good news green, trouble red or yellow.
_STYLES = {
    "plan_completed": "bold green",
    "checkpoint_saved": "green",
    "plan_escalated": "bold red",
    "plan_aborted": "bold red",
    "plan_expired": "bold red",
    "plan_failed": "bold red",
    "stall": "yellow",
    "retry_triggered": "yellow",
    "repeat_detected": "yellow",
    "claim_unverified": "yellow",
    "answer_rejected": "yellow",
}
# play's own --store: its default is memory://, not the user data folder.
PlayStoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        help="Store URL. Default memory://: the run ends with the command; "
        "sqlite:///PATH keeps it for --resume and `waygraph sessions`.",
        envvar="WAYGRAPH_STORE",
    ),
]
_VERDICTS = {"success": "[green]✓[/]", "fail": "[red]✗[/]"}


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
    store: PlayStoreOption = None,
    workspace: Annotated[
        Path | None, typer.Option(help="Folder where '!command' runs and files are checked.")
    ] = None,
    session: Annotated[
        str, typer.Option("--session", help="Session id the run is stored under.")
    ] = "play",
    resume: Annotated[
        bool,
        typer.Option(
            "--resume", help="Continue the session's running run (needs a lasting --store)."
        ),
    ] = False,
    library: LibraryOption = None,
    allow_commands: AllowCommandsOption = False,
) -> None:
    """Walk through a plan interactively, seeing what the model would see."""
    from waygraph.navigator import Navigator

    named = plan_file(plan, library) if plan else None
    lib = named[0] if named is not None else load(library)
    if plan:
        # A plan file plays its one plan; an id goes through the library's own
        # lookup, so a typo gets "did you mean ...?".
        plan = named[1].id if named is not None else find_plan(lib, plan).id
    root = (workspace or Path.cwd()).resolve()
    nav = Navigator(
        lib,
        store=store or "memory://",
        workspace=root,
        strict=True,
        allow_commands=allow_commands,
    )
    if resume:
        guidance = _resumed(nav, session, plan, message, store, library)
    else:
        earlier = nav.state(session)
        nav.reset(session)
        if earlier and earlier.get("status") == "running":
            console.print(
                f"The run {plain(earlier.get('run_id'))} left in progress in session "
                f"{plain(repr(session))} was aborted (--resume continues such a run)."
            )
        if plan:
            guidance = nav.start(session, plan)
        else:
            text = message if message is not None else typer.prompt("User message")
            guidance = nav.turn(session, user_message=text, domain=domain)
            if guidance.run is None:
                console.print("No plan activates for that message; try `waygraph match --explain`.")
                raise typer.Exit(1)
    console.print(f"[dim]{plain(PLAY_HELP)}[/]")
    _show_guidance(guidance)
    _line_editing()
    # Ids the run has not seen: a resumed run remembers the last play's ids
    # and would ignore a repeat as an already counted result.
    tag = uuid.uuid4().hex[:8]
    count = 0
    while guidance.active:
        try:
            line = input("tool output> ")
        except (EOFError, KeyboardInterrupt):
            # Ctrl-D or Ctrl-C leaves like :quit; the prompt's line is left open.
            console.print()
            break
        count += 1
        if line.strip() in (":quit", ":q"):
            break
        if line.strip() == ":state":
            print_json(nav.state(session))
            continue
        if line.strip() == ":rewind":
            guidance = nav.rewind(session)
            _show_guidance(guidance)
            continue
        if line.strip() == ":reset":
            nav.reset(session)
            console.print("Session reset.")
            break
        if line.startswith(":user"):
            # The person's own words: the only evidence a human node or manual check takes.
            guidance = nav.turn(session, user_message=line[5:].strip() or " ")
            _show_guidance(guidance)
            continue
        if line.startswith(":say"):
            # What the model would tell the user: a claim, never evidence.
            guidance = nav.turn(
                session,
                tool_output=line[4:].strip(),
                source="model",
                final=True,
                observation_id=f"play-{tag}-{count}",
            )
            _show_guidance(guidance)
            continue
        result = _tool_result(line, root)
        if result is None:
            continue
        output, exit_code = result
        guidance = nav.turn(
            session,
            tool_output=output,
            exit_code=exit_code,
            observation_id=f"play-{tag}-{count}",
            tool_args=line[1:] if line.startswith("!") else None,
        )
        _show_guidance(guidance)
    state = nav.state(session)
    if state:
        _farewell(state, session, nav.store.url, store, library)


def _resumed(
    nav: Any,
    session: str,
    plan: str | None,
    message: str | None,
    store: str | None,
    library: Path | None,
) -> Any:
    """The guidance of the session's running run, which ``--resume`` continues."""
    from waygraph.guided.turns import Guidance

    if plan or message is not None:
        raise ConfigError("--resume continues the session's run; give no PLAN or --message")
    state = nav.state(session)
    if state is None or state.get("status") != "running":
        where = nav.store.url
        if where.startswith("memory:"):
            hint = "a memory:// store keeps nothing between commands; use --store sqlite:///FILE"
        else:
            hint = f"start one with `{_command('play PLAN', session, store, library)}`"
        raise ConfigError(f"no running run in session {session!r} in {where} to resume; {hint}")
    console.print(f"Resuming run {plain(state.get('run_id'))} of plan {plain(state['plan_id'])}.")
    return Guidance(text=nav.context(session), events=[], run=state)


def _line_editing() -> ModuleType | None:
    """Arrow keys and a history of this session's lines at the prompt, for a person at a terminal.

    Importing ``readline`` is what makes ``input()`` edit lines; it is left
    out when stdin is a pipe (scripts and tests), where it could only write
    terminal escapes into the output. Returns the module, or None.

    Example::

        >>> _line_editing() is None or hasattr(_line_editing(), "add_history")
        True
    """
    if not sys.stdin.isatty():
        return None
    try:
        import readline
    except ImportError:  # Windows without a readline module: plain input still works
        return None
    # Up and Down walk this session's lines only, not another program's history.
    readline.clear_history()
    return readline


def _farewell(
    state: dict[str, Any], session: str, url: str, store: str | None, library: Path | None
) -> None:
    """Say how the run was left and, when it lasts, how to get back to it."""
    path = " → ".join(state.get("path", []))
    lasting = not url.startswith("memory:")
    if state.get("status") != "running":
        console.print(f"Run {plain(state.get('status'))}; path: {plain(path)}")
        if lasting:
            console.print(
                f"Inspect it: {plain(_command('sessions show', session, store, library))}"
            )
        return
    console.print(
        f"Run {plain(state.get('run_id'))} left in progress at "
        f"{plain(state.get('current_node'))} (session {plain(repr(session))}); path: {plain(path)}"
    )
    if not lasting:
        console.print(
            "The store is memory://, so the run ends with this command. To keep runs you "
            "can resume and inspect, start play with --store sqlite:///FILE "
            "(or set WAYGRAPH_STORE)."
        )
        return
    console.print(f"Resume it:  {plain(_command('play --resume', session, store, library))}")
    console.print(f"Inspect it: {plain(_command('sessions show', session, store, library))}")


def _command(verb: str, session: str, store: str | None, library: Path | None) -> str:
    """A waygraph command line for this session, naming only what the environment does not."""
    words = ["waygraph", *verb.split()]
    if verb.startswith("sessions"):
        words.append(session)
    elif session != "play":
        words += ["--session", session]
    # A URL from $WAYGRAPH_STORE is not repeated: it may hold a password.
    if store and store != os.environ.get("WAYGRAPH_STORE"):
        words += ["--store", store]
    if library is not None and str(library) != os.environ.get("WAYGRAPH_LIBRARY"):
        words += ["--library", str(library)]
    return " ".join(shlex.quote(w) for w in words)


def _tool_result(line: str, root: Path) -> tuple[str, int | None] | None:
    """The tool output and exit code a typed line stands for; None when there is none to send."""
    if line.startswith("!"):
        try:
            # The one runner: bounded output, and Ctrl-C or the time limit kills
            # the command's whole tree.
            proc = runner.run(line[1:], cwd=root, timeout=300, keep=100_000)
        except KeyboardInterrupt:
            console.print("[yellow]Interrupted; nothing was sent to the plan.[/]")
            return None
        if proc.timed_out:
            console.print("[yellow]Stopped after 300 s; nothing was sent to the plan.[/]")
            return None
        output = proc.output.rstrip()
        console.print(
            Panel(plain(output) or "(no output)", title=f"exit code {plain(proc.exit_code)}")
        )
        return output, proc.exit_code
    if line.startswith(":exit"):
        parts = line.split(maxsplit=2)
        try:
            code = int(parts[1])
        except (IndexError, ValueError):
            console.print("usage: :exit N output text (nothing was sent to the plan)")
            return None
        return (parts[2] if len(parts) > 2 else ""), code
    return line.replace("\\n", "\n"), None


def _show_guidance(guidance: Any) -> None:
    for event in guidance.events:
        console.print(event_line(event))
    if guidance.error:
        console.print(f"[yellow]{plain(guidance.error)}[/]")
    if guidance.text:
        console.print(
            Panel(plain(guidance.text), title="guidance for the model", border_style="dim")
        )


def event_line(event: Any) -> str:
    """One event as rich markup: the dashboard's words, marked by how it went.

    Example:
        >>> event_line({"type": "node_verified", "node": "test", "outcome": "success"})
        '[green]✓[/] Verification passed at test'
    """
    kind = event.get("type")
    text = plain(describe_event(event))
    if kind == "node_verified":
        outcome = event.get("outcome") or ("success" if event.get("passed") else "fail")
        return f"{_VERDICTS.get(outcome, '[yellow]?[/]')} {text}"
    if kind == "edge_followed":
        return f"→ {text}"
    style = _STYLES.get(kind)
    return f"[{style}]{text}[/]" if style else text
