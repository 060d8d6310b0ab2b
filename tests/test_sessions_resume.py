"""Session plans (issue #5): the iteration limit pauses a plan, "continue" resumes it,
a correction reopens a step, and a finished plan gives way to the next task."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.session_helpers import S, on_disk, start, statuses
from waygraph.sessions import (
    SessionPlanner,
    detect_language,
    is_continue_intent,
    is_correction,
)

# Document 001's pause message, and its English equivalent.
LIMIT_EN = "Task in progress ({}/{} steps completed). Type 'continue' to resume."
LIMIT_ZH = "任务执行中（{}/{} 步已完成）。输入'继续'以恢复执行。"


# ---------------------------------------------------------------- iteration limit


def test_iteration_limit_pauses_a_running_plan_whatever_its_count(
    planner: SessionPlanner, tmp_path: Path
):
    start(planner, "Export posts", "Convert", "Deploy")
    planner.after_model_reply(S, "Exported. [done]", 1)
    assert planner.on_iteration_limit(S) == LIMIT_EN.format(1, 3)
    assert on_disk(tmp_path)["status"] == "paused"
    assert on_disk(tmp_path)["iteration_count"] == 2
    # Asked again (the host retried), the answer is the same and nothing changes.
    assert planner.on_iteration_limit(S) == LIMIT_EN.format(1, 3)


def test_reaching_max_iterations_pauses_the_plan(tmp_path: Path):
    planner = SessionPlanner(tmp_path, max_iterations=3)
    start(planner, "Export posts")
    planner.after_model_reply(S, "Working.", 1)
    assert planner.plan(S)["status"] == "running"
    planner.after_model_reply(S, "Working.", 1)
    assert planner.plan(S)["status"] == "paused"
    # While paused, replies are not recorded: the plan waits for "continue".
    planner.after_model_reply(S, "Working more.", 1)
    assert planner.plan(S)["iteration_count"] == 3
    assert "Make no more tool calls" in planner.context(S)
    assert LIMIT_EN.format(0, 1) in planner.context(S)
    assert planner.on_iteration_limit(S) == LIMIT_EN.format(0, 1)


def test_unattended_fails_the_plan_at_the_limit(tmp_path: Path):
    planner = SessionPlanner(tmp_path, unattended=True)
    start(planner, "Export posts", "Convert")
    message = planner.on_iteration_limit(S)
    plan = planner.plan(S)
    assert plan["status"] == "failed" and plan["failure_reason"] == "iteration limit reached"
    assert plan["steps"][0]["status"] == "failed"
    assert message == "Task failed (0/2 steps done): iteration limit reached"


def test_unattended_fails_on_reaching_max_iterations(tmp_path: Path):
    planner = SessionPlanner(tmp_path, max_iterations=2, unattended=True)
    start(planner, "Export posts")
    planner.after_model_reply(S, "Working.", 1)
    assert planner.plan(S)["status"] == "failed"


def test_iteration_limit_message_follows_the_users_language(tmp_path: Path):
    planner = SessionPlanner(tmp_path)  # language setting stays English
    planner.on_user_message(S, "把博客迁移到 Hugo")
    planner.after_model_reply(S, "[Step] 导出文章\n[Step] 转换格式\n导出中。", 1)
    assert planner.on_iteration_limit(S) == LIMIT_ZH.format(0, 2)


def test_iteration_limit_language_comes_from_the_goal_after_a_restart(tmp_path: Path):
    first = SessionPlanner(tmp_path)
    first.on_user_message(S, "把博客迁移到 Hugo")
    first.after_model_reply(S, "[Step] 导出文章\n导出中。", 1)
    assert SessionPlanner(tmp_path).on_iteration_limit(S) == LIMIT_ZH.format(0, 1)
    assert SessionPlanner(tmp_path / "other", language="zh").on_iteration_limit(S) == (
        "任务执行中。输入'继续'以恢复执行。"
    )


def test_iteration_limit_without_a_plan_still_answers(planner: SessionPlanner):
    assert planner.on_iteration_limit(S) == "Task in progress. Type 'continue' to resume."


def test_iteration_limit_on_a_completed_plan_says_so(planner: SessionPlanner):
    start(planner, "Export posts")
    planner.after_model_reply(S, "Done.", 0)
    assert planner.on_iteration_limit(S) == "Task completed (1/1 steps done)."
    assert planner.plan(S)["status"] == "completed"


# ---------------------------------------------------------------- resume


@pytest.mark.parametrize(
    "text",
    [
        "continue",
        "  Go   On! ",
        "RESUME",
        "keep going",
        "Continue.",
        "继续",
        "继续执行",
        " 继续。",
        "请继续执行任务",  # document 001: any message containing 继续执行
        "好的，继续执行吧",
    ],
)
def test_continue_intents(text: str):
    assert is_continue_intent(text)


@pytest.mark.parametrize(
    "text",
    [
        "please continue",
        "continue the essay",
        "go on holiday",
        "继续写文档",
        "",
        None,
        "resumes",
        "不要继续执行",
        "先别继续执行了",
        "暂停，不再继续执行",
    ],
)
def test_sentences_containing_the_word_are_not_continue_intents(text: str | None):
    assert not is_continue_intent(text)


def test_continue_resumes_a_paused_plan_with_a_summary(planner: SessionPlanner):
    start(planner, "Export posts", "Convert", "Deploy")
    planner.after_model_reply(S, "Exported. [done]", 1)
    planner.after_model_reply(S, "Converting [Progress] 3/10", 1)
    planner.on_iteration_limit(S)

    message = planner.on_user_message(S, "continue")
    assert planner.plan(S)["status"] == "running"
    assert message == (
        "[Resuming task] Current task: Migrate the blog\n"
        "Progress: 1/3 steps completed\n"
        "Current step: Convert (3/10)\n"
        "Iterations used: 3/20\n"
        "\n"
        "Step history:\n"
        "1. ✓ Export posts\n"
        "2. ⏳ Convert (in progress)\n"
        "3. ⏸ Deploy (pending)\n"
        "\n"
        "Resume from the current step; do not redo completed steps.\n"
        "\n"
        "User instruction: continue"
    )


def test_continue_in_chinese_gives_a_chinese_summary(planner: SessionPlanner):
    start(planner, "导出文章", "转换格式", message="迁移博客")
    planner.after_model_reply(S, "导出完毕 [完成]", 1)
    planner.on_iteration_limit(S)
    message = planner.on_user_message(S, "继续")
    assert message.startswith("[恢复任务] 当前任务: 迁移博客\n进度: 1/2 步已完成\n")
    assert "\n当前步骤: 转换格式\n已用迭代: 2/20\n\n历史步骤:\n" in message
    assert "1. ✓ 导出文章\n2. ⏳ 转换格式 (进行中)" in message
    assert message.endswith("\n\n用户指令: 继续")


def test_the_language_follows_the_goal_not_an_english_continue(planner: SessionPlanner):
    start(planner, "导出文章", message="迁移博客到 Hugo")
    assert planner.on_iteration_limit(S) == LIMIT_ZH.format(0, 1)
    message = planner.on_user_message(S, "continue")
    assert message.startswith("[恢复任务] 当前任务: 迁移博客到 Hugo\n")
    assert message.endswith("\n\n用户指令: continue")
    assert planner.context(S).startswith("当前任务规划信息：\n")


def test_a_language_setting_overrides_the_goal(tmp_path: Path):
    planner = SessionPlanner(tmp_path, language="en")
    start(planner, "导出文章", message="迁移博客")
    assert planner.on_iteration_limit(S) == LIMIT_EN.format(0, 1)
    assert planner.on_user_message(S, "继续").startswith("[Resuming task] Current task: 迁移博客")
    assert SessionPlanner(tmp_path, language="auto").language is None


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("把博客迁移到 Hugo", "zh"),
        ("Translate 你好 into English", "en"),
        ("下载 tencent 2024 PDF", "zh"),
        ("继续", "zh"),
        ("go on", "en"),
        ("2024", None),
    ],
)
def test_the_language_is_the_script_most_of_the_text_is_in(text: str, language: str | None):
    assert detect_language(text) == language


def test_iterations_used_count_the_stretch_and_then_the_lifetime(tmp_path: Path):
    planner = SessionPlanner(tmp_path, max_iterations=2)
    start(planner, "Export posts")
    planner.after_model_reply(S, "Working.", 1)  # second iteration: paused
    assert "\nIterations used: 2/2\n" in planner.on_user_message(S, "continue")
    planner.after_model_reply(S, "Working.", 1)
    planner.after_model_reply(S, "Working.", 1)
    assert "\nIterations used: 2/2 (4 in all)\n" in planner.on_user_message(S, "continue")


def test_other_messages_leave_a_paused_plan_paused(planner: SessionPlanner):
    start(planner, "Export posts")
    planner.on_iteration_limit(S)
    for text in ("What's the weather?", "please continue with the docs"):
        assert planner.on_user_message(S, text) == text
        assert planner.plan(S)["status"] == "paused"


def test_continue_on_a_running_plan_passes_through(planner: SessionPlanner):
    start(planner, "Export posts")
    assert planner.on_user_message(S, "continue") == "continue"
    assert planner.plan(S)["status"] == "running"


def test_resuming_gives_a_fresh_iteration_budget(tmp_path: Path):
    planner = SessionPlanner(tmp_path, max_iterations=2)
    start(planner, "Export posts")
    planner.after_model_reply(S, "Working.", 1)
    assert planner.plan(S)["status"] == "paused"
    planner.on_user_message(S, "go on")
    planner.after_model_reply(S, "Working.", 1)
    assert planner.plan(S)["status"] == "running"
    planner.after_model_reply(S, "Working.", 1)
    plan = planner.plan(S)
    assert plan["status"] == "paused" and plan["iteration_count"] == 4


def test_a_long_task_survives_a_restart(tmp_path: Path):
    first = SessionPlanner(tmp_path)
    start(first, "Export posts", "Convert")
    first.after_model_reply(S, "Exported. [done]", 1)
    first.on_iteration_limit(S)
    second = SessionPlanner(tmp_path)  # a new process
    assert "\nCurrent step: Convert\n" in second.on_user_message(S, "continue")
    second.after_model_reply(S, "Converted.", 0)
    assert second.plan(S)["status"] == "completed"


# ---------------------------------------------------------------- correction


@pytest.mark.parametrize(
    "text", ["not done yet", "That's not finished", "it isn't complete", "还没完成", "你还没做完"]
)
def test_corrections(text: str):
    assert is_correction(text)


def test_a_correction_reopens_the_step_just_completed(planner: SessionPlanner):
    start(planner, "Export posts", "Convert")
    planner.after_model_reply(S, "Exported. [done]", 1)
    assert planner.on_user_message(S, "Not done yet, drafts are missing") == (
        "Not done yet, drafts are missing"
    )
    plan = planner.plan(S)
    first, second = plan["steps"]
    assert first["status"] == "running" and first["result"] is None
    assert first["completed_at"] is None and first["iterations"] == 0
    assert second["status"] == "pending" and second["started_at"] is None
    assert plan["current_step_index"] == 0
    # The reopened step starts counting afresh: one transition word does not close it.
    planner.after_model_reply(S, "Now exporting drafts.", 1)
    assert statuses(planner) == ["running", "pending"]


def test_a_correction_reopens_a_completed_plan(planner: SessionPlanner):
    start(planner, "导出文章", "转换格式", message="迁移博客")
    planner.after_model_reply(S, "导出完毕 [完成]", 1)
    planner.after_model_reply(S, "全部完成。", 0)
    message = planner.on_user_message(S, "还没完成，图片没迁移")
    plan = planner.plan(S)
    assert plan["status"] == "running"
    assert [s["status"] for s in plan["steps"]] == ["completed", "running"]
    assert "\n当前步骤: 转换格式\n" in message
    assert message.endswith("\n\n用户指令: 还没完成，图片没迁移")
    # It is the same plan, not a fresh one.
    planner.after_model_reply(S, "迁移图片中。", 1)
    assert planner.plan(S)["id"] == plan["id"]


def test_a_correction_with_nothing_completed_passes_through(planner: SessionPlanner):
    start(planner, "Export posts")
    before = planner.plan(S)
    assert planner.on_user_message(S, "not done yet") == "not done yet"
    assert planner.plan(S) == before


# ---------------------------------------------------------------- after a plan ends


def test_a_new_message_after_a_finished_plan_starts_a_fresh_one(
    planner: SessionPlanner, tmp_path: Path
):
    start(planner, "Export posts")
    planner.after_model_reply(S, "Migrated.", 0)
    old = planner.plan(S)
    planner.on_user_message(S, "Now add a search page")
    assert planner.plan(S) == old  # nothing changes until a reply calls a tool
    planner.after_model_reply(S, "Sure, what style?", 0)
    assert planner.plan(S) == old
    planner.after_model_reply(S, "[Step] Add lunr.js\nInstalling.", 1)
    new = planner.plan(S)
    assert new["id"] != old["id"] and new["goal"] == "Now add a search page"
    assert [s["description"] for s in new["steps"]] == ["Add lunr.js"]
    archived = tmp_path / ".sessions" / "telegram_42" / f"plan-{old['id']}.json"
    assert json.loads(archived.read_text(encoding="utf-8")) == old


def test_tool_calls_after_a_finished_plan_without_a_new_message_are_ignored(
    planner: SessionPlanner,
):
    start(planner, "Export posts")
    planner.after_model_reply(S, "Migrated.", 0)
    old = planner.plan(S)
    planner.after_model_reply(S, "One more check.", 1)
    assert planner.plan(S) == old


def test_a_failed_plan_is_archived_when_the_next_task_starts(
    planner: SessionPlanner, tmp_path: Path
):
    start(planner, "Export posts")
    planner.after_model_reply(S, "[Failed] no access", 1)
    failed = planner.plan(S)
    planner.on_user_message(S, "Try the backup instead")
    planner.after_model_reply(S, "Restoring.", 1)
    assert planner.plan(S)["goal"] == "Try the backup instead"
    assert (tmp_path / ".sessions" / "telegram_42" / f"plan-{failed['id']}.json").exists()
