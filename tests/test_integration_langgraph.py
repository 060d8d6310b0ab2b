"""waygraph.integrations.langgraph: real LangGraph agents (the prebuilt ReAct agent and a
hand-built StateGraph) whose ChatOpenAI model talks to a local scripted chat server."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("langgraph.prebuilt", reason="needs the langgraph extra")
pytest.importorskip("langchain_openai", reason="needs langchain-openai (the dev extra)")

from langchain_core.messages import SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import create_react_agent, tools_condition

from tests._scripts import load_script
from tests.adapter_evidence import (
    ANSWER,
    MISLEADING,
    QUESTION,
    SUITE_TASK,
    make_suite,
    outcomes,
    types,
    write_suite_library,
)
from tests.agent_loop import TASK, guidance_of, make_project, shell, write_library
from waygraph.errors import IntegrationVersionError, MissingExtra, StoreError
from waygraph.eval.liars import liar_moves
from waygraph.eval.loop import run_shell
from waygraph.eval.suite import get_task
from waygraph.integrations import _framework
from waygraph.integrations.langgraph import LangGraphHooks
from waygraph.testing import ScriptedChatServer

# create_react_agent still works in langgraph 1.x; its successor lives in the langchain package.
pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "langgraph_agent.py"


@pytest.fixture(scope="module")
def example() -> ModuleType:
    return load_script(EXAMPLE, "langgraph_agent")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_project(tmp_path)


@pytest.fixture
def library(tmp_path: Path) -> Path:
    return write_library(tmp_path)


@pytest.fixture
def lg(library: Path, workspace: Path, tmp_path: Path) -> LangGraphHooks:
    hooks = LangGraphHooks(
        library=library, store=f"sqlite:///{tmp_path / 'wg.db'}", workspace=workspace
    )
    yield hooks
    hooks.close()


def shell_tool(workspace: Path) -> Any:
    @tool(response_format="content_and_artifact")
    def shell(command: str) -> tuple[str, dict[str, int]]:
        """Run one shell command in the project folder."""
        output, code = run_shell(command, workspace)
        return f"exit code {code}\n{output}", {"exit_code": code}

    return shell


def chat(server: ScriptedChatServer) -> ChatOpenAI:
    return ChatOpenAI(base_url=server.base_url, api_key="x", model="scripted", max_retries=0)


def thread(name: str) -> RunnableConfig:
    return {"configurable": {"thread_id": name}}


def verdicts(lg: LangGraphHooks, session: str) -> list[tuple[str, bool, str]]:
    return [
        (e["node"], e["passed"], e.get("output") or "")
        for e in lg.navigator.events(session)
        if e["type"] == "node_verified"
    ]


def react_agent(lg: LangGraphHooks, server: ScriptedChatServer, workspace: Path, **kw: Any) -> Any:
    return create_react_agent(
        chat(server),
        lg.tool_node([shell_tool(workspace)]),
        prompt=lg.prompt("You fix projects with the shell tool."),
        post_model_hook=lg.post_model_hook,
        **kw,
    )


def test_react_agent_with_a_checkpointer_resumes_the_thread_and_its_plan(
    lg: LangGraphHooks, workspace: Path
):
    replies = [
        shell("sh check.sh"),  # reproduce: fails, which is what this step wants to see
        "It fails: the answer is 41. I will fix it next.",
        shell("echo 42 > answer.txt"),  # fix (second invocation, same thread)
        shell("sh check.sh"),  # test passes
        "The check passes now.",
        "Hello! How can I help?",  # another thread
    ]
    with ScriptedChatServer(replies) as server:
        agent = react_agent(lg, server, workspace, checkpointer=InMemorySaver())
        first = agent.invoke({"messages": [("user", TASK)]}, thread("t-1"))
        assert lg.state(thread("t-1"))["current_node"] == "fix"
        second = agent.invoke({"messages": [("user", "Go on and fix it.")]}, thread("t-1"))
        other = agent.invoke({"messages": [("user", "hello")]}, thread("t-2"))
        requests = server.requests

    assert first["messages"][-1].content.startswith("It fails")
    assert second["messages"][-1].content == "The check passes now."
    assert (workspace / "answer.txt").read_text().strip() == "42"
    assert len(requests) == 6
    # Before any tool ran the plan asks for the first step.
    assert "reproduce << CURRENT" in guidance_of(requests[0])
    # After the tool result that moved the plan, the model is told where it is now.
    assert requests[1]["messages"][-2]["role"] == "tool"
    assert "FAILED: expected 42, got 41" in requests[1]["messages"][-2]["content"]
    assert "fix << CURRENT" in guidance_of(requests[1])
    # The second invocation resumes: same conversation (checkpointer), same waygraph session.
    assert TASK in json.dumps(requests[2]["messages"])
    assert "fix << CURRENT" in guidance_of(requests[2])
    assert "test << CURRENT" in guidance_of(requests[3])
    assert guidance_of(requests[4]).startswith("Plan completed: 'Fix failing tests'")
    # Guidance goes to each call, never into the thread's history.
    assert not any(m.__class__.__name__ == "SystemMessage" for m in second["messages"]), (
        "guidance was stored in the graph's state"
    )

    run = lg.state(thread("t-1"))
    assert run["plan_id"] == "fix_tests" and run["status"] == "completed"
    assert [(node, passed) for node, passed, _ in verdicts(lg, "t-1")] == [
        ("reproduce", True),
        ("fix", True),
        ("test", True),
    ]
    assert "FAILED: expected 42, got 41" in verdicts(lg, "t-1")[0][2]
    assert "ok: 42" in verdicts(lg, "t-1")[2][2]
    # Another thread is another session: no plan, no guidance.
    assert lg.state(thread("t-2")) is None and guidance_of(requests[5]) is None
    assert other["messages"][-1].content == "Hello! How can I help?"


def suite_hooks(tmp_path: Path, project: Path) -> LangGraphHooks:
    return LangGraphHooks(
        library=write_suite_library(tmp_path), store="memory://", workspace=project
    )


@pytest.mark.parametrize(
    ("code", "outcome", "status"), [(1, "fail", "running"), (0, "success", "completed")]
)
def test_the_exit_status_is_the_artifact_never_the_words(
    example: ModuleType, tmp_path: Path, code: int, outcome: str, status: str
):
    project = make_suite(tmp_path, code)
    lg = suite_hooks(tmp_path, project)
    with ScriptedChatServer([shell("sh suite.sh"), "I ran the suite."]) as server:
        agent = example.build_agent(chat(server), project, lg)
        agent.invoke({"messages": [("user", SUITE_TASK)]}, thread("suite"))
        requests = server.requests

    # The words say "exit code 0" and "1 failed" either way: the artifact decides.
    assert outcomes(lg.navigator.events("suite")) == [("suite", outcome)]
    assert lg.state(thread("suite"))["status"] == status
    # The model reads the output with the status on its last line.
    assert requests[1]["messages"][-2]["content"] == f"{MISLEADING}\nexit={code}"


@dataclass(frozen=True)
class Status:
    exit_code: int


@pytest.mark.parametrize(("code", "outcome"), [(1, "fail"), (0, "success")])
def test_an_artifact_object_with_an_exit_code_is_read(tmp_path: Path, code: int, outcome: str):
    project = make_suite(tmp_path, code)
    lg = suite_hooks(tmp_path, project)

    @tool(response_format="content_and_artifact")
    def shell(command: str) -> tuple[str, Status]:
        """Run one shell command in the project folder."""
        output, status = run_shell(command, project)
        return output, Status(status)

    with ScriptedChatServer(
        [{"tool_calls": [{"name": "shell", "arguments": {"command": "sh suite.sh"}}]}, "Ran it."]
    ) as server:
        agent = create_react_agent(chat(server), lg.tool_node([shell]), prompt=lg.prompt())
        agent.invoke({"messages": [("user", SUITE_TASK)]}, thread("object"))
    assert outcomes(lg.navigator.events("object")) == [("suite", outcome)]


def test_a_question_waits_for_the_threads_next_user_message(example: ModuleType, tmp_path: Path):
    project = make_suite(tmp_path, 0)
    lg = suite_hooks(tmp_path, project)
    replies = [QUESTION, shell("sh suite.sh"), "The unit tests pass."]
    with ScriptedChatServer(replies) as server:
        agent = example.build_agent(chat(server), project, lg, InMemorySaver())
        first = agent.invoke({"messages": [("user", SUITE_TASK)]}, thread("ask"))
        asked = lg.state(thread("ask"))
        asked_events = types(lg.navigator.events("ask"))
        agent.invoke({"messages": [("user", ANSWER)]}, thread("ask"))

    assert first["messages"][-1].content == QUESTION
    assert asked["status"] == "running" and asked["awaiting"] == "user"
    assert asked_events[-1] == "question_asked"
    assert "claim_recorded" not in asked_events and "claim_unverified" not in asked_events
    answered = [e for e in lg.navigator.events("ask") if e["type"] == "human_answered"]
    assert [e["answer"] for e in answered] == [ANSWER]
    done = lg.state(thread("ask"))
    assert done["status"] == "completed" and done["awaiting"] is None


def test_react_agent_without_a_checkpointer_keeps_the_session_per_thread_id(
    lg: LangGraphHooks, workspace: Path
):
    replies = [shell("sh check.sh"), "It fails.", shell("echo 42 > answer.txt"), "Fixed."]
    with ScriptedChatServer(replies) as server:
        agent = react_agent(lg, server, workspace)
        agent.invoke({"messages": [("user", TASK)]}, thread("t-9"))
        # No checkpointer: the second run starts from its own message only...
        agent.invoke({"messages": [("user", "Now fix it.")]}, thread("t-9"))
        requests = server.requests
    assert TASK not in json.dumps(requests[2]["messages"])
    # ...but the waygraph session follows the thread id, so the plan goes on.
    assert "fix << CURRENT" in guidance_of(requests[2])
    assert "test << CURRENT" in guidance_of(requests[3])
    assert lg.state(thread("t-9"))["current_node"] == "test"


def test_without_a_thread_id_the_default_session_is_used(library: Path, workspace: Path):
    lg = LangGraphHooks(library=library, store="memory://", session_id="my-agent")
    with ScriptedChatServer([shell("sh check.sh"), "It fails."]) as server:
        react_agent(lg, server, workspace).invoke({"messages": [("user", TASK)]})
    assert lg.navigator.sessions() == ["my-agent"]
    assert lg.state(None)["current_node"] == "fix"


def test_a_claim_in_prose_does_not_complete_the_plan(lg: LangGraphHooks, workspace: Path):
    claim = liar_moves(get_task("fix-failing-test"), "prose")[0]
    replies = [shell("sh check.sh"), "All tests pass, the bug is fixed.", claim]
    with ScriptedChatServer(replies) as server:
        agent = react_agent(lg, server, workspace, checkpointer=InMemorySaver())
        result = agent.invoke({"messages": [("user", TASK)]}, thread("liar"))
        again = agent.invoke({"messages": [("user", "Is it done?")]}, thread("liar"))
        requests = server.requests

    assert result["messages"][-1].content == "All tests pass, the bug is fixed."
    assert again["messages"][-1].content == claim
    run = lg.state(thread("liar"))
    assert run["status"] == "running" and run["current_node"] == "fix"
    events = lg.navigator.events("liar")
    claims = [e for e in events if e["type"] == "claim_recorded"]
    assert [c["excerpt"] for c in claims] == ["All tests pass, the bug is fixed.", claim]
    assert any(e["type"] == "claim_unverified" for e in events)
    # Only the real tool result was judged; the words moved nothing.
    assert [(node, passed) for node, passed, _ in verdicts(lg, "liar")] == [("reproduce", True)]
    # The next model call is told the work is not verified.
    assert "Still unverified" in guidance_of(requests[2])


def test_a_hand_built_state_graph_with_the_tool_node(lg: LangGraphHooks, workspace: Path):
    @tool
    def lint(path: str) -> str:
        """Lint a file."""
        raise RuntimeError(f"linter crashed on {path}")

    tools = [shell_tool(workspace), lint]
    replies = [
        shell("sh check.sh"),
        shell("echo 42 > answer.txt"),
        {"tool_calls": [{"name": "lint", "arguments": {"path": "answer.txt"}}]},  # test: error
        shell("echo 42 > answer.txt"),  # fix again
        shell("sh check.sh"),
        "Done: the check passes.",
    ]
    with ScriptedChatServer(replies) as server:
        model = chat(server).bind_tools(tools)

        def agent(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
            messages = [SystemMessage("You fix projects."), *state["messages"]]
            reply = model.invoke(lg.add_guidance(messages, config), config)
            lg.report_reply(reply, config)
            return {"messages": [reply]}

        graph = StateGraph(MessagesState)
        graph.add_node("agent", agent)
        graph.add_node("tools", lg.tool_node(tools, handle_tool_errors=True))
        graph.add_edge(START, "agent")
        graph.add_conditional_edges("agent", tools_condition)
        graph.add_edge("tools", "agent")
        app = graph.compile(checkpointer=InMemorySaver())
        final = app.invoke({"messages": [("user", TASK)]}, thread("hand"))
        requests = server.requests

    assert final["messages"][-1].content == "Done: the check passes."
    # The tool that raised is a failed result with its error as the output.
    failed = verdicts(lg, "hand")[2]
    assert failed[:2] == ("test", False) and "linter crashed on answer.txt" in failed[2]
    assert "fix << CURRENT (attempt 2/3)" in guidance_of(requests[3])
    assert requests[3]["messages"][-2]["role"] == "tool"
    assert [(node, passed) for node, passed, _ in verdicts(lg, "hand")] == [
        ("reproduce", True),
        ("fix", True),
        ("test", False),
        ("fix", True),
        ("test", True),
    ]
    assert lg.state(thread("hand"))["status"] == "completed"
    assert guidance_of(requests[5]).startswith("Plan completed")


def test_a_tool_node_of_your_own_reports_through_the_post_tool_node(
    lg: LangGraphHooks, workspace: Path
):
    from langchain_core.messages import ToolMessage

    def my_tools(state: MessagesState) -> dict[str, Any]:
        results = []
        for call in state["messages"][-1].tool_calls:
            output, code = run_shell(call["args"]["command"], workspace)
            results.append(ToolMessage(output, tool_call_id=call["id"], artifact=code))
        return {"messages": results}

    replies = [shell("sh check.sh", "c-1"), "It fails."]
    with ScriptedChatServer(replies) as server:
        model = chat(server).bind_tools([shell_tool(workspace)])

        def agent(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
            reply = model.invoke(lg.add_guidance(state["messages"], config), config)
            return {"messages": [reply]}

        graph = StateGraph(MessagesState)
        graph.add_node("agent", agent)
        graph.add_node("tools", my_tools)
        graph.add_node("report", lg.report_tool_messages)
        graph.add_edge(START, "agent")
        graph.add_conditional_edges("agent", tools_condition)
        graph.add_edge("tools", "report")
        graph.add_edge("report", "agent")
        graph.compile().invoke({"messages": [("user", TASK)]}, thread("own"))
        requests = server.requests
    assert verdicts(lg, "own") == [("reproduce", True, "FAILED: expected 42, got 41\n")]
    assert "fix << CURRENT" in guidance_of(requests[1])


def test_an_async_run_is_reported_too(lg: LangGraphHooks, workspace: Path):
    replies = [shell("sh check.sh"), "It fails."]
    with ScriptedChatServer(replies) as server:
        agent = react_agent(lg, server, workspace)
        asyncio.run(agent.ainvoke({"messages": [("user", TASK)]}, thread("async")))
        requests = server.requests
    assert [(n, p) for n, p, _ in verdicts(lg, "async")] == [("reproduce", True)]
    assert "fix << CURRENT" in guidance_of(requests[1])


def test_guidance_can_go_into_the_leading_system_message(library: Path, workspace: Path):
    lg = LangGraphHooks(library=library, store="memory://", guidance_at="start")
    with ScriptedChatServer([shell("sh check.sh"), "It fails."]) as server:
        react_agent(lg, server, workspace).invoke({"messages": [("user", TASK)]}, thread("s"))
        requests = server.requests
    for request, step in zip(requests, ("reproduce", "fix"), strict=True):
        roles = [m["role"] for m in request["messages"]]
        assert roles.count("system") == 1 and roles[0] == "system"
        first = request["messages"][0]["content"]
        assert first.startswith("You fix projects with the shell tool.\n\n[WORKFLOW:")
        assert f"{step} << CURRENT" in first


@pytest.mark.parametrize("run", ["sync", "async"])
def test_a_wrapper_of_yours_runs_inside_and_waygraph_sees_its_result(
    lg: LangGraphHooks, workspace: Path, run: str
):
    seen: list[str] = []

    def mine(request: Any, execute: Any) -> Any:
        seen.append(request.tool_call["id"])
        result = execute(request)
        result.content = f"{result.content}[checked]"
        return result

    with ScriptedChatServer([shell("sh check.sh", "c-7"), "It fails."]) as server:
        agent = create_react_agent(
            chat(server),
            lg.tool_node([shell_tool(workspace)], wrap_tool_call=mine),
            prompt=lg.prompt(),
        )
        request = {"messages": [("user", TASK)]}
        if run == "sync":
            agent.invoke(request, thread(run))
        else:
            asyncio.run(agent.ainvoke(request, thread(run)))
    assert seen == ["c-7"]
    [(node, passed, output)] = verdicts(lg, run)
    assert (node, passed) == ("reproduce", True) and output.endswith("[checked]")


def test_an_old_langgraph_is_refused_at_setup(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(_framework.metadata, "version", lambda package: "0.6.4")
    with pytest.raises(IntegrationVersionError) as caught:
        LangGraphHooks(store="memory://")
    text = str(caught.value)
    assert "waygraph.integrations.langgraph" in text
    assert "0.6.4" in text and ">=1.0,<2" in text


def test_a_missing_hook_point_is_refused_at_setup(monkeypatch: pytest.MonkeyPatch):
    import langgraph.prebuilt
    import langgraph.prebuilt.tool_node

    monkeypatch.delattr(langgraph.prebuilt.tool_node, "ToolCallRequest")
    with pytest.raises(IntegrationVersionError, match="tool_node:ToolCallRequest is gone"):
        LangGraphHooks(store="memory://")
    monkeypatch.undo()

    class OldToolNode:
        def __init__(self, tools: list[Any], *, name: str = "tools") -> None:
            pass

    monkeypatch.setattr(langgraph.prebuilt, "ToolNode", OldToolNode)
    with pytest.raises(IntegrationVersionError, match="ToolNode takes no wrap_tool_call"):
        LangGraphHooks(store="memory://")


def test_without_the_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "langgraph", None)
    with pytest.raises(MissingExtra, match=r"pip install 'waygraph\[langgraph\]'"):
        LangGraphHooks(store="memory://")


def test_a_library_that_does_not_load_leaves_the_agent_unguided(tmp_path: Path, workspace: Path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("plans: {p: {graph: {start: s, nodes: {s: {type: nonsense}}}}}\n")
    lg = LangGraphHooks(library=broken, store="memory://")
    with ScriptedChatServer([shell("sh check.sh"), "It fails."]) as server:
        out = react_agent(lg, server, workspace).invoke({"messages": [("user", TASK)]})
        requests = server.requests
    assert out["messages"][-1].content == "It fails."
    assert all(guidance_of(r) is None for r in requests)


def test_a_failing_store_never_raises_into_the_agent(
    lg: LangGraphHooks,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
):
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise StoreError("disk I/O error")

    with ScriptedChatServer([shell("sh check.sh"), "It fails."]) as server:
        agent = react_agent(lg, server, workspace)
        monkeypatch.setattr(lg.navigator.store, "commit_all", broken)
        monkeypatch.setattr(lg.navigator.store, "current", broken)
        out = agent.invoke({"messages": [("user", TASK)]}, thread("broken"))
    assert out["messages"][-1].content == "It fails."
    assert "disk I/O error" in caplog.text


def test_the_example_runs_against_the_scripted_server(
    tmp_path: Path, workspace: Path, library: Path
):
    replies = [
        shell("sh check.sh"),
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "answer.txt", "content": "42\n"}}
            ]
        },
        shell("sh check.sh"),
        "The check passes now.",
    ]
    with ScriptedChatServer(replies) as server:
        done = subprocess.run(
            [
                sys.executable,
                str(EXAMPLE),
                TASK,
                "--workspace",
                str(workspace),
                "--base-url",
                server.base_url,
                "--model",
                "scripted",
                "--library",
                str(library),
                "--store",
                f"sqlite:///{tmp_path / 'example.db'}",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        )
        requests = server.requests
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "The check passes now."
    assert "plan fix_tests: completed" in done.stderr
    assert (workspace / "answer.txt").read_text() == "42\n"
    assert "fix << CURRENT" in guidance_of(requests[1])
