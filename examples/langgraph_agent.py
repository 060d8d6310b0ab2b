"""A LangGraph agent guided by waygraph, over any OpenAI-compatible chat API.

A hand-built ``StateGraph``: a model node, the prebuilt ``ToolNode`` and the
conditional edge between them. The agent has two tools that work inside a
workspace folder (``shell`` runs a command there, ``write_file`` writes a
file there). waygraph matches the task to a plan, adds the current step to
the model's input before every call, and verifies every tool result and exit
code against that step::

    python examples/langgraph_agent.py --workspace ./project \\
        --base-url http://127.0.0.1:11434/v1 --model qwen2.5-coder \\
        "Fix the bug in the login module: the tests fail"

Offline, against the scripted server (docs/offline.md)::

    python -m waygraph.testing.chat_server --script replies.yaml --port 8400
    python examples/langgraph_agent.py --base-url http://127.0.0.1:8400/v1 --model scripted ...

The conversation is kept per ``--thread`` by LangGraph's checkpointer (in
memory here) and the waygraph session follows the thread id, so the plan of a
thread resumes when the thread does (with a persistent ``--store``).

Needs ``pip install 'waygraph[langgraph]' langchain-openai``. The tools are
confined to the workspace as in examples/openai_loop.py (``..``, absolute
paths and ``~`` are refused); that is not a sandbox against a hostile model.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from waygraph.eval.loop import SYSTEM_PROMPT, run_shell, write_file
from waygraph.integrations.langgraph import LangGraphHooks


def build_agent(model: Any, workspace: Path, lg: LangGraphHooks, checkpointer: Any = None) -> Any:
    """The compiled graph: model node -> tools -> model, until the model answers."""
    from langchain_core.messages import SystemMessage
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import tool
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import tools_condition

    # The exit code travels as the message's artifact, where waygraph reads it (words
    # in the output never count as one); the model reads it as the last line, exit=N.
    @tool(response_format="content_and_artifact")
    def shell(command: str) -> tuple[str, dict[str, int]]:
        """Run one shell command in the project folder; returns its output and exit code."""
        output, code = run_shell(command, workspace)
        return "\n".join(filter(None, (output.rstrip("\n"), f"exit={code}"))), {"exit_code": code}

    @tool("write_file", response_format="content_and_artifact")
    def write(path: str, content: str) -> tuple[str, dict[str, int]]:
        """Write (create or replace) a text file in the project folder."""
        message, code = write_file(path, content, workspace)
        return message, {"exit_code": code}

    tools = [shell, write]
    chat = model.bind_tools(tools)

    def agent(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        messages = [SystemMessage(SYSTEM_PROMPT), *state["messages"]]
        reply = chat.invoke(lg.add_guidance(messages, config), config)
        lg.report_reply(reply, config)
        return {"messages": [reply]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", lg.tool_node(tools, handle_tool_errors=True))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=checkpointer)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task", help="What the agent should do.")
    parser.add_argument("--workspace", type=Path, default=Path.cwd(), help="The project folder.")
    parser.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL"))
    parser.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"))
    parser.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY", "not-needed"))
    parser.add_argument("--library", help="Plan library (file or folder). Default: shipped plans.")
    parser.add_argument("--store", help="waygraph store URL. Default: SQLite in your data folder.")
    parser.add_argument("--thread", default="langgraph-agent", help="Thread (and session) id.")
    parser.add_argument("--max-steps", type=int, default=30, help="Model calls at most.")
    args = parser.parse_args(argv)

    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.errors import GraphRecursionError

    if not args.workspace.is_dir():
        print(f"error: {args.workspace}: no such folder", file=sys.stderr)
        return 2
    lg = LangGraphHooks(library=args.library, store=args.store, workspace=args.workspace)
    model = ChatOpenAI(base_url=args.base_url, api_key=args.api_key, model=args.model)
    agent = build_agent(model, args.workspace, lg, InMemorySaver())
    # Each model call and each tool round is one step of the graph.
    config: Any = {
        "configurable": {"thread_id": args.thread},
        "recursion_limit": 2 * args.max_steps,
    }
    try:
        final = agent.invoke({"messages": [("user", args.task)]}, config)
        print(final["messages"][-1].content or "(no answer)")
    except GraphRecursionError:
        print("(no answer: the step limit was reached)")
    run = lg.state(config)
    if run is not None:
        print(f"plan {run['plan_id']}: {run['status']}", file=sys.stderr)
    lg.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
