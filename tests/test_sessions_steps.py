"""Session plans (issue #5) through the hooks an agent loop calls: a plan is made,
steps are declared, and each step completes (marker, transition, timeout, failure)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from tests.session_helpers import S, on_disk, start, statuses
from waygraph.engine import session_plan as rules
from waygraph.sessions import SessionPlanner

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


# ---------------------------------------------------------------- pure rules


def test_rules_never_change_the_plan_they_are_given():
    # The rules live in the engine and take the frozen plan (issue 38 item 3).
    plan = rules.new_plan("s", "goal", now="t0", plan_id="plan_1")
    plan = rules.apply_reply(plan, "[Step] A\n[Step] B\nworking", 1, now="t1")
    frozen = json.dumps(plan.to_dict(), sort_keys=True)
    after = rules.apply_reply(plan, "A finished [done]", 1, now="t2")
    rules.pause(after, now="t3")
    rules.fail(after, "x", now="t3")
    rules.reopen(after, now="t3")
    assert json.dumps(plan.to_dict(), sort_keys=True) == frozen
    assert after.steps[0].status == "completed"
