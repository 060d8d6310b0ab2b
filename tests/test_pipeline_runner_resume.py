"""Checkpoints after every node; resuming a run never redoes a finished node (§5.3, §11.7)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from tests.pipeline_helpers import Scripted, ok, run
from waygraph.errors import ConfigError, NotWaitingError, RunNotFoundError
from waygraph.pipelines.checkpoint import Checkpoint
from waygraph.pipelines.record import PipelineRecords
from waygraph.pipelines.run_folder import load_checkpoint
from waygraph.pipelines.runner import arun_pipeline

CHAIN = """digraph chain { goal="Count"
    start [shape=Mdiamond]; done [shape=Msquare]
    a; b; c; d
    start -> a -> b -> c -> d -> done }"""


class Crash(BaseException):
    """Stands for the process dying: nothing in the runner catches it."""


def test_a_checkpoint_is_saved_after_every_node(tmp_path):
    saved: list[Checkpoint] = []
    result = run(CHAIN, tmp_path, save_checkpoint=saved.append, backend=Scripted())
    assert [cp.current_node for cp in saved] == ["start", "a", "b", "c", "d", "done"]
    assert [cp.next_node for cp in saved] == ["a", "b", "c", "d", "done", None]
    assert saved[2].completed_nodes == ("start", "a", "b")
    assert saved[2].context["last_stage"] == "b"
    assert [cp.status for cp in saved] == ["running"] * 5 + ["completed"]
    assert saved[-1].outcome == result.outcome
    assert not (tmp_path / "checkpoint.json").exists()  # the injected saver replaced the file


def _crash_after(node: str, tmp_path) -> tuple[Scripted, str]:
    """Run CHAIN until the checkpoint after ``node`` is written, then 'die'."""
    first = Scripted({"a": [ok(counted="1")]})

    def save_then_die(cp: Checkpoint) -> None:
        (tmp_path / "checkpoint.json").write_text(cp.model_dump_json())
        if cp.current_node == node:
            raise Crash

    with pytest.raises(Crash):
        run(CHAIN, tmp_path, backend=first, save_checkpoint=save_then_die, run_id="r1")
    return first, "r1"


def test_resume_continues_after_the_last_finished_node_with_the_same_result(tmp_path):
    whole = run(CHAIN, tmp_path / "whole", backend=Scripted({"a": [ok(counted="1")]}))
    first, run_id = _crash_after("b", tmp_path / "cut")
    assert first.calls == ["a", "b"]
    second = Scripted()
    resumed = run(CHAIN, tmp_path / "cut", backend=second, resume=run_id)
    assert second.calls == ["c", "d"]  # a and b are never run again
    assert resumed.run_id == run_id
    assert resumed.path == whole.path == ("start", "a", "b", "c", "d", "done")
    assert resumed.status == whole.status == "success"
    assert resumed.context["counted"] == "1"  # restored from the checkpoint
    assert {k: v for k, v in resumed.context.items() if k != "internal.pipeline_dir"} == {
        k: v for k, v in whole.context.items() if k != "internal.pipeline_dir"
    }


def test_resume_from_a_checkpoint_object(tmp_path):
    _crash_after("c", tmp_path)
    checkpoint = load_checkpoint(tmp_path)
    second = Scripted()
    result = run(CHAIN, tmp_path, backend=second, resume=checkpoint)
    assert second.calls == ["d"]
    assert result.path[-2:] == ("d", "done")


def test_resuming_an_ended_run_runs_nothing(tmp_path):
    first = run(CHAIN, tmp_path, run_id="r2")
    again = Scripted()
    result = run(CHAIN, tmp_path, backend=again, resume="r2")
    assert again.calls == []
    assert result.path == first.path and result.status == "success"


def test_resume_refuses_another_pipelines_checkpoint_or_a_missing_one(tmp_path):
    _crash_after("a", tmp_path)
    other = CHAIN.replace("digraph chain", "digraph other")
    with pytest.raises(ConfigError, match="ran pipeline 'chain'"):
        run(other, tmp_path, resume="r1")
    with pytest.raises(ConfigError, match="no checkpoint"):
        run(CHAIN, tmp_path / "empty", resume="r1")
    with pytest.raises(ConfigError, match="not 'r9'"):
        run(CHAIN, tmp_path, resume="r9")


KILLED = """
import os, signal, sys
from waygraph.pipelines.runner import run_pipeline

dot, logs, store, journal = sys.argv[1:5]

class DiesAtC:
    def run(self, node, prompt, context):
        with open(journal, "a") as f:
            f.write(node.id + "\\n")
        if node.id == "c":
            os.kill(os.getpid(), signal.SIGKILL)
        return "worked on " + node.id

run_pipeline(dot, backend=DiesAtC(), logs=logs, store=store, run_id="killed")
"""


def test_a_run_killed_with_sigkill_resumes_from_the_store(tmp_path):
    dot = tmp_path / "chain.dot"
    dot.write_text(CHAIN)
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    journal = tmp_path / "journal.txt"
    script = textwrap.dedent(KILLED)
    died = subprocess.run(
        [sys.executable, "-c", script, str(dot), str(tmp_path / "logs"), store, str(journal)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert died.returncode == -9, died.stderr
    stored = PipelineRecords(store).load("killed")
    assert stored is not None and stored[0].next_node == "c"

    class Journal:
        def run(self, node, prompt, context):
            with journal.open("a") as f:
                f.write(node.id + "\n")
            return "worked on " + node.id

    result = run(dot, tmp_path / "logs", backend=Journal(), store=store, resume="killed")
    assert journal.read_text().split() == ["a", "b", "c", "c", "d"]  # c died once, then ran
    assert result.status == "success"
    assert result.path == ("start", "a", "b", "c", "d", "done")
    ended = PipelineRecords(store).load("killed")
    assert ended is not None and ended[0].status == "completed"
    assert PipelineRecords(store).list()[0].run_id == "killed"
    assert json.loads((tmp_path / "logs" / "checkpoint.json").read_text())["current_node"] == "done"


GATED = """digraph asked { start [shape=Mdiamond]; done [shape=Msquare]
    ok [shape=hexagon, label="Ship it?"]; ship; hold
    start -> ok; ok -> hold [label="[H] Hold"]; ok -> ship [label="[S] Ship"]
    ship -> done; hold -> done }"""


def test_with_a_store_a_human_gate_waits_for_an_answer_given_through_the_store(tmp_path):
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    outcome: list[object] = []
    # The store is made before the run starts: a person polling from the first
    # moment starved the run's own opening of the new database on a loaded machine.
    records = PipelineRecords(store)
    worker = threading.Thread(
        target=lambda: outcome.append(run(GATED, tmp_path / "logs", store=store, run_id="asks"))
    )
    worker.start()
    answered = None
    for _ in range(1200):  # a person answering (the dashboard, the API, `sessions answer`)
        try:
            answered = records.answer("asks", "ship", by="tester")
            break
        except (NotWaitingError, RunNotFoundError):
            time.sleep(0.1)
    worker.join(timeout=120)
    assert answered is not None and answered["choice"] == "[S] Ship"
    [result] = outcome
    assert result.path == ("start", "ok", "ship", "done")
    assert result.context["human.gate.label"] == "[S] Ship"


def test_arun_pipeline_is_the_async_twin(tmp_path):
    result = asyncio.run(arun_pipeline(CHAIN, logs=tmp_path, backend=Scripted()))
    assert result.path == ("start", "a", "b", "c", "d", "done")
