"""A small Pydantic AI agent guided by waygraph, over any OpenAI-compatible chat API.

The agent has two tools that work inside a workspace folder: ``shell`` runs a
command there, ``write_file`` writes a file there. One capability,
``waygraph_capability``, matches the task to a plan, verifies every tool
result (with its exit code) against the current step and puts the guidance
into each model request::

    python examples/pydantic_ai_agent.py --workspace ./project \\
        --base-url http://127.0.0.1:11434/v1 --model qwen2.5-coder \\
        "Fix the bug in the login module: the tests fail"

Needs ``pip install 'waygraph[pydantic-ai]' 'pydantic-ai-slim[openai]'``.
Offline, point ``--base-url`` at ``python -m waygraph.testing.chat_server
--script FILE`` (docs/offline.md).

The tools are confined to the workspace as far as a plain subprocess allows
(``waygraph.eval.loop.run_shell``): an honest model stays in the folder; it
is not a sandbox against a hostile one.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from waygraph.eval.loop import SYSTEM_PROMPT, run_shell, write_file
from waygraph.integrations.pydantic_ai import waygraph_capability


def build_agent(model: Any, workspace: Path, guide: Any) -> Any:
    """The agent: two workspace tools, and ``guide`` (waygraph's capability)."""
    from pydantic_ai import Agent

    def shell(command: str) -> dict[str, Any]:
        """Run one shell command in the project folder; returns its output and exit code."""
        output, code = run_shell(command, workspace)
        return {"exit_code": code, "output": output}

    def write(path: str, content: str) -> dict[str, Any]:
        """Write (create or replace) a text file in the project folder."""
        message, code = write_file(path, content, workspace)
        return {"exit_code": code, "output": message}

    return Agent(
        model,
        instructions=SYSTEM_PROMPT,
        tools=[shell, write],
        capabilities=[guide],
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
    parser.add_argument("--session", default="pydantic-ai-agent", help="Conversation id.")
    parser.add_argument("--max-steps", type=int, default=30, help="Model requests at most.")
    args = parser.parse_args(argv)

    from pydantic_ai.exceptions import UsageLimitExceeded
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.usage import UsageLimits

    if not args.workspace.is_dir():
        print(f"error: {args.workspace}: no such folder", file=sys.stderr)
        return 2
    provider = OpenAIProvider(base_url=args.base_url, api_key=args.api_key)
    guide = waygraph_capability(library=args.library, store=args.store, workspace=args.workspace)
    agent = build_agent(OpenAIChatModel(args.model, provider=provider), args.workspace, guide)
    try:
        result = agent.run_sync(
            args.task,
            conversation_id=args.session,
            usage_limits=UsageLimits(request_limit=args.max_steps),
        )
    except UsageLimitExceeded:
        print("(no answer: the step limit was reached)")
        return 1
    print(result.output)
    # The session is the run's conversation id: the next run with it carries on.
    navigator = guide.navigator
    record = navigator.state(args.session) if navigator is not None else None
    if record is not None:
        print(f"plan {record['plan_id']}: {record['status']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
