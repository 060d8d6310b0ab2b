"""OpenTelemetry spans: what a turn and a generated plan record, and what tracing off costs.

Spans go to an SDK ``TracerProvider`` handed to ``tracing.instrument`` (never
OpenTelemetry's global provider, so nothing leaks into other tests) and are
read back from an ``InMemorySpanExporter``.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from waygraph import tracing
from waygraph.library import load_library
from waygraph.navigator import Navigator

pytest.importorskip("opentelemetry.trace", reason="the otel extra is not installed")
sdk_trace = pytest.importorskip("opentelemetry.sdk.trace", reason="no OpenTelemetry SDK")
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)
from opentelemetry.trace import StatusCode, format_trace_id  # noqa: E402

SRC = Path(__file__).resolve().parent.parent / "src"
BUG = "I need to fix a bug in the login module"


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[InMemorySpanExporter, Any]]:
    monkeypatch.delenv(tracing.ENV_SWITCH, raising=False)
    exported = InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    assert tracing.instrument(provider)
    yield exported, provider
    tracing.uninstrument()
    provider.shutdown()


def spans(exported: InMemorySpanExporter, name: str) -> list[Any]:
    return [s for s in exported.get_finished_spans() if s.name == name]


def navigator() -> Navigator:
    return Navigator(load_library(), store="memory://")


# ---------------------------------------------------------------- turns


def test_each_turn_is_a_span_with_session_plan_node_verdict_and_transition(exporter):
    exported, _ = exporter
    nav = navigator()
    nav.turn("chat-1", user_message=BUG, domain="bugfix")
    nav.turn(
        "chat-1",
        tool_output="AssertionError: login failed",
        exit_code=1,
        tool_name="bash",
        observation_id="call_7",
    )
    first, second = spans(exported, "waygraph.turn")
    assert first.attributes["waygraph.session.id"] == "chat-1"
    assert first.attributes["gen_ai.conversation.id"] == "chat-1"
    assert first.attributes["waygraph.plan.id"] == "bugfix_workflow"
    assert first.attributes["waygraph.transition"] == "start -> reproduce"
    assert "gen_ai.tool.name" not in first.attributes  # a user message, no tool result
    attrs = second.attributes
    assert attrs["waygraph.node.id"] == "isolate"
    assert attrs["waygraph.verdict"] == "success"
    assert attrs["waygraph.transition"] == "reproduce -> isolate"
    assert attrs["waygraph.run.status"] == "running"
    assert attrs["waygraph.turn.number"] == 2
    assert attrs["waygraph.run.id"] == nav.state("chat-1")["run_id"]
    assert attrs["gen_ai.tool.name"] == "bash"
    assert attrs["gen_ai.tool.call.id"] == "call_7"
    # Every engine event of the turn is a span event, its data flattened.
    assert [e.name for e in second.events] == ["node_verified", "edge_followed", "node_entered"]
    verified = second.events[0].attributes
    assert verified["node"] == "reproduce" and verified["passed"] is True
    assert verified["output"] == "AssertionError: login failed"
    assert second.status.status_code == StatusCode.UNSET


def test_the_turns_trace_id_is_stored_in_its_events(exporter):
    exported, _ = exporter
    nav = navigator()
    nav.turn("chat-1", user_message=BUG, domain="bugfix")
    nav.turn("chat-1", tool_output="AssertionError: login failed", exit_code=1)
    first, second = spans(exported, "waygraph.turn")
    stored = nav.events("chat-1")
    ids = {e["turn"]: e["trace_id"] for e in stored}
    assert ids == {
        1: format_trace_id(first.context.trace_id),
        2: format_trace_id(second.context.trace_id),
    }


def test_a_turn_inside_the_applications_span_is_its_child(exporter):
    exported, provider = exporter
    nav = navigator()
    with provider.get_tracer("agent").start_as_current_span("agent step") as outer:
        nav.turn("chat-1", user_message=BUG, domain="bugfix")
    (turn,) = spans(exported, "waygraph.turn")
    assert turn.parent is not None and turn.parent.span_id == outer.get_span_context().span_id
    trace_id = format_trace_id(outer.get_span_context().trace_id)
    assert {e["trace_id"] for e in nav.events("chat-1")} == {trace_id}


def test_an_async_turn_inside_the_applications_span_is_its_child(exporter):
    from waygraph.async_navigator import AsyncNavigator

    exported, provider = exporter

    async def agent() -> int:
        nav = AsyncNavigator(load_library(), store="memory://")
        with provider.get_tracer("agent").start_as_current_span("agent step") as outer:
            await nav.turn("chat-1", user_message=BUG, domain="bugfix")
        return int(outer.get_span_context().span_id)

    outer_id = asyncio.run(agent())
    (turn,) = spans(exported, "waygraph.turn")
    assert turn.parent is not None and turn.parent.span_id == outer_id


def test_a_turn_that_fails_marks_its_span_as_an_error(exporter):
    exported, _ = exporter
    nav = navigator()
    nav.turn("chat-1", user_message=BUG, domain="bugfix")

    def broken(writes):
        raise RuntimeError("disk on fire")

    nav.store.commit_all = broken  # type: ignore[method-assign]
    nav._cache.clear()
    guidance = nav.turn("chat-1", tool_output="AssertionError: login failed", exit_code=1)
    assert guidance.error is not None and "disk on fire" in guidance.error
    failed = spans(exported, "waygraph.turn")[-1]
    assert failed.status.status_code == StatusCode.ERROR
    assert "disk on fire" in (failed.status.description or "")
    assert [e.name for e in failed.events] == ["exception"]


def test_waygraph_otel_0_switches_spans_off(exporter, monkeypatch):
    exported, provider = exporter
    monkeypatch.setenv(tracing.ENV_SWITCH, "0")
    assert tracing.instrument(provider) is False
    assert not tracing.enabled()
    nav = navigator()
    nav.turn("chat-1", user_message=BUG, domain="bugfix")
    assert exported.get_finished_spans() == ()
    assert all("trace_id" not in e for e in nav.events("chat-1"))


def test_following_the_global_provider_makes_no_span_until_one_is_set(exporter):
    from opentelemetry import trace

    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        pytest.skip("another test set OpenTelemetry's global tracer provider")
    exported, _ = exporter
    assert tracing.instrument() is True  # follow the global provider, which nobody set
    assert not tracing.enabled()
    navigator().turn("chat-1", user_message=BUG, domain="bugfix")
    assert exported.get_finished_spans() == ()


def test_a_global_provider_set_after_the_first_turns_gets_the_next_turns_spans():
    # In a process of its own: OpenTelemetry's global provider is set once, for good.
    done = run_python(
        """
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from waygraph import Navigator, tracing

        nav = Navigator(store="memory://")
        assert tracing.instrument()  # follows the global provider, which nobody set yet
        nav.turn("a", user_message="I need to fix a bug in the login module")
        exported = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exported))
        trace.set_tracer_provider(provider)
        nav.turn("a", tool_output="traceback in login.py")
        print([span.name for span in exported.get_finished_spans()])
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['waygraph.turn']"


