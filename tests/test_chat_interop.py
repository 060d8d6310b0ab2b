"""waygraph's tool-calling loops send what strict local servers accept (issue 35):
llama-cpp-python answers HTTP 500 to an assistant tool-call message without a string
``content``, and drops the tools unless ``tool_choice`` is given."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

from waygraph.eval.loop import run_agent
from waygraph.model import Node
from waygraph.pipelines.backends import AgentBackend
from waygraph.testing import ScriptedChatServer


def strict(final: str):
    """A reply that answers as llama-cpp-python does: 500 for what it cannot take."""

    def reply(request: dict[str, Any]) -> Any:
        for message in request["messages"]:
            if message["role"] == "assistant" and not isinstance(message.get("content"), str):
                return {"status": 500, "error": "content: Input should be a valid string"}
        if request.get("tools") and request.get("tool_choice") != "auto":
            return {"status": 500, "error": "tools offered without tool_choice"}
        return final

    return reply


def first_call(request: dict[str, Any]) -> Any:
    if request.get("tool_choice") != "auto":
        return {"status": 500, "error": "tools offered without tool_choice"}
    return {"tool_calls": [{"name": "shell", "arguments": {"command": "echo hi"}}]}


def test_the_eval_loop_and_the_example_loop_speak_to_a_strict_server(tmp_path: Path):
    with ScriptedChatServer([first_call, strict("done")]) as server:
        client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        result = run_agent("say hi", client=client, model="m", workspace=tmp_path)
        echoed = server.requests[1]["messages"]
        bounded = [r.get("max_tokens") for r in server.requests]
    assert result.answer == "done"
    assert bounded == [1024, 1024]  # every request bounds its reply
    assistant = next(m for m in echoed if m["role"] == "assistant")
    assert assistant["content"] == "" and assistant["tool_calls"][0]["function"]["name"] == "shell"


def test_the_pipeline_agent_speaks_to_a_strict_server(tmp_path: Path):
    with ScriptedChatServer([first_call, strict("stage done")]) as server:
        backend = AgentBackend(server.base_url, "m", tmp_path, api_key="t", unconfined=True)
        answer = backend.run(Node(id="build", action="build it"), "build it", {})
        bounded = [r.get("max_tokens") for r in server.requests]
    assert answer == "stage done"
    assert bounded == [1024, 1024]


def test_the_reply_bound_is_configurable(tmp_path: Path):
    with ScriptedChatServer(["a", "b"]) as server:
        client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        run_agent("x", client=client, model="m", workspace=tmp_path, max_tokens=300)
        run_agent("y", client=client, model="m", workspace=tmp_path, max_tokens=None)
        bounds = [r.get("max_tokens") for r in server.requests]
    assert bounds == [300, None]


class RecordingHooks:
    """Records what run_agent reports as evidence."""

    def __init__(self) -> None:
        self.results: list[tuple[str, int | None]] = []

    def on_user_message(self, text: str) -> None:
        return None

    def context_for_model(self) -> str:
        return ""

    def on_model_reply(self, text: str, *, final: bool) -> None:
        return None

    def on_tool_result(self, output: str, **fields: Any) -> None:
        self.results.append((output, fields.get("exit_code")))

    def state(self) -> None:
        return None


def test_a_malformed_tool_call_is_asked_again_and_is_never_evidence(tmp_path: Path):
    # Grammar-constrained servers cut arguments mid-JSON; an empty command ran
    # nothing either. Neither may count as a failed (or passed) verification.
    cut = {"tool_calls": [{"name": "shell", "arguments": '{ "command": "python -m pytest --q'}]}
    empty = {"tool_calls": [{"name": "shell", "arguments": {"command": "  "}}]}
    ok = {"tool_calls": [{"name": "shell", "arguments": {"command": "echo fine"}}]}
    hooks = RecordingHooks()
    with ScriptedChatServer([cut, empty, ok, "done"]) as server:
        client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        run_agent("go", client=client, model="m", workspace=tmp_path, hooks=hooks)  # type: ignore[arg-type]
        answered = [m for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert [r[1] for r in hooks.results] == [0]  # only the call that ran
    assert all("nothing ran: call the tool again" in m["content"] for m in answered[:2])


def test_the_demo_refuses_calls_that_cannot_run(tmp_path: Path):
    from waygraph.chat import check_call
    from waygraph.demo import Workspace
    from waygraph.demo._model import TOOLS, _call_tool

    ws = Workspace(tmp_path)
    offered = {t["function"]["name"]: t["function"] for t in TOOLS}
    for name, arguments in [
        ("run_command", '{"command": "pytest'),
        ("run_command", '{"command": ""}'),
        ("run_command", "[1, 2]"),
        ("rm_rf", '{"path": "/"}'),
        ("write_file", '{"path": "../outside.txt", "content": "x"}'),
    ]:
        _shown, args, result = _call_tool(ws, check_call("c1", name, arguments, offered))
        assert args is None, (name, arguments)  # nothing ran: no evidence
        assert result.exit_code in (2, 126), (name, arguments)
    assert not (tmp_path.parent / "outside.txt").exists()


def test_an_empty_command_is_refused_by_every_shell_tool(tmp_path: Path):
    from waygraph.cli.plan_tools import workspace_tools
    from waygraph.errors import CommandFailed
    from waygraph.eval.loop import run_shell

    assert run_shell("   ", tmp_path)[1] == 126
    shell = next(t for t in workspace_tools(tmp_path, unconfined=True) if t.__name__ == "shell")
    with pytest.raises(CommandFailed, match="the command is empty"):
        shell("")


def test_commands_and_writes_that_leave_the_workspace_are_never_evidence(tmp_path: Path):
    class Recording:
        def __init__(self) -> None:
            self.results: list[tuple[str, int | None]] = []

        def on_user_message(self, text: str) -> None: ...

        def context_for_model(self) -> None:
            return None

        def on_model_reply(self, text: str, final: bool) -> None: ...

        def on_tool_result(self, output: str, **kwargs: Any) -> None:
            self.results.append((output, kwargs.get("exit_code")))

        def state(self) -> None:
            return None

    calls = [
        {"name": "shell", "arguments": {"command": "cat /etc/passwd"}},
        {"name": "write_file", "arguments": {"path": "../x.txt", "content": "x"}},
        {"name": "shell", "arguments": {"command": "echo ok"}},
    ]
    hooks = Recording()
    with ScriptedChatServer([{"tool_calls": calls}, "done"]) as server:
        client = OpenAI(base_url=server.base_url, api_key="t", max_retries=0)
        run_agent("go", client=client, model="m", workspace=tmp_path, hooks=hooks)  # type: ignore[arg-type]
        answered = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert hooks.results == [("ok\n", 0)]  # only the command that ran
    assert all("refused" in a and "nothing ran" in a for a in answered[:2])
    assert not (tmp_path.parent / "x.txt").exists()
