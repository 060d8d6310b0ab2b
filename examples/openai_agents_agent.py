"""A small OpenAI Agents SDK agent guided by waygraph, over any OpenAI-compatible chat API.

The agent has two tools that work inside a workspace folder: ``shell`` runs a
command there, ``write_file`` writes a file there. The whole waygraph part
is one argument, ``hooks=waygraph_hooks(navigator, session=...)``: the task
may start a plan from the library, every tool result is verified against the
current step, and the guidance goes into every model call::

    python examples/openai_agents_agent.py --workspace ./project \\
        --base-url http://127.0.0.1:11434/v1 --model qwen2.5-coder \\
        "Fix the bug in the login module: the tests fail"

Needs the SDK (``pip install 'waygraph[openai-agents]'``). Offline, point
``--base-url`` at ``python -m waygraph.testing.chat_server --script FILE``
(docs/offline.md). The tools are confined to the workspace as
``examples/openai_loop.py``'s are (``waygraph.eval.loop``): fine for an honest
model, not a sandbox against a hostile one.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from agents.exceptions import MaxTurnsExceeded
from openai import AsyncOpenAI

from waygraph.eval.loop import SYSTEM_PROMPT, run_shell, write_file
from waygraph.integrations.openai_agents import waygraph_hooks
from waygraph.navigator import Navigator


@dataclass(frozen=True)
class ToolResult:
    """What a tool returns: its output, and its exit status as a field.

    The run hooks read ``exit_code`` as the command's real status (words in
    the output never are one); the model reads ``str(result)``: the output,
    then the status as ``exit=N`` on the last line.
    """

    output: str
    exit_code: int

    def __str__(self) -> str:
        return "\n".join(filter(None, (self.output.rstrip("\n"), f"exit={self.exit_code}")))


def build_agent(workspace: Path, model: Any) -> Agent[Any]:
    """The agent: the loop's system prompt and two tools bound to ``workspace``."""

    @function_tool
    def shell(command: str) -> ToolResult:
        """Run one shell command in the project folder; returns its output and exit code.

        Args:
            command: The command to run.
        """
        return ToolResult(*run_shell(command, workspace))

    @function_tool(name_override="write_file")
    def write(path: str, content: str) -> ToolResult:
        """Write (create or replace) a text file in the project folder.

        Args:
            path: Path relative to the project.
            content: The whole new file content.
        """
        return ToolResult(*write_file(path, content, workspace))

    return Agent(
        name="waygraph-agent", instructions=SYSTEM_PROMPT, tools=[shell, write], model=model
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task", help="What the agent should do.")
    parser.add_argument("--workspace", type=Path, default=Path.cwd(), help="The project folder.")
    parser.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL"))
    parser.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"))
    parser.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY", "not-needed"))
    parser.add_argument("--library", help="Plan library (file or folder). Default: shipped plans.")
    parser.add_argument("--store", help="waygraph store URL. Default: SQLite in your data folder.")
    parser.add_argument("--session", default="openai-agents", help="Session name in the store.")
    parser.add_argument("--max-turns", type=int, default=30)
    args = parser.parse_args(argv)

    if not args.workspace.is_dir():
        print(f"error: {args.workspace}: no such folder", file=sys.stderr)
        return 2
    # Traces would go to OpenAI with this key, whatever server answers the chat calls.
    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=args.base_url, api_key=args.api_key)
    model = OpenAIChatCompletionsModel(model=args.model, openai_client=client)
    agent = build_agent(args.workspace, model)
    navigator = Navigator(args.library, store=args.store, workspace=args.workspace)
    hooks = waygraph_hooks(navigator, session=args.session)
    try:
        result = asyncio.run(Runner.run(agent, args.task, hooks=hooks, max_turns=args.max_turns))
        print(result.final_output)
        code = 0
    except MaxTurnsExceeded:
        print("(no answer: the turn limit was reached)")
        code = 1
    run = navigator.state(args.session)
    if run is not None:
        print(f"plan {run['plan_id']}: {run['status']}", file=sys.stderr)
    navigator.close()
    return code


if __name__ == "__main__":
    sys.exit(main())
