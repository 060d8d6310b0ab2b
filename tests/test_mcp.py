"""`waygraph mcp`: the MCP server, end to end over stdio with the `mcp` client session."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

LIBRARY = """\
plans:
  release:
    name: Release
    domains: [ops]
    triggers: [cut a release]
    trigger_threshold: 1
    graph:
      start: start
      nodes:
        start: {type: start}
        build: {type: task, action: Run the build, verify: {type: exit_code_zero}, max_retries: 1}
        publish: {type: task, action: Publish the package}
        done: {type: exit}
        stuck: {type: escalate, reason: the build keeps failing}
      edges:
        - {from: start, to: build}
        - {from: build, to: publish, condition: on_success}
        - {from: build, to: stuck, condition: on_exhaust}
        - {from: publish, to: done, condition: on_success}
  tidy:
    name: Tidy up
    triggers: [tidy the repo]
    trigger_threshold: 1
    steps:
      - {name: Remove build output, action: Delete build/}
"""

Body = Callable[[ClientSession], Awaitable[Any]]


@pytest.fixture
def library(tmp_path: Path) -> Path:
    path = tmp_path / "plans.yaml"
    path.write_text(LIBRARY)
    return path


def with_server(args: list[str], body: Body, cwd: Path) -> Any:
    """Start `python -m waygraph mcp ARGS`, connect a client session, run ``body``."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "waygraph", "mcp", *args],
        env=dict(os.environ),
        cwd=cwd,
    )

    async def main() -> Any:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await body(session)

    return asyncio.run(asyncio.wait_for(main(), timeout=60))


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    text = result.content[0].text  # type: ignore[union-attr]
    if getattr(result, "is_error", getattr(result, "isError", False)):
        return {"error": text}
    return json.loads(text)


def test_an_mcp_client_lists_matches_and_walks_a_plan(library: Path, tmp_path: Path):
    store = f"sqlite:///{tmp_path / 'wg.db'}"

    async def body(session: ClientSession) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        tools = await session.list_tools()
        seen["tools"] = sorted(t.name for t in tools.tools)
        resources = await session.list_resources()
        seen["resources"] = sorted(str(r.uri) for r in resources.resources)
        mermaid = await session.read_resource("waygraph://plans/release/mermaid")
        seen["mermaid"] = mermaid.contents[0].text  # type: ignore[union-attr]
        plan_json = await session.read_resource("waygraph://plans/tidy/json")
        seen["json"] = json.loads(plan_json.contents[0].text)  # type: ignore[union-attr]

        seen["plans"] = await call(session, "list_plans")
        seen["match"] = await call(session, "match_plans", message="please cut a release")
        seen["miss"] = await call(
            session, "match_plans", message="please cut a release", domain="docs"
        )
        seen["started"] = await call(
            session, "user_message", session_id="s1", message="cut a release"
        )
        seen["failed"] = await call(
            session, "report_tool_result", session_id="s1", output="boom", exit_code=1, call_id="c1"
        )
        # The same call reported again counts once.
        await call(
            session, "report_tool_result", session_id="s1", output="boom", exit_code=1, call_id="c1"
        )
        seen["status"] = await call(session, "get_status", session_id="s1")
        seen["built"] = await call(
            session, "report_tool_result", session_id="s1", output="ok", exit_code=0, call_id="c2"
        )
        seen["by_id"] = await call(session, "start_plan", session_id="s2", plan_id="tidy")
        seen["reset"] = await call(session, "reset_session", session_id="s2")
        seen["unknown"] = await call(session, "start_plan", session_id="s3", plan_id="relase")
        return seen

    seen = with_server(["--library", str(library), "--store", store], body, tmp_path)

    assert seen["tools"] == [
        "get_status",
        "list_plans",
        "match_plans",
        "report_tool_result",
        "reset_session",
        "start_plan",
        "user_message",
    ]
    assert seen["resources"] == [
        "waygraph://plans/release/json",
        "waygraph://plans/release/mermaid",
        "waygraph://plans/tidy/json",
        "waygraph://plans/tidy/mermaid",
    ]
    assert seen["mermaid"].startswith("flowchart") and "build" in seen["mermaid"]
    assert (
        seen["json"]["id"] == "tidy" and seen["json"]["steps"][0]["name"] == "Remove build output"
    )

    plans = {p["id"]: p for p in seen["plans"]["plans"]}
    assert plans["release"]["domains"] == ["ops"] and plans["tidy"]["linear"] is True
    assert plans["release"]["mermaid"] == "waygraph://plans/release/mermaid"
    assert seen["match"]["activates"] == "release"
    assert (
        seen["miss"]["activates"] is None
        and "domain 'docs'" in seen["miss"]["matches"][0]["reason"]
    )

    assert seen["started"]["run"]["current_node"] == "build"
    assert seen["started"]["guidance"].startswith("[WORKFLOW: Release]")
    assert seen["started"]["events"][0]["type"] == "plan_activated"
    assert seen["failed"]["run"]["attempts"] == 2
    assert seen["status"]["run"]["attempts"] == 2 and seen["status"]["run"]["status"] == "running"
    assert "build << CURRENT (attempt 2/2)" in seen["status"]["guidance"]
    assert seen["built"]["run"]["current_node"] == "publish"

    assert seen["by_id"]["run"]["plan_id"] == "tidy"
    assert seen["reset"] == {"session_id": "s2", "aborted": "tidy"}
    assert "no plan 'relase'" in seen["unknown"]["error"]
    assert "did you mean" in seen["unknown"]["error"] or "release" in seen["unknown"]["error"]

    # Runs live in the store: a new server process sees where the session is.
    async def status(session: ClientSession) -> dict[str, Any]:
        return await call(session, "get_status", session_id="s1")

    again = with_server(["--library", str(library), "--store", store], status, tmp_path)
    assert again["run"]["current_node"] == "publish"


