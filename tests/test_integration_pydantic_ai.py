"""waygraph.integrations.pydantic_ai: a real Pydantic AI agent, its model the OpenAI-compatible
chat model pointed at a local scripted server, guided by waygraph's capability."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pydantic_ai = pytest.importorskip("pydantic_ai", reason="needs the pydantic-ai extra")
pytest.importorskip("pydantic_ai.models.openai", reason="needs pydantic-ai-slim[openai]")

from pydantic_ai import Agent, ModelRetry, RunContext, Tool  # noqa: E402
from pydantic_ai.messages import ToolReturn  # noqa: E402
from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402

from tests._scripts import load_script  # noqa: E402
from tests.adapter_evidence import (  # noqa: E402
    ANSWER,
    MISLEADING,
    QUESTION,
    SUITE_TASK,
    make_suite,
    outcomes,
    types,
    write_suite_library,
)
from tests.agent_loop import LIBRARY, TASK, guidance_of, make_project, shell, write_library  # noqa: E402
from waygraph.errors import IntegrationVersionError  # noqa: E402
from waygraph.eval.liars import CLAIM, liar_moves  # noqa: E402
from waygraph.eval.loop import run_shell  # noqa: E402
from waygraph.eval.suite import get_task  # noqa: E402
from waygraph.integrations.pydantic_ai import waygraph_capability  # noqa: E402
from waygraph.navigator import Navigator  # noqa: E402
from waygraph.testing import ScriptedChatServer  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "pydantic_ai_agent.py"


@pytest.fixture(scope="module")
def example() -> ModuleType:
    return load_script(EXAMPLE, "pydantic_ai_agent")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_project(tmp_path)


@pytest.fixture
def library(tmp_path: Path) -> Path:
    return write_library(tmp_path)


@pytest.fixture
def navigator(library: Path, workspace: Path, tmp_path: Path) -> Navigator:
    nav = Navigator(library, store=f"sqlite:///{tmp_path / 'wg.db'}", workspace=workspace)
    yield nav
    nav.close()


def agent_for(server: ScriptedChatServer, workspace: Path, capability: Any, **kw: Any) -> Agent:
    def shell(command: str) -> dict[str, Any]:
        """Run one shell command in the project; returns its output and exit code."""
        output, code = run_shell(command, workspace)
        return {"exit_code": code, "output": output}

    model = OpenAIChatModel(
        "scripted", provider=OpenAIProvider(base_url=server.base_url, api_key="x")
    )
    return Agent(model, tools=[shell], capabilities=[capability] if capability else [], **kw)


def verdicts(nav: Navigator, session: str) -> list[tuple[str, bool, str]]:
    return [
        (e["node"], e["passed"], e.get("output", ""))
        for e in nav.events(session)
        if e["type"] == "node_verified"
    ]


def test_the_agent_follows_the_plan_round_the_fix_loop(workspace: Path, navigator: Navigator):
    replies = [
        shell("sh check.sh"),  # reproduce
        shell("echo 41 > answer.txt"),  # a wrong fix
        shell("sh check.sh"),  # test fails: back to fix
        shell("echo 42 > answer.txt"),  # the right fix
        shell("sh check.sh"),  # test passes
        "The check passes now: answer.txt holds 42.",
    ]
    with ScriptedChatServer(replies) as server:
        agent = agent_for(server, workspace, waygraph_capability(navigator=navigator))
        result = agent.run_sync(TASK, conversation_id="chat-1")
        requests = server.requests

    assert result.output == "The check passes now: answer.txt holds 42."
    assert (workspace / "answer.txt").read_text().strip() == "42"
    record = navigator.state("chat-1")
    assert record["plan_id"] == "fix_tests" and record["status"] == "completed"

    # Each request carries the guidance of that moment, after the latest tool result.
    assert len(requests) == 6
    first = guidance_of(requests[0])
    assert first.startswith("[WORKFLOW: Fix failing tests]") and "reproduce << CURRENT" in first
    assert "fix << CURRENT (attempt 1/3)" in guidance_of(requests[1])
    assert requests[1]["messages"][-2]["role"] == "tool"
    assert "FAILED: expected 42, got 41" in requests[1]["messages"][-2]["content"]
    assert "test << CURRENT" in guidance_of(requests[2])
    assert "fix << CURRENT (attempt 2/3)" in guidance_of(requests[3])
    assert "test << CURRENT" in guidance_of(requests[4])
    assert guidance_of(requests[5]).startswith("Plan completed: 'Fix failing tests'")
    # Request-scoped: an earlier request's guidance is not sent again.
    earlier = [m for m in requests[5]["messages"][:-1] if m["role"] == "system"]
    assert not any("[WORKFLOW:" in m["content"] for m in earlier)

    # The verdicts recorded are the tools' real outputs, with their exit codes judged.
    assert [(node, passed) for node, passed, _ in verdicts(navigator, "chat-1")] == [
        ("reproduce", True),
        ("fix", True),
        ("test", False),
        ("fix", True),
        ("test", True),
    ]
    failed_test = verdicts(navigator, "chat-1")[2][2]
    assert "FAILED: expected 42, got 41" in failed_test and '"exit_code":1' in failed_test
    tools = {e.get("tool") for e in navigator.events("chat-1") if e["type"] == "node_verified"}
    assert tools == {"shell"}


def test_a_claim_in_prose_does_not_complete_the_plan(workspace: Path, navigator: Navigator):
    # The `prose` liar: claims success in words and calls no tool.
    moves = liar_moves(get_task("fix-failing-test"), "prose")
    assert moves == (CLAIM,)
    with ScriptedChatServer(["All tests pass, the bug is fixed.", "Yes, all done."]) as server:
        agent = agent_for(server, workspace, waygraph_capability(navigator=navigator))
        result = agent.run_sync(TASK, conversation_id="liar")
        agent.run_sync("Is it really fixed?", conversation_id="liar")
        requests = server.requests

    assert result.output == "All tests pass, the bug is fixed."
    assert "reproduce << CURRENT" in guidance_of(requests[0])
    record = navigator.state("liar")
    assert record["status"] == "running" and record["current_node"] == "reproduce"
    events = navigator.events("liar")
    claims = [e for e in events if e["type"] in ("claim_recorded", "claim_unverified")]
    assert [e["type"] for e in claims] == ["claim_recorded", "claim_unverified"] * 2
    assert claims[0]["excerpt"] == "All tests pass, the bug is fixed."
    assert claims[1]["nodes"] == ["reproduce", "fix", "test"]
    assert not any(e["type"] == "node_verified" for e in events)
    assert (workspace / "answer.txt").read_text().strip() == "41"
    # The next run of the conversation is told the claim verified nothing.
    assert "Still unverified: reproduce, fix, test" in guidance_of(requests[1])


def scripted_model(server: ScriptedChatServer) -> OpenAIChatModel:
    return OpenAIChatModel(
        "scripted", provider=OpenAIProvider(base_url=server.base_url, api_key="x")
    )


def suite_capability(tmp_path: Path, project: Path) -> Any:
    return waygraph_capability(
        library=write_suite_library(tmp_path), store="memory://", workspace=project
    )


@pytest.mark.parametrize(
    ("code", "outcome", "status"), [(1, "fail", "running"), (0, "success", "completed")]
)
def test_the_exit_status_is_the_results_field_never_its_words(
    example: ModuleType, tmp_path: Path, code: int, outcome: str, status: str
):
    project = make_suite(tmp_path, code)
    guide = suite_capability(tmp_path, project)
    with ScriptedChatServer([shell("sh suite.sh"), "I ran the suite."]) as server:
        agent = example.build_agent(scripted_model(server), project, guide)
        agent.run_sync(SUITE_TASK, conversation_id="suite")

    # The words say "exit code 0" and "1 failed" either way: the field decides.
    assert outcomes(guide.navigator.events("suite")) == [("suite", outcome)]
    assert guide.navigator.state("suite")["status"] == status


@pytest.mark.parametrize(("code", "outcome"), [(1, "fail"), (0, "success")])
def test_a_tool_return_carries_the_exit_code_in_its_metadata(
    tmp_path: Path, code: int, outcome: str
):
    project = make_suite(tmp_path, code)
    guide = suite_capability(tmp_path, project)

    def shell_tool(command: str) -> ToolReturn:
        """Run one shell command in the project folder."""
        output, status = run_shell(command, project)
        return ToolReturn(return_value=output, metadata={"exit_code": status})

    with ScriptedChatServer([shell("sh suite.sh"), "Ran it."]) as server:
        agent = Agent(
            scripted_model(server), tools=[Tool(shell_tool, name="shell")], capabilities=[guide]
        )
        agent.run_sync(SUITE_TASK, conversation_id="meta")
    assert outcomes(guide.navigator.events("meta")) == [("suite", outcome)]
    [verdict] = [e for e in guide.navigator.events("meta") if e["type"] == "node_verified"]
    assert verdict["output"] == f"{MISLEADING}\n"


def test_a_question_waits_for_the_conversations_next_prompt(example: ModuleType, tmp_path: Path):
    project = make_suite(tmp_path, 0)
    guide = suite_capability(tmp_path, project)
    replies = [QUESTION, shell("sh suite.sh"), "The unit tests pass."]
    with ScriptedChatServer(replies) as server:
        agent = example.build_agent(scripted_model(server), project, guide)
        first = agent.run_sync(SUITE_TASK, conversation_id="ask")
        asked = guide.navigator.state("ask")
        asked_events = types(guide.navigator.events("ask"))
        agent.run_sync(ANSWER, message_history=first.all_messages())

    assert first.output == QUESTION
    assert asked["status"] == "running" and asked["awaiting"] == "user"
    assert asked_events[-1] == "question_asked"
    assert "claim_recorded" not in asked_events and "claim_unverified" not in asked_events
    answered = [e for e in guide.navigator.events("ask") if e["type"] == "human_answered"]
    assert [e["answer"] for e in answered] == [ANSWER]
    done = guide.navigator.state("ask")
    assert done["status"] == "completed" and done["awaiting"] is None


def test_a_second_run_of_the_conversation_resumes_its_session(
    workspace: Path, navigator: Navigator
):
    capability = waygraph_capability(navigator=navigator)
    with ScriptedChatServer([shell("sh check.sh"), "It fails: the answer is 41."]) as server:
        first = agent_for(server, workspace, capability).run_sync(TASK)
    session = first.all_messages()[-1].conversation_id
    assert session and navigator.state(session)["current_node"] == "fix"
    run_id = navigator.state(session)["run_id"]

    # A new server numbers its call ids afresh: give them ids of their own, as a model does.
    replies = [shell("echo 42 > answer.txt", "r2-1"), shell("sh check.sh", "r2-2"), "Fixed."]
    with ScriptedChatServer(replies) as server:
        second = agent_for(server, workspace, capability).run_sync(
            "Go on and fix it.", message_history=first.all_messages()
        )
        requests = server.requests

    # The same conversation, so the same waygraph session and run carry on.
    assert second.all_messages()[-1].conversation_id == session
    assert "fix << CURRENT" in guidance_of(requests[0])
    record = navigator.state(session)
    assert record["run_id"] == run_id and record["status"] == "completed"
    assert sum(e["type"] == "plan_activated" for e in navigator.events(session)) == 1


def test_the_session_can_come_from_the_runs_deps_for_one_run(workspace: Path, navigator: Navigator):
    @dataclass
    class Deps:
        chat_id: str

    capability = waygraph_capability(
        navigator=navigator, session=lambda ctx: f"user:{ctx.deps.chat_id}"
    )
    with ScriptedChatServer([shell("sh check.sh"), "Reproduced."]) as server:
        # Given to one run only, as run(..., capabilities=[...]) allows.
        agent = agent_for(server, workspace, None, deps_type=Deps)
        agent.run_sync(TASK, deps=Deps("7"), capabilities=[capability])
        requests = server.requests
    assert "fix << CURRENT" in guidance_of(requests[1])
    assert navigator.state("user:7")["current_node"] == "fix"


def test_tool_errors_are_reported_as_failed_results(workspace: Path, navigator: Navigator):
    attempts: list[str] = []

    def check(strict: bool) -> str:
        """Run the project's check."""
        attempts.append("check")
        if len(attempts) == 1:
            raise ModelRetry("the check could not start: try again")
        raise RuntimeError("the disk is gone")

    replies = [
        {"tool_calls": [{"name": "check", "arguments": {"strict": True}, "id": "c1"}]},
        {"tool_calls": [{"name": "check", "arguments": {"strict": True}, "id": "c2"}]},
    ]
    library = workspace.parent / "check.yaml"
    library.write_text(
        LIBRARY.replace("verify: {type: any_output}", "verify: {type: exit_code_zero}")
    )
    nav = Navigator(library, store="memory://", workspace=workspace)
    with ScriptedChatServer(replies) as server:
        model = OpenAIChatModel(
            "scripted", provider=OpenAIProvider(base_url=server.base_url, api_key="x")
        )
        agent = Agent(model, tools=[check], capabilities=[waygraph_capability(navigator=nav)])
        with pytest.raises(RuntimeError, match="the disk is gone"):
            agent.run_sync(TASK, conversation_id="errors")
        requests = server.requests

    found = [e for e in nav.events("errors") if e["type"] == "node_verified"]
    assert [(e["node"], e["passed"], e["tool"]) for e in found] == [
        ("reproduce", False, "check"),
        ("reproduce", False, "check"),
    ]
    assert "the check could not start" in found[0]["output"]
    assert found[1]["output"] == "error: RuntimeError: the disk is gone"
    # The retry prompt went back to the model with the guidance after it.
    assert requests[1]["messages"][-2]["role"] == "tool"
    assert "reproduce << CURRENT" in guidance_of(requests[1])


