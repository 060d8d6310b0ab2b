"""Issue 12 in Agent-Zero: the model's answer is not evidence, exit codes are real.

The installed hooks of both layouts, loaded the way Agent-Zero loads them and
called in its message-loop order (tests/agent_zero_fake.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agent_zero_fake import (  # noqa: F401 (agent_zero_modules: an autouse fixture)
    KEY,
    FakeAgentZero,
    Response,
    agent_zero_modules,
    make_tree,
    session_state,
)
from waygraph.integrations.agent_zero import install, uninstall
from waygraph.integrations.agent_zero.config import CONFIG_PATH, agent_zero_workdir
from waygraph.integrations.agent_zero.runtime import EXIT_MARKER

BUILD_LIBRARY = """\
plans:
  build:
    name: Build
    triggers: [build the project]
    trigger_threshold: 1
    steps:
      - {name: Compile, action: Run make, verify: {type: exit_code_zero}, on_fail: block}
      - name: Package
        action: Write dist/app.tar
        verify: {type: file_exists, value: dist/app.tar}
"""


@pytest.fixture(params=["0.9", "1.x"])
def layout(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def tree(tmp_path: Path, layout: str) -> Path:
    root = make_tree(tmp_path / "a0", layout)
    (root / "plans" / "build.yaml").write_text(BUILD_LIBRARY)
    return root


def terminal(a0: FakeAgentZero, command: str, output: str, status: int) -> Response:
    """A code_execution_tool terminal call, as Agent-Zero runs it, with the hooks around it."""
    tool_args: dict[str, Any] = {"runtime": "terminal", "code": command}
    a0.call("tool_execute_before", tool_args=tool_args, tool_name="code_execution_tool")
    ran = tool_args["code"]
    printed = output
    if EXIT_MARKER in ran:
        # The terminal echoes the typed lines, then the command prints its status.
        printed = f"{ran}\n{output}\n{EXIT_MARKER}={status}\n"
    response = Response(printed)
    a0.history.append({"ai": True, "content": '{"tool_name": "code_execution_tool"}'})
    a0.call("tool_execute_after", response=response, tool_name="code_execution_tool")
    return response


def test_the_response_tool_never_moves_the_plan(tree: Path, layout: str):
    install(tree, library=tree / "plans")
    a0 = FakeAgentZero(tree, layout)
    a0.user("Please fix the login bug")
    assert "reproduce << CURRENT" in a0.prompt()[KEY]
    a0.tool("I changed auth.py; it should work now.", name="response")
    record = session_state(tree)
    assert record is not None and record["current_node"] == "reproduce"
    assert record["status"] == "running"
    seen = a0.prompt()[KEY]
    assert "reproduce << CURRENT" in seen and "Still unverified: reproduce" in seen
    types = [e["type"] for e in record["events"]]
    assert "claim_recorded" in types and "claim_unverified" in types


def test_terminal_commands_report_their_real_exit_code(tree: Path, layout: str):
    install(tree, library=tree / "plans")
    a0 = FakeAgentZero(tree, layout)
    a0.user("Please build the project")
    assert "Compile << CURRENT" in a0.prompt()[KEY]
    # Exits 1 with clean-looking output: guessed from words it would pass.
    response = terminal(a0, "make", "all targets up to date", status=1)
    assert EXIT_MARKER not in response.message  # the model never sees the marker
    # The terminal's echo of the command stays; the marker lines are gone.
    assert response.message.strip() == "make\nall targets up to date"
    record = session_state(tree)
    assert record is not None and record["current_node"] == "step_1"
    verified = [e for e in record["events"] if e["type"] == "node_verified"]
    assert verified[-1]["outcome"] == "fail"
    a0.prompt()
    terminal(a0, "make", "built", status=0)
    record = session_state(tree)
    assert record is not None and record["current_node"] == "step_2"
    # What was tried, as the model typed it (without the marker).
    tried = record["visited"]["step_1"]["tried"]
    assert [(t["call"], t["verdict"]) for t in tried] == [("make", "fail"), ("make", "success")]


def test_without_the_marker_an_exit_code_check_is_unknown(tree: Path, layout: str):
    install(tree, library=tree / "plans")
    config_file = tree / CONFIG_PATH
    config = json.loads(config_file.read_text())
    config["exit_codes"] = False
    config_file.write_text(json.dumps(config))
    a0 = FakeAgentZero(tree, layout)
    a0.user("Please build the project")
    a0.prompt()
    terminal(a0, "make", "all targets up to date", status=1)
    record = session_state(tree)
    assert record is not None and record["current_node"] == "step_1"
    assert record["events"][-1]["outcome"] == "unknown"
    assert 'echo "exit=$?"' in a0.prompt()[KEY]


def test_file_checks_look_in_agent_zeros_work_dir(tree: Path, layout: str):
    workdir = tree / "usr" / "workdir"
    (workdir / "dist").mkdir(parents=True)
    (tree / "usr" / "settings.json").write_text(json.dumps({"workdir_path": "/a0/usr/workdir"}))
    assert agent_zero_workdir(tree) == workdir
    install(tree, library=tree / "plans")
    a0 = FakeAgentZero(tree, layout)
    a0.user("Please build the project")
    a0.prompt()
    terminal(a0, "make", "built", status=0)
    a0.prompt()
    a0.tool("wrote dist/app.tar")  # it did not
    assert session_state(tree)["status"] == "running"  # type: ignore[index]
    (workdir / "dist" / "app.tar").write_text("tar")
    a0.prompt()
    a0.tool("wrote dist/app.tar")
    assert session_state(tree)["status"] == "completed"  # type: ignore[index]


def test_uninstall_still_restores_the_tree_byte_for_byte(tree: Path):
    from tests.agent_zero_fake import snapshot

    before = snapshot(tree)
    install(tree, library=tree / "plans")
    uninstall(tree)
    assert snapshot(tree) == before
