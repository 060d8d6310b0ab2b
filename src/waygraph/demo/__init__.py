"""``waygraph demo``: an agent fixes a real bug, guided by the shipped bugfix plan.

A fresh temporary workspace holds a small Python project whose test fails.
A scripted agent (or, with ``--llm``, any OpenAI-compatible model) works
through ``bugfix_workflow`` with a real :class:`~waygraph.Navigator` on the
default SQLite store, running real commands as its tools. The scripted
agent's first fix is wrong, so the run goes round the fix -> test loop before
passing; ``--break`` makes every fix wrong so the run escalates. Its first run
of the whole suite reports only text, as many agent tools do: waygraph cannot
judge an exit code from words, so the verdict is unknown and the guidance asks
for the exit status, which the agent then prints with ``; echo "exit=$?"``
(as the output's last line: only there is it a status). Every call goes to
the Navigator with its arguments, so a check bound to a command
(``command_matches``) sees which command ran. With ``--llm``, a reply that
asks the user something waits for the user; nobody sits at the demo, so it
answers for the user, and says so.
"""

from __future__ import annotations

import os
import shlex
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from waygraph._extras import require
from waygraph.chat import DEFAULT_MAX_TOKENS
from waygraph.cli.app import plain
from waygraph.navigator import Guidance, Navigator
from waygraph.sandbox import runner
from waygraph.sandbox.safe_files import read_regular_file

__all__ = ["DemoResult", "Workspace", "make_project", "run_demo"]

PLAN_ID = "bugfix_workflow"
USER_REQUEST = "The discount in pricing.py is broken and the tests fail. Please fix the bug."
COMMAND_TIMEOUT = 60
#: Bytes of a tool's output kept from each end (the middle is dropped and counted).
OUTPUT_KEEP = 100_000
OUTPUT_SHOWN = 12  # lines of tool output shown per turn

PRICING = '''\
"""Prices for the shop."""


def apply_discount(price: float, percent: float) -> float:
    """Return ``price`` reduced by ``percent`` per cent."""
    return price - price * percent
'''

TESTS = """\
import unittest

from pricing import apply_discount


class DiscountTest(unittest.TestCase):
    def test_ten_percent(self):
        self.assertAlmostEqual(apply_discount(200, 10), 180)

    def test_no_discount(self):
        self.assertAlmostEqual(apply_discount(99, 0), 99)

    def test_full_discount(self):
        self.assertAlmostEqual(apply_discount(50, 100), 0)


if __name__ == "__main__":
    unittest.main()
"""

BUGGY_LINE = "    return price - price * percent\n"
CORRECT_FIX = "    return price - price * percent / 100\n"
WRONG_FIXES = [
    "    return price * percent / 100\n",
    "    return price - percent\n",
    "    return price * (1 - percent)\n",
]