def test_without_a_matching_plan_the_model_gets_no_guidance(workspace: Path, navigator: Navigator):
    with ScriptedChatServer([shell("ls"), "There are two files."]) as server:
        agent = agent_for(server, workspace, waygraph_capability(navigator=navigator))
        result = agent.run_sync("What is in this folder?", conversation_id="small-talk")
        requests = server.requests
    assert result.output == "There are two files."
    assert all(guidance_of(r) is None for r in requests)
    assert navigator.state("small-talk") is None


def test_a_store_that_does_not_open_leaves_the_agent_unguided(
    workspace: Path, caplog: pytest.LogCaptureFixture
):
    capability = waygraph_capability(store="nosuch://place")
    assert capability.navigator is None
    assert "runs without guidance" in caplog.text
    with ScriptedChatServer([shell("sh check.sh"), "It fails."]) as server:
        result = agent_for(server, workspace, capability).run_sync(TASK)
        requests = server.requests
    assert result.output == "It fails." and all(guidance_of(r) is None for r in requests)


def test_an_old_pydantic_ai_is_refused_at_setup(monkeypatch: pytest.MonkeyPatch):
    import importlib.metadata

    real = importlib.metadata.version

    def version(name: str) -> str:
        return "2.10.0" if name == "pydantic-ai-slim" else real(name)

    monkeypatch.setattr(importlib.metadata, "version", version)
    with pytest.raises(IntegrationVersionError) as caught:
        waygraph_capability(store="memory://")
    message = str(caught.value)
    assert "waygraph.integrations.pydantic_ai" in message
    assert "found 2.10.0" in message and ">=2.58,<3" in message


def test_a_missing_hook_point_is_an_error_not_a_no_op(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delattr(RunContext, "enqueue")
    with pytest.raises(IntegrationVersionError, match=r"RunContext\.enqueue is gone"):
        waygraph_capability(store="memory://")


def test_the_example_runs_against_a_scripted_server(workspace: Path, library: Path, tmp_path: Path):
    replies = [
        shell("sh check.sh"),
        {"tool_calls": [{"name": "write", "arguments": {"path": "answer.txt", "content": "42\n"}}]},
        shell("sh check.sh"),
        "The check passes now.",
    ]
    store = f"sqlite:///{tmp_path / 'example.db'}"
    with ScriptedChatServer(replies) as server:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])
            ),
        }
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
                store,
                "--session",
                "example-1",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        requests = server.requests
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "The check passes now."
    assert "plan fix_tests: completed" in done.stderr
    assert (workspace / "answer.txt").read_text() == "42\n"
    assert "test << CURRENT" in guidance_of(requests[2])
    assert json.loads(requests[2]["messages"][-2]["content"])["exit_code"] == 0
