"""Spans as Jaeger, Langfuse or Phoenix look for them: model calls, workflows, revisions.

Each model call waygraph makes (``ChatClient.ask``, ``OpenAILLM.complete``) is
a ``chat {model}`` span; a generated plan's run is an ``invoke_workflow``; a
step span says which revision of the plan it ran in; and docs/tracing.md's
attribute tables are the registry ``tracing.SPAN_ATTRIBUTES``, which every
span made here keeps to.
"""

from __future__ import annotations

import asyncio
import json
import re
import textwrap
import typing
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from tests.test_tracing import BLOCK, exporter, run_python, spans  # noqa: F401
from waygraph import tracing
from waygraph.chat import ChatClient
from waygraph.errors import LLMError
from waygraph.planning import OpenAILLM, Plan, PlanningAgent, PlanningPattern
from waygraph.testing import ScriptedChatServer

pytestmark = pytest.mark.timeout(60)

DOCS = Path(__file__).resolve().parent.parent / "docs" / "tracing.md"
HI = [{"role": "user", "content": "hi"}]


def registered(exported: Any) -> list[Any]:
    """Every finished span, each checked to carry only attributes the registry names."""
    finished = list(exported.get_finished_spans())
    for span in finished:
        key = "chat {model}" if span.name.startswith("chat ") else span.name
        if key in tracing.SPAN_ATTRIBUTES:
            unknown = set(span.attributes) - set(tracing.SPAN_ATTRIBUTES[key])
            assert not unknown, f"{span.name} carries unregistered {sorted(unknown)}"
    return finished


# ---------------------------------------------------------------- model calls


def test_chat_client_ask_is_a_chat_span_with_model_usage_and_server(exporter):  # noqa: F811
    exported, provider = exporter
    agent = provider.get_tracer("agent")
    with ScriptedChatServer(["hello"]) as server:
        chat = ChatClient(server.base_url, model="scripted", max_tokens=64)
        with chat, agent.start_as_current_span("agent step") as outer:
            reply = chat.ask(HI)
        port = int(server.base_url.split(":")[-1].split("/")[0])
    registered(exported)
    (span,) = spans(exported, "chat scripted")
    assert span.kind == SpanKind.CLIENT
    assert span.parent is not None and span.parent.span_id == outer.get_span_context().span_id
    assert dict(span.attributes) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "scripted",
        "gen_ai.request.max_tokens": 64,
        "server.address": "127.0.0.1",
        "server.port": port,
        "gen_ai.response.model": "scripted",
        "gen_ai.response.id": "chatcmpl-scripted-1",
        "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.usage.input_tokens": reply.prompt_tokens,
        "gen_ai.usage.output_tokens": reply.completion_tokens,
    }
    assert reply.prompt_tokens > 0 and reply.completion_tokens == 1
    assert span.status.status_code == StatusCode.UNSET


def test_a_failed_model_call_is_an_error_span_with_its_error_type(exporter):  # noqa: F811
    exported, _ = exporter
    with ScriptedChatServer([{"status": 500, "error": "model exploded"}]) as server:
        chat = ChatClient(server.base_url, model="scripted", max_retries=0)
        with chat, pytest.raises(LLMError, match="model exploded"):
            chat.ask(HI)
    (span,) = spans(exported, "chat scripted")
    assert span.status.status_code == StatusCode.ERROR
    assert span.attributes["error.type"] == "InternalServerError"
    assert "gen_ai.usage.input_tokens" not in span.attributes  # nothing reported
    assert [e.name for e in span.events] == ["exception"]


def test_openai_llm_complete_is_a_chat_span_with_the_usage_the_server_reports(exporter):  # noqa: F811
    exported, _ = exporter
    usage = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}

    async def ask(base_url: str) -> Any:
        async with OpenAILLM("planner", base_url=base_url, max_tokens=300, max_retries=0) as llm:
            return await llm.complete(HI, json_schema={"type": "object"})

    with ScriptedChatServer([{"content": '{"ok": true}', "usage": usage}]) as server:
        reply = asyncio.run(ask(server.base_url))
    assert reply.usage.total_tokens == 18
    registered(exported)
    (span,) = spans(exported, "chat planner")
    attrs = span.attributes
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.request.model"] == attrs["gen_ai.response.model"] == "planner"
    assert attrs["gen_ai.request.max_tokens"] == 300
    assert attrs["gen_ai.request.temperature"] == 0.0
    assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"]) == (11, 7)


