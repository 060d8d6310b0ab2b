"""The adversarial suite's drivers: one transcript, played through one host, in a real workspace.

Each driver plays a transcript (tests/adversarial_transcripts.py) the way its
host reports it: the Navigator and AsyncNavigator, Hooks, the OpenAI loop
against the shipped chat server, the installed Agent-Zero hooks of either
layout, and a client of ``waygraph mcp`` over stdio. Commands and files
really run and are written in the workspace; the model's words are reported
as its words; the person's message goes in by the host's channel for the
user's own message (or, with ``answers``, by ``answer``). Each returns an
:class:`Outcome`: the run at the end, and the run just before the person
first spoke (what the model alone had got to).
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.adversarial_transcripts import (
    Job,
    Move,
    Run,
    Say,
    Text,
    Tool,
    User,
    Write,
    arguments,
    call_arguments,
    execute,
    tool_name,
)
from tests.agent_zero_fake import FakeAgentZero, Response
from waygraph.eval import loop
from waygraph.hooks import Hooks
from waygraph.integrations.agent_zero import install
from waygraph.navigator import Navigator

SESSION = "s"
AGENT_ZERO_SESSION = "agent-zero:chat1:0"


@dataclass(frozen=True)
class Snapshot:
    """A run as the store holds it: its status, whom it waits for, its events."""

    status: str | None
    awaiting: str | None
    run_id: str | None
    events: tuple[Mapping[str, Any], ...]


def snapshot(record: Mapping[str, Any] | None, events: list[dict[str, Any]]) -> Snapshot:
    if record is None:
        return Snapshot(None, None, None, tuple(events))
    return Snapshot(record["status"], record.get("awaiting"), record["run_id"], tuple(events))


def read_snapshot(nav: Navigator, session: str = SESSION) -> Snapshot:
    return snapshot(nav.state(session), nav.events(session))


@dataclass(frozen=True)
class Outcome:
    """The run at the end (``last``) and just before the person first spoke (``person``)."""

    last: Snapshot
    person: Snapshot | None = None

    @property
    def status(self) -> str | None:
        return self.last.status


def as_command(move: Text) -> Run:
    """What a host without a text-only tool does instead: runs the command, reports its status."""
    return Run(move.command)


# ------------------------------------------------------------------ in process


def drive_navigator(
    job: Job, moves: list[Move], ws: Path, library: Path, *, answers: bool = False
) -> Outcome:
    nav = Navigator(library, store="memory://", workspace=ws, strict=True)
    person: Snapshot | None = None
    try:
        nav.turn(SESSION, user_message=job.request)
        for move in moves:
            if isinstance(move, User):
                person = person or read_snapshot(nav)
                if answers:
                    nav.answer(SESSION, move.text, by="the user")
                else:
                    nav.turn(SESSION, user_message=move.text)
            elif isinstance(move, Say):
                nav.turn(SESSION, tool_output=move.text, source="model", final=True)
            elif isinstance(move, Text):
                nav.turn(
                    SESSION,
                    tool_output=move.output,
                    tool_name=tool_name(move),
                    tool_args=arguments(move),
                )
            else:
                output, code = execute(move, ws)
                nav.turn(
                    SESSION,
                    tool_output=output,
                    tool_name=tool_name(move),
                    exit_code=code,
                    tool_args=arguments(move),
                )
        return Outcome(read_snapshot(nav), person)
    finally:
        nav.close()


def drive_async_navigator(
    job: Job, moves: list[Move], ws: Path, library: Path, *, answers: bool = False
) -> Outcome:
    from waygraph.async_navigator import AsyncNavigator

    async def main() -> Outcome:
        nav = AsyncNavigator(library, store="memory://", workspace=ws, strict=True)

        async def read() -> Snapshot:
            # AsyncNavigator has no events(): its sync Navigator reads them, off the loop.
            events = await asyncio.to_thread(nav.sync.events, SESSION)
            return snapshot(await nav.state(SESSION), events)

        person: Snapshot | None = None
        try:
            await nav.turn(SESSION, user_message=job.request)
            for move in moves:
                if isinstance(move, User):
                    person = person or await read()
                    if answers:
                        await nav.answer(SESSION, move.text, by="the user")
                    else:
                        await nav.turn(SESSION, user_message=move.text)
                elif isinstance(move, Say):
                    await nav.turn(SESSION, tool_output=move.text, source="model", final=True)
                elif isinstance(move, Text):
                    await nav.turn(
                        SESSION,
                        tool_output=move.output,
                        tool_name=tool_name(move),
                        tool_args=arguments(move),
                    )
                else:
                    output, code = await asyncio.to_thread(execute, move, ws)
                    await nav.turn(
                        SESSION,
                        tool_output=output,
                        tool_name=tool_name(move),
                        exit_code=code,
                        tool_args=arguments(move),
                    )
            return Outcome(await read(), person)
        finally:
            await nav.close()

    return asyncio.run(main())


def drive_hooks(
    job: Job, moves: list[Move], ws: Path, library: Path, *, answers: bool = False
) -> Outcome:
    hooks = Hooks(SESSION, library=library, store="memory://", workspace=ws, strict=True)
    nav = hooks.navigator
    assert nav is not None
    person: Snapshot | None = None
    try:
        hooks.on_user_message(job.request)
        for move in moves:
            if isinstance(move, User):
                person = person or read_snapshot(nav)
                if answers:
                    hooks.answer(move.text, by="the user")
                else:
                    hooks.on_user_message(move.text)
            elif isinstance(move, Say):
                hooks.on_model_reply(move.text)
            elif isinstance(move, Text):
                hooks.on_tool_result(
                    move.output, tool_name=tool_name(move), tool_args=arguments(move)
                )
            else:
                output, code = execute(move, ws)
                hooks.on_tool_result(
                    output, tool_name=tool_name(move), exit_code=code, tool_args=arguments(move)
                )
        return Outcome(read_snapshot(nav), person)
    finally:
        hooks.close()


def segments(job: Job, moves: list[Move]) -> list[tuple[str, list[Move]]]:
    """The transcript cut where the person speaks: (their message, the model's moves after it)."""
    cut: list[tuple[str, list[Move]]] = [(job.request, [])]
    for move in moves:
        if isinstance(move, User):
            cut.append((move.text, []))
        else:
            cut[-1][1].append(move)
    return cut


def drive_openai_loop(job: Job, moves: list[Move], ws: Path, library: Path) -> Outcome:
    """``waygraph.eval.loop.run_agent`` (the OpenAI loop example's loop) against the chat server.

    The person's message is the next ``run_agent`` call, carrying the
    conversation on (``history``). The loop's tools all report an exit status,
    so a text-only result is the command run by its shell tool.
    """
    from openai import OpenAI

    from waygraph.testing import ScriptedChatServer

    script: Iterator[Move] = iter([m for m in moves if not isinstance(m, User)])

    def reply(request: dict[str, Any]) -> dict[str, Any] | str:
        move = next(script, None)
        if move is None:
            return "Done."
        if isinstance(move, Say):
            return move.text
        call = as_command(move) if isinstance(move, Text) else move
        assert not isinstance(call, User)
        return {"tool_calls": [{"name": tool_name(call), "arguments": call_arguments(call)}]}

    person: Snapshot | None = None
    with ScriptedChatServer([reply], loop=True) as server:
        client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        hooks = Hooks(SESSION, library=library, store="memory://", workspace=ws, strict=True)
        nav = hooks.navigator
        assert nav is not None
        try:
            history: list[dict[str, Any]] | None = None
            for n, (said, part) in enumerate(segments(job, moves)):
                if n == 1:
                    person = read_snapshot(nav)
                result = loop.run_agent(
                    said,
                    client=client,
                    model="liar",
                    workspace=ws,
                    hooks=hooks,
                    max_steps=len(part) + 3,
                    history=history,
                )
                history = result.messages
            return Outcome(read_snapshot(nav), person)
        finally:
            hooks.close()
            client.close()


# ------------------------------------------------------------------ Agent-Zero


def drive_agent_zero(
    job: Job, moves: list[Move], ws: Path, library: Path, tree: Path, layout: str
) -> Outcome:
    """The installed hooks, loaded and called as Agent-Zero's loop calls them.

    Commands go through ``code_execution_tool``'s terminal: the hooks see the
    call before it runs (where waygraph adds its exit-status marker) and the
    response after; the command really runs in Agent-Zero's work dir. Files
    are written the way an Agent-Zero model writes them, from the terminal. A
    text-only result is another tool's response; the model's words are the
    ``response`` tool's; the person's message starts the next monologue.
    """
    install(tree, library=library)
    a0 = FakeAgentZero(tree, layout)
    store = f"sqlite:///{tree}/usr/waygraph/waygraph.db"
    person: Snapshot | None = None

    def read() -> Snapshot:
        nav = Navigator(library, store=store)
        try:
            return read_snapshot(nav, AGENT_ZERO_SESSION)
        finally:
            nav.close()

    a0.user(job.request)
    heard = False  # a user message not yet seen by a model call
    for move in moves:
        if isinstance(move, User):
            person = person or read()
            a0.user(move.text)
            heard = True
            continue
        a0.prompt()
        heard = False
        if isinstance(move, Say):
            a0.tool(move.text, name="response")
        elif isinstance(move, Text):
            a0.tool(move.output, name=tool_name(move))
        else:
            _terminal_call(a0, move, ws)
    if heard:
        a0.prompt()
    return Outcome(read(), person)


def _terminal_call(a0: FakeAgentZero, move: Run | Write, ws: Path) -> None:
    command = move.command if isinstance(move, Run) else _printf(move)
    tool_args: dict[str, Any] = {"runtime": "terminal", "code": command}
    a0.call("tool_execute_before", tool_args=tool_args, tool_name="code_execution_tool")
    response = Response(terminal(tool_args["code"], ws))
    a0.history.append({"ai": True, "content": '{"tool_name": "code_execution_tool"}'})
    a0.call("tool_execute_after", response=response, tool_name="code_execution_tool")
    a0.history.append(
        {
            "ai": False,
            "content": {"tool_name": "code_execution_tool", "tool_result": response.message},
        }
    )


def _printf(move: Write) -> str:
    return f"printf '%s' {shlex.quote(move.content)} > {shlex.quote(move.path)}"


def terminal(code: str, ws: Path) -> str:
    """Agent-Zero's terminal: a shell in the work dir, unconfined; the exit status is not shown."""
    done = subprocess.run(
        ["bash", "-c", code], cwd=ws, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30
    )
    return done.stdout.decode(errors="replace")


# ------------------------------------------------------------------ MCP over stdio


async def drive_mcp(job: Job, moves: list[Move], ws: Path, library: Path, base: Path) -> Outcome:
    """A client of its own ``waygraph mcp`` server (stdio), its store in ``base``.

    Tool results go to ``report_tool_result`` with their exit code and
    arguments (a text-only result without a code), the model's words with
    ``source="model"``, the person's message to ``user_message``. The client
    offers no elicitation, so a person's step is asked in chat.
    """
    from mcp import ClientSession, StdioServerParameters, stdio_client

    store = f"sqlite:///{base / 'wg.db'}"
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            *("-m", "waygraph", "mcp", "--library", str(library)),
            *("--store", store, "--workspace", str(ws)),
        ],
        env=dict(os.environ),
        cwd=base,
    )

    def read() -> Snapshot:
        nav = Navigator(library, store=store)
        try:
            return read_snapshot(nav)
        finally:
            nav.close()

    person: Snapshot | None = None
    async with (
        stdio_client(params) as (read_stream, write_stream),
        ClientSession(read_stream, write_stream) as session,
    ):
        await session.initialize()

        async def call(tool: str, args: dict[str, Any]) -> None:
            result = await session.call_tool(tool, {"session_id": SESSION, **args})
            failed = getattr(result, "is_error", getattr(result, "isError", False))
            assert not failed, result.content

        await call("user_message", {"message": job.request})
        for n, move in enumerate(moves):
            if isinstance(move, User):
                person = person or await asyncio.to_thread(read)
                await call("user_message", {"message": move.text})
                continue
            await call("report_tool_result", {"call_id": f"c{n}", **await _report(move, ws)})
    return Outcome(await asyncio.to_thread(read), person)


async def _report(move: Say | Tool, ws: Path) -> dict[str, Any]:
    """What the client reports to ``report_tool_result`` for one move."""
    if isinstance(move, Say):
        return {"output": move.text, "source": "model", "final": True}
    report: dict[str, Any] = {
        "output": move.output if isinstance(move, Text) else "",
        "tool_name": tool_name(move),
        "arguments": json.dumps(arguments(move)),
    }
    if not isinstance(move, Text):
        report["output"], report["exit_code"] = await asyncio.to_thread(execute, move, ws)
    return report


DRIVERS = {
    "navigator": drive_navigator,
    "async_navigator": drive_async_navigator,
    "hooks": drive_hooks,
    "openai_loop": drive_openai_loop,
}
#: The drivers whose host has an answer channel besides the user's message.
ANSWERING = {
    "navigator": drive_navigator,
    "async_navigator": drive_async_navigator,
    "hooks": drive_hooks,
}
