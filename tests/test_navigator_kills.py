"""Issue 13, defect 3: starting a run is one commit, through SIGKILL.

A child process starts plans over and over on one session (each start aborts
the running run) and takes turns in between; it is killed at random points.
After every kill the session has exactly one running run and points at it:
never an aborted run with no successor, never two running runs.
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

from waygraph.navigator import Navigator
from waygraph.store import open_store

KILLS = 70
PLANS = {
    "plans": {
        "one": {
            "triggers": ["one"],
            "trigger_threshold": 1,
            "steps": [{"name": "a", "verify": {"type": "output_contains", "value": "zzz"}}],
        },
        "two": {
            "triggers": ["two"],
            "trigger_threshold": 1,
            "steps": [{"name": "b", "verify": {"type": "output_contains", "value": "zzz"}}],
        },
    }
}


def _start_forever(url: str, library: str) -> None:
    nav = Navigator(library, store=url, strict=True)
    i = 0
    while True:
        i += 1
        nav.start("s", "one" if i % 2 else "two")
        nav.turn("s", tool_output="nope", observation_id=f"{os.getpid()}-{i}")


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["sqlite", "file"])
def test_a_killed_start_leaves_exactly_one_running_run(tmp_path: Path, scheme: str):
    library = tmp_path / "plans.json"
    library.write_text(json.dumps(PLANS))
    url = f"sqlite:///{tmp_path / 'k.db'}" if scheme == "sqlite" else f"file://{tmp_path / 'fs'}"
    Navigator(str(library), store=url, strict=True).start("s", "one")
    ctx = multiprocessing.get_context("fork")
    rng = random.Random(13)
    for _ in range(KILLS):
        proc = ctx.Process(target=_start_forever, args=(url, str(library)))
        proc.start()
        time.sleep(rng.uniform(0.02, 0.12))
        os.kill(proc.pid, signal.SIGKILL)
        proc.join()
        with open_store(url) as store:
            running = store.list(session="s", status="running")
            assert len(running) == 1, [r.key for r in running]
            assert store.current("s") == running[0].key
            record = running[0].data
            assert record["status"] == "running" and len(record["events"]) <= 50