def make_project(root: Path) -> None:
    """Write the buggy project into ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pricing.py").write_text(PRICING)
    (root / "test_pricing.py").write_text(TESTS)


@dataclass
class ToolResult:
    output: str
    exit_code: int | None


class Workspace:
    """Tools confined to one folder: run a command, read and write files."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def path(self, relative: str) -> Path:
        """The absolute path of ``relative``; PermissionError outside the workspace."""
        target = (self.root / relative).resolve()
        if target != self.root and self.root not in target.parents:
            raise PermissionError(f"{relative!r} is outside the workspace")
        return target

    def run(self, command: str) -> ToolResult:
        """Run a shell command in the workspace (bounded by COMMAND_TIMEOUT)."""
        # The model's commands get no secrets (OPENAI_API_KEY is in this environment).
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.root),
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        # The project's tests run with this interpreter, so `python` works anywhere.
        command = command.replace("python ", f"{shlex.quote(sys.executable)} ", 1)
        # The one runner: one stream in the order written (a status line echoed
        # last must come out last), output bounded, the whole tree killed at the end.
        result = runner.run(
            command, cwd=self.root, env=env, timeout=COMMAND_TIMEOUT, keep=OUTPUT_KEEP
        )
        if result.timed_out:
            return ToolResult(f"command timed out after {COMMAND_TIMEOUT}s", 124)
        return ToolResult(result.output.strip(), result.exit_code)

    def edit(self, relative: str, old: str, new: str) -> ToolResult:
        """Replace the first ``old`` in a file with ``new``; exit code 1 when it cannot, 126
        when the path leaves the workspace."""
        try:
            target = self.path(relative)
        except PermissionError as exc:
            return ToolResult(f"refused: {exc}; nothing was edited", 126)
        try:
            # A regular file only: a FIFO or a link the model left must not hang or leak.
            text = read_regular_file(target).decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return ToolResult(f"cannot edit {relative}: {exc}", 1)
        if old not in text:
            return ToolResult(f"{relative}: the text to replace was not found", 1)
        target.write_text(text.replace(old, new, 1))
        return ToolResult(f"edited {relative}:\n- {old.strip()}\n+ {new.strip()}", 0)

    def write(self, relative: str, content: str) -> ToolResult:
        """Write a whole file, making its folders; exit code 1 when it cannot, 126 when
        the path leaves the workspace (refused: nothing was done, so it is no evidence)."""
        try:
            target = self.path(relative)
        except PermissionError as exc:
            return ToolResult(f"refused: {exc}; nothing was written", 126)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
        except OSError as exc:
            return ToolResult(f"cannot write {relative}: {exc}", 1)
        return ToolResult(f"wrote {len(content)} characters to {relative}", 0)


# ---------------------------------------------------------------- the scripted agent


@dataclass
class Call:
    """A tool call: how the demo shows it, its arguments (the host reports them), its result."""

    shown: str
    args: dict[str, str]
    result: ToolResult


def _run(ws: Workspace, command: str) -> Call:
    return Call(command, {"command": command}, ws.run(command))


class ScriptedAgent:
    """Picks the next tool call from the node the Navigator says it is on."""

    def __init__(self, workspace: Workspace, *, always_wrong: bool = False) -> None:
        self.ws = workspace
        self.always_wrong = always_wrong
        self.fixes_tried = 0
        self.current_line = BUGGY_LINE
        self.status_asked = False

    def act(self, node: str) -> Call:
        if node == "verify_no_regression":
            cmd = "python -m unittest -v"
            if self.status_asked:
                # As the guidance asked: print the exit status with the output;
                # one stream, so the marker is the output's last line.
                cmd += '; echo "exit=$?"'
            self.status_asked = True
            # A text-only tool: the output, no exit code.
            return Call(cmd, {"command": cmd}, ToolResult(self.ws.run(cmd).output, None))
        if node in ("reproduce", "test"):
            return _run(self.ws, "python -m unittest test_pricing")
        if node == "gather_context":
            return _run(self.ws, "cat pricing.py")
        if node == "isolate":
            cmd = 'python -c "from pricing import apply_discount; print(apply_discount(200, 10))"'
            call = _run(self.ws, cmd)
            note = "\n(expected 180: the percent is never divided by 100)"
            call.result = ToolResult(call.result.output + note, call.result.exit_code)
            return call
        if node == "fix":
            wrong = self.always_wrong or self.fixes_tried == 0
            new = WRONG_FIXES[self.fixes_tried % len(WRONG_FIXES)] if wrong else CORRECT_FIX
            self.fixes_tried += 1
            result = self.ws.edit("pricing.py", self.current_line, new)
            # An edit is no command: its arguments name none, so no check bound to a
            # command (command_matches) takes it for one.
            args = {"path": "pricing.py", "old": self.current_line, "new": new}
            self.current_line = new
            return Call(f"edit pricing.py -> {new.strip()}", args, result)
        return _run(self.ws, "echo nothing to do")


