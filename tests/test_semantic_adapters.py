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