def test_gen_ai_names_are_the_semantic_conventions_own():
    gen_ai = pytest.importorskip(
        "opentelemetry.semconv._incubating.attributes.gen_ai_attributes",
        reason="opentelemetry-semantic-conventions is not installed",
    )
    assert tracing.GEN_AI_CONVERSATION_ID == gen_ai.GEN_AI_CONVERSATION_ID
    assert tracing.GEN_AI_TOOL_NAME == gen_ai.GEN_AI_TOOL_NAME
    assert tracing.GEN_AI_TOOL_CALL_ID == gen_ai.GEN_AI_TOOL_CALL_ID


# ---------------------------------------------------------------- generated plans


def test_a_generated_plan_is_a_span_with_a_child_span_per_step(exporter):
    from waygraph.planning import Plan, PlanningAgent, PlanningPattern

    class NoModel:
        async def complete(self, messages, *, json_schema=None, schema_name="reply"):
            raise AssertionError("no model call expected")  # pragma: no cover

    def ok(x: str = "") -> str:
        return "ok" + x

    def bad(x: str = "") -> str:
        raise RuntimeError("bad luck")

    plan = Plan(
        goal="test goal",
        steps=[
            {"id": "a", "action": "ok"},
            {"id": "f", "action": "bad", "dependencies": ["a"]},
        ],
    )
    agent = PlanningAgent(
        NoModel(),
        tools=[ok, bad],
        pattern=PlanningPattern(allow_revision=False, retry_failed_steps=0),
    )
    result = asyncio.run(agent.execute_plan(plan))
    assert not result.success
    exported, _ = exporter
    (run,) = spans(exported, "waygraph.plan")
    steps = {s.attributes["waygraph.step.id"]: s for s in spans(exported, "waygraph.step")}
    assert set(steps) == {"a", "f"}
    assert all(s.parent.span_id == run.context.span_id for s in steps.values())
    assert steps["a"].status.status_code == StatusCode.UNSET
    assert steps["f"].status.status_code == StatusCode.ERROR
    assert "bad luck" in (steps["f"].status.description or "")
    assert steps["f"].attributes["waygraph.step.action"] == "bad"
    assert run.attributes["waygraph.plan.goal"] == "test goal"
    assert run.attributes["waygraph.run.status"] == "failed"
    assert run.status.status_code == StatusCode.ERROR


# ---------------------------------------------------------------- waygraph serve