# ---------------------------------------------------------------- the run


@dataclass
class DemoResult:
    """How a demo run ended: its session, status, path, node states, store and workspace."""

    session_id: str
    status: str
    path: list[str]
    visited: dict[str, dict[str, Any]]
    store_url: str
    workspace: Path
    turns: int


def run_demo(
    *,
    break_fixes: bool = False,
    store: str | None = None,
    llm_url: str | None = None,
    model: str | None = None,
    console: Console | None = None,
    workspace: Path | None = None,
    max_turns: int = 40,
    preflight: bool = True,
    tool_protocol: str = "auto",
    context_tokens: int | None = None,
    max_tokens: int | None = DEFAULT_MAX_TOKENS,
) -> DemoResult:
    """Run the demo and return what happened (also printed with rich).

    With ``llm_url`` a real model does the work (``model`` names it); its
    requests go through :class:`~waygraph.chat.ChatClient` with
    ``tool_protocol``, ``context_tokens`` and ``max_tokens``, and ``preflight``
    first checks that the server answers. ``max_turns`` bounds the tool calls.
    """
    console = console or Console()
    if llm_url:
        from waygraph.cli._preflight import check_endpoint

        # Before the session is written: one line when --llm cannot be used
        # (without ``preflight``, only a URL that is no http(s) URL).
        require("llm", "openai", purpose="waygraph demo --llm")
        key = os.environ.get("OPENAI_API_KEY")
        check_endpoint(llm_url, api_key=key, timeout=None if preflight else 0)
    root = workspace or Path(tempfile.mkdtemp(prefix="waygraph-demo-"))
    make_project(root)
    ws = Workspace(root)
    # The guidance names the demo's own tools, never Agent-Zero's (issue 35).
    nav = Navigator(
        store=store,
        workspace=root,
        tools={"code_execution_tool": "run_command", "write_file": "write_file"},
    )
    session_id = f"demo-{os.urandom(4).hex()}"
    console.rule("[bold]waygraph demo[/]: a guided bug fix")
    console.print(f"Workspace: [cyan]{plain(root)}[/]  (a small project whose test fails)")
    console.print(
        f"Store: [cyan]{plain(nav.store.url)}[/]   Session: [cyan]{plain(session_id)}[/]\n"
    )
    console.print(Panel(Text(USER_REQUEST), title="user", border_style="blue"))
    guidance = nav.turn(session_id, user_message=USER_REQUEST, domain="bugfix")
    if guidance.run is None or guidance.run["plan_id"] != PLAN_ID:
        guidance = nav.start(session_id, PLAN_ID)
    _show_activation(console, guidance)
    if llm_url:
        from waygraph.demo._model import DemoModel, llm_loop

        llm = DemoModel(llm_url, model, tool_protocol, context_tokens, max_tokens)
        turns = llm_loop(console, nav, ws, session_id, guidance, llm, max_turns)
    else:
        agent = ScriptedAgent(ws, always_wrong=break_fixes)
        turns = _scripted_loop(console, nav, session_id, guidance, agent, max_turns)
    state = nav.state(session_id) or {}
    result = DemoResult(
        session_id=session_id,
        status=state.get("status", "none"),
        path=list(state.get("path", [])),
        visited=dict(state.get("visited", {})),
        store_url=nav.store.url,
        workspace=root,
        turns=turns,
    )
    _show_summary(console, result)
    nav.close()
    return result


def _scripted_loop(
    console: Console,
    nav: Navigator,
    session_id: str,
    guidance: Guidance,
    agent: ScriptedAgent,
    max_turns: int,
) -> int:
    turns = 0
    while guidance.active and turns < max_turns:
        turns += 1
        node = guidance.run["current_node"]  # type: ignore[index]
        attempt = guidance.run["attempts"]  # type: ignore[index]
        call = agent.act(node)
        guidance = nav.turn(
            session_id,
            tool_output=call.result.output,
            tool_name="code_execution_tool",
            exit_code=call.result.exit_code,
            observation_id=f"call-{turns}",
            tool_args=call.args,
        )
        _show_turn(console, turns, node, attempt, call.shown, call.result, guidance)
    return turns


