"""The run commands (match, play, sessions, demo), run as real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from waygraph.demo import run_demo

BUG_MESSAGE = "I need to fix a bug in the login module"


def wg(*args: str, stdin: str | None = None, env: dict | None = None, cwd: Path | None = None):
    return subprocess.run(
        [sys.executable, "-m", "waygraph", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
        cwd=cwd,
    )


def test_match_json_and_explain():
    out = wg("match", BUG_MESSAGE, "--domain", "bugfix", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["activates"] == "bugfix_workflow"
    assert data["matches"][0]["plan_id"] == "bugfix_workflow"
    out = wg("match", "What's the weather like?", "--explain")
    assert out.returncode == 0
    assert "No plan activates" in out.stdout


def test_match_reports_a_bad_library_without_traceback(tmp_path: Path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"plans": {"p": {"graph": {"start": "s", "nodes": {"s": {"type": "strt"}}}}}}')
    out = wg("match", "hello", "--library", str(bad))
    assert out.returncode != 0
    assert "Traceback" not in out.stderr
    assert "bad.json" in out.stderr and "'s'" in out.stderr and "strt" in out.stderr


def test_play_walks_a_plan_with_typed_outputs_and_commands(tmp_path: Path):
    script = "\n".join(["Traceback: boom", "!echo found it", ":state", ":quit"]) + "\n"
    out = wg("play", "bugfix_workflow", "--workspace", str(tmp_path), stdin=script)
    assert out.returncode == 0, out.stderr
    assert "guidance for the model" in out.stdout
    assert "✓ Verification passed at reproduce" in out.stdout
    assert "found it" in out.stdout
    assert '"current_node"' in out.stdout


def test_sessions_commands_and_demo(tmp_path: Path):
    store = f"sqlite:///{tmp_path / 'demo.db'}"
    out = wg("demo", "--store", store)
    assert out.returncode == 0, out.stderr + out.stdout
    assert "Status: completed" in out.stdout
    assert "? not judged at verify_no_regression" in out.stdout
    assert 'echo "exit=$?"' in out.stdout
    assert "waygraph sessions show demo-" in out.stdout
    out = wg("sessions", "list", "--store", store, "--json")
    sessions = json.loads(out.stdout)["sessions"]
    assert len(sessions) == 1 and sessions[0]["status"] == "completed"
    session = sessions[0]["session"]
    out = wg("sessions", "show", session, "--store", store, "--json")
    assert json.loads(out.stdout)["plan_id"] == "bugfix_workflow"
    out = wg("sessions", "events", session, "--store", store, "--json")
    types = [e["type"] for e in json.loads(out.stdout)["events"]]
    assert types[0] == "plan_activated" and types[-1] == "plan_completed"
    out = wg("sessions", "reset", session, "--store", store)
    assert out.returncode == 0
    out = wg("sessions", "show", session, "--store", store)
    assert out.returncode == 1 and "No current run for session" in out.stdout


def test_demo_goes_round_the_fix_loop_then_passes(tmp_path: Path):
    console = Console(file=open(os.devnull, "w"), width=120)  # noqa: SIM115
    result = run_demo(
        store=f"sqlite:///{tmp_path / 'd.db'}", console=console, workspace=tmp_path / "ws"
    )
    assert result.status == "completed"
    assert result.path.count("fix") == 2 and result.path.count("test") == 2
    assert result.visited["fix"]["attempts"] == 2
    # The whole-suite run first reported no exit status: unknown, no attempt
    # used; the agent then printed it as the guidance asked.
    tried = result.visited["verify_no_regression"]["tried"]
    assert [t["verdict"] for t in tried] == ["unknown", "success"]
    assert tried[1]["call"].endswith('; echo "exit=$?"')
    assert result.visited["verify_no_regression"]["attempts"] == 1
    # The real project really is fixed: its tests pass now.
    proc = subprocess.run(
        [sys.executable, "-m", "unittest", "-q"],
        cwd=tmp_path / "ws",
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr


def test_demo_break_escalates(tmp_path: Path):
    console = Console(file=open(os.devnull, "w"), width=120)  # noqa: SIM115
    result = run_demo(
        break_fixes=True, store="memory://", console=console, workspace=tmp_path / "ws"
    )
    assert result.status == "escalated"
    assert result.visited["fix"]["attempts"] == 3
    assert result.path[-1] == "escalate_stuck"


def test_demo_break_says_how_often_each_node_ran_and_exits_1(tmp_path: Path):
    out = wg("demo", "--break", "--store", "memory://", cwd=tmp_path)
    assert out.returncode == 1, out.stderr  # the plan escalated: not a success
    rows = {
        line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
        for line in out.stdout.splitlines()
        if line.startswith("│")
    }
    # The test step failed three times, each a fresh entry from fix.
    assert rows["test"] == ["fail", "3", "1"]
    assert "entered" in out.stdout and "watch the plan escalate" not in out.stdout


def test_demo_llm_without_endpoint_says_so(tmp_path: Path):
    out = wg("demo", "--store", "memory://", "--llm", "http://127.0.0.1:9/v1", "--model", "x")
    # Checked before the session starts (waygraph.cli._preflight): one line, exit 2.
    assert out.returncode == 2
    assert "cannot reach the model server at http://127.0.0.1:9/v1" in out.stderr
    assert "connection refused" in out.stderr and "--llm" in out.stderr
    assert "Traceback" not in out.stderr and "Session:" not in out.stdout


def test_demo_llm_answers_a_question_for_the_user_and_never_counts_it_a_claim(tmp_path: Path):
    from waygraph.demo._model import DEMO_ANSWER
    from waygraph.navigator import Navigator
    from waygraph.testing import ScriptedChatServer

    question = "Should I run the whole suite or only test_pricing.py?"
    call = {"name": "run_command", "arguments": {"command": "python -m unittest test_pricing"}}
    store = f"sqlite:///{tmp_path / 'd.db'}"
    console = Console(file=open(os.devnull, "w"), width=120)  # noqa: SIM115
    with ScriptedChatServer([question, {"tool_calls": [call]}]) as server:
        result = run_demo(
            store=store,
            llm_url=server.base_url,
            model="scripted",
            console=console,
            workspace=tmp_path / "ws",
        )
        requests = server.requests
    nav = Navigator(store=store)
    events = nav.events(result.session_id)
    nav.close()
    kinds = [e["type"] for e in events]
    # The question waited for the user; the demo answered for them, as the user.
    assert "question_asked" in kinds and "claim_unverified" not in kinds
    [answered] = [e for e in events if e["type"] == "human_answered"]
    assert answered["answer"] == DEMO_ANSWER
    assert requests[1]["messages"][-2] == {"role": "user", "content": DEMO_ANSWER}
    # Then the model's command was judged as the step's evidence.
    assert [e["node"] for e in events if e["type"] == "node_verified"][:1] == ["reproduce"]
