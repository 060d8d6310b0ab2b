"""waygraph.chat.ChatClient against a real local HTTP server: tool protocols, bad calls, errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from waygraph.chat import ChatClient, tool_message
from waygraph.errors import ConfigError, LLMError
from waygraph.testing import ScriptedChatServer

SHELL = {
    "type": "function",
    "function": {
        "name": "shell",
        "description": "Run one shell command.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    },
}
TASK = [{"role": "system", "content": "be careful"}, {"role": "user", "content": "list files"}]


def _ask(server: ScriptedChatServer, messages=TASK, tools=(SHELL,), **options: Any):
    with ChatClient(server.base_url, model="m", max_retries=0, **options) as chat:
        return chat.ask(messages, tools)


def test_native_calls_are_checked_and_the_request_carries_tool_choice_and_max_tokens():
    call = {"name": "shell", "arguments": {"command": "ls"}}
    with ScriptedChatServer([{"tool_calls": [call]}]) as server:
        reply = _ask(server)
        sent = server.requests[0]
    checked = [(c.name, c.args, c.runnable) for c in reply.calls]
    assert checked == [("shell", {"command": "ls"}, True)]
    assert sent["tool_choice"] == "auto" and sent["max_tokens"] == 1024
    assert reply.protocol == "native" and reply.total_tokens > 0
    history = reply.message()
    assert history["content"] == "" and history["tool_calls"][0]["function"]["name"] == "shell"


@pytest.mark.parametrize(
    ("call", "problem"),
    [
        ({"name": "browser", "arguments": {}}, "unknown tool 'browser'; the tools are: shell"),
        ({"name": "shell", "arguments": '{ "command": "python -m pytest --q tests/'}, "not JSON"),
        ({"name": "shell", "arguments": "[1, 2]"}, "must be a JSON object"),
        ({"name": "shell", "arguments": {"cmd": "ls"}}, 'missing "command"'),
    ],
)
def test_a_call_that_cannot_run_says_why_and_carries_no_arguments(call, problem):
    with ScriptedChatServer([{"tool_calls": [call]}]) as server:
        reply = _ask(server)
    (checked,) = reply.calls
    assert not checked.runnable and checked.args is None and problem in (checked.problem or "")
    answer = tool_message(checked, "ignored")
    assert answer["content"].endswith("nothing ran: call the tool again with valid arguments")


def test_text_protocol_describes_the_tools_and_reads_the_call_from_the_reply():
    written = 'I will look. {"tool_name": "shell", "tool_args": {"command": "ls -a"}}'
    with ScriptedChatServer([written]) as server:
        reply = _ask(server, tool_protocol="text")
        sent = server.requests[0]
    assert "tools" not in sent and "tool_choice" not in sent
    described = sent["messages"][0]  # one system message: the prompt, then the tools
    assert described["content"].startswith("be careful\n\nYou have tools.")
    assert '"tool_name"' in described["content"]
    assert "- shell: Run one shell command." in described["content"]
    assert [(c.name, c.args) for c in reply.calls] == [("shell", {"command": "ls -a"})]
    assert reply.protocol == "text"


def test_text_protocol_sends_calls_and_results_back_as_text():
    history = [
        *TASK,
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "shell", "arguments": '{"command": "ls"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "exit code 0\na.txt"},
    ]
    with ScriptedChatServer(["done"]) as server:
        reply = _ask(server, messages=history, tool_protocol="text")
        sent = server.requests[0]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert json.loads(sent[2]["content"]) == {"tool_name": "shell", "tool_args": {"command": "ls"}}
    assert sent[3]["content"] == "Result of shell:\nexit code 0\na.txt"
    assert reply.calls == [] and reply.content == "done"


def test_a_call_the_model_wrote_goes_back_as_it_wrote_it_once():
    written = 'Listing. {"tool_name": "shell", "tool_args": {"command": "ls"}}'
    with ScriptedChatServer([written, "done"]) as server:
        with ChatClient(server.base_url, model="m", tool_protocol="text") as chat:
            reply = chat.ask(TASK, [SHELL])
            history = [*TASK, reply.message(), tool_message(reply.calls[0], "a.txt")]
            chat.ask(history, [SHELL])
        sent = server.requests[1]["messages"]
    assert sent[2] == {"role": "assistant", "content": written}


def test_a_call_cut_mid_json_in_text_is_a_call_that_cannot_run_not_an_answer():
    with ScriptedChatServer(['{"tool_name": "shell", "tool_args": {"command": "pyt']) as server:
        reply = _ask(server, tool_protocol="text")
    (call,) = reply.calls
    assert call.name == "shell" and not call.runnable and call.args is None


def test_auto_switches_to_text_when_the_model_writes_its_call_and_remembers_it():
    written = '```json\n{"name": "shell", "arguments": {"command": "ls"}}\n```'
    with ScriptedChatServer([written, "ok"]) as server:
        first = _ask(server)
        second = _ask(server)  # a new client of the same endpoint
        requests = server.requests
    assert "tools" in requests[0] and first.protocol == "text"
    assert [(c.name, c.args) for c in first.calls] == [("shell", {"command": "ls"})]
    assert "tools" not in requests[1] and second.protocol == "text"


def test_native_keeps_a_written_call_as_text():
    written = '{"name": "shell", "arguments": {"command": "ls"}}'
    with ScriptedChatServer([written]) as server:
        reply = _ask(server, tool_protocol="native")
    assert reply.calls == [] and reply.content == written


def test_auto_goes_to_text_when_the_server_refuses_tools():
    def policy(request: dict[str, Any]) -> Any:
        if "tools" in request:
            return {"status": 500, "error": "tools are not supported by this chat format"}
        return '{"tool_name": "shell", "tool_args": {"command": "ls"}}'

    with ScriptedChatServer([policy, policy]) as server:
        reply = _ask(server)
    assert reply.protocol == "text" and reply.calls[0].args == {"command": "ls"}


def test_requests_are_kept_within_the_context_the_server_states():
    old = {"role": "tool", "tool_call_id": "c1", "content": "log line\n" * 3000}
    call = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{}"}}
        ],
    }
    last = {"role": "tool", "tool_call_id": "c2", "content": "the last result"}
    history = [*TASK, call, old, {**call, "tool_calls": [{**call["tool_calls"][0], "id": "c2"}]}]
    history.append(last)
    guidance = {"role": "system", "content": "[waygraph] step: test"}
    with ScriptedChatServer(["ok"], context_tokens=2048) as server:
        _ask(server, messages=[*history, guidance])
        sent = server.requests[0]
    text = json.dumps(sent["messages"])
    assert len(text) < 2048 * 3 and "cut to fit the model's context" in text
    kept = [m["content"] for m in sent["messages"]]
    assert "list files" in kept and "the last result" in kept and kept[-1] == guidance["content"]
    assert sent["max_tokens"] <= 1024


def test_a_context_refusal_teaches_the_size_and_the_request_is_retried_shorter():
    def policy(request: dict[str, Any]) -> Any:
        if len(json.dumps(request["messages"])) > 3000:
            return {
                "status": 400,
                "error": "This model's maximum context length is 1024 tokens. However, you "
                "requested 9000 tokens.",
            }
        return "fits"

    big = [*TASK, {"role": "assistant", "content": "x" * 20000}, {"role": "user", "content": "go"}]
    with ScriptedChatServer([policy, policy]) as server:
        reply = _ask(server, messages=big)
    assert reply.content == "fits" and len(server.requests) == 2


def test_an_explicit_context_size_needs_no_server_statement():
    big = [*TASK, {"role": "assistant", "content": "y" * 20000}, {"role": "user", "content": "go"}]
    with ScriptedChatServer(["ok"]) as server:
        _ask(server, messages=big, context_tokens=1000)
        sent = server.requests[0]
    assert len(json.dumps(sent["messages"])) < 3000


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        ({"status": 500, "error": "Input should be 'text' or 'json_object'"}, "HTTP 500: Input"),
        ({"status": 401, "error": "bad key"}, "HTTP 401: bad key"),
    ],
)
def test_server_errors_are_one_line_naming_the_endpoint(reply, said):
    with ScriptedChatServer([reply]) as server:
        with pytest.raises(LLMError) as caught:
            _ask(server, tools=())
        url = server.base_url
    message = str(caught.value)
    assert "\n" not in message and url in message and said in message


def test_an_unreachable_server_is_one_line():
    with ScriptedChatServer() as server:
        url = server.base_url
    chat = ChatClient(url, model="m", max_retries=0, timeout=5)
    with chat, pytest.raises(LLMError, match=r"cannot reach the model server at http://127\.0"):
        chat.ask(TASK)


def test_no_choices_is_an_error_naming_the_endpoint():
    class NoChoices:
        def __init__(self, url: str) -> None:
            self.base_url = url
            self.chat = self
            self.completions = self

        def create(self, **request: Any) -> Any:
            return type("R", (), {"choices": [], "usage": None})()

    chat = ChatClient(model="m", client=NoChoices("http://srv/v1"))
    with pytest.raises(LLMError, match=r"http://srv/v1 returned no choices"):
        chat.ask(TASK)


def test_bad_settings_are_refused_with_the_allowed_values():
    with pytest.raises(ConfigError, match="native, text, auto"):
        ChatClient(model="m", tool_protocol="json")
    with pytest.raises(ConfigError, match="context_tokens"):
        ChatClient(model="m", context_tokens=0)


def test_a_refused_response_format_is_remembered_for_the_endpoint_by_every_client():
    import asyncio

    from waygraph.planning import OpenAILLM

    def policy(request: dict[str, Any]) -> Any:
        kind = (request.get("response_format") or {}).get("type")
        if kind == "json_schema":
            return {"status": 500, "error": "Input should be 'text' or 'json_object'"}
        return '{"ok": true}'

    async def ask(url: str) -> str:
        async with OpenAILLM("m", base_url=url, max_retries=0) as llm:
            reply = await llm.complete([{"role": "user", "content": "go"}], json_schema={})
            return reply.text

    with ScriptedChatServer([policy], loop=True) as server:
        assert asyncio.run(ask(server.base_url)) == '{"ok": true}'
        assert asyncio.run(ask(server.base_url)) == '{"ok": true}'
        kinds = [(r.get("response_format") or {}).get("type") for r in server.requests]
    # One refusal in all: the second client went straight to json_object.
    assert kinds == ["json_schema", "json_object", "json_object"]


def test_a_refusal_naming_a_size_the_request_seemed_to_fit_still_shortens_it():
    # The server counts more tokens than waygraph's estimate: the retry goes lower.
    call = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{}"}}
        ],
    }
    old = {"role": "tool", "tool_call_id": "c1", "content": "z" * 30000}
    history = [*TASK, call, old, call, {"role": "tool", "tool_call_id": "c1", "content": "last"}]
    refusal = {"status": 400, "error": "Requested tokens exceed context window of 100000"}
    with ScriptedChatServer([refusal, "ok"]) as server:
        reply = _ask(server, messages=history)
        sizes = [len(json.dumps(r["messages"])) for r in server.requests]
    assert reply.content == "ok" and sizes[1] < sizes[0]


def test_a_rate_limit_that_says_exceeded_is_not_taken_for_a_context_refusal():
    limited = {"status": 429, "error": "Rate limit exceeded: too many tokens per minute"}
    with ScriptedChatServer([limited, "never asked"]) as server:
        with pytest.raises(LLMError, match="HTTP 429"):
            _ask(server, tools=())
        asked = len(server.requests)
    assert asked == 1
