"""Session plans: every rule of issue #5 through the hooks an agent loop calls."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from waygraph.errors import ConfigError, StoreError
from waygraph.sessions import (
    SessionPlanner,
    _files,
    _rules,
    detect_language,
    is_continue_intent,
    is_correction,
    list_session_plans,
    load_session_plan,
    render_summary,
    step_instructions,
)

S = "telegram:42"
# Document 001's pause message, and its English equivalent.
LIMIT_EN = "Task in progress ({}/{} steps completed). Type 'continue' to resume."
LIMIT_ZH = "任务执行中（{}/{} 步已完成）。输入'继续'以恢复执行。"


class Clock:
    """Advances one second per reading, so timestamps order events."""

    def __init__(self) -> None:
        self.now = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture
def planner(tmp_path: Path) -> SessionPlanner:
    return SessionPlanner(tmp_path, clock=Clock())


def plan_file(workspace: Path, folder: str) -> Path:
    return workspace / ".sessions" / folder / "plan.json"


def on_disk(workspace: Path, folder: str = "telegram_42") -> dict:
    return json.loads(plan_file(workspace, folder).read_text(encoding="utf-8"))


def start(planner: SessionPlanner, *steps: str, message: str = "Migrate the blog") -> None:
    """A user message, then a tool-calling reply declaring ``steps``."""
    planner.on_user_message(S, message)
    planner.after_model_reply(S, "\n".join(f"[Step] {s}" for s in steps) + "\nWorking.", 1)


def statuses(planner: SessionPlanner, session: str = S) -> list[str]:
    return [s["status"] for s in planner.plan(session)["steps"]]


# ---------------------------------------------------------------- creation


def test_no_file_until_a_reply_calls_a_tool(planner: SessionPlanner, tmp_path: Path):
    assert planner.on_user_message(S, "Migrate the blog") == "Migrate the blog"
    planner.after_model_reply(S, "Which blog do you mean?", 0)
    assert planner.plan(S) is None
    assert not (tmp_path / ".sessions").exists()
    assert planner.context(S) is None

    planner.after_model_reply(S, "[Step] Export posts\n[Step] Convert\nExporting.", 1)
    plan = on_disk(tmp_path)
    assert plan["session_id"] == S
    assert plan["goal"] == "Migrate the blog"
    assert plan["status"] == "running"
    assert plan["id"].startswith("plan_") and len(plan["id"]) > len("plan_")
    assert [(s["id"], s["description"]) for s in plan["steps"]] == [
        ("step_1", "Export posts"),
        ("step_2", "Convert"),
    ]
    # The creating reply is processed like any other: it is step 1's first iteration.
    assert plan["iteration_count"] == 1
    assert plan["current_step_index"] == 0
    assert plan["steps"][0]["status"] == "running" and plan["steps"][0]["iterations"] == 1
    assert plan["steps"][0]["started_at"] is not None
    assert plan["steps"][1]["status"] == "pending" and plan["steps"][1]["started_at"] is None


def test_plan_file_has_the_schema(planner: SessionPlanner, tmp_path: Path):
    start(planner, "Export posts")
    plan = on_disk(tmp_path)
    for key in (
        "id",
        "session_id",
        "goal",
        "status",
        "created_at",
        "updated_at",
        "steps",
        "current_step_index",
        "iteration_count",
    ):
        assert key in plan, key
    step = plan["steps"][0]
    for key in ("id", "description", "status", "result", "started_at", "completed_at"):
        assert key in step, key
    assert datetime.fromisoformat(plan["created_at"]).tzinfo is not None
    assert planner.plan(S) == plan


def test_plan_returns_a_copy(planner: SessionPlanner):
    start(planner, "Export posts")
    planner.plan(S)["steps"].clear()
    assert len(planner.plan(S)["steps"]) == 1


def test_goal_falls_back_to_the_reply_when_no_user_message_was_seen(tmp_path: Path):
    planner = SessionPlanner(tmp_path)
    planner.after_model_reply(S, "[Step] Read the logs\nI'll look at the server logs first.", 1)
    assert planner.plan(S)["goal"] == "I'll look at the server logs first."


def test_goal_is_the_request_not_a_later_continue(planner: SessionPlanner):
    planner.on_user_message(S, "Migrate the blog")
    planner.on_user_message(S, "continue")
    planner.after_model_reply(S, "Working.", 1)
    assert planner.plan(S)["goal"] == "Migrate the blog"


def test_tool_calls_may_be_given_as_the_list_of_calls(planner: SessionPlanner):
    planner.on_user_message(S, "Migrate the blog")
    planner.after_model_reply(S, "Working.", [{"name": "shell"}])
    assert planner.plan(S)["status"] == "running"
    planner.after_model_reply(S, "All done.", [])
    assert planner.plan(S)["status"] == "completed"


# ---------------------------------------------------------------- steps


def test_steps_declared_mid_run_are_appended(planner: SessionPlanner):
    start(planner, "Export posts")
    planner.after_model_reply(
        S, "Found drafts too.\n- [Step] Export drafts\n2. [Step] Fix links", 1
    )
    plan = planner.plan(S)
    assert [s["description"] for s in plan["steps"]] == [
        "Export posts",
        "Export drafts",
        "Fix links",
    ]
    assert [s["id"] for s in plan["steps"]] == ["step_1", "step_2", "step_3"]
    assert statuses(planner) == ["running", "pending", "pending"]


def test_a_restated_step_is_not_added_twice(planner: SessionPlanner):
    start(planner, "Export posts", "Convert")
    planner.after_model_reply(S, "Plan:\n[Step] export  POSTS\n[Step] Convert\n[Step] Deploy", 1)
    assert [s["description"] for s in planner.plan(S)["steps"]] == [
        "Export posts",
        "Convert",
        "Deploy",
    ]


def test_numbered_step_markers_are_steps(planner: SessionPlanner):
    start(planner)
    planner.after_model_reply(S, "[Step 1] Export\n[step 2]: Convert", 1)
    assert [s["description"] for s in planner.plan(S)["steps"]] == ["Export", "Convert"]


def test_without_declared_steps_the_work_is_one_implicit_step(planner: SessionPlanner):
    start(planner)
    plan = planner.plan(S)
    assert len(plan["steps"]) == 1
    assert plan["steps"][0]["description"] == "Migrate the blog"
    assert plan["steps"][0]["implicit"] is True
    assert "the whole task" in planner.context(S)
    # Declared later, the first step takes the implicit step's place (and its work so far).
    planner.after_model_reply(S, "[Step] Export posts\n[Step] Convert", 1)
    plan = planner.plan(S)
    assert [s["description"] for s in plan["steps"]] == ["Export posts", "Convert"]
    assert "implicit" not in plan["steps"][0]
    assert plan["steps"][0]["iterations"] == 2


def test_completing_the_last_step_leaves_no_current_step_until_one_is_declared(
    planner: SessionPlanner,
):
    start(planner, "Export posts")
    planner.after_model_reply(S, "Exported. [done]", 1)
    plan = planner.plan(S)
    assert plan["status"] == "running" and plan["current_step_index"] == 1
    assert "Every declared step is done" in planner.context(S)
    planner.after_model_reply(S, "[Step] Deploy\nDeploying.", 1)
    plan = planner.plan(S)
    assert plan["current_step_index"] == 1
    assert plan["steps"][1]["status"] == "running" and plan["steps"][1]["iterations"] == 1


# ---------------------------------------------------------------- completion


@pytest.mark.parametrize(
    "marker", ["[done]", "[step done]", "[completed]", "[完成]", "[DONE]", "[ Step Done ]"]
)
def test_an_explicit_marker_completes_the_step_on_its_first_iteration(tmp_path: Path, marker: str):
    planner = SessionPlanner(tmp_path)
    planner.on_user_message(S, "Migrate the blog")
    planner.after_model_reply(S, f"[Step] Export posts\n[Step] Convert\nExported all. {marker}", 1)
    plan = planner.plan(S)
    first, second = plan["steps"]
    assert first["status"] == "completed" and first["completed_by"] == "marker"
    assert first["completed_at"] is not None
    assert first["result"].startswith("Exported all.")
    assert second["status"] == "running" and plan["current_step_index"] == 1


@pytest.mark.parametrize(
    "reply",
    [
        "Now I will convert.",
        "Next, conversion.",
        "Then convert.",
        "Let me convert.",
        "LET  ME convert.",
        "Moving on to conversion.",
        "I'll proceed to convert.",
        "现在转换格式。",
        "接下来转换格式。",
        "然后转换格式。",
        "继续转换格式。",
        "开始转换格式。",
        "现在让我转换格式。",
    ],
)
def test_a_transition_word_completes_a_step_from_its_second_iteration(
    planner: SessionPlanner, reply: str
):
    start(planner, "Export posts", "Convert")
    planner.after_model_reply(S, reply, 1)
    first = planner.plan(S)["steps"][0]
    assert first["status"] == "completed" and first["completed_by"] == "transition"
    assert first["iterations"] == 2


def test_a_transition_word_on_the_first_iteration_does_not_complete_the_step(
    planner: SessionPlanner,
):
    planner.on_user_message(S, "Migrate the blog")
    planner.after_model_reply(S, "[Step] Export posts\n[Step] Convert\nLet me export now.", 1)
    assert statuses(planner) == ["running", "pending"]
    # Same for a step just started by the previous step's completion.
    planner.after_model_reply(S, "Exported. [done]", 1)
    planner.after_model_reply(S, "Now converting.", 1)
    assert statuses(planner) == ["completed", "running"]
    planner.after_model_reply(S, "Converted; next the links.", 1)
    assert statuses(planner) == ["completed", "completed"]


@pytest.mark.parametrize(
    "reply",
    [
        "Nowhere to be found.",
        "Thenceforth fine.",
        "Proceeding carefully.",
        "The nextval sequence.",
        "A letme function.",
    ],
)
def test_transition_words_count_only_as_whole_words(planner: SessionPlanner, reply: str):
    start(planner, "Export posts", "Convert")
    planner.after_model_reply(S, reply, 1)
    assert statuses(planner) == ["running", "pending"]


def test_transition_words_inside_step_declarations_do_not_count(planner: SessionPlanner):
    start(planner, "Export posts")
    planner.after_model_reply(S, "[Step] Then convert\n[Step] Next deploy\nStill exporting.", 1)
    assert statuses(planner) == ["running", "pending", "pending"]


def test_a_step_times_out_after_ten_iterations(planner: SessionPlanner):
    start(planner, "Export posts", "Convert")
    for _ in range(8):
        planner.after_model_reply(S, "Still exporting.", 1)
    first = planner.plan(S)["steps"][0]
    assert first["status"] == "running" and first["iterations"] == 9
    planner.after_model_reply(S, "Still exporting, page 10.", 1)
    plan = planner.plan(S)
    first, second = plan["steps"]
    assert first["status"] == "completed" and first["completed_by"] == "timeout"
    assert first["iterations"] == 10 and first["result"] == "Still exporting, page 10."
    assert second["status"] == "running"


def test_the_completing_reply_is_the_steps_last_iteration_not_the_next_ones_first(
    planner: SessionPlanner,
):
    start(planner, "Export posts", "Convert")
    planner.after_model_reply(S, "Exported 40 posts. [done]", 1)
    first, second = planner.plan(S)["steps"]
    assert first["iterations"] == 2 and first["result"] == "Exported 40 posts. [done]"
    assert second["status"] == "running" and second["iterations"] == 0
    planner.after_model_reply(S, "Converting.", 1)
    assert planner.plan(S)["steps"][1]["iterations"] == 1


def test_the_result_keeps_about_200_characters(planner: SessionPlanner):
    start(planner, "Export posts")
    planner.after_model_reply(S, "word " * 100 + "[done]", 1)
    result = planner.plan(S)["steps"][0]["result"]
    assert 150 <= len(result) <= 200 and result.endswith("…")


def test_progress_updates_the_current_step(planner: SessionPlanner):
    start(planner, "Export posts", "Convert")
    planner.after_model_reply(S, "[Progress] 3/40\nexporting... [progress] 12 / 40", 1)
    plan = planner.plan(S)
    assert plan["steps"][0]["progress"] == {"current": 12, "total": 40}
    assert plan["steps"][0]["status"] == "running"
    assert "- Step progress: 12/40" in planner.context(S).splitlines()
    assert "progress" not in plan["steps"][1]


def test_failed_marks_the_step_and_the_plan_and_keeps_them(planner: SessionPlanner, tmp_path: Path):
    start(planner, "Export posts", "Convert")
    planner.after_model_reply(S, "[Failed] the blog API returns 403", 1)
    plan = on_disk(tmp_path)
    assert plan["status"] == "failed"
    assert plan["failure_reason"] == "the blog API returns 403"
    assert plan["steps"][0]["status"] == "failed"
    assert plan["steps"][0]["result"] == "the blog API returns 403"
    assert plan["steps"][1]["status"] == "pending"
    # Later replies in the same loop leave the failed plan as it is, for analysis.
    planner.after_model_reply(S, "Trying again.", 1)
    planner.after_model_reply(S, "Gave up.", 0)
    assert on_disk(tmp_path) == plan
    assert planner.context(S) is None


def test_a_reply_without_tool_calls_completes_the_plan(planner: SessionPlanner):
    start(planner, "Export posts", "Convert")
    planner.after_model_reply(S, "Exported. [done]", 1)
    planner.after_model_reply(S, "Everything is migrated.", 0)
    plan = planner.plan(S)
    assert plan["status"] == "completed"
    assert [s["status"] for s in plan["steps"]] == ["completed", "completed"]
    assert plan["steps"][1]["completed_by"] == "final"
    assert plan["steps"][1]["result"] == "Everything is migrated."
    assert planner.context(S) is None


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


# ---------------------------------------------------------------- context


def test_context_in_english(planner: SessionPlanner):
    start(planner, "Export posts", "Convert")
    planner.after_model_reply(S, "[Progress] 2/5", 1)
    text = planner.context(S)
    lines = text.splitlines()
    # Document 001's system-prompt addition first, in English...
    assert lines[:9] == [
        "Current task plan:",
        "- Goal: Migrate the blog",
        "- Current step: Export posts (1/2)",
        "- Step progress: 2/5",
        "",
        "You can declare new steps in this format:",
        "[Step] step description",
        "",
        "When you finish the current step, the system moves on to the next step by itself.",
    ]
    # ...then waygraph's lines.
    assert "Done: 0/2 steps" in lines
    assert "  ⏳ 1. Export posts (2/5)" in lines and "  ⏸ 2. Convert" in lines
    assert "[done]" in text and "[Failed] reason" in text and "[Progress] k/n" in text


def test_context_in_chinese_by_setting(tmp_path: Path):
    planner = SessionPlanner(tmp_path, language="zh")
    start(planner, "Export posts", "Convert")
    lines = planner.context(S).splitlines()
    assert "\n".join(lines[:8]) == (
        "当前任务规划信息：\n"
        "- 目标: Migrate the blog\n"
        "- 当前步骤: Export posts (1/2)\n"
        "\n"
        "你可以使用以下格式声明新步骤：\n"
        "[Step] 步骤描述\n"
        "\n"
        "完成当前步骤后，系统会自动推进到下一步。"
    )
    assert "[Progress] k/n" in lines[-1] and "[完成]" in lines[-1]


def test_context_shows_a_window_of_steps_in_a_long_plan(planner: SessionPlanner):
    start(planner, *(f"Part {i}" for i in range(1, 21)))
    for _ in range(8):
        planner.after_model_reply(S, "Finished this part [done]", 1)
    text = planner.context(S)
    assert "- Current step: Part 9 (9/20)" in text
    assert "  … 5 earlier step(s)" in text and "  … 6 more step(s)" in text
    assert "Part 1\n" not in text and "Part 20" not in text


def test_step_instructions_are_available_before_any_plan():
    assert "[Step] description" in step_instructions()
    assert "[Step] 描述" in step_instructions("zh")


def test_bad_settings_are_config_errors(tmp_path: Path):
    with pytest.raises(ConfigError, match="max_iterations"):
        SessionPlanner(tmp_path, max_iterations=0)
    with pytest.raises(ConfigError, match="language"):
        SessionPlanner(tmp_path, language="fr")
    assert SessionPlanner(tmp_path, language="zh-CN").language == "zh"


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


# ---------------------------------------------------------------- pure rules


def test_rules_never_change_the_plan_they_are_given():
    plan = _rules.new_plan("s", "goal", now="t0", plan_id="plan_1")
    plan = _rules.apply_reply(plan, "[Step] A\n[Step] B\nworking", 1, now="t1")
    frozen = json.dumps(plan, sort_keys=True)
    after = _rules.apply_reply(plan, "A finished [done]", 1, now="t2")
    _rules.pause(after, now="t3")
    _rules.fail(after, "x", now="t3")
    _rules.reopen(after, now="t3")
    assert json.dumps(plan, sort_keys=True) == frozen
    assert after["steps"][0]["status"] == "completed"


# ---------------------------------------------------------------- docs


def test_the_agent_loop_in_the_docs_runs_as_documented(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    import re

    doc = (Path(__file__).parent.parent / "docs" / "sessions.md").read_text(encoding="utf-8")
    example = next(b for b in re.findall(r"```python\n(.*?)```", doc, re.S) if "SCRIPT" in b)
    given: list[str] = []
    real = SessionPlanner.on_user_message

    def recording(self: SessionPlanner, session_id: str, text: str) -> str:
        given.append(real(self, session_id, text))
        return given[-1]

    monkeypatch.setattr(SessionPlanner, "on_user_message", recording)
    exec(compile(example, "docs/sessions.md", "exec"), {})  # the doc's own code
    expected = [line[2:] for line in example.splitlines() if line.startswith("# ")]
    assert capsys.readouterr().out.splitlines() == expected
    shown = re.search(r"user wrote\):\n\n```\n(.*?)\n```", doc, re.S).group(1)
    assert given == ["Migrate my blog to Hugo", shown]