def test_serve_shows_the_sessions_latest_trace_id_and_links_it(exporter, monkeypatch):
    from fastapi.testclient import TestClient

    from waygraph.server import create_app

    exported, _ = exporter
    nav = Navigator(load_library(), store="memory://")
    with TestClient(create_app(nav), base_url="http://127.0.0.1") as client:
        turn = client.post("/api/sessions/chat-1/turn", json={"user_message": BUG})
        assert turn.status_code == 200, turn.text
        (span,) = spans(exported, "waygraph.turn")
        trace_id = format_trace_id(span.context.trace_id)
        detail = client.get("/api/sessions/chat-1").json()
        assert detail["trace_id"] == trace_id and detail["trace_url"] is None
        assert f"trace {trace_id}" in client.get("/sessions/chat-1").text
        monkeypatch.setenv(tracing.ENV_TRACE_URL, "http://jaeger:16686/trace/{trace_id}")
        page = client.get("/sessions/chat-1").text
        assert f'href="http://jaeger:16686/trace/{trace_id}">trace {trace_id}</a>' in page
        assert client.get("/api/sessions/chat-1").json()["trace_url"] == (
            f"http://jaeger:16686/trace/{trace_id}"
        )


def test_a_session_with_no_traced_turn_has_no_trace_id():
    from fastapi.testclient import TestClient

    from waygraph.server import create_app

    tracing.uninstrument()
    with TestClient(create_app(store="memory://"), base_url="http://127.0.0.1") as client:
        client.post("/api/sessions/chat-1/turn", json={"user_message": BUG})
        assert client.get("/api/sessions/chat-1").json()["trace_id"] is None
        assert "id=f-trace" not in client.get("/sessions/chat-1").text


# ---------------------------------------------------------------- no cost when off

TURNS = f"""
import sys
import waygraph
assert not [m for m in sys.modules if m.startswith("opentelemetry")], "imported on import"
nav = waygraph.Navigator(waygraph.load_library(), store="memory://")
g = nav.turn("s", user_message={BUG!r}, domain="bugfix")
g = nav.turn("s", tool_output="AssertionError: login failed", exit_code=1)
assert g.run["current_node"] == "isolate", g.run
loaded = sorted(m for m in sys.modules if m.startswith("opentelemetry"))
assert not loaded, loaded
assert not waygraph.tracing.enabled()
print("ok")
"""

# Makes opentelemetry look uninstalled, as without the otel extra.
BLOCK = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None
sys.meta_path.insert(0, Block())
"""


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != tracing.ENV_SWITCH}
    environment.update(PYTHONPATH=str(SRC), **env)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=60,
    )


def test_switched_off_importing_and_turning_never_imports_opentelemetry():
    done = run_python(TURNS, WAYGRAPH_OTEL="0")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_without_the_extra_turns_work_and_import_nothing_of_it():
    done = run_python(BLOCK + TURNS)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_instrument_without_the_extra_names_the_extra():
    code = BLOCK + textwrap.dedent(
        """
        from waygraph import tracing
        from waygraph.errors import MissingExtra
        try:
            tracing.instrument()
        except MissingExtra as exc:
            print(exc)
        """
    )
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    assert "pip install 'waygraph[otel]'" in done.stdout


def test_generated_and_event_runs_keep_the_trace_they_ran_in(exporter):
    import asyncio

    from waygraph.events import InProcessBus, PlanContext, Planner
    from waygraph.planning import Plan, PlanningAgent
    from waygraph.store import open_store
    from waygraph.tracing import latest_trace_id

    exported, provider = exporter
    store = open_store("memory://")

    async def first() -> int:
        return 1

    plan = Plan(goal="one step", steps=[{"id": "a", "action": "first"}])
    result = asyncio.run(PlanningAgent(None, tools=[first], store=store).execute_plan(plan))
    (plan_span,) = spans(exported, "waygraph.plan")
    stored = [e.data for e in store.events(str(result.run_id))]
    assert latest_trace_id(stored) == format_trace_id(plan_span.context.trace_id)
    assert [e["type"] for e in stored if "trace_id" in e] == ["node_finished"]

    machine = {
        "start": {"state_name": "start", "default_next": "done"},
        "done": {"state_name": "done", "is_terminal": True},
    }

    async def event_plan() -> str:
        planner = Planner("traced", bus=InProcessBus(), store=store)
        goal = planner.context.bus.envelope(
            "job.goal", {}, correlation_id="c1", session_id="team-1"
        )
        with provider.get_tracer("app").start_as_current_span("handler") as span:
            context = await PlanContext.create_from_goal(
                goal, state_machine=machine, context=planner.context
            )
            await context.execute_next()
        assert latest_trace_id(e.data for e in store.events(context.plan_id)) == (
            format_trace_id(span.get_span_context().trace_id)
        )
        return context.plan_id

    asyncio.run(event_plan())

    # The session pages say which trace each ran in.
    from fastapi.testclient import TestClient

    from waygraph.server import create_app

    nav = Navigator(load_library(), store=store)
    with TestClient(create_app(nav), base_url="http://127.0.0.1") as client:
        dag = client.get(f"/api/sessions/{result.run_id}").json()
        assert dag["trace_id"] == format_trace_id(plan_span.context.trace_id)
        assert f"trace {dag['trace_id']}" in client.get(f"/sessions/{result.run_id}").text
        team = client.get("/api/sessions/team-1").json()
        assert team["kind"] == "event" and team["trace_id"]
        assert f"trace {team['trace_id']}" in client.get("/sessions/team-1").text
