"""Issue 33, item 3: files a model can touch are opened safely.

A model with a shell in its workspace can leave, where waygraph reads a
session plan, a FIFO (an ordinary open waits for ever, and a server worker
with it), a link to ``/dev/zero`` (an ordinary read never ends) or to a secret
outside the workspace (its content was copied in as ``plan.json.corrupt-*``),
a folder, or a huge file. Each is refused unread with one line, and a refused
plan is moved aside by rename only. Hangs are caught by join timeouts (a
guard, not a speed measurement): before the fix these tests hung there.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from waygraph import Navigator
from waygraph.errors import StoreError
from waygraph.sandbox.safe_files import MAX_FILE_BYTES, RefusedFile, read_regular_file
from waygraph.server import create_app
from waygraph.sessions import SessionPlanner, list_session_plans, load_session_plan, read_plan_file

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs (POSIX)")

S = "telegram:42"
#: Long enough for any loaded machine to finish a refusal; a hang never does.
GUARD_SECONDS = 60.0
SECRET = "s3cret-token-do-not-copy"


def plan_path(workspace: Path, folder: str = "telegram_42") -> Path:
    path = workspace / ".sessions" / folder / "plan.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def release(fifo: Path) -> None:
    """Let readers stuck in open() on ``fifo`` go (they see end of file)."""
    with contextlib.suppress(OSError):
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


def guarded(call: Callable[[], Any], fifo: Path | None = None) -> Any:
    """``call()`` in a thread; fail (instead of hanging the suite) if it does not return."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # handed to the test below
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(GUARD_SECONDS)
    if thread.is_alive():
        if fifo is not None:
            release(fifo)
        pytest.fail(f"still blocked after {GUARD_SECONDS:g} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


@pytest.fixture
def fifo_plan(tmp_path: Path) -> Iterator[Path]:
    path = plan_path(tmp_path)
    os.mkfifo(path)
    yield path
    release(path)


def start_plan(workspace: Path) -> None:
    planner = SessionPlanner(workspace, max_iterations=20)
    planner.on_user_message(S, "Migrate the blog")
    planner.after_model_reply(S, "[Step] Export posts\n[Step] Convert\nWorking.", 1)


# ---------------------------------------------------------------- the reader


def test_a_regular_file_is_read_and_refusals_are_one_line(tmp_path: Path):
    path = tmp_path / "a.json"
    path.write_bytes(b"0123456789")
    assert read_regular_file(path, limit=10) == b"0123456789"
    with pytest.raises(RefusedFile) as refused:
        read_regular_file(path, limit=9)
    assert "over the 9-byte limit" in str(refused.value) and "\n" not in str(refused.value)
    assert isinstance(refused.value, OSError)
    with pytest.raises(FileNotFoundError):
        read_regular_file(tmp_path / "missing.json")


def test_a_fifo_is_refused_at_once(fifo_plan: Path):
    with pytest.raises(RefusedFile, match="a FIFO, not a regular file"):
        guarded(lambda: read_regular_file(fifo_plan), fifo_plan)


def test_a_link_swapped_in_after_the_check_is_refused_by_the_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # lstat saw a regular file; by the open it is a link: O_NOFOLLOW refuses it.
    target = tmp_path / "secret"
    target.write_text(SECRET)
    link = tmp_path / "plan.json"
    link.symlink_to(target)
    real_lstat = os.lstat
    monkeypatch.setattr(os, "lstat", lambda p: real_lstat(target) if p == link else real_lstat(p))
    with pytest.raises(RefusedFile, match="a symbolic link"):
        read_regular_file(link)


# ---------------------------------------------------------------- session plans


def test_a_fifo_plan_returns_promptly_with_a_clear_error(tmp_path: Path, fifo_plan: Path):
    with pytest.raises(StoreError) as failed:
        guarded(lambda: load_session_plan(tmp_path, S), fifo_plan)
    message = str(failed.value)
    assert "a FIFO, not a regular file" in message and "\n" not in message
    assert guarded(lambda: list_session_plans(tmp_path), fifo_plan) == []
    # The planner carries on: the FIFO is renamed aside, never opened.
    guarded(lambda: start_plan(tmp_path), fifo_plan)
    aside = [p for p in fifo_plan.parent.iterdir() if p.name.startswith("plan.json.corrupt-")]
    assert len(aside) == 1 and aside[0].is_fifo()
    assert load_session_plan(tmp_path, S)["goal"] == "Migrate the blog"


def test_a_link_to_dev_zero_is_refused_without_reading_it(tmp_path: Path):
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    plan_path(tmp_path).symlink_to("/dev/zero")
    # In a child under a memory ceiling: before the fix it read until the
    # ceiling stopped it (it reached 10 GB in 15 s) instead of refusing.
    script = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
        "from waygraph.errors import StoreError\n"
        "from waygraph.sessions import load_session_plan\n"
        "try:\n"
        "    load_session_plan(sys.argv[1], 'telegram:42')\n"
        "except StoreError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=GUARD_SECONDS * 2,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "a symbolic link, not a regular file" in done.stdout


def test_a_link_to_a_secret_is_refused_and_nothing_is_copied(tmp_path: Path):
    workspace, outside = tmp_path / "workspace", tmp_path / "outside"
    outside.mkdir()
    secret = outside / "shadow"
    secret.write_text(f"root:{SECRET}:19000:0:99999:7:::\n")
    path = plan_path(workspace)
    path.symlink_to(secret)
    with pytest.raises(StoreError, match="a symbolic link"):
        load_session_plan(workspace, S)
    assert read_plan_file(path) is None
    start_plan(workspace)
    aside = [p for p in path.parent.iterdir() if p.name.startswith("plan.json.corrupt-")]
    assert len(aside) == 1 and aside[0].is_symlink(), "moved aside by rename, as a link"
    copied = [
        p
        for p in workspace.rglob("*")
        if p.is_file() and not p.is_symlink() and SECRET in p.read_text(errors="replace")
    ]
    assert copied == []
    assert secret.read_text().startswith("root:"), "the target is untouched"


def test_a_directory_is_refused(tmp_path: Path):
    plan_path(tmp_path).mkdir()
    with pytest.raises(StoreError, match="a directory, not a regular file"):
        load_session_plan(tmp_path, S)
    assert list_session_plans(tmp_path) == []


def test_an_oversize_plan_is_refused_unread(tmp_path: Path):
    path = plan_path(tmp_path)
    with path.open("wb") as fh:
        fh.truncate(MAX_FILE_BYTES + 1)
    with pytest.raises(StoreError, match=f"over the {MAX_FILE_BYTES}-byte limit"):
        load_session_plan(tmp_path, S)
    assert list_session_plans(tmp_path) == []


def test_a_linked_session_folder_is_neither_read_nor_written(tmp_path: Path):
    # A folder link would read plans from, and write them to, outside.
    workspace, outside = tmp_path / "workspace", tmp_path / "outside"
    start_plan(outside)
    (workspace / ".sessions").mkdir(parents=True)
    (workspace / ".sessions" / "telegram_42").symlink_to(outside / ".sessions" / "telegram_42")
    before = sorted(p.name for p in (outside / ".sessions" / "telegram_42").iterdir())
    with pytest.raises(StoreError, match="a symbolic link, not a folder"):
        load_session_plan(workspace, S)
    assert list_session_plans(workspace) == []
    planner = SessionPlanner(workspace, max_iterations=20)
    planner.on_user_message(S, "Something else")
    planner.after_model_reply(S, "[Step] Other\nWorking.", 1)
    assert sorted(p.name for p in (outside / ".sessions" / "telegram_42").iterdir()) == before


# ---------------------------------------------------------------- a model's own tools


def test_plan_read_file_refuses_a_fifo_swapped_in_after_its_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from waygraph.cli.plan_tools import workspace_tools

    read_file = workspace_tools(tmp_path)[2]
    fifo = tmp_path / "notes.txt"
    os.mkfifo(fifo)
    # As if the model's command swapped the file for a FIFO after is_file().
    monkeypatch.setattr(Path, "is_file", lambda self: True)
    with pytest.raises(RefusedFile, match="a FIFO"):
        guarded(lambda: read_file("notes.txt"), fifo)
    monkeypatch.undo()
    (tmp_path / "ok.txt").write_text("hello")
    assert read_file("ok.txt") == "hello"


def test_the_demos_edit_tool_refuses_a_fifo(tmp_path: Path):
    from waygraph.demo import Workspace

    fifo = tmp_path / "pricing.py"
    os.mkfifo(fifo)
    result = guarded(lambda: Workspace(tmp_path).edit("pricing.py", "a", "b"), fifo)
    assert result.exit_code == 1 and "a FIFO" in result.output


# ---------------------------------------------------------------- the server


def test_the_server_answers_health_with_a_fifo_in_the_workspace(tmp_path: Path, fifo_plan: Path):
    nav = Navigator(store="memory://", strict=True)
    with TestClient(create_app(nav, workspace=tmp_path), base_url="http://127.0.0.1") as c:
        # More requests than the server has worker threads (40): before the
        # fix each one stuck a worker on the FIFO for good.
        with ThreadPoolExecutor(max_workers=45) as pool:
            asked = [pool.submit(c.get, "/api/session-plans") for _ in range(30)]
            asked += [pool.submit(c.get, "/api/session-plans/telegram_42") for _ in range(15)]
            _, pending = wait(asked, timeout=GUARD_SECONDS)
            if pending:
                stuck = len(pending)
                # Free the stuck readers, and those queued behind them, so
                # the failure ends the test instead of hanging it.
                for _ in range(240):
                    release(fifo_plan)
                    _, pending = wait(pending, timeout=0.5)
                    if not pending:
                        break
                pytest.fail(f"{stuck} requests still blocked after {GUARD_SECONDS:g} s")
        answers = [f.result() for f in asked]
        assert {a.status_code for a in answers[:30]} == {200}
        assert answers[0].json() == {"session_plans": []}
        one = answers[-1]
        assert one.status_code == 404 and "a FIFO" in one.json()["message"]
        health = guarded(lambda: c.get("/api/health"), fifo_plan)
        assert health.status_code == 200
