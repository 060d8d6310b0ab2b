"""``python -m waygraph.testing.chat_server``: the scripted server from a shell, so
``waygraph plan`` and ``waygraph eval`` run offline (docs/offline.md)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(120)

PLAN_SCRIPT = """\
# The one reply `waygraph plan` needs: the plan, as the model's message.
- |
  {"goal": "write the notes", "steps": [
    {"id": "s1", "action": "shell", "parameters": {"command": "echo hello"}, "dependencies": []},
    {"id": "s2", "action": "write_file", "dependencies": ["s1"],
     "parameters": {"path": "notes.txt", "content": "said: ${s1}"}}]}
"""


@contextmanager
def chat_server(*args: str) -> Iterator[str]:
    """Start the server as a subprocess; yield the base URL it prints once bound."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "waygraph.testing.chat_server", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        found = re.search(r"at (http://\S+/v1) \(Ctrl-C to stop\)$", line.strip())
        assert found, line + (proc.stderr.read() if proc.stderr else "")
        yield found.group(1)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert "Traceback" not in (proc.stderr.read() if proc.stderr else "")


def wg(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "HOME": str(cwd)}
    env.pop("OPENAI_BASE_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "waygraph", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,
    )


def chat(url: str) -> tuple[int, dict]:
    body = json.dumps({"model": "scripted", "messages": [{"role": "user", "content": "hi"}]})
    request = urllib.request.Request(
        url + "/chat/completions", body.encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_waygraph_plan_runs_offline_against_a_script_file(tmp_path: Path):
    script = tmp_path / "plan.yaml"
    script.write_text(PLAN_SCRIPT)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with chat_server("--script", str(script), "--port", "0") as url:
        with urllib.request.urlopen(url + "/models", timeout=10) as response:
            assert json.loads(response.read())["data"][0]["id"] == "scripted"
        out = wg(
            "plan", "write the notes", "--llm", url, "--model", "scripted",
            "--workspace", str(workspace), cwd=tmp_path,
        )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    assert "success: 2 completed" in out.stdout
    assert (workspace / "notes.txt").read_text().strip() == "said: hello"


def test_replies_go_in_order_then_run_out_unless_looping(tmp_path: Path):
    script = tmp_path / "replies.json"
    script.write_text(json.dumps({"model": "m1", "replies": ["one", {"content": "two"}]}))
    with chat_server("--script", str(script)) as url:
        assert [chat(url)[1]["choices"][0]["message"]["content"] for _ in "ab"] == ["one", "two"]
        status, body = chat(url)
        assert status == 500 and "no scripted reply left" in body["error"]["message"]
    with chat_server("--script", str(script), "--loop") as url:
        said = [chat(url)[1]["choices"][0]["message"]["content"] for _ in "abc"]
    assert said == ["one", "two", "one"]


def test_eval_runs_offline_against_a_scripted_eval_model(tmp_path: Path):
    with chat_server("--eval", "diligent") as url:
        out = wg(
            "eval", "--llm", url, "--model", "scripted-diligent", "--tasks", "fix-failing-test",
            "--mode", "baseline", "--out", str(tmp_path / "results"), cwd=tmp_path,
        )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    records = json.loads((tmp_path / "results" / "results.json").read_text())
    assert [r["success"] for r in records] == [True]


def test_a_bad_script_is_one_line_naming_the_reply_and_field(tmp_path: Path):
    script = tmp_path / "bad.yaml"
    script.write_text("- hello\n- tool_calls: [{arguments: {command: ls}}]\n")
    out = subprocess.run(
        [sys.executable, "-m", "waygraph.testing.chat_server", "--script", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    expected = f"error: {script}: reply 2, field tool_calls.0.name: Field required"
    assert out.stderr.strip() == expected


def test_a_taken_port_is_one_line(tmp_path: Path):
    script = tmp_path / "s.yaml"
    script.write_text("- hi\n")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        out = subprocess.run(
            [sys.executable, "-m", "waygraph.testing.chat_server", "--script", str(script),
             "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )  # fmt: skip
    assert out.returncode == 2
    assert out.stderr.startswith(f"error: cannot listen on 127.0.0.1:{port}: ")
    assert "--port" in out.stderr and "Traceback" not in out.stderr
