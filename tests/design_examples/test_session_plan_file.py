"""Document 001's own plan.json, loaded as the session its folder names (issue 36).

The document's example file (section "Plan 文件格式", kept verbatim in
``fixtures/session_plan.json``) has no ``session_id``: the document keeps it
at ``.sessions/{session_key}/plan.json``, so the folder is the session.
waygraph took such a file for corrupt and moved it aside; now the folder's
name is its session, and the plan goes on where the file says it is.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from waygraph.sessions import SessionPlanner, list_session_plans, load_session_plan

FIXTURE = Path(__file__).parent / "fixtures" / "session_plan.json"
DESIGNS = Path(__file__).resolve().parents[3] / "shared" / "designs"
FOLDER = "telegram_20260224"


def place(workspace: Path, folder: str = FOLDER, **changes: object) -> Path:
    """The document's plan.json in ``.sessions/<folder>/`` (with ``changes``, if any)."""
    target = workspace / ".sessions" / folder
    target.mkdir(parents=True)
    if changes:
        plan = json.loads(FIXTURE.read_text(encoding="utf-8"))
        (target / "plan.json").write_text(json.dumps({**plan, **changes}), encoding="utf-8")
    else:
        shutil.copy(FIXTURE, target / "plan.json")
    return target


def test_the_fixture_is_the_documents_example_verbatim():
    if not (DESIGNS / "README.md").is_file():
        pytest.skip(f"the design documents are not at {DESIGNS}")
    doc001 = next(DESIGNS.glob("001_*.txt")).read_text(encoding="utf-8")
    example = re.search(r"```json\n(.*?)```", doc001, re.S)
    assert example is not None and example.group(1) == FIXTURE.read_text(encoding="utf-8")
    assert "session_id" not in json.loads(FIXTURE.read_text(encoding="utf-8"))


def test_the_documents_plan_loads_as_its_folders_session(tmp_path: Path):
    folder = place(tmp_path)
    plan = load_session_plan(tmp_path, FOLDER)
    assert plan is not None and plan["id"] == "plan_abc123"
    assert plan["session_id"] == FOLDER
    (row,) = list_session_plans(tmp_path)
    assert (row["session_id"], row["steps_done"], row["iteration_count"]) == (FOLDER, 1, 15)
    assert sorted(p.name for p in folder.iterdir()) == ["plan.json"]  # nothing moved aside


def test_the_documents_running_plan_goes_on_at_step_2(tmp_path: Path):
    folder = place(tmp_path)
    planner = SessionPlanner(tmp_path, max_iterations=20)
    assert planner.on_user_message(FOLDER, "继续") == "继续"
    context = planner.context(FOLDER) or ""
    assert "- 当前步骤: 下载所有PDF文件到本地 (2/2)" in context
    assert "- 步骤进度: 2/5" in context
    planner.after_model_reply(FOLDER, "正在下载 [Progress] 3/5", 1)
    saved = json.loads((folder / "plan.json").read_text(encoding="utf-8"))
    assert saved["id"] == "plan_abc123" and saved["session_id"] == FOLDER
    assert saved["iteration_count"] == 16
    assert saved["steps"][1]["progress"] == {"current": 3, "total": 5}
    assert not list(folder.glob("plan.json.corrupt-*"))


def test_continue_resumes_the_documents_plan_once_paused(tmp_path: Path):
    place(tmp_path, status="paused")
    planner = SessionPlanner(tmp_path, max_iterations=20)
    message = planner.on_user_message(FOLDER, "继续")
    assert message.startswith(
        "[恢复任务] 当前任务: 下载分析腾讯最近5年年度财报PDF，提取关键财务指标，制作成图表\n"
        "进度: 1/2 步已完成\n"
        "当前步骤: 下载所有PDF文件到本地 (2/5)\n"
        "已用迭代: 15/20\n"
    )
    assert message.endswith("用户指令: 继续")
    plan = load_session_plan(tmp_path, FOLDER)
    assert plan is not None and plan["status"] == "running"


def test_a_plan_naming_another_session_stays_that_sessions(tmp_path: Path):
    # The id in the file wins over its folder (waygraph's own folders differ
    # from the id when two ids share a safe name): this folder's session
    # starts afresh elsewhere and the file is left as it is.
    folder = place(tmp_path, session_id="telegram:20260224")
    planner = SessionPlanner(tmp_path, max_iterations=20)
    assert planner.context(FOLDER) is None
    planner.after_model_reply(FOLDER, "[Step] 另一个任务", 1)
    plans = {row["session_id"]: row for row in list_session_plans(tmp_path)}
    assert plans["telegram:20260224"]["plan_id"] == "plan_abc123"
    assert plans["telegram:20260224"]["folder"] == FOLDER
    assert plans[FOLDER]["folder"] != FOLDER and plans[FOLDER]["plan_id"] != "plan_abc123"
    assert sorted(p.name for p in folder.iterdir()) == ["plan.json"]
    assert "下载所有PDF文件到本地" in (planner.context("telegram:20260224") or "")


def test_a_session_id_that_is_not_a_string_is_still_corrupt(tmp_path: Path):
    folder = place(tmp_path, session_id=42)
    assert load_session_plan(tmp_path, FOLDER) is None
    planner = SessionPlanner(tmp_path, max_iterations=20)
    planner.after_model_reply(FOLDER, "[Step] 重新开始", 1)
    assert list(folder.glob("plan.json.corrupt-*"))
