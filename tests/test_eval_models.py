"""Scripted models over a real local chat-completions server: a diligent model that
follows guidance succeeds on every task, a sloppy one fails every task, in every mode."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from waygraph.eval.loop import confine, run_shell, write_file
from waygraph.eval.runner import EvalConfig, Record, run_eval
from waygraph.eval.scripted import ScriptedModel
from waygraph.eval.suite import all_tasks, get_task
from waygraph.testing import ScriptedChatServer

# Its module-scoped fixture takes seconds to build: one worker runs the whole module
# (make test distributes whole modules, --dist loadfile), so the fixture is built once;
# the group does so under --dist loadgroup where xdist can tag node ids (pytest < 9).
pytestmark = [pytest.mark.timeout(120), pytest.mark.xdist_group("eval_models")]

TASKS = all_tasks()
MODES = ("baseline", "guided", "planned")


def evaluate(kind: str, **config) -> tuple[list[Record], list[dict]]:
    with ScriptedChatServer([ScriptedModel(kind)] * 3000) as server:
        records = run_eval(
            EvalConfig(server.base_url, "scripted", modes=MODES, tasks=TASKS, jobs=4, **config)
        )
        return records, server.requests


@pytest.fixture(scope="module")
def diligent() -> tuple[list[Record], list[dict]]:
    return evaluate("diligent")


@pytest.fixture(scope="module")
def sloppy() -> tuple[list[Record], list[dict]]:
    return evaluate("sloppy")


def test_the_diligent_model_succeeds_on_every_task_in_every_mode(diligent):
    records, _ = diligent
    assert [(r.task, r.mode) for r in records] == [(t.id, m) for t in TASKS for m in MODES]
    failed = [(r.task, r.mode, r.problems, r.error) for r in records if not r.success]
    assert failed == []
    for r in records:
        assert r.tool_calls == len(get_task(r.task).solution)
        assert r.tokens > 0 and r.wall_time > 0 and not r.escalated


def test_guided_the_diligent_model_walks_each_shipped_plan_to_its_end(diligent):
    records, _ = diligent
    guided = [r for r in records if r.mode == "guided"]
    assert {(r.task, r.plan, r.plan_status) for r in guided} == {
        (t.id, t.plan, "completed") for t in TASKS
    }
    # Calls that a node's check cannot see (a file write before `git diff --stat`) fail once.
    failures = {r.task: r.verification_failures for r in guided}
    assert failures["fix-failing-test"] == 0
    assert failures["refactor-keep-tests"] == 1
    assert all(r.verification_failures is None for r in records if r.mode == "baseline")


def test_guidance_reaches_the_model_on_every_guided_call(diligent):
    _, requests = diligent
    task = get_task("merge-with-conflict")
    conversation = [
        r
        for r in requests
        if r["messages"][1]["content"] == task.request and len(r["messages"]) > 2
    ]
    guided = [r for r in conversation if r["messages"][-1]["role"] == "system"]
    assert guided, "no guided request seen"
    nodes = [r["messages"][-1]["content"].split(" · node ")[-1].split(" ")[0] for r in guided]
    assert "resolve_conflicts" in nodes and "push" in nodes


def test_the_sloppy_model_fails_every_task_in_every_mode(sloppy):
    records, _ = sloppy
    assert len(records) == len(TASKS) * len(MODES)
    assert [r for r in records if r.success] == []
    assert all(r.problems for r in records)
    assert all(r.tool_calls == len(get_task(r.task).wrong_solution) for r in records)
    guided = [r for r in records if r.mode == "guided"]
    # It never finished a plan: it stopped after one big command.
    assert all(r.plan_status == "running" for r in guided)


def test_a_dead_server_is_a_failed_run_with_its_error_not_a_crash():
    with ScriptedChatServer([]) as server:
        records = run_eval(
            EvalConfig(server.base_url, "m", tasks=[get_task("log-root-cause")], timeout=5)
        )
    assert [(r.mode, r.success) for r in records] == [("baseline", False), ("guided", False)]
    assert all("no scripted reply left" in (r.error or "") for r in records)


def test_repeats_and_jobs(tmp_path: Path):
    task = get_task("branch-from-release")
    with ScriptedChatServer([ScriptedModel("diligent")] * 100) as server:
        records = run_eval(
            EvalConfig(server.base_url, "m", modes=("guided",), tasks=[task], repeat=3, jobs=3)
        )
    assert [(r.repeat, r.success) for r in records] == [(1, True), (2, True), (3, True)]


def test_the_tools_stay_in_the_workspace(tmp_path: Path):
    assert write_file("../escape.txt", "x", tmp_path)[1] == 126
    assert write_file("/etc/passwd", "x", tmp_path)[1] == 126
    assert write_file("sub/ok.txt", "hi\n", tmp_path) == ("wrote sub/ok.txt (1 lines, 3 bytes)", 0)
    assert (tmp_path / "sub" / "ok.txt").read_text() == "hi\n"
    # Absolute-looking words that name no real place (routes, regexes) are allowed.
    assert confine("python3 api.py GET /users/1", tmp_path) is None
    assert confine("grep -vc '/$' list.txt", tmp_path) is None
    assert confine("cat /etc/hostname", tmp_path) is not None
    output, code = run_shell("python3 -c 'print(\"x\" * 20000)'", tmp_path)
    assert code == 0 and "bytes dropped" in output and len(output) < 8200


@pytest.mark.timeout(20)
def test_a_stop_event_kills_a_running_command_and_its_children(tmp_path: Path):
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    # The child `sleep` must die with the shell, or late.txt appears.
    output, code = run_shell("(sleep 2; echo late > late.txt) & sleep 60", tmp_path, stop=stop)
    assert (output, code) == ("stopped: the run was interrupted", 130)
    time.sleep(2.5)
    assert not (tmp_path / "late.txt").exists()
    # Unset, it changes nothing: the command runs to its end.
    assert run_shell("echo done", tmp_path, stop=threading.Event()) == ("done\n", 0)
    assert run_shell("sleep 5", tmp_path, 0.3, stop=threading.Event()) == (
        "timed out after 0.3s",
        124,
    )
