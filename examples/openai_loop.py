"""A small tool-calling agent guided by waygraph, over any OpenAI-compatible chat API.

The agent has two tools that work inside a workspace folder: ``shell`` runs a
command there, ``write_file`` writes a file there. waygraph matches the task
to a plan, adds the current step to the model's context before every call,
and verifies every tool result against that step, on the command's real exit
code and the command itself, so the model is told when it must retry, move
on, or stop. An answer that asks the user something ends the run waiting for
the user's reply (the next run of the same ``--session``). It works with
OpenAI and with local servers that speak the same protocol (Ollama, vLLM,
llama.cpp)::

    python examples/openai_loop.py --workspace ./project \\
        --base-url http://127.0.0.1:11434/v1 --model qwen2.5-coder \\
        "Fix the bug in the login module: the tests fail"

Needs the ``openai`` package (``pip install 'waygraph[llm]'``).

The tools are confined to the workspace as far as a plain subprocess
allows: commands run there with a minimal environment and a timeout, and
commands or paths that name a place outside it (``..``, absolute paths,
``~``) are refused. That keeps an honest model inside the folder; it is not
a sandbox against a hostile one (use a container for that). The loop lives
in ``waygraph.eval.loop``, shared with ``waygraph eval``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from waygraph.chat import ChatClient
from waygraph.eval.loop import (
    COMMAND_TIMEOUT,
    MAX_OUTPUT,
    SHELL_TOOL,
    SYSTEM_PROMPT,
    WRITE_FILE_TOOL,
    AgentResult,
    ToolCall,
    confine,
    run_agent,
    run_shell,
)
from waygraph.hooks import Hooks

# The loop itself lives in waygraph.eval.loop, so `waygraph eval` measures exactly this agent.
__all__ = [
    "COMMAND_TIMEOUT",
    "MAX_OUTPUT",
    "SHELL_TOOL",
    "SYSTEM_PROMPT",
    "WRITE_FILE_TOOL",
    "AgentResult",
    "ToolCall",
    "confine",
    "main",
    "run_agent",
    "run_shell",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task", help="What the agent should do.")
    parser.add_argument("--workspace", type=Path, default=Path.cwd(), help="The project folder.")
    parser.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL"))
    parser.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"))
    parser.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY", "not-needed"))
    parser.add_argument("--library", help="Plan library (file or folder). Default: shipped plans.")
    parser.add_argument("--store", help="waygraph store URL. Default: SQLite in your data folder.")
    parser.add_argument("--session", default="openai-loop", help="Session name in the store.")
    parser.add_argument("--max-steps", type=int, default=30)
    parser.add_argument("--max-tokens", type=int, default=1024, help="Bound of each reply.")
    parser.add_argument(
        "--tool-protocol",
        choices=("native", "text", "auto"),
        default="auto",
        help="Native tool calls, or a JSON object in the reply for models without them.",
    )
    parser.add_argument("--context-tokens", type=int, help="The model's context size.")
    args = parser.parse_args(argv)

    if not args.workspace.is_dir():
        print(f"error: {args.workspace}: no such folder", file=sys.stderr)
        return 2
    # The guidance names this loop's tools, not the ones the plans were written for.
    tools = {"code_execution_tool": "shell", "write_file": "write_file"}
    hooks = Hooks(
        args.session,
        library=args.library,
        store=args.store,
        workspace=args.workspace,
        tools=tools,
    )
    client = ChatClient(
        args.base_url,
        model=args.model,
        api_key=args.api_key,
        max_tokens=args.max_tokens,
        tool_protocol=args.tool_protocol,
        context_tokens=args.context_tokens,
    )
    with client:
        result = run_agent(
            args.task,
            client=client,
            model=args.model,
            workspace=args.workspace,
            hooks=hooks,
            max_steps=args.max_steps,
        )
    if result.error is not None:
        # The server failed: one line, and what the run did is in the store.
        print(f"error: {result.error}", file=sys.stderr)
        return 1
    print(result.answer or "(no answer: the step limit was reached)")
    if result.run is not None:
        print(f"plan {result.run['plan_id']}: {result.run['status']}", file=sys.stderr)
    if result.awaits_user:
        # The model asked something: the plan waits for the user's answer, which
        # is the next message of the same session (run again with it as the task).
        print(f"waiting for your answer (session {args.session})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
