"""Issue 13, defect 3 (session plans): a save killed at any point loses nothing.

A child process writes session plans as fast as it can (new plans that
archive finished ones, steps, completions) and is killed with SIGKILL at
random moments. After every kill the session's plan.json loads, and the next
load removes the temporary files the killed writer left behind.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import time
from pathlib import Path

import pytest

from waygraph.sessions import SessionPlanner
from waygraph.sessions._files import STALE_TEMP_SECONDS, locate

KILLS = 60
SESSION = "telegram_42"


def _write_forever(workspace: str) -> None:
    planner = SessionPlanner(workspace)
    i = 0
    while True:
        i += 1
        planner.on_user_message(SESSION, f"Task number {i}: migrate the blog")
        planner.after_model_reply(SESSION, "[Step] Export posts\n[Step] Convert\nWorking.", 1)
        planner.after_model_reply(SESSION, "[Step Completed] Export posts", 2)
        planner.after_model_reply(SESSION, "[Step Completed] Convert\nAll done.", 3)


@pytest.mark.slow
def test_a_killed_save_always_leaves_a_loadable_plan(tmp_path: Path):
    SessionPlanner(tmp_path).on_user_message(SESSION, "Migrate the blog")
    SessionPlanner(tmp_path).after_model_reply(SESSION, "[Step] Export posts\nWorking.", 1)
    ctx = multiprocessing.get_context("fork")
    rng = random.Random(3)
    for _ in range(KILLS):
        proc = ctx.Process(target=_write_forever, args=(str(tmp_path),))
        proc.start()
        time.sleep(rng.uniform(0.01, 0.08))
        os.kill(proc.pid, signal.SIGKILL)
        proc.join()
        slot = locate(tmp_path, SESSION)
        assert slot.plan is not None and not slot.corrupt, slot.problem
        assert json.loads(slot.path.read_text())["session_id"] == SESSION
    # Temporary files a killed writer left are cleaned on the next load.
    folder = locate(tmp_path, SESSION).folder
    old = time.time() - STALE_TEMP_SECONDS - 5
    for leftover in folder.glob(".plan-*.tmp"):
        os.utime(leftover, (old, old))
    (folder / ".plan-leftover.tmp").write_text("half")
    os.utime(folder / ".plan-leftover.tmp", (old, old))
    assert SessionPlanner(tmp_path).plan(SESSION) is not None
    assert list(folder.glob(".plan-*.tmp")) == []
