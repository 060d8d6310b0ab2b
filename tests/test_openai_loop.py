"""examples/openai_loop.py: a tool-calling agent guided by waygraph, run against a real
local HTTP server that speaks the chat-completions protocol with scripted replies."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest
from openai import OpenAI

from tests._scripts import load_script
from tests.adapter_evidence import (
    ANSWER,
    QUESTION,
    SUITE_TASK,
    make_suite,
    outcomes,
    types,
    write_suite_library,
)
from tests.agent_loop import TASK, guidance_of, make_project, shell, write_library
from waygraph.hooks import Hooks
from waygraph.testing import ScriptedChatServer

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "openai_loop.py"


def load_example() -> ModuleType:
    """examples/openai_loop.py as a module (it is a script, not part of the package)."""
    return load_script(EXAMPLE, "openai_loop")


@pytest.fixture(scope="module")
def example() -> ModuleType:
    return load_example()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = make_project(tmp_path)
    (tmp_path / "secret.txt").write_text("do not read\n")
    return root


@pytest.fixture
def library(tmp_path: Path) -> Path:
    return write_library(tmp_path)


def test_the_agent_follows_the_plan_round_the_fix_loop(
    example: ModuleType, workspace: Path, library: Path
):
    replies = [
        shell("sh check.sh"),  # reproduce
        shell("echo 41 > answer.txt"),  # a wrong fix
        shell("sh check.sh"),  # test fails: back to fix
        shell("echo 42 > answer.txt"),  # the right fix
        shell("sh check.sh"),  # test passes
        "The check passes now: answer.txt holds 42.",
    ]
    with ScriptedChatServer(replies) as server:
        client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        hooks = Hooks("loop-1", library=library, store="memory://", workspace=workspace)
        result = example.run_agent(
            TASK, client=client, model="scripted", workspace=workspace, hooks=hooks
        )
        requests = server.requests

    assert result.answer == "The check passes now: answer.txt holds 42."
    assert (workspace / "answer.txt").read_text().strip() == "42"
    assert [s.exit_code for s in result.steps] == [1, 0, 1, 0, 0]
    assert result.run["plan_id"] == "fix_tests" and result.run["status"] == "completed"

    assert len(requests) == 6
    assert requests[0]["tools"][0]["function"]["name"] == "shell"
    first = guidance_of(requests[0])
    assert first.startswith("[WORKFLOW: Fix failing tests]") and "reproduce" in first
    assert "fix << CURRENT" in guidance_of(requests[1])
    assert "test << CURRENT" in guidance_of(requests[2])
    assert "fix << CURRENT (attempt 2/3)" in guidance_of(requests[3])
    assert guidance_of(requests[5]).startswith("Plan completed: 'Fix failing tests'")
    # Guidance is per call: the conversation itself never accumulates it.
    conversation = requests[5]["messages"][:-1]
    assert not any("[waygraph] Plan" in str(m.get("content")) for m in conversation)
    tool_messages = [m for m in conversation if m["role"] == "tool"]
    assert tool_messages[0]["content"].startswith("exit code 1\nFAILED: expected 42, got 41")
    assert tool_messages[0]["tool_call_id"] == conversation[2]["tool_calls"][0]["id"]


def test_without_a_matching_plan_the_model_gets_no_guidance(
    example: ModuleType, workspace: Path, library: Path
):
    with ScriptedChatServer([shell("ls"), "There are two files."]) as server:
        client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        hooks = Hooks("loop-2", library=library, store="memory://")
        result = example.run_agent(
            "What is in this folder?", client=client, model="m", workspace=workspace, hooks=hooks
        )
        requests = server.requests
    assert result.answer == "There are two files." and result.run is None
    assert "answer.txt" in result.steps[0].output and "check.sh" in result.steps[0].output
    assert all(guidance_of(r) is None for r in requests)


def test_the_shell_tool_stays_in_the_workspace(example: ModuleType, workspace: Path):
    for command in ("cat ../secret.txt", "cat /etc/hostname", "ls ~", "cp x --target=/tmp"):
        output, code = example.run_shell(command, workspace)
        assert code == 126 and output.startswith("refused:"), command
    output, code = example.run_shell("pwd && cat answer.txt 2>/dev/null", workspace)
    assert code == 0 and output.splitlines() == [str(workspace), "41"]
    output, code = example.run_shell("sleep 5", workspace, timeout=0.2)
    assert code == 124 and "timed out" in output


def test_bad_tool_calls_are_answered_not_raised(example: ModuleType, workspace: Path):
    replies = [
        {"tool_calls": [{"name": "browser", "arguments": {}}]},
        {"tool_calls": [{"name": "shell", "arguments": "{not json"}]},
        "Sorry.",
    ]
    with ScriptedChatServer(replies) as server:
        client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        hooks = Hooks("loop-3", store="memory://")
        result = example.run_agent("hi", client=client, model="m", workspace=workspace, hooks=hooks)
        requests = server.requests
    tool_messages = [m for m in requests[-1]["messages"] if m["role"] == "tool"]
    assert "unknown tool 'browser'" in tool_messages[0]["content"]
    assert "arguments are not JSON" in tool_messages[1]["content"]
    assert result.answer == "Sorry."


def test_main_runs_the_agent_from_the_command_line(
    example: ModuleType,
    workspace: Path,
    library: Path,
    capsys: pytest.CaptureFixture[str],
):
    # An answer while the plan is unfinished is a claim: the loop sends the
    # model back twice (pushbacks) with the unverified steps named.
    replies = [shell("sh check.sh"), *["It fails: the answer is 41."] * 3]
    with ScriptedChatServer(replies) as server:
        code = example.main(
            [
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
                "memory://",
            ]
        )
        body = json.dumps(server.requests[0])
        pushed = [guidance_of(r) or "" for r in server.requests[2:]]
    assert len(pushed) == 2 and all("Still unverified" in g for g in pushed)
    assert code == 0
    out = capsys.readouterr()
    assert out.out.strip() == "It fails: the answer is 41."
    assert "plan fix_tests: running" in out.err
    assert "[waygraph] Plan: Fix failing tests" in body


@pytest.mark.parametrize(
    ("code", "outcome", "status"), [(1, "fail", "running"), (0, "success", "completed")]
)
def test_the_exit_status_is_the_tools_own_never_its_words(
    example: ModuleType, tmp_path: Path, code: int, outcome: str, status: str
):
    project = make_suite(tmp_path, code)
    library = write_suite_library(tmp_path)
    with ScriptedChatServer([shell("sh suite.sh"), "I ran the suite."]) as server:
        client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        hooks = Hooks("suite", library=library, store="memory://", workspace=project)
        result = example.run_agent(
            SUITE_TASK, client=client, model="m", workspace=project, hooks=hooks, pushbacks=0
        )
    # The words say "exit code 0" and "1 failed" either way: the real status decides.
    assert outcomes(hooks.navigator.events("suite")) == [("suite", outcome)]
    assert result.run["status"] == status


def test_a_question_ends_the_loop_and_the_users_reply_carries_the_conversation_on(
    example: ModuleType, tmp_path: Path
):
    project = make_suite(tmp_path, 0)
    library = write_suite_library(tmp_path)
    replies = [QUESTION, shell("sh suite.sh"), "The unit tests pass."]
    with ScriptedChatServer(replies) as server:
        client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        hooks = Hooks("ask", library=library, store="memory://", workspace=project)
        asked = example.run_agent(
            SUITE_TASK, client=client, model="m", workspace=project, hooks=hooks
        )
        asked_events = types(hooks.navigator.events("ask"))
        answered = example.run_agent(
            ANSWER,
            client=client,
            model="m",
            workspace=project,
            hooks=hooks,
            history=asked.messages,
        )
        requests = server.requests

    # A question is no claim: no push back to work, the run waits for the user.
    assert asked.answer == QUESTION and asked.model_calls == 1 and asked.awaits_user
    assert asked.run["status"] == "running" and asked.run["awaiting"] == "user"
    assert asked_events[-1] == "question_asked"
    assert "claim_recorded" not in asked_events and "claim_unverified" not in asked_events
    # The reply is the user's next message: the model sees the question and the answer.
    said = [(m["role"], m["content"]) for m in requests[1]["messages"][1:4]]
    assert said == [("user", SUITE_TASK), ("assistant", QUESTION), ("user", ANSWER)]
    assert answered.answer == "The unit tests pass." and not answered.awaits_user
    assert answered.run["status"] == "completed" and answered.run["awaiting"] is None
    events = hooks.navigator.events("ask")
    assert [e["answer"] for e in events if e["type"] == "human_answered"] == [ANSWER]
