"""The adversarial suite through the three framework adapters, offline.

Each framework runs its own agent, whose model is the framework's
OpenAI-compatible chat model pointed at :class:`ScriptedChatServer`; the
server replays the transcript, one model reply per move. The agent has three
tools, as the examples build them: ``shell`` and ``write_file`` work in the
workspace and report their exit status as a field (an OpenAI Agents SDK
result object, a LangGraph artifact, a Pydantic AI result mapping), and
``remote_shell`` returns text only (a :class:`Text` move's output), with no
status. Each run ends at the model's words; the person's message starts the
framework's next run of the same conversation (the SDK's input list, the
LangGraph thread, the Pydantic AI message history).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial_drivers import SESSION, Outcome, Snapshot, read_snapshot, segments
from tests.adversarial_transcripts import (
    TEXT_TOOL,
    Job,
    Move,
    Say,
    Text,
    User,
    call_arguments,
    tool_name,
)
from waygraph.eval.loop import SYSTEM_PROMPT, run_shell, write_file
from waygraph.navigator import Navigator
from waygraph.testing import ScriptedChatServer

#: Model calls a run may make beyond its moves (a framework's own retries).
SPARE_CALLS = 3


def replies(part: list[Move]) -> list[str | dict[str, Any]]:
    """The scripted model's replies for one run: a tool call per move, words last."""
    script: list[str | dict[str, Any]] = []
    for n, move in enumerate(part):
        if isinstance(move, User):
            raise ValueError("the person's message starts a run; it is no reply")
        if isinstance(move, Say):
            if n != len(part) - 1:
                raise ValueError("a framework's run ends at the model's words: say them last")
            script.append(move.text)
        else:
            call = {"name": tool_name(move), "arguments": call_arguments(move)}
            script.append({"tool_calls": [call]})
    if not part or not isinstance(part[-1], Say):
        script.append("Done.")
    return script


def with_status(output: str, code: int) -> str:
    """What the model reads: the output, then the status as ``exit=N`` on the last line."""
    return "\n".join(filter(None, (output.rstrip("\n"), f"exit={code}")))


@dataclass(frozen=True)
class ToolResult:
    """The OpenAI Agents SDK example's result: the exit status is a field."""

    output: str
    exit_code: int

    def __str__(self) -> str:
        return with_status(self.output, self.exit_code)


#: One run of the agent on what the person (or the task) said.
Runs = Callable[[str], None]


def _drive(
    job: Job,
    moves: list[Move],
    nav: Navigator,
    start: Callable[[ScriptedChatServer], Runs],
) -> Outcome:
    """The transcript's runs, one per message the person (or the task) gives."""
    cut = segments(job, moves)
    script = [reply for _, part in cut for reply in replies(part)]
    person: Snapshot | None = None
    with ScriptedChatServer(script) as server:
        run = start(server)
        for n, (said, _) in enumerate(cut):
            if n == 1:
                person = read_snapshot(nav)
            run(said)
    return Outcome(read_snapshot(nav), person)


def drive_openai_agents(job: Job, moves: list[Move], ws: Path, library: Path) -> Outcome:
    pytest.importorskip("agents", reason="needs the openai-agents extra")
    import openai
    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel

    from waygraph.integrations.openai_agents import waygraph_hooks

    # Tracing would export spans to api.openai.com: nothing may leave 127.0.0.1.
    set_tracing_disabled(True)
    texts = deque(m.output for m in moves if isinstance(m, Text))

    @function_tool
    def shell(command: str) -> ToolResult:
        """Run one shell command in the project folder; returns its output and exit code."""
        return ToolResult(*run_shell(command, ws))

    @function_tool(name_override="write_file")
    def write(path: str, content: str) -> ToolResult:
        """Write (create or replace) a text file in the project folder."""
        return ToolResult(*write_file(path, content, ws))

    @function_tool(name_override=TEXT_TOOL)
    def remote(command: str) -> str:
        """Run one command on the build machine; returns its output (no exit code)."""
        return texts.popleft()

    nav = Navigator(library, store="memory://", workspace=ws, strict=True)
    history: list[Any] = []

    def start(server: ScriptedChatServer) -> Runs:
        def run(said: str) -> None:
            # A client per run: its connections belong to that run's event loop.
            client = openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0)
            model = OpenAIChatCompletionsModel(model="scripted", openai_client=client)
            agent = Agent(
                name="agent", instructions=SYSTEM_PROMPT, tools=[shell, write, remote], model=model
            )
            task = [*history, {"role": "user", "content": said}]
            hooks = waygraph_hooks(nav, session=SESSION, strict=True)
            result = asyncio.run(Runner.run(agent, task, hooks=hooks, max_turns=len(moves) + 4))
            history[:] = result.to_input_list()

        return run

    try:
        return _drive(job, moves, nav, start)
    finally:
        nav.close()


