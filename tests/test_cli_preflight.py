"""Preflight: plan, eval and demo --llm check the model endpoint before any work.

A server that is down, a wrong path or one that never answers is one line
naming the URL and the flag (--llm), exit code 2, and nothing written.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from waygraph.cli._preflight import check_endpoint
from waygraph.errors import ConfigError
from waygraph.testing import ScriptedChatServer


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


@pytest.fixture
def closed_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A port that accepts connections and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


COMMANDS = {
    "plan": ["plan", "a goal", "--model", "m", "--workspace", "."],
    "plan --dry-run": ["plan", "a goal", "--model", "m", "--workspace", ".", "--dry-run"],
    "eval": ["eval", "--model", "m", "--out", "results"],
    "eval --compliance": ["eval", "--model", "m", "--out", "results", "--compliance"],
    "demo": ["demo", "--store", "sqlite:///runs.db"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_closed_port_is_one_line_naming_url_and_flag_and_nothing_is_written(
    command: str, closed_url: str, tmp_path: Path
):
    out = wg(*COMMANDS[command], "--llm", closed_url, cwd=tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    error = out.stderr.strip()
    assert "\n" not in error and "Traceback" not in error
    assert error == (
        f"error: cannot reach the model server at {closed_url} (GET {closed_url}/models): "
        "connection refused; start it or change --llm"
    )
    assert list(tmp_path.iterdir()) == []  # no results, no session store
    assert "planning" not in out.stdout  # no work started


def test_an_http_error_names_the_status_and_what_to_check(tmp_path: Path):
    with ScriptedChatServer() as server:
        wrong = server.base_url + "/chat"  # GET /v1/chat/models: 404
        out = wg(*COMMANDS["eval"], "--llm", wrong, cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.strip() == (
        f"error: the model server at {wrong} answered GET {wrong}/models with HTTP 404 "
        "Not Found; is --llm the API's base URL (often ending in /v1)?"
    )
    assert list(tmp_path.iterdir()) == []


def test_a_server_that_never_answers_is_slow_not_down(silent_url: str):
    # A single-request local server busy generating accepts the connection and
    # says nothing: it is up, and the message must not send the user to start it.
    with pytest.raises(ConfigError) as caught:
        check_endpoint(silent_url, timeout=0.2)
    assert str(caught.value) == (
        f"the model server at {silent_url} did not answer GET {silent_url}/models within "
        "0.2s (it may be busy with another request); try again, or wait longer with "
        "WAYGRAPH_PREFLIGHT_TIMEOUT=SECONDS (0 skips this check)"
    )


def test_the_preflight_wait_is_configured_by_the_environment(silent_url: str, monkeypatch):
    monkeypatch.setenv("WAYGRAPH_PREFLIGHT_TIMEOUT", "0")
    check_endpoint(silent_url)  # switched off: no request at all
    monkeypatch.setenv("WAYGRAPH_PREFLIGHT_TIMEOUT", "0.2")
    with pytest.raises(ConfigError, match=r"within 0\.2s"):
        check_endpoint(silent_url)
    monkeypatch.setenv("WAYGRAPH_PREFLIGHT_TIMEOUT", "soon")
    with pytest.raises(ConfigError, match="is not a number of seconds"):
        check_endpoint(silent_url)


def test_the_scripted_server_passes_with_or_without_an_api_key():
    with ScriptedChatServer() as server:
        check_endpoint(server.base_url)
        check_endpoint(server.base_url, api_key="sk-test")
        assert server.requests == []  # a GET /models is not a chat request


def test_the_flag_named_is_the_one_given():
    with pytest.raises(ConfigError, match=r"^--base-url 'localhost:1' is not an http\(s\) URL"):
        check_endpoint("localhost:1", flag="--base-url")
