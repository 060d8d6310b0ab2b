"""waygraph's own tool-calling loops against a real small model (SmolLM2-135M), offline.

``make test-model`` runs this module; ``make test`` never collects it (its
testpaths are ``tests``). A 135M model is barely able to call a tool, so
nothing here asks it to succeed. What is asserted holds for any model:

- every command exits without a Python traceback and within its timeout, with
  an exit code the command documents (no usage error, no crash);
- every verdict is backed by evidence: no step passes on the model's words,
  on a tool call that was refused ("nothing ran"), or on an empty command;
  in the eval, every passing call is one the loop's own log shows ran;
- a guided plan that completed is work the task's checker accepts;
- an eval run that broke broke on the server's answer (an ``openai`` error),
  never on an exception of waygraph's own;
- ``waygraph plan --dry-run`` runs nothing, and a plan run reports no step
  done that never ran.

What the model did (calls per run, tokens per second, verdicts) is printed,
and kept as JSON in ``$WAYGRAPH_MODEL_REPORT`` when that is set.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests_model.conftest import N_CTX, ModelServer
from tests_model.evidence import (
    demo_tool_turns,
    no_traceback,
    not_run,
    server_side,
    tokens_per_second,
    unbacked,
)

ROOT = Path(__file__).resolve().parents[1]
WAYGRAPH = [sys.executable, "-m", "waygraph"]
#: The three shortest eval tasks (fewest steps, shortest requests).
EVAL_TASKS = ("branch-from-release", "fix-failing-test", "log-root-cause")
EVAL_MODES = ("baseline", "guided", "planned")
#: Tokens one reply may have: a tool call fits; a rambling reply stops early.
MAX_TOKENS = 256
#: Tool calls (demo) and model calls (eval) one run may make, where the command has the flag.
STEP_BOUND = 8
#: Model calls one eval run may make (the tasks' own budgets are 10 to 14).
EVAL_STEPS = 5
#: Seconds one model reply may take (a loaded two-core machine takes a minute).
REPLY_TIMEOUT = 300
#: Seconds each command may take before the test calls it a hang.
DEMO_TIMEOUT = 900
EVAL_TIMEOUT = 3600
#: A plan run asks for up to three plans (two repairs) and one revision, each reply
#: within REPLY_TIMEOUT: a bound below that would call a slow machine's run a hang.
PLAN_TIMEOUT = 4 * REPLY_TIMEOUT + 300

# Minutes, not pytest's 300 s of the normal suite: a 2-core machine runs the model.
pytestmark = pytest.mark.timeout(EVAL_TIMEOUT + 300)

REPORT: dict[str, Any] = {}
#: The keys of results.json printed per eval run.
SHOWN = (
    *("task", "mode", "success", "completed", "plan_status", "model_calls", "tool_calls"),
    *("tokens", "wall_time", "verification_failures", "error"),
)


@cache
def options(command: str) -> frozenset[str]:
    """The long options ``waygraph COMMAND --help`` lists."""
    done = subprocess.run(
        [*WAYGRAPH, command, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "200"},
    )
    words = done.stdout.replace("│", " ").split()
    return frozenset(w for w in words if w.startswith("--"))


def newer_flags(command: str, *, preflight: bool = True) -> list[str]:
    """The flags of issue 35 that ``waygraph COMMAND`` has (they may be newer than this test)."""
    have = options(command)
    flags: list[str] = []
    if "--tool-protocol" in have:
        flags += ["--tool-protocol", "auto"]
    if "--context-tokens" in have:
        flags += ["--context-tokens", str(N_CTX)]
    if not preflight and "--no-preflight" in have:
        flags.append("--no-preflight")
    if "--max-turns" in have:
        flags += ["--max-turns", str(STEP_BOUND)]
    if "--max-steps" in have:
        flags += ["--max-steps", str(EVAL_STEPS)]
    return flags


def run(argv: list[str], timeout: float, keep: Path) -> subprocess.CompletedProcess[str]:
    """Run ``argv``; a command that outlives ``timeout`` fails the test as a hang.

    Its output is kept in ``keep/stdout.txt`` and ``keep/stderr.txt`` to read afterwards.
    """
    started = time.monotonic()
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, cwd=ROOT, stdin=None
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else ""
        pytest.fail(f"hang: {' '.join(argv[2:])} ran past {timeout}s\n{out[-3000:]}")
    (keep / "stdout.txt").write_text(done.stdout, encoding="utf-8")
    (keep / "stderr.txt").write_text(done.stderr, encoding="utf-8")
    print(
        f"\n$ {' '.join(argv[2:])}\n  exit {done.returncode} in {time.monotonic() - started:.0f}s"
        f" (output in {keep})"
    )
    no_traceback(done.stdout, done.stderr)
    return done


def save_report(key: str, value: Any) -> None:
    REPORT[key] = value
    target = os.environ.get("WAYGRAPH_MODEL_REPORT")
    if target:
        Path(target).write_text(json.dumps(REPORT, indent=2) + "\n", encoding="utf-8")


def stored(store_url: str, session: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A stored session's run record and its events."""
    from waygraph.navigator import Navigator

    nav = Navigator(store=store_url)
    try:
        return dict(nav.state(session) or {}), [dict(e) for e in nav.events(session)]
    finally:
        nav.close()