def test_a_broken_library_stops_the_server_with_one_line(tmp_path: Path):
    broken = tmp_path / "broken.json"
    broken.write_text('{"plans": {"p": {"graph": {"start": "s", "nodes": {"s": {"type": "x"}}}}}}')
    for args in (["--library", str(broken)], ["--store", "ftp://nowhere"]):
        done = subprocess.run(
            [sys.executable, "-m", "waygraph", "mcp", *args],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            cwd=tmp_path,
        )
        assert done.returncode == 2, done.stderr
        assert done.stdout == ""  # stdout is the protocol channel
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:"), done.stderr
    assert "ftp" in lines[0]


def test_without_the_mcp_package_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch):
    from waygraph.errors import ConfigError
    from waygraph.integrations.mcp_server import build_server

    for name in ("mcp.server.mcpserver", "mcp.server.fastmcp"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ConfigError, match=r"pip install 'mcp>=1\.30,<3'"):
        build_server(store="memory://")


def test_a_plan_added_after_start_up_is_readable(library: Path):
    from waygraph.integrations.mcp_server import build_server, mermaid_uri

    server = build_server(library, store="memory://")

    async def read(uri: str) -> str:
        return next(iter(await server.read_resource(uri))).content

    library.write_text(LIBRARY + "  late:\n    name: Late\n    steps: [{name: Late step}]\n")
    assert "Late step" in asyncio.run(read(mermaid_uri("late")))
    assert mermaid_uri("a b/c") == "waygraph://plans/a%20b%2Fc/mermaid"


def test_arguments_may_be_json_text_or_an_object(library: Path, tmp_path: Path):
    """MCP frameworks decode JSON-looking strings: both forms are accepted and shown back."""

    async def body(session: ClientSession) -> dict[str, Any]:
        await call(session, "user_message", session_id="s", message="cut a release")
        await call(
            session,
            "report_tool_result",
            session_id="s",
            output="boom",
            exit_code=1,
            arguments='{"command": "make build"}',
        )
        return await call(
            session,
            "report_tool_result",
            session_id="s",
            output="boom",
            exit_code=1,
            arguments={"command": "make build"},
        )

    seen = with_server(["--library", str(library), "--store", "memory://"], body, tmp_path)
    assert seen.get("error") is None, seen
    assert seen["run"]["status"] == "escalated"
