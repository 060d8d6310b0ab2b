"""What the adapter tests of "who may pass a step" share (issue 32): a suite whose words lie.

``suite.sh`` prints ``expected exit code 0, got 2`` and ``1 failed`` whatever
its real exit status, so a step passes or fails on the status the adapter
reports as a field, never on the words. The ``run_suite`` plan's one step
is bound to that command (``command_matches``), so it is judged only when
the adapter passes the call's arguments along. A model that asks the user
something (:data:`QUESTION`) waits for the user's next message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

SUITE_LIBRARY = r"""
plans:
  run_suite:
    name: Run the suite
    triggers: [run the test suite]
    trigger_threshold: 1
    graph:
      start: start
      nodes:
        start: {type: start}
        suite:
          type: task
          action: Run the suite with sh suite.sh
          verify: {type: exit_code_zero, command_matches: 'suite\.sh'}
        done: {type: exit}
      edges:
        - {from: start, to: suite}
        - {from: suite, to: done, condition: on_success}
"""
SUITE_TASK = "Please run the test suite of this project."
#: What suite.sh prints, whatever its exit status.
MISLEADING = "expected exit code 0, got 2\n1 failed"
#: A final reply that asks the user something.
QUESTION = "The suite has two parts. Should I run the unit tests or the integration tests?"
ANSWER = "The unit tests, please."


def make_suite(tmp_path: Path, exit_code: int) -> Path:
    """``tmp_path/suite`` whose ``suite.sh`` prints :data:`MISLEADING` and exits ``exit_code``."""
    root = tmp_path / "suite"
    root.mkdir()
    lines = "\\n".join(MISLEADING.splitlines())
    (root / "suite.sh").write_text(f"printf '{lines}\\n'\nexit {exit_code}\n")
    return root


def write_suite_library(tmp_path: Path) -> Path:
    """``tmp_path/suite_plans.yaml`` holding :data:`SUITE_LIBRARY`."""
    path = tmp_path / "suite_plans.yaml"
    path.write_text(SUITE_LIBRARY)
    return path


def outcomes(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """``(node, outcome)`` of every ``node_verified`` event."""
    return [(e["node"], e["outcome"]) for e in events if e["type"] == "node_verified"]


def types(events: list[dict[str, Any]]) -> list[str]:
    """The type of every event, in order."""
    return [e["type"] for e in events]