def test_demo_verdicts_rest_on_tool_calls_that_ran(model_server: ModelServer, tmp_path: Path):
    store = f"sqlite:///{tmp_path / 'demo.db'}"
    argv = [*WAYGRAPH, "demo", "--llm", model_server.base_url, "--model", model_server.model]
    done = run([*argv, "--store", store, *newer_flags("demo")], DEMO_TIMEOUT, tmp_path)
    # 0: the plan completed; 1: it did not (escalated, or the model ran out of turns).
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    assert "Session:" in done.stdout, done.stdout[-3000:]
    session = done.stdout.split("Session:", 1)[1].split()[0]
    record, events = stored(store, session)
    assert record, f"session {session} is not in the store"
    assert unbacked(record, events, ("run_command", "write_file"), "run_command") == []
    tried = sum(len(s.get("tried") or ()) for s in record.get("visited", {}).values())
    turns = demo_tool_turns(done.stdout)
    # Every call judged is one the demo ran and showed; refused calls are not judged.
    assert tried <= turns
    if record.get("status") == "completed":
        # A completed plan is verified work: the project's tests pass now.
        assert done.returncode == 0
        assert _tests_pass(done.stdout)
    summary = {
        "exit": done.returncode,
        "status": record.get("status"),
        "tool_calls_shown": turns,
        "refused_calls": done.stdout.count("tool call refused"),
        "model_replies_without_call": done.stdout.count("─ model ─"),
        "path": record.get("path"),
        "verdicts": [
            (e.get("node"), e.get("outcome"), e.get("tool"))
            for e in events
            if e.get("type") == "node_verified"
        ],
    }
    print(json.dumps(summary, indent=1))
    save_report("demo", summary)


