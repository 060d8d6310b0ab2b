"""waygraph.integrations.openai_agents: real OpenAI Agents SDK runs against a local chat server.

The agent's model is the SDK's own chat-completions model pointed at
ScriptedChatServer, so what waygraph put in front of the model is read from
the HTTP request bodies the server received.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

agents = pytest.importorskip("agents", reason="needs the openai-agents extra")
openai = pytest.importorskip("openai", reason="needs the openai package")

from agents import Agent, Runner, RunResult, function_tool, set_tracing_disabled  # noqa: E402
from agents.lifecycle import RunHooksBase  # noqa: E402
from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel  # noqa: E402

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
from tests.agent_loop import TASK, guidance_of, make_project, shell, write_library  # noqa: E402
from waygraph.async_navigator import AsyncNavigator  # noqa: E402
from waygraph.errors import IntegrationVersionError  # noqa: E402
from waygraph.integrations.openai_agents import waygraph_hooks  # noqa: E402
from waygraph.navigator import Navigator  # noqa: E402
from waygraph.testing import ScriptedChatServer  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "openai_agents_agent.py"

CLAIM = "All tests pass, the bug is fixed."


@pytest.fixture(autouse=True)
def no_tracing() -> None:
    # Tracing would export spans to api.openai.com: nothing may leave 127.0.0.1.
    set_tracing_disabled(True)


@pytest.fixture(scope="module")
def example() -> ModuleType:
    return load_script(EXAMPLE, "openai_agents_agent")


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


def model_for(server: ScriptedChatServer) -> OpenAIChatCompletionsModel:
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    return OpenAIChatCompletionsModel(model="scripted", openai_client=client)


def run(agent: Agent[Any], task: str, **kwargs: Any) -> RunResult:
    return asyncio.run(Runner.run(agent, task, **kwargs))


def events(navigator: Navigator, session: str, kind: str) -> list[dict[str, Any]]:
    return [e for e in navigator.events(session) if e["type"] == kind]


def test_guidance_reaches_each_model_call_and_tool_results_complete_the_plan(
    example: ModuleType, navigator: Navigator, workspace: Path
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
        agent = example.build_agent(workspace, model_for(server))
        result = run(agent, TASK, hooks=waygraph_hooks(navigator, session="fix-1"))
        requests = server.requests

    assert result.final_output == "The check passes now: answer.txt holds 42."
    assert (workspace / "answer.txt").read_text().strip() == "42"
    state = navigator.state("fix-1")
    assert state["plan_id"] == "fix_tests" and state["status"] == "completed"

    assert len(requests) == 6
    first = guidance_of(requests[0])
    assert first.startswith("[WORKFLOW: Fix failing tests]") and "reproduce << CURRENT" in first
    # Each later call carries the guidance after the tool result that moved the plan.
    for request, where in zip(
        requests[1:5],
        ("fix << CURRENT", "test << CURRENT", "fix << CURRENT (attempt 2/3)", "test << CURRENT"),
        strict=True,
    ):
        assert request["messages"][-2]["role"] == "tool"
        assert where in guidance_of(request)
    # The model reads the output with its status last; waygraph reads the status as a field.
    assert requests[1]["messages"][-2]["content"] == "FAILED: expected 42, got 41\nexit=1"
    assert guidance_of(requests[5]).startswith("Plan completed: 'Fix failing tests'")
    # Guidance is per call: neither the conversation sent nor the run's history keeps it.
    sent = requests[5]["messages"][:-1]
    assert not any("[WORKFLOW" in str(m.get("content")) for m in sent)
    assert "[WORKFLOW" not in json.dumps(result.to_input_list())

    verdicts = [
        (e["node"], e["passed"], e["tool"], e.get("output", ""))
        for e in events(navigator, "fix-1", "node_verified")
    ]
    assert verdicts[0] == ("reproduce", True, "shell", "FAILED: expected 42, got 41\n")
    assert [(node, passed) for node, passed, *_ in verdicts] == [
        ("reproduce", True),
        ("fix", True),
        ("test", False),
        ("fix", True),
        ("test", True),
    ]
    assert verdicts[-1][3] == "ok: 42\n"
    # The closing words came after the plan ended: recorded, nothing unverified.
    assert not events(navigator, "fix-1", "claim_unverified")


def test_a_claim_in_prose_does_not_complete_the_plan(
    example: ModuleType, navigator: Navigator, workspace: Path
):
    with ScriptedChatServer([CLAIM]) as server:
        agent = example.build_agent(workspace, model_for(server))
        result = run(agent, TASK, hooks=waygraph_hooks(navigator, session="liar"))
        requests = server.requests

    assert result.final_output == CLAIM
    assert "reproduce << CURRENT" in guidance_of(requests[0])
    state = navigator.state("liar")
    assert state["status"] == "running" and state["current_node"] == "reproduce"
    assert not events(navigator, "liar", "node_verified")
    [claim] = events(navigator, "liar", "claim_recorded")
    assert claim["excerpt"] == CLAIM and claim["final"] is True
    [unverified] = events(navigator, "liar", "claim_unverified")
    assert unverified["nodes"] == ["reproduce", "fix", "test"]
    assert (workspace / "answer.txt").read_text().strip() == "41"


@pytest.mark.parametrize(
    ("code", "outcome", "status"), [(1, "fail", "running"), (0, "success", "completed")]
)
def test_the_exit_status_is_the_tools_field_never_its_words(
    example: ModuleType, tmp_path: Path, code: int, outcome: str, status: str
):
    project = make_suite(tmp_path, code)
    navigator = Navigator(write_suite_library(tmp_path), store="memory://", workspace=project)
    with ScriptedChatServer([shell("sh suite.sh"), "I ran the suite."]) as server:
        agent = example.build_agent(project, model_for(server))
        run(agent, SUITE_TASK, hooks=waygraph_hooks(navigator, session="suite"))
        requests = server.requests

    # The words say "exit code 0" and "1 failed" either way: the field decides.
    assert outcomes(navigator.events("suite")) == [("suite", outcome)]
    assert navigator.state("suite")["status"] == status
    [verdict] = events(navigator, "suite", "node_verified")
    assert verdict["output"] == f"{MISLEADING}\n"
    assert requests[1]["messages"][-2]["content"] == f"{MISLEADING}\nexit={code}"


def test_a_question_waits_for_the_user_and_the_next_run_answers_it(
    example: ModuleType, tmp_path: Path
):
    project = make_suite(tmp_path, 0)
    navigator = Navigator(write_suite_library(tmp_path), store="memory://", workspace=project)
    replies = [QUESTION, shell("sh suite.sh"), "The unit tests pass."]
    with ScriptedChatServer(replies) as server:
        agent = example.build_agent(project, model_for(server))
        first = run(agent, SUITE_TASK, hooks=waygraph_hooks(navigator, session="ask"))
        asked = navigator.state("ask")
        asked_events = types(navigator.events("ask"))
        follow_up = [*first.to_input_list(), {"role": "user", "content": ANSWER}]
        # A fresh client: the first one's connections belong to the first run's event loop.
        agent = example.build_agent(project, model_for(server))
        run(agent, follow_up, hooks=waygraph_hooks(navigator, session="ask"))

    assert first.final_output == QUESTION
    assert asked["status"] == "running" and asked["awaiting"] == "user"
    assert asked_events[-1] == "question_asked"
    assert "claim_recorded" not in asked_events and "claim_unverified" not in asked_events
    [answered] = events(navigator, "ask", "human_answered")
    assert answered["answer"] == ANSWER
    done = navigator.state("ask")
    assert done["status"] == "completed" and done["awaiting"] is None


def test_a_second_run_with_the_same_session_resumes_it(
    example: ModuleType, navigator: Navigator, workspace: Path
):
    with ScriptedChatServer([shell("sh check.sh"), "It fails: the answer is 41."]) as server:
        agent = example.build_agent(workspace, model_for(server))
        first = run(agent, TASK, hooks=waygraph_hooks(navigator, session="chat-7"))
    started = navigator.state("chat-7")
    assert started["status"] == "running" and started["current_node"] == "fix"

    replies = [shell("echo 42 > answer.txt"), shell("sh check.sh"), "Fixed and checked."]
    with ScriptedChatServer(replies) as server:
        agent = example.build_agent(workspace, model_for(server))
        follow_up = [*first.to_input_list(), {"role": "user", "content": "Go on, fix it."}]
        run(agent, follow_up, hooks=waygraph_hooks(navigator, session="chat-7"))
        requests = server.requests

    assert "fix << CURRENT" in guidance_of(requests[0])
    # The new server numbers its tool calls from 1 again: still new results in a new run.
    assert requests[1]["messages"][-2]["tool_call_id"] == "call_1_0"
    finished = navigator.state("chat-7")
    assert finished["run_id"] == started["run_id"] and finished["status"] == "completed"
    assert len(events(navigator, "chat-7", "plan_activated")) == 1


def test_a_handoff_keeps_the_session_and_does_not_repeat_the_task(
    example: ModuleType, navigator: Navigator, workspace: Path
):
    replies = [
        {"tool_calls": [{"name": "transfer_to_fixer", "arguments": {}}]},
        shell("sh check.sh"),
        "Reproduced: the answer is 41.",
    ]
    with ScriptedChatServer(replies) as server:
        fixer = example.build_agent(workspace, model_for(server))
        fixer.name = "fixer"
        triage = Agent(
            name="triage", instructions="route", handoffs=[fixer], model=model_for(server)
        )
        result = run(triage, TASK, hooks=waygraph_hooks(navigator, session="handoff"))
        requests = server.requests

    assert result.last_agent is fixer
    assert "reproduce << CURRENT" in guidance_of(requests[1])
    assert "fix << CURRENT" in guidance_of(requests[2])
    # One turn per thing that happened: the task, the tool result, the answer.
    state = navigator.state("handoff")
    assert state["turn"] == 3 and state["current_node"] == "fix"
    assert len(events(navigator, "handoff", "plan_activated")) == 1


def test_a_tool_error_is_reported_with_its_tool_name(navigator: Navigator):
    @function_tool
    def probe(path: str) -> str:
        """Read a file.

        Args:
            path: The file.
        """
        raise OSError(f"cannot read {path}")

    replies = [{"tool_calls": [{"name": "probe", "arguments": {"path": "x"}}]}, "It broke."]
    with ScriptedChatServer(replies) as server:
        agent = Agent(name="a", instructions="work", tools=[probe], model=model_for(server))
        run(agent, TASK, hooks=waygraph_hooks(navigator, session="err"))
        requests = server.requests

    [verdict] = events(navigator, "err", "node_verified")
    assert verdict["node"] == "reproduce" and verdict["tool"] == "probe"
    assert verdict["output"] == requests[1]["messages"][-2]["content"]
    assert "error occurred" in verdict["output"]
    assert "fix << CURRENT" in guidance_of(requests[1])


def test_the_input_filter_adds_the_guidance_once(
    example: ModuleType, navigator: Navigator, workspace: Path
):
    with ScriptedChatServer([shell("sh check.sh"), "Reproduced."]) as server:
        agent = example.build_agent(workspace, model_for(server))
        hooks = waygraph_hooks(navigator, session="filtered")
        config = agents.RunConfig(call_model_input_filter=hooks.call_model_input_filter)
        run(agent, TASK, hooks=hooks, run_config=config)
        requests = server.requests

    for request, where in zip(requests, ("reproduce << CURRENT", "fix << CURRENT"), strict=True):
        guidance = [m for m in request["messages"] if "[WORKFLOW" in str(m.get("content"))]
        assert len(guidance) == 1 and where in guidance[0]["content"]
        assert guidance[0] is request["messages"][-1]


def test_without_a_matching_plan_the_run_is_left_alone(
    example: ModuleType, navigator: Navigator, workspace: Path
):
    with ScriptedChatServer([shell("ls"), "Two files."]) as server:
        agent = example.build_agent(workspace, model_for(server))
        result = run(agent, "What is in this folder?", hooks=waygraph_hooks(navigator, session="q"))
        requests = server.requests
    assert result.final_output == "Two files."
    assert all(guidance_of(r) is None for r in requests)
    assert navigator.state("q") is None


@pytest.mark.parametrize("found", ["0.6.4", "0.2.0", "1.0.0"])
def test_an_unsupported_sdk_version_is_refused_at_setup(
    monkeypatch: pytest.MonkeyPatch, found: str
):
    real = metadata.version
    monkeypatch.setattr(
        metadata, "version", lambda name: found if name == "openai-agents" else real(name)
    )
    with pytest.raises(IntegrationVersionError) as error:
        waygraph_hooks(Navigator(store="memory://"), session="s")
    message = str(error.value)
    assert message.startswith("waygraph.integrations.openai_agents supports openai-agents")
    assert f">=0.6.5,<1; found {found}" in message


def test_a_missing_hook_point_is_refused_at_setup(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delattr(RunHooksBase, "on_llm_start")
    with pytest.raises(IntegrationVersionError, match=r"RunHooksBase\.on_llm_start is gone"):
        waygraph_hooks(Navigator(store="memory://"), session="s")


def test_an_async_navigator_serves_too():
    navigator = AsyncNavigator(store="memory://")
    assert waygraph_hooks(navigator, session="s").hooks.navigator is navigator.sync


def test_without_the_sdk_the_extra_to_install_is_named():
    # A fresh interpreter in which the SDK cannot be imported.
    code = (
        "import sys; sys.modules['agents'] = sys.modules['agents.lifecycle'] = None\n"
        "from waygraph import Navigator\n"
        "from waygraph.integrations.openai_agents import waygraph_hooks\n"
        "waygraph_hooks(Navigator(store='memory://'), session='s')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT / "src")},
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "waygraph.errors.MissingExtra: waygraph.integrations.openai_agents needs the agents "
        "package, which is not installed: pip install 'waygraph[openai-agents]'"
    )


def test_the_example_runs_from_the_command_line(library: Path, workspace: Path, tmp_path: Path):
    replies = [shell("sh check.sh"), shell("echo 42 > answer.txt"), shell("sh check.sh"), "Done."]
    store = f"sqlite:///{tmp_path / 'example.db'}"
    with ScriptedChatServer(replies) as server:
        done = subprocess.run(
            [
                sys.executable,
                str(EXAMPLE),
                TASK,
                *("--workspace", str(workspace), "--base-url", server.base_url),
                *("--model", "scripted", "--library", str(library), "--store", store),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT / "src")},
        )
        requests = server.requests
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Done."
    assert "plan fix_tests: completed" in done.stderr
    assert "test << CURRENT" in guidance_of(requests[2])
    assert (workspace / "answer.txt").read_text().strip() == "42"
