"""Session plans (issue #5) on disk: atomic writes, corrupt and unreadable files, one
folder per session, and the functions the CLI lists and loads plans with."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

import pytest

from tests.session_helpers import Clock, S, on_disk, plan_file, start
from waygraph.errors import StoreError
from waygraph.sessions import (
    SessionPlanner,
    _files,
    list_session_plans,
    load_session_plan,
    render_summary,
)

# ---------------------------------------------------------------- files


def test_writes_are_atomic_and_leave_no_temporary_files(planner: SessionPlanner, tmp_path: Path):
    start(planner, "导出文章", message="迁移博客")
    for _ in range(3):
        planner.after_model_reply(S, "working", 1)
    folder = tmp_path / ".sessions" / "telegram_42"
    assert sorted(p.name for p in folder.iterdir()) == ["plan.json"]
    assert "迁移博客" in (folder / "plan.json").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "garbage",
    [b"{not json", b"\xff\xfe\x00", b"[1, 2]", b'{"id": "plan_x", "session_id": "telegram:42"}'],
)
def test_a_corrupt_plan_is_moved_aside_and_replaced(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, garbage: bytes
):
    path = plan_file(tmp_path, "telegram_42")
    path.parent.mkdir(parents=True)
    path.write_bytes(garbage)
    planner = SessionPlanner(tmp_path, clock=Clock())
    with caplog.at_level(logging.WARNING, logger="waygraph.sessions"):
        assert planner.plan(S) is None  # reading alone changes nothing
        assert path.read_bytes() == garbage
        assert planner.on_user_message(S, "Migrate the blog") == "Migrate the blog"
        planner.after_model_reply(S, "[Step] Export posts\nExporting.", 1)
    assert planner.plan(S)["goal"] == "Migrate the blog"
    aside = [p for p in path.parent.iterdir() if p.name.startswith("plan.json.corrupt-")]
    # One clock reading per hook: the file is named after the reply that replaced it.
    assert planner.plan(S)["created_at"] == "2025-03-01T12:00:02+00:00"
    assert [p.name for p in aside] == ["plan.json.corrupt-20250301T120002Z"]
    assert aside[0].read_bytes() == garbage
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("corrupt" in w and str(path) in w for w in warnings)
    assert any("moved corrupt session plan" in w for w in warnings)


def test_write_failure_degrades_to_no_plan(
    planner: SessionPlanner,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
):
    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)
    with caplog.at_level(logging.WARNING, logger="waygraph.sessions"):
        assert planner.on_user_message(S, "Migrate the blog") == "Migrate the blog"
        planner.after_model_reply(S, "[Step] Export posts\nExporting.", 1)
        assert planner.plan(S) is None and planner.context(S) is None
        assert planner.on_iteration_limit(S) == "Task in progress. Type 'continue' to resume."
    assert any("Permission denied" in r.getMessage() for r in caplog.records)
    folder = tmp_path / ".sessions" / "telegram_42"
    assert list(folder.iterdir()) == []  # the temporary file was cleaned up
    monkeypatch.undo()
    planner.after_model_reply(S, "Exporting.", 1)  # writable again: the plan starts
    assert planner.plan(S)["goal"] == "Migrate the blog"


def test_an_unwritable_sessions_folder_degrades_without_a_crash(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    # A real failure even for root: .sessions is a file, so no folder can go in it.
    (tmp_path / ".sessions").write_text("not a folder")
    planner = SessionPlanner(tmp_path)
    with caplog.at_level(logging.WARNING, logger="waygraph.sessions"):
        assert planner.on_user_message(S, "Migrate the blog") == "Migrate the blog"
        planner.after_model_reply(S, "[Step] Export posts\nExporting.", 1)
        planner.after_model_reply(S, "Done.", 0)
        assert planner.on_user_message(S, "continue") == "continue"
        assert planner.on_iteration_limit(S) == "Task in progress. Type 'continue' to resume."
        assert planner.plan(S) is None and planner.context(S) is None
    assert any("continuing without a plan" in r.getMessage() for r in caplog.records)


def test_a_plan_that_cannot_be_read_is_never_overwritten(
    planner: SessionPlanner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    start(planner, "Export posts")
    before = plan_file(tmp_path, "telegram_42").read_bytes()
    from waygraph.sessions import _files

    real = _files.read_regular_file

    # Plan files are read through safe_files' one reader (issue 33).
    def unreadable(path: Path) -> bytes:
        if path.name == "plan.json":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(_files, "read_regular_file", unreadable)
    planner.after_model_reply(S, "[Step] Convert\nExported. [done]", 1)
    assert planner.on_user_message(S, "continue") == "continue"
    assert planner.plan(S) is None
    monkeypatch.undo()
    assert plan_file(tmp_path, "telegram_42").read_bytes() == before


def test_a_directory_in_place_of_plan_json_is_moved_aside(planner: SessionPlanner, tmp_path: Path):
    # Issue 33: a directory is refused unread, like a FIFO or a link, and
    # renamed aside (contents and all) when the next plan starts.
    path = plan_file(tmp_path, "telegram_42")
    path.mkdir(parents=True)
    (path / "inside.txt").write_text("kept")
    planner.on_user_message(S, "Migrate the blog")
    planner.after_model_reply(S, "Working.", 1)
    aside = [p for p in path.parent.iterdir() if p.name.startswith("plan.json.corrupt-")]
    assert len(aside) == 1 and (aside[0] / "inside.txt").read_text() == "kept"
    assert path.is_file() and planner.plan(S) is not None


def test_two_sessions_never_share_a_file(tmp_path: Path):
    planner = SessionPlanner(tmp_path)
    for session, goal in (("a:b", "first"), ("a_b", "second"), ("a/b", "third")):
        planner.on_user_message(session, goal)
        planner.after_model_reply(session, f"[Step] {goal} step\nWorking.", 1)
    root = tmp_path / ".sessions"
    digest = {s: hashlib.sha256(s.encode()).hexdigest()[:8] for s in ("a_b", "a/b")}
    assert sorted(p.name for p in root.iterdir()) == sorted(
        ["a_b", f"a_b-{digest['a_b']}", f"a_b-{digest['a/b']}"]
    )
    assert json.loads((root / "a_b" / "plan.json").read_text())["session_id"] == "a:b"
    restarted = SessionPlanner(tmp_path)
    for session, goal in (("a:b", "first"), ("a_b", "second"), ("a/b", "third")):
        assert restarted.plan(session)["goal"] == goal
        assert restarted.plan(session)["session_id"] == session
        restarted.after_model_reply(session, "[done]", 1)
    assert all(
        restarted.plan(s)["steps"][0]["status"] == "completed" for s in ("a:b", "a_b", "a/b")
    )


def test_a_corrupt_file_in_a_sessions_own_folder_counts_as_its_own(tmp_path: Path):
    planner = SessionPlanner(tmp_path)
    planner.on_user_message("a:b", "first")
    planner.after_model_reply("a:b", "Working.", 1)
    planner.on_user_message("a_b", "second")
    planner.after_model_reply("a_b", "Working.", 1)
    hashed = f"a_b-{hashlib.sha256(b'a_b').hexdigest()[:8]}"
    plan_file(tmp_path, "a_b").write_text("{broken")
    # "a_b" keeps its displaced folder; "a:b" takes over its own broken file.
    assert planner.plan("a_b")["goal"] == "second"
    planner.after_model_reply("a:b", "Working again.", 1)
    assert on_disk(tmp_path, "a_b")["session_id"] == "a:b"
    assert on_disk(tmp_path, hashed)["session_id"] == "a_b"


@pytest.mark.parametrize(
    ("session", "folder"),
    [
        ("../../etc/passwd", "______etc_passwd"),
        ("..", "__"),
        ("/", "_"),
        ("", "_"),
        ("用户:张三", "_____"),
        ("café/ü", "caf___"),
        ("a\x00b", "a_b"),
        ("x" * 300, None),
    ],
)
def test_session_keys_stay_inside_the_sessions_folder(
    tmp_path: Path, session: str, folder: str | None
):
    workspace = tmp_path / "ws"
    planner = SessionPlanner(workspace)
    planner.on_user_message(session, "task")
    planner.after_model_reply(session, "Working.", 1)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) == 1
    path = files[0]
    assert path.name == "plan.json"
    assert path.parent.parent == workspace / ".sessions"
    assert json.loads(path.read_text(encoding="utf-8"))["session_id"] == session
    if folder is not None:
        assert path.parent.name == folder
    else:
        assert len(path.parent.name) <= 110
    assert planner.plan(session)["goal"] == "task"


def test_safe_names():
    assert _files.safe_name("telegram:42") == "telegram_42"
    assert _files.safe_name("Ok_name-1") == "Ok_name-1"


# ---------------------------------------------------------------- CLI functions


def test_list_and_load_session_plans(tmp_path: Path):
    planner = SessionPlanner(tmp_path, clock=Clock())
    start(planner, "Export posts", "Convert")
    planner.after_model_reply(S, "Exported [done]", 1)
    planner.on_user_message("cli", "Write docs")
    planner.after_model_reply("cli", "Writing.", 0)  # no tool call: no plan
    planner.after_model_reply("cli", "Writing.", 1)
    planner.after_model_reply("cli", "Written.", 0)
    planner.on_user_message("cli", "Now the changelog")
    planner.after_model_reply("cli", "Writing.", 1)
    (tmp_path / ".sessions" / "broken").mkdir()
    (tmp_path / ".sessions" / "broken" / "plan.json").write_text("{")

    rows = list_session_plans(tmp_path)
    assert [
        (r["session_id"], r["folder"], r["status"], r["steps_done"], r["steps_total"]) for r in rows
    ] == [("cli", "cli", "running", 0, 1), ("telegram:42", "telegram_42", "running", 1, 2)]
    assert rows[1]["goal"] == "Migrate the blog" and rows[1]["current_step"] == "Convert"
    assert rows[1]["updated_at"] == planner.plan(S)["updated_at"]
    assert not any(r["archived"] for r in rows)
    everything = list_session_plans(tmp_path, include_archived=True)
    archived = [r for r in everything if r["archived"]]
    assert [(r["session_id"], r["status"], r["goal"]) for r in archived] == [
        ("cli", "completed", "Write docs")
    ]

    assert load_session_plan(tmp_path, S) == planner.plan(S)
    assert load_session_plan(tmp_path, "telegram_42") == planner.plan(S)  # by folder name
    assert load_session_plan(tmp_path, "nobody") is None
    assert load_session_plan(tmp_path, "broken") is None
    assert list_session_plans(tmp_path / "empty") == []


def test_load_session_plan_raises_a_store_error_when_unreadable(tmp_path: Path):
    plan_file(tmp_path, "telegram_42").mkdir(parents=True)
    with pytest.raises(StoreError, match="telegram:42"):
        load_session_plan(tmp_path, S)


def test_render_summary_marks_every_step_state():
    plan = {
        "goal": "Ship",
        "status": "failed",
        "iteration_count": 7,
        "current_step_index": 1,
        "failure_reason": "disk full",
        "steps": [
            {"description": "Build", "status": "completed"},
            {"description": "Upload", "status": "failed"},
            {"description": "Announce", "status": "pending"},
        ],
    }
    assert render_summary(plan) == (
        "[waygraph] Session plan (failed)\nGoal: Ship\n"
        "Progress: 1/3 steps done, 7 iterations used\nFailed: disk full\n"
        "  ✓ 1. Build\n  ✗ 2. Upload\n  ⏸ 3. Announce"
    )
    assert render_summary(plan, "zh").startswith("[waygraph] 会话计划（已失败）\n目标：Ship")
