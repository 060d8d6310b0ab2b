"""Stores shared by processes: no lost increment, a forked child's own connection, and
SIGKILL at random moments never breaking the store.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.store_contract import bump
from waygraph.store import open_store

# ---------------------------------------------------------------- processes


def _bump_in_child(url: str, key: str, times: int) -> None:
    with open_store(url) as store:
        bump(store, key, times)


@pytest.mark.parametrize("backend", ["sqlite", "file"])
def test_two_processes_never_lose_an_increment(backend: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'wg.db'}" if backend == "sqlite" else f"file://{tmp_path}/fs"
    with open_store(url) as store:
        store.commit("counter", {"count": 0}, 0, [])
    ctx = multiprocessing.get_context("spawn")
    per_process = 40
    workers = [
        ctx.Process(target=_bump_in_child, args=(url, "counter", per_process)) for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    with open_store(url) as store:
        rec = store.get("counter")
        assert rec is not None and rec.data["count"] == 2 * per_process
        assert rec.version == 2 * per_process + 1
        assert len(store.events("counter")) == 2 * per_process


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.parametrize("backend", ["sqlite", "file"])
def test_a_forked_child_gets_its_own_connection_and_lock(backend: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'wg.db'}" if backend == "sqlite" else f"file://{tmp_path}/fs"
    store = open_store(url)
    store.commit("counter", {"count": 0}, 0, [])
    ctx = multiprocessing.get_context("fork")
    child = ctx.Process(target=bump, args=(store, "counter", 30))
    child.start()
    conflicts = bump(store, "counter", 30)
    child.join(timeout=60)
    assert child.exitcode == 0
    rec = store.get("counter")
    assert rec is not None and rec.data["count"] == 60, f"{conflicts} conflicts met"
    store.close()


# ---------------------------------------------------------------- crash safety

# Starting Python and importing waygraph takes a few hundred milliseconds, so
# one launcher process imports once and forks a fresh writer per kill. Each
# writer opens the store itself after the fork, as an independent process.
_CRASH_LAUNCHER = textwrap.dedent(
    """
    import os, sys
    from waygraph.store import open_store

    url = sys.argv[1]
    pad = "x" * 2000

    def write(generation, ready):
        store = open_store(url)
        i = 0
        while True:
            rec = store.get("shared")
            version = 0 if rec is None else rec.version
            store.commit("shared", {"count": version + 1, "pad": pad}, version,
                         [{"n": version + 1}, {"n": version + 1}], session="shared")
            if i % 3 == 0:
                store.commit(f"g{generation}-{i}", {"count": 1, "pad": pad}, 0,
                             [{"n": 1}, {"n": 1}], session="s", make_current=True)
            if i == 0:
                os.write(ready, b"r")
            i += 1

    for line in sys.stdin:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(r)
                write(line.strip(), w)
            finally:
                os._exit(1)
        os.close(w)
        started = os.read(r, 1) == b"r"
        os.close(r)
        print(pid if started else "failed", flush=True)
        os.waitpid(pid, 0)
        print("reaped", flush=True)
    """
)


def _check_after_crash(url: str) -> int:
    """Open the store a killed writer left and read everything; return the shared count."""
    with open_store(url) as store:
        records = store.list()
        for rec in records:
            events = store.events(rec.key)
            assert rec.data["count"] == rec.version
            assert [e.seq for e in events] == list(range(1, 2 * rec.version + 1)), rec.key
            assert all(e.data["n"] == (e.seq + 1) // 2 for e in events)
        pointer = store.current("s")
        assert pointer is None or store.get(pointer) is not None
        shared = store.get("shared")
        return 0 if shared is None else shared.version


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork and SIGKILL")
@pytest.mark.parametrize("backend", ["sqlite", "file"])
def test_sigkill_at_random_moments_never_breaks_the_store(backend: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'wg.db'}" if backend == "sqlite" else f"file://{tmp_path}/fs"
    rng = random.Random(1234)
    src = str(Path(__file__).resolve().parents[1] / "src")
    paths = [src, *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    launcher = subprocess.Popen(
        [sys.executable, "-c", _CRASH_LAUNCHER, url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    assert launcher.stdin is not None and launcher.stdout is not None
    progress = []
    try:
        for generation in range(30):
            launcher.stdin.write(f"{generation}\n")
            launcher.stdin.flush()
            answer = launcher.stdout.readline().strip()
            assert answer.isdigit(), f"the writer did not start: {answer!r}"
            time.sleep(rng.uniform(0.0, 0.05))  # let it get anywhere in a commit
            os.kill(int(answer), signal.SIGKILL)
            assert launcher.stdout.readline().strip() == "reaped"
            progress.append(_check_after_crash(url))
    finally:
        launcher.stdin.close()
        launcher.wait(timeout=30)
    assert progress == sorted(progress) and progress[-1] >= 30, "every writer made progress"
