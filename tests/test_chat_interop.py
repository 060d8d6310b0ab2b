"""waygraph's tool-calling loops send what strict local servers accept (issue 35):
llama-cpp-python answers HTTP 500 to an assistant tool-call message without a string
``content``, and drops the tools unless ``tool_choice`` is given."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
    assert result.answer == "done"
    assistant = next(m for m in echoed if m["role"] == "assistant")
    assert assistant["content"] == "" and assistant["tool_calls"][0]["function"]["name"] == "shell"


def test_the_pipeline_agent_speaks_to_a_strict_server(tmp_path: Path):
    with ScriptedChatServer([first_call, strict("stage done")]) as server:
        backend = AgentBackend(server.base_url, "m", tmp_path, api_key="t", unconfined=True)
        answer = backend.run(Node(id="build", action="build it"), "build it", {})
    assert answer == "stage done"
