"""waygraph.hooks: the three-call integration for any agent loop."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from waygraph.errors import PlanFormatError, StoreError
from waygraph.hooks import Hooks
from waygraph.navigator import Navigator

LIBRARY = """\
plans:
  release:
    name: Release
    triggers: [cut a release]
    trigger_threshold: 1
    graph:
      start: start
      nodes:
        start: {type: start}
        build: {type: task, action: Run the build, verify: {type: exit_code_zero}, max_retries: 1}
        publish: {type: task, action: Publish the package}
        done: {type: exit}
        stuck: {type: escalate, reason: the build keeps failing, pace_level: contingent}
      edges:
        - {from: start, to: build}
        - {from: build, to: publish, condition: on_success}
        - {from: build, to: stuck, condition: on_exhaust}
        - {from: publish, to: done, condition: on_success}
"""


@pytest.fixture
def library(tmp_path: Path) -> Path:
    path = tmp_path / "plans.yaml"
    path.write_text(LIBRARY)
    return path


@pytest.fixture
def hooks(library: Path, tmp_path: Path) -> Hooks:
    return Hooks("chat-1", library=library, store=f"sqlite:///{tmp_path / 'wg.db'}")


def test_three_calls_guide_a_plan_to_completion(hooks: Hooks):
    assert hooks.context_for_model() is None
    started = hooks.on_user_message("please cut a release of the app")
    assert started.run["plan_id"] == "release" and hooks.active

    text = hooks.context_for_model()
    assert text.startswith("[WORKFLOW: Release]") and "build << CURRENT" in text
    # Reading the guidance takes no turn: asking twice changes nothing.
    assert hooks.context_for_model() == text
    assert hooks.state()["turn"] == started.run["turn"]

    moved = hooks.on_tool_result("built", tool_name="shell", exit_code=0, call_id="c1")
    assert moved.run["current_node"] == "publish"
    assert "publish << CURRENT" in hooks.context_for_model()
    done = hooks.on_tool_result("published 1.2.0", tool_name="shell", exit_code=0, call_id="c2")
    assert done.run["status"] == "completed" and not hooks.active

    # The end is announced once, then the model is left alone.
    assert hooks.context_for_model().startswith("Plan completed: 'Release'")
    assert hooks.context_for_model() is None


def test_a_result_reported_twice_counts_once(hooks: Hooks):
    hooks.on_user_message("cut a release")
    hooks.on_tool_result("error: build failed", exit_code=1, call_id="c1")
    hooks.on_tool_result("error: build failed", exit_code=1, call_id="c1")
    record = hooks.state()
    assert record["current_node"] == "build" and record["attempts"] == 2
    assert record["status"] == "running"


def test_escalation_is_announced_to_the_model(hooks: Hooks):
    hooks.on_user_message("cut a release")
    hooks.on_tool_result("error", exit_code=1, call_id="c1")
    hooks.on_tool_result("error", exit_code=1, call_id="c2")
    assert hooks.state()["status"] == "escalated"
    text = hooks.context_for_model()
    assert text.startswith("Plan escalated: the build keeps failing")
    assert hooks.context_for_model() is None


def test_domain_and_allow_list_reach_the_matcher(hooks: Hooks):
    assert hooks.on_user_message("cut a release", allowed_plans=["other"]).run is None
    assert hooks.on_user_message("cut a release", allowed_plans=["release"]).run is not None


def test_sessions_survive_a_new_process(library: Path, tmp_path: Path):
    store = f"sqlite:///{tmp_path / 'wg.db'}"
    first = Hooks("chat-9", library=library, store=store)
    first.on_user_message("cut a release")
    first.on_tool_result("ok", exit_code=0, call_id="c1")
    first.close()
    again = Hooks("chat-9", library=library, store=store)
    assert "publish << CURRENT" in again.context_for_model()
    again.reset()
    assert not again.active and again.context_for_model() is None


def test_a_shared_navigator_serves_many_conversations(library: Path):
    nav = Navigator(library, store="memory://")
    a, b = Hooks("a", navigator=nav), Hooks("b", navigator=nav)
    a.on_user_message("cut a release")
    assert a.active and not b.active


def test_a_broken_library_logs_one_line_and_the_loop_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    broken = tmp_path / "broken.json"
    broken.write_text('{"plans": {"p": {"graph": {"start": "s", "nodes": {"s": {"type": "x"}}}}}}')
    with caplog.at_level(logging.WARNING, logger="waygraph.hooks"):
        hooks = Hooks("s", library=broken, store="memory://")
    assert len(caplog.records) == 1
    assert "broken.json" in caplog.records[0].getMessage()
    assert caplog.records[0].exc_info is None  # one line, no traceback
    assert hooks.on_user_message("cut a release").text is None
    assert hooks.on_tool_result("ok").run is None
    assert hooks.context_for_model() is None and hooks.state() is None
    with pytest.raises(PlanFormatError):
        Hooks("s", library=broken, store="memory://", strict=True)


def test_a_failing_store_never_raises_into_the_loop(
    hooks: Hooks, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    hooks.on_user_message("cut a release")

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise StoreError("disk I/O error")

    monkeypatch.setattr(hooks.navigator.store, "commit_all", broken)
    monkeypatch.setattr(hooks.navigator.store, "get", broken)
    monkeypatch.setattr(hooks.navigator.store, "current", broken)
    with caplog.at_level(logging.WARNING):
        g = hooks.on_tool_result("ok", exit_code=0)
        assert g.text is None and g.error is not None and "disk I/O error" in g.error
        assert hooks.context_for_model() is None
    assert "disk I/O error" in caplog.text
