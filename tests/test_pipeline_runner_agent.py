"""Codergen stages through waygraph's own agent (AgentBackend) against a real HTTP model server:
the specification's integration smoke test (§11.13), with the scripted chat server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.pipeline_helpers import run
from waygraph.cli import app
from waygraph.formats.dot import parse_dot
from waygraph.model import Node
from waygraph.pipelines.backends import AgentBackend
from waygraph.pipelines.context import Context
from waygraph.pipelines.lint import validate
from waygraph.pipelines.run_folder import load_checkpoint
from waygraph.testing import ScriptedChatServer

pytest.importorskip("openai")

SMOKE = Path(__file__).parent / "fixtures" / "attractor" / "spec" / "11.13-smoke-test.dot"
HELLO = "print('hello world')\n"


def write(path: str, content: str) -> dict:
    return {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": content}}]}


def read(path: str) -> dict:
    return {"tool_calls": [{"name": "read_file", "arguments": {"path": path}}]}


SCRIPT = [
    "Plan: one file, hello.py, printing hello world.",
    write("hello.py", HELLO),
    "Wrote hello.py.",
    read("hello.py"),
    "The code is correct.",
]


def test_the_specification_smoke_test_runs_through_the_agent(tmp_path):
    plan = parse_dot(SMOKE.read_text())
    assert plan.goal == "Create a hello world Python script"
    assert len(plan.graph.nodes) == 5 and len(plan.graph.edges) == 6
    assert not [d for d in validate(plan) if d.severity == "error"]
    workspace, logs = tmp_path / "work", tmp_path / "logs"
    with ScriptedChatServer(SCRIPT) as server:
        backend = AgentBackend(server.base_url, "scripted-model", workspace, api_key="test")
        result = run(plan, logs, backend=backend)
    assert result.status == "success"
    assert "implement" in result.completed_nodes
    for stage in ("plan", "implement", "review"):
        for artifact in ("prompt.md", "response.md", "status.json"):
            assert (logs / stage / artifact).is_file(), f"{stage}/{artifact}"
    assert (logs / "plan" / "prompt.md").read_text() == (
        "Plan how to create a hello world script for: Create a hello world Python script"
    )
    assert (logs / "implement" / "response.md").read_text() == "Wrote hello.py."
    assert (workspace / "hello.py").read_text() == HELLO
    # The goal gate: implement's last outcome is a success.
    checkpoint = load_checkpoint(logs)
    assert checkpoint.node_outcomes["implement"].succeeded
    assert checkpoint.current_node == "done"
    assert {"plan", "implement", "review"} <= set(checkpoint.completed_nodes)
    # The review stage read the file the implement stage wrote, through its tool.
    last = server.requests[-1]["messages"]
    assert any(m["role"] == "tool" and HELLO in m["content"] for m in last)
    assert {r["model"] for r in server.requests} == {"scripted-model"}


def test_a_nodes_llm_model_from_the_stylesheet_overrides_the_default(tmp_path):
    dot = SMOKE.read_text().replace(
        'graph [goal="Create a hello world Python script"]',
        'graph [goal="Create a hello world Python script", '
        'model_stylesheet="#review { llm_model: reviewer-model; }"]',
    )
    with ScriptedChatServer(SCRIPT) as server:
        backend = AgentBackend(server.base_url, "default-model", tmp_path / "w", api_key="t")
        assert run(dot, tmp_path / "logs", backend=backend).status == "success"
    models = [r["model"] for r in server.requests]
    assert models == ["default-model"] * 3 + ["reviewer-model"] * 2


def test_agent_tools_stay_inside_the_workspace(tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("s3cret")
    script = [write("../escaped.txt", "x"), read("../secret.txt"), "gave up"]
    with ScriptedChatServer(script) as server:
        backend = AgentBackend(server.base_url, "m", tmp_path / "work", api_key="t")
        answer = backend.run(Node(id="n"), "try to leave", Context())
    assert answer == "gave up"
    assert not (tmp_path / "escaped.txt").exists()
    tool_results = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert all("leaves the workspace" in text for text in tool_results)
    assert not any("s3cret" in text for text in tool_results)


def test_an_agent_that_never_answers_fails_its_stage(tmp_path):
    with ScriptedChatServer([read("a.txt")], loop=True) as server:
        backend = AgentBackend(server.base_url, "m", tmp_path, api_key="t", max_steps=3)
        outcome = backend.run(Node(id="n"), "loop", Context())
    assert not isinstance(outcome, str) and outcome.status == "fail"
    assert len(server.requests) == 3


def test_a_server_error_is_transient_and_retried_by_the_runner(tmp_path):
    dot = """digraph r { start [shape=Mdiamond]; done [shape=Msquare]
        work [prompt="Do it", max_retries=2]; start -> work -> done }"""
    failing = {"status": 500, "error": "overloaded"}
    with ScriptedChatServer([failing, "done it"]) as server:
        backend = AgentBackend(server.base_url, "m", tmp_path / "w", api_key="t")
        result = run(dot, tmp_path / "logs", backend=backend)
    assert result.status == "success"
    assert (tmp_path / "logs" / "work" / "response.md").read_text() == "done it"
    assert len(server.requests) == 2


def test_cli_runs_the_smoke_test_with_llm_and_model(tmp_path):
    with ScriptedChatServer(SCRIPT) as server:
        result = CliRunner().invoke(
            app,
            [
                "run", str(SMOKE), "--llm", server.base_url, "--model", "m", "--api-key", "t",
                "--workspace", str(tmp_path / "w"), "--logs", str(tmp_path / "logs"), "--json",
            ],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["path"] == ["start", "plan", "implement", "review", "done"]
    assert (tmp_path / "w" / "hello.py").read_text() == HELLO


def test_a_nodes_timeout_bounds_its_whole_stage(tmp_path):
    ticks = iter([0.0, 1.0, 50.0])  # start, before the first call, before the second
    with ScriptedChatServer([read("a.txt"), "never asked"]) as server:
        backend = AgentBackend(
            server.base_url, "m", tmp_path, api_key="t", clock=lambda: next(ticks)
        )
        outcome = backend.run(Node(id="n", timeout=10), "be quick", Context())
    assert not isinstance(outcome, str)
    assert outcome.failure_reason == "the stage ran past its timeout of 10s"
    assert len(server.requests) == 1
