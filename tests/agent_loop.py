"""What the agent-loop tests share: a fix-the-tests plan, its project and the scripted tool calls.

The OpenAI loop example and each framework adapter (OpenAI Agents SDK,
LangGraph, Pydantic AI) are tested on the same small task: ``answer.txt``
holds 41, ``check.sh`` passes once it holds 42, and the ``fix_tests`` plan
guides reproduce -> fix -> test round its retry loop.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

LIBRARY = """\
plans:
  fix_tests:
    name: Fix failing tests
    triggers: [tests fail]
    trigger_threshold: 1
    graph:
      start: start
      nodes:
        start: {type: start}
        reproduce: {type: task, action: Run the check, verify: {type: any_output}}
        fix: {type: task, action: Fix the answer, max_retries: 2}
        test: {type: task, action: Run the check again, verify: {type: exit_code_zero}}
        done: {type: exit}
        stuck: {type: escalate, reason: the fix does not hold}
      edges:
        - {from: start, to: reproduce}
        - {from: reproduce, to: fix, condition: on_success}
        - {from: fix, to: test, condition: on_success}
        - {from: fix, to: stuck, condition: on_exhaust}
        - {from: test, to: done, condition: on_success}
        - {from: test, to: fix, condition: on_fail}
"""
CHECK = (
    'if [ "$(cat answer.txt)" = 42 ]; then echo "ok: 42"; '
    'else echo "FAILED: expected 42, got $(cat answer.txt)"; exit 1; fi\n'
)
TASK = "The tests fail in this project: make the check pass."


def make_project(tmp_path: Path) -> Path:
    """``tmp_path/project`` with the failing check (answer.txt holds 41)."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "answer.txt").write_text("41\n")
    (root / "check.sh").write_text(CHECK)
    return root


def write_library(tmp_path: Path) -> Path:
    """``tmp_path/plans.yaml`` holding :data:`LIBRARY`."""
    path = tmp_path / "plans.yaml"
    path.write_text(LIBRARY)
    return path


def shell(command: str, call_id: str | None = None) -> dict[str, Any]:
    """A scripted model reply that calls the ``shell`` tool (with ``call_id`` when given)."""
    call: dict[str, Any] = {"name": "shell", "arguments": {"command": command}}
    if call_id:
        call["id"] = call_id
    return {"tool_calls": [call]}


def guidance_of(request: dict[str, Any]) -> str | None:
    """The waygraph guidance a model call carried: a system message after the conversation."""
    last = request["messages"][-1]
    content: str | None = last["content"] if last["role"] == "system" else None
    return content
