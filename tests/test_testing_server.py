"""ScriptedChatServer driven by the real `openai` client."""

from __future__ import annotations

import asyncio
import doctest
import json
import urllib.error
import urllib.request

import openai
import pytest
from openai import AsyncOpenAI, OpenAI

import waygraph.testing.chat_server as chat_server
from waygraph.testing import ScriptedChatServer

pytestmark = pytest.mark.timeout(20)


def client(server: ScriptedChatServer) -> OpenAI:
    return OpenAI(base_url=server.base_url, api_key="test", max_retries=0, timeout=5)


def ask(server: ScriptedChatServer, text: str = "hello model", **kwargs):
    return client(server).chat.completions.create(
        model="test-model", messages=[{"role": "user", "content": text}], **kwargs
    )


def test_base_url_is_local_with_an_os_assigned_port():
    with ScriptedChatServer() as server:
        assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
        assert server.port > 0


def test_string_reply_becomes_assistant_content_with_word_count_usage():
    with ScriptedChatServer(["three word answer"]) as server:
        reply = ask(server, "count these four words")
    assert reply.choices[0].message.content == "three word answer"
    assert reply.choices[0].message.role == "assistant"
    assert reply.choices[0].finish_reason == "stop"
    assert reply.model == "test-model"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (4, 3)
    assert reply.usage.total_tokens == 7


def test_replies_are_served_in_order_and_requests_recorded():
    with ScriptedChatServer(["first", "second"]) as server:
        assert ask(server, "a").choices[0].message.content == "first"
        assert ask(server, "b").choices[0].message.content == "second"
        assert [r["messages"][0]["content"] for r in server.requests] == ["a", "b"]
        assert server.requests[0]["model"] == "test-model"
        assert server.remaining == 0


def test_tool_calls_become_proper_tool_call_objects():
    script = [
        {
            "content": None,
            "tool_calls": [
                {"name": "search", "arguments": {"query": "waygraph"}},
                {"name": "read", "arguments": '{"path": "a.txt"}'},
            ],
        }
    ]
    with ScriptedChatServer(script) as server:
        reply = ask(server)
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls
    assert [c.function.name for c in calls] == ["search", "read"]
    assert json.loads(calls[0].function.arguments) == {"query": "waygraph"}
    assert json.loads(calls[1].function.arguments) == {"path": "a.txt"}
    assert len({c.id for c in calls}) == 2
    assert all(c.type == "function" for c in calls)


def test_callable_reply_sees_the_request():
    def policy(request):
        return "you said: " + request["messages"][-1]["content"]

    with ScriptedChatServer([policy]) as server:
        assert ask(server, "ping").choices[0].message.content == "you said: ping"


def test_response_format_is_accepted_and_content_returned_as_scripted():
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
    fmt = {"type": "json_schema", "json_schema": {"name": "thing", "schema": schema}}
    with ScriptedChatServer(['{"x": 1}']) as server:
        reply = ask(server, response_format=fmt)
        assert server.requests[0]["response_format"] == fmt
    assert json.loads(reply.choices[0].message.content) == {"x": 1}


def test_running_out_of_replies_is_an_http_500_with_a_json_error():
    with ScriptedChatServer([]) as server, pytest.raises(openai.InternalServerError) as info:
        ask(server)
    assert info.value.status_code == 500
    assert "no scripted reply left" in str(info.value)


def test_scripted_error_reply_and_usage_override():
    script = [
        {"status": 400, "error": "response_format is not supported"},
        {
            "content": "ok",
            "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
        },
    ]
    with ScriptedChatServer(script) as server:
        with pytest.raises(openai.BadRequestError, match="response_format is not supported"):
            ask(server)
        assert ask(server).usage.total_tokens == 12


def test_models_endpoint_lists_the_scripted_model():
    with ScriptedChatServer(model="tiny") as server:
        models = client(server).models.list()
    assert [m.id for m in models.data] == ["tiny"]


def test_unknown_route_is_a_json_404():
    with ScriptedChatServer() as server, pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(server.base_url + "/embeddings", data=b"{}", timeout=5)
    assert info.value.code == 404
    assert "no route" in json.loads(info.value.read())["error"]["message"]


def test_push_adds_replies_while_serving_and_async_client_works():
    async def main(server: ScriptedChatServer) -> list[str]:
        aclient = AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        server.push("one", "two")
        replies = await asyncio.gather(
            *[
                aclient.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": str(i)}]
                )
                for i in range(2)
            ]
        )
        await aclient.close()
        return sorted(r.choices[0].message.content for r in replies)

    with ScriptedChatServer() as server:
        assert asyncio.run(main(server)) == ["one", "two"]
        assert len(server.requests) == 2


def test_close_releases_the_server_and_port_property_then_explains():
    server = ScriptedChatServer().start()
    server.close()
    server.close()
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.base_url


def test_module_docstring_examples_run():
    assert doctest.testmod(chat_server).failed == 0