def test_without_the_extra_model_calls_work_and_import_nothing_of_it():
    code = BLOCK + textwrap.dedent(
        """
        import sys
        from waygraph.chat import ChatClient
        from waygraph.testing import ScriptedChatServer
        with ScriptedChatServer(["hello"]) as server:
            with ChatClient(server.base_url, model="scripted") as chat:
                print(chat.ask([{"role": "user", "content": "hi"}]).content)
        assert not [m for m in sys.modules if m.startswith("opentelemetry")]
        """
    )
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hello"


# ---------------------------------------------------------------- generated plans


def bad(x: str = "") -> str:
    raise RuntimeError("bad luck")


def ok(x: str = "") -> str:
    return "ok" + x


def revised(action: str) -> str:
    step = {"id": "s1", "action": action, "parameters": {}, "dependencies": []}
    return json.dumps({"goal": "revised", "steps": [step]})


def test_each_step_span_says_the_revision_of_the_plan_it_ran_in(exporter):  # noqa: F811
    exported, _ = exporter
    plan = Plan(goal="make the thing\nwith care", steps=[{"id": "s1", "action": "bad"}])
    pattern = PlanningPattern(retry_failed_steps=0, max_revisions=3)
    replies = [revised("bad"), revised("bad"), revised("ok")]

    async def main(base_url: str) -> Any:
        async with OpenAILLM("scripted", base_url=base_url, max_retries=0) as llm:
            return await PlanningAgent(llm, tools=[ok, bad], pattern=pattern).execute_plan(plan)

    with ScriptedChatServer(replies) as server:
        result = asyncio.run(main(server.base_url))
    assert result.success and result.revision_count == 3
    finished = registered(exported)
    (run,) = spans(exported, "waygraph.plan")
    steps = spans(exported, "waygraph.step")
    assert [s.attributes["waygraph.step.id"] for s in steps] == ["s1"] * 4
    assert [s.attributes["waygraph.plan.revision"] for s in steps] == [0, 1, 2, 3]
    assert [s.status.status_code for s in steps] == [StatusCode.ERROR] * 3 + [StatusCode.UNSET]
    # The revising model calls are chat spans inside the run's span.
    calls = [s for s in finished if s.name == "chat scripted"]
    assert len(calls) == 3
    assert all(c.parent is not None and c.parent.span_id == run.context.span_id for c in calls)
    assert run.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert run.attributes["gen_ai.workflow.name"] == "make the thing"
    assert run.attributes["waygraph.plan.goal"] == "make the thing\nwith care"


# ---------------------------------------------------------------- names and docs


def test_the_gen_ai_names_are_the_semantic_conventions_own():
    gen_ai = pytest.importorskip(
        "opentelemetry.semconv._incubating.attributes.gen_ai_attributes",
        reason="opentelemetry-semantic-conventions is not installed",
    )
    from opentelemetry.semconv.attributes import error_attributes, server_attributes

    known = {value for name, value in vars(gen_ai).items() if name.startswith("GEN_AI_")} | {
        server_attributes.SERVER_ADDRESS,
        server_attributes.SERVER_PORT,
        error_attributes.ERROR_TYPE,
    }
    names = {n for names in tracing.SPAN_ATTRIBUTES.values() for n in names}
    standard = {n for n in names if not n.startswith("waygraph.")}
    assert standard <= known, sorted(standard - known)
    operations = gen_ai.GenAiOperationNameValues
    assert {operations.CHAT.value, operations.INVOKE_WORKFLOW.value} == {
        "chat",
        "invoke_workflow",
    }


def doc_tables() -> dict[str, dict[str, str]]:
    """The tables headed ``| `span` attribute | value |``: span -> attribute -> value."""
    tables: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        header = re.fullmatch(r"\| `([^`]+)` attribute \| value \|", line.strip())
        if header:
            current = tables.setdefault(header.group(1), {})
            continue
        row = re.fullmatch(r"\| `([^`]+)` \| (.*) \|", line.strip())
        if current is not None and row:
            current[row.group(1)] = row.group(2)
        elif current is not None and not line.startswith("| ---"):
            current = None
    return tables


def test_the_docs_attribute_tables_are_the_code_registry():
    tables = doc_tables()
    assert set(tables) == set(tracing.SPAN_ATTRIBUTES)
    for span, names in tracing.SPAN_ATTRIBUTES.items():
        assert list(tables[span]) == list(names), span


def test_the_docs_name_the_verdict_values_the_spans_carry():
    from waygraph.verify import Outcome

    documented = re.findall(r"`([a-z_]+)`", doc_tables()["waygraph.turn"][tracing.VERDICT])
    assert documented == list(typing.get_args(Outcome)) == ["success", "fail", "unknown"]
