"""Shared helpers of the session plan tests (tests/test_sessions_*.py): a clock, a
session key, the plan file on disk and a started plan.

The ``planner`` fixture built on them lives in tests/conftest.py.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from waygraph.sessions import SessionPlanner

S = "telegram:42"


class Clock:
    """Advances one second per reading, so timestamps order events."""

    def __init__(self) -> None:
        self.now = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def plan_file(workspace: Path, folder: str) -> Path:
    return workspace / ".sessions" / folder / "plan.json"


def on_disk(workspace: Path, folder: str = "telegram_42") -> dict:
    return json.loads(plan_file(workspace, folder).read_text(encoding="utf-8"))


def start(planner: SessionPlanner, *steps: str, message: str = "Migrate the blog") -> None:
    """A user message, then a tool-calling reply declaring ``steps``."""
    planner.on_user_message(S, message)
    planner.after_model_reply(S, "\n".join(f"[Step] {s}" for s in steps) + "\nWorking.", 1)


def statuses(planner: SessionPlanner, session: str = S) -> list[str]:
    return [s["status"] for s in planner.plan(session)["steps"]]