def _show_activation(console: Console, guidance: Guidance) -> None:
    for event in guidance.events:
        if event.type == "plan_activated":
            hits = ", ".join(event.get("triggers") or []) or "started by id"
            console.print(
                f"[green]Plan activated:[/] {plain(event.plan_id)}  (triggers: {plain(hits)})"
            )
    if guidance.text:
        console.print(
            Panel(Text(guidance.text), title="guidance for the model", border_style="dim")
        )


def _show_turn(
    console: Console,
    turn: int,
    node: str,
    attempt: int,
    command: str,
    result: ToolResult,
    guidance: Guidance,
) -> None:
    lines = result.output.splitlines()
    shown = "\n".join(lines[:OUTPUT_SHOWN])
    if len(lines) > OUTPUT_SHOWN:
        shown += f"\n... ({len(lines) - OUTPUT_SHOWN} more lines)"
    body = Text()
    body.append("$ ", style="bold")
    body.append(command + "\n", style="bold cyan")
    body.append(shown or "(no output)")
    status = "not reported" if result.exit_code is None else str(result.exit_code)
    body.append(f"\n[exit code {status}]", style="dim")
    console.print(
        Panel(
            body, title=f"turn {turn:d} · {plain(node)} (attempt {attempt:d})", title_align="left"
        )
    )
    for event in guidance.events:
        if event.type == "node_verified" and event.get("outcome") == "unknown":
            why = plain(event.get("reason") or "the evidence was missing")
            console.print(f"  [yellow]? not judged[/] at {plain(event.node)}: {why}")
        elif event.type == "node_verified":
            verdict = "[green]✓ verified[/]" if event.passed else "[red]✗ failed verification[/]"
            console.print(f"  {verdict} at {plain(event.node)}")
        elif event.type == "edge_followed":
            console.print(
                f"  → {plain(event.node)} --{plain(event.condition)}--> {plain(event.to)}"
            )
        elif event.type == "retry_triggered":
            console.print(f"  ↻ retry {plain(event.node)} (attempt {plain(event.attempt)})")
        elif event.type == "plan_escalated":
            console.print(f"  [bold red]⚠ escalated:[/] {plain(event.reason)}")
        elif event.type == "plan_completed":
            console.print("  [bold green]✔ plan completed[/]")
    if guidance.text:
        console.print(
            Panel(Text(guidance.text), title="guidance for the model", border_style="dim")
        )


def _show_summary(console: Console, result: DemoResult) -> None:
    console.rule("result")
    colour = {"completed": "green", "escalated": "red"}.get(result.status, "yellow")
    console.print(
        f"Status: [bold {colour}]{plain(result.status)}[/] after {result.turns:d} tool calls"
    )
    console.print(Text("Path: " + " → ".join(result.path)))
    # "entered" is how often the run came to the node (fix -> test -> fix
    # enters test afresh each time); "attempts" counts within the last entry.
    entered = Counter(result.path)
    table = Table("node", "outcome", "entered", "attempts", title="nodes visited")
    for node, state in result.visited.items():
        table.add_row(
            plain(node), plain(state["outcome"]), str(entered[node]), str(state["attempts"])
        )
    console.print(table)
    if result.store_url.startswith("memory:"):
        console.print("The session lived in memory:// and is gone with this process.")
        return
    store = shlex.quote(result.store_url)
    console.print(f"Session stored in [cyan]{plain(result.store_url)}[/]. Inspect it with:")
    for what in ("show", "events"):
        console.print(
            f"  waygraph sessions {what} {result.session_id} --store {store}",
            markup=False,
            highlight=False,
        )
