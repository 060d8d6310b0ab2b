"""`matching=` reaches every host (issue 40): MCP (`waygraph mcp --matching`, match_plans
and user_message), the Agent-Zero config and the async Navigator.

The stand-in model of tests/semantic_helpers.py stands for the real one, so
these run without loading it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("numpy", reason="matching by meaning needs numpy (waygraph[semantic])")

from tests.agent_zero_fake import (  # noqa: F401 (agent_zero_modules: an autouse fixture)
    KEY,
    FakeAgentZero,
    agent_zero_modules,
    make_tree,
)
from tests.semantic_helpers import WordModel
from waygraph.errors import ConfigError
from waygraph.integrations.agent_zero import install
from waygraph.integrations.agent_zero.config import AgentZeroConfig
from waygraph.match import semantic
from waygraph.match.semantic import Embedder
from waygraph.navigator import Navigator

#: Shares "image" and "build" with the docker plan's trigger "build image", in the
#: other order, so no trigger hits it: only meaning starts the plan.
MESSAGE = "the nightly container image won't build"


@pytest.fixture(autouse=True)
def word_model(monkeypatch: pytest.MonkeyPatch) -> WordModel:
    model = WordModel()
    monkeypatch.setattr(semantic, "check_extra", lambda purpose="": None)
    monkeypatch.setattr(semantic, "load_embedder", lambda: Embedder(model, "words"))
    return model


def tool_result(result: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(result.content[0].text)
    return data


def test_mcp_matches_and_starts_plans_by_meaning():
    pytest.importorskip("mcp", reason="the MCP server needs the mcp extra")
    from waygraph.integrations.mcp_server import build_server

    server = build_server(store="memory://", matching="both")
    matched = tool_result(asyncio.run(server.call_tool("match_plans", {"message": MESSAGE})))
    assert (matched["activates"], matched["matching"]) == ("docker_build_deploy", "both")
    assert matched["matches"][0]["matched_by"] == "semantic"
    started = tool_result(
        asyncio.run(server.call_tool("user_message", {"session_id": "s", "message": MESSAGE}))
    )
    assert started["run"]["plan_id"] == "docker_build_deploy"
    plain = build_server(store="memory://")
    unmatched = tool_result(asyncio.run(plain.call_tool("match_plans", {"message": MESSAGE})))
    assert (unmatched["activates"], unmatched["matching"]) == (None, "phrase")
    with pytest.raises(ConfigError, match="matching must be one of"):
        build_server(store="memory://", matching="fuzzy")


@pytest.mark.parametrize("layout", ["1.x"])
def test_the_agent_zero_config_sets_matching(tmp_path: Path, layout: str):
    tree = make_tree(tmp_path / "a0", layout)
    install(tree)
    config_file = tree / "usr" / "waygraph" / "config.json"
    data = json.loads(config_file.read_text(encoding="utf-8"))
    assert data["matching"] == "phrase"
    config_file.write_text(json.dumps({**data, "matching": "both"}), encoding="utf-8")
    a0 = FakeAgentZero(tree, layout)
    a0.user(MESSAGE)
    assert "docker_build_deploy" in str(a0.prompt().get(KEY))


def test_waygraph_install_agent_zero_writes_the_matching_choice(tmp_path: Path):
    from typer.testing import CliRunner

    from waygraph.cli import app

    tree = make_tree(tmp_path / "a0", "1.x")
    runner = CliRunner()
    done = runner.invoke(app, ["install", "agent-zero", str(tree), "--matching", "semantic"])
    assert done.exit_code == 0, done.output
    assert "pip install 'waygraph[semantic]'" in done.output
    config = AgentZeroConfig.read(tree / "usr" / "waygraph" / "config.json")
    assert config.matching == "semantic"
    a0 = FakeAgentZero(tree, "1.x")
    a0.user(MESSAGE)
    assert "docker_build_deploy" in str(a0.prompt().get(KEY))
    # Installed again without the option: back to the default, and said so.
    again = runner.invoke(app, ["install", "agent-zero", str(tree)])
    assert again.exit_code == 0 and "1 updated" in again.output
    assert AgentZeroConfig.read(tree / "usr" / "waygraph" / "config.json").matching == "phrase"


def test_a_bad_matching_for_install_is_refused_before_anything_is_written(tmp_path: Path):
    tree = make_tree(tmp_path / "a0", "1.x")
    with pytest.raises(ConfigError, match="matching must be one of"):
        install(tree, matching="fuzzy")
    assert not (tree / "usr" / "waygraph").exists()


def test_a_bad_matching_in_the_agent_zero_config_names_the_field():
    with pytest.raises(ConfigError, match=r"config\.json: field 'matching' must be one of"):
        AgentZeroConfig.from_data({"layout": "1.x", "matching": "fuzzy"}, file="config.json")
    assert AgentZeroConfig.from_data({"layout": "1.x", "matching": "semantic"}).matching == (
        "semantic"
    )


def test_the_async_navigator_takes_matching():
    from waygraph import AsyncNavigator

    nav = AsyncNavigator(store="memory://", matching="semantic")
    guidance = asyncio.run(nav.turn("s", user_message=MESSAGE))
    assert guidance.run is not None and guidance.run["plan_id"] == "docker_build_deploy"
    assert isinstance(nav.sync, Navigator) and nav.sync.matching == "semantic"


def test_the_framework_adapters_take_matching():
    pytest.importorskip("langgraph", reason="the LangGraph adapter needs the langgraph extra")
    pytest.importorskip("pydantic_ai", reason="the Pydantic AI adapter needs its extra")
    from waygraph.integrations.langgraph import LangGraphHooks
    from waygraph.integrations.pydantic_ai import waygraph_capability

    hooks = LangGraphHooks(store="memory://", matching="both")
    assert hooks.navigator is not None and hooks.navigator.matching == "both"
    capability: Any = waygraph_capability(store="memory://", matching="semantic")
    assert capability.navigator.matching == "semantic"


def test_the_http_match_route_matches_in_the_servers_mode():
    pytest.importorskip("fastapi", reason="the HTTP API needs the serve extra")
    from fastapi.testclient import TestClient

    from waygraph.server import create_app

    phrase_server = create_app(Navigator(store="memory://", strict=True))
    with TestClient(phrase_server, base_url="http://127.0.0.1") as client:
        plain = client.post("/api/match", json={"message": MESSAGE}).json()
        assert (plain["matching"], plain["activates"], plain["matched_by"]) == (
            "phrase",
            None,
            None,
        )
        by_trigger = client.post("/api/match", json={"message": "fix bug in login"}).json()
        assert (by_trigger["activates"], by_trigger["matched_by"]) == ("bugfix_workflow", "phrase")
        assert by_trigger["matches"][0]["similarity"] is None
    both_server = create_app(Navigator(store="memory://", strict=True, matching="both"))
    with TestClient(both_server, base_url="http://127.0.0.1") as client:
        asked = client.post("/api/match", json={"message": MESSAGE}).json()
        assert (asked["matching"], asked["activates"]) == ("both", "docker_build_deploy")
        assert asked["matched_by"] == "semantic" and asked["semantic_off"] is None
        assert asked["matches"][0]["similarity"] > 0


def test_waygraph_serve_takes_matching_and_refuses_a_bad_mode_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
):
    pytest.importorskip("uvicorn", reason="waygraph serve needs the serve extra")
    from typer.testing import CliRunner

    from waygraph.cli import app

    made: list[Navigator] = []

    def stop_before_serving(navigator: Navigator, **_: Any) -> Any:
        made.append(navigator)
        raise SystemExit(0)

    monkeypatch.setattr("waygraph.server.create_app", stop_before_serving)
    runner = CliRunner()
    done = runner.invoke(app, ["serve", "--store", "memory://", "--matching", "both"])
    assert done.exit_code == 0, done.output
    assert [nav.matching for nav in made] == ["both"]
    bad = runner.invoke(app, ["serve", "--store", "memory://", "--matching", "fuzzy"])
    assert bad.exit_code == 2 and "matching must be one of" in bad.output