def drive_langgraph(job: Job, moves: list[Move], ws: Path, library: Path) -> Outcome:
    pytest.importorskip("langgraph.prebuilt", reason="needs the langgraph extra")
    pytest.importorskip("langchain_openai", reason="needs langchain-openai (the dev extra)")
    from langchain_core.messages import SystemMessage
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import tools_condition

    from waygraph.integrations.langgraph import LangGraphHooks

    texts = deque(m.output for m in moves if isinstance(m, Text))

    @tool(response_format="content_and_artifact")
    def shell(command: str) -> tuple[str, dict[str, int]]:
        """Run one shell command in the project folder; returns its output and exit code."""
        output, code = run_shell(command, ws)
        return with_status(output, code), {"exit_code": code}

    @tool("write_file", response_format="content_and_artifact")
    def write(path: str, content: str) -> tuple[str, dict[str, int]]:
        """Write (create or replace) a text file in the project folder."""
        message, code = write_file(path, content, ws)
        return message, {"exit_code": code}

    @tool(TEXT_TOOL)
    def remote(command: str) -> str:
        """Run one command on the build machine; returns its output (no exit code)."""
        return texts.popleft()

    nav = Navigator(library, store="memory://", workspace=ws, strict=True)
    lg = LangGraphHooks(navigator=nav, strict=True)
    tools = [shell, write, remote]
    # The thread is the waygraph session; each model call and tool round is a graph step.
    config: RunnableConfig = {
        "configurable": {"thread_id": SESSION},
        "recursion_limit": 2 * (len(moves) + 4),
    }

    def start(server: ScriptedChatServer) -> Runs:
        chat = ChatOpenAI(base_url=server.base_url, api_key="x", model="scripted", max_retries=0)
        bound = chat.bind_tools(tools)

        def agent(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
            messages = [SystemMessage(SYSTEM_PROMPT), *state["messages"]]
            reply = bound.invoke(lg.add_guidance(messages, config), config)
            lg.report_reply(reply, config)
            return {"messages": [reply]}

        graph = StateGraph(MessagesState)
        graph.add_node("agent", agent)
        graph.add_node("tools", lg.tool_node(tools, handle_tool_errors=True))
        graph.add_edge(START, "agent")
        graph.add_conditional_edges("agent", tools_condition)
        graph.add_edge("tools", "agent")
        compiled = graph.compile(checkpointer=InMemorySaver())

        def run(said: str) -> None:
            compiled.invoke({"messages": [("user", said)]}, config)

        return run

    try:
        return _drive(job, moves, nav, start)
    finally:
        lg.close()


def drive_pydantic_ai(job: Job, moves: list[Move], ws: Path, library: Path) -> Outcome:
    pytest.importorskip("pydantic_ai", reason="needs the pydantic-ai extra")
    pytest.importorskip("pydantic_ai.models.openai", reason="needs pydantic-ai-slim[openai]")
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from waygraph.integrations.pydantic_ai import waygraph_capability

    texts = deque(m.output for m in moves if isinstance(m, Text))

    def shell(command: str) -> dict[str, Any]:
        """Run one shell command in the project folder; returns its output and exit code."""
        output, code = run_shell(command, ws)
        return {"exit_code": code, "output": output}

    def write_file_tool(path: str, content: str) -> dict[str, Any]:
        """Write (create or replace) a text file in the project folder."""
        message, code = write_file(path, content, ws)
        return {"exit_code": code, "output": message}

    def remote_shell(command: str) -> str:
        """Run one command on the build machine; returns its output (no exit code)."""
        return texts.popleft()

    write_file_tool.__name__ = "write_file"  # the tool's name, as the model calls it
    nav = Navigator(library, store="memory://", workspace=ws, strict=True)
    guide = waygraph_capability(session=SESSION, navigator=nav, strict=True)
    history: list[Any] = []

    def start(server: ScriptedChatServer) -> Runs:
        provider = OpenAIProvider(base_url=server.base_url, api_key="x")
        agent = Agent(
            OpenAIChatModel("scripted", provider=provider),
            instructions=SYSTEM_PROMPT,
            tools=[shell, write_file_tool, remote_shell],
            capabilities=[guide],
        )

        def run(said: str) -> None:
            result = agent.run_sync(said, message_history=history or None)
            history[:] = result.all_messages()

        return run

    try:
        return _drive(job, moves, nav, start)
    finally:
        nav.close()


FRAMEWORKS = {
    "openai_agents": drive_openai_agents,
    "langgraph": drive_langgraph,
    "pydantic_ai": drive_pydantic_ai,
}