def _tests_pass(stdout: str) -> bool:
    """The demo's workspace (printed as it starts) passes its tests now."""
    workspace = Path(stdout.split("Workspace:", 1)[1].split()[0])
    done = subprocess.run(
        [sys.executable, "-m", "unittest", "-q"],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode == 0


def test_eval_runs_are_measured_and_every_pass_ran(model_server: ModelServer, tmp_path: Path):
    out = tmp_path / "eval"
    recorded = tmp_path / "recorded"
    argv = [
        sys.executable,
        str(ROOT / "tests_model" / "recorded_eval.py"),
        str(recorded),
        "0" if "--max-steps" in options("eval") else str(EVAL_STEPS),
        "--llm",
        model_server.base_url,
        "--model",
        model_server.model,
        "--tasks",
        ",".join(EVAL_TASKS),
        "--mode",
        ",".join(EVAL_MODES),
        "--out",
        str(out),
        "--max-tokens",
        str(MAX_TOKENS),
        # One run at a time: the server answers one request at a time, and a request
        # queued behind another run's would count its wait against --timeout.
        "--jobs",
        "1",
        "--timeout",
        str(REPLY_TIMEOUT),
        *newer_flags("eval"),
    ]
    done = run(argv, EVAL_TIMEOUT, tmp_path)
    # 0: every run measured; 1: some run errored (the server's answer, checked below).
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    records = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert sorted((r["task"], r["mode"]) for r in records) == sorted(
        (t, m) for t in EVAL_TASKS for m in EVAL_MODES
    )
    for r in records:
        if r["error"] is not None:
            assert server_side(r["error"]), r
        if r["mode"] == "baseline":
            assert r["verification_failures"] is None, r
        if r["mode"] == "guided" and r["plan_status"] == "completed":
            # A completed plan is verified work: the task's checker must agree.
            assert r["success"], r
        if r["model_calls"] and r["error"] is None:
            assert r["tokens"] > 0, r
    calls = _calls(recorded / "calls.jsonl")
    store = f"sqlite:///{recorded / 'sessions.db'}"
    guided_sessions = _sessions(store)
    problems: list[str] = []
    for session in guided_sessions:
        record, events = stored(store, session)
        problems += unbacked(record, events, ("shell", "write_file"), "shell")
        if calls:
            problems += not_run(record, calls)
    assert problems == []
    rows = [
        {k: r[k] for k in SHOWN}
        | {"tokens_per_s": round(r["tokens"] / r["wall_time"], 1) if r["wall_time"] else 0}
        for r in records
    ]
    summary = {
        "exit": done.returncode,
        "runs": rows,
        "tokens_per_s": round(tokens_per_second(records), 1),
        "calls_logged": len(calls),
        "calls_refused": sum(1 for c in calls if c["exit_code"] is None),
        "guided_sessions": len(guided_sessions),
        "stdout_tail": done.stdout[-1500:],
    }
    print(json.dumps(summary, indent=1))
    save_report("eval", summary)


def _calls(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _sessions(store_url: str) -> list[str]:
    from waygraph.store import open_store

    if (
        not store_url.removeprefix("sqlite:///")
        or not Path(store_url.removeprefix("sqlite:///")).exists()
    ):
        return []
    store = open_store(store_url)
    try:
        return list(store.sessions())
    finally:
        store.close()


GOAL = "Write the word hello into a new file hello.txt, then show the file with cat."


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "run"])
def test_plan_reports_no_step_that_never_ran(
    model_server: ModelServer, tmp_path: Path, dry_run: bool
):
    workspace = tmp_path / "work"
    workspace.mkdir()
    argv = [*WAYGRAPH, "plan", GOAL, "--llm", model_server.base_url, "--model", model_server.model]
    argv += ["--workspace", str(workspace), "--store", f"sqlite:///{tmp_path / 'plan.db'}"]
    argv += ["--structured-output", "auto", "--max-revisions", "1", "--retries", "0", "--json"]
    argv += ["--timeout", str(REPLY_TIMEOUT)]
    if "--max-tokens" in options("plan"):
        argv += ["--max-tokens", "512"]  # a plan of a few steps; a 135M model rambles
    if dry_run:
        argv.append("--dry-run")
    # The dry run goes without the preflight (where the flag exists); the run keeps it.
    done = run([*argv, *newer_flags("plan", preflight=not dry_run)], PLAN_TIMEOUT, tmp_path)
    # 0: valid (dry run) or succeeded; 1: invalid, refused or failed (the command's
    # help). 2 is for usage errors and a model that cannot be reached, which this one,
    # answering on a local port, is not.
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(done.stdout)
    if dry_run:
        # The dry-run report: whether the plan is valid, and what would run. Nothing ran.
        assert sorted(p.name for p in workspace.iterdir()) == []
        assert done.returncode == (0 if result["valid"] else 1), result["problems"]
        summary = {"exit": done.returncode, "valid": result["valid"]}
        summary["problems"] = [str(p)[:200] for p in result["problems"]][:5]
        summary["layers"] = result.get("layers")
    else:
        steps = result.get("step_results") or {}
        for step_id, step in steps.items():
            if step["status"] == "completed":
                assert step["attempts"] >= 1 or step["reused"] or step["used_fallback"], step_id
        if result["success"]:
            for step in (result.get("final_plan") or {}).get("steps") or []:
                assert steps[step["id"]]["status"] in ("completed", "skipped"), step
        summary = {
            "exit": done.returncode,
            "success": result["success"],
            "steps": {
                k: (v["status"], v["attempts"], str(v.get("error"))[:200]) for k, v in steps.items()
            },
            "problems": [str(p)[:200] for p in result.get("problems") or []][:5],
            "revisions": result.get("revision_count"),
            "tokens": result.get("token_usage"),
            "seconds": result.get("execution_time"),
        }
    summary["stderr_tail"] = done.stderr[-1500:]
    print(json.dumps(summary, indent=1, default=str))
    save_report("plan-dry-run" if dry_run else "plan", summary)
