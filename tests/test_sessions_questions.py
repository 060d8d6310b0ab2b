"""Session plans, issue 32 item 4: a question to the user is not the end of the plan.

A reply without tool calls that asks the user something keeps the plan
running and waiting on the user; the user's next message is the answer and
carries the same plan on (same id, same goal) instead of starting a new one.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from tests.session_helpers import S, on_disk, start
from waygraph.sessions import SessionPlanner, list_session_plans, render_summary
from waygraph.sessions._records import changes, to_record
from waygraph.store import MemoryStore

QUESTION = "Exported 40 posts. Should the drafts be converted too?"


def current(planner: SessionPlanner, session: str = S) -> dict[str, Any]:
    plan = planner.plan(session)
    assert plan is not None
    return plan


def statuses(planner: SessionPlanner) -> list[str]:
    return [s["status"] for s in current(planner)["steps"]]


# ---------------------------------------------------------------- the question


def test_a_question_without_tool_calls_keeps_the_plan_running(
    planner: SessionPlanner, tmp_path: Path
):
    start(planner, "Export posts", "Convert", "Deploy")
    planner.after_model_reply(S, QUESTION, 0)

    plan = on_disk(tmp_path)
    assert plan["status"] == "running"
    assert plan["awaiting"] == "user"
    assert plan["question"] == QUESTION
    # Nothing was finished by asking: the step still runs, the rest wait.
    assert statuses(planner) == ["running", "pending", "pending"]
    assert plan["steps"][0]["completed_by"] is None
    assert plan["iteration_count"] == 2
    context = planner.context(S)
    assert context is not None
    assert "You asked the user a question and the plan waits for the answer" in context
    assert QUESTION in context
    assert "Current step: Export posts (1/3)" in context


def test_the_answer_continues_the_same_plan(planner: SessionPlanner, tmp_path: Path):
    start(planner, "Export posts", "Convert")
    before = current(planner)
    planner.after_model_reply(S, QUESTION, 0)

    given = planner.on_user_message(S, "Yes, drafts too")
    plan = current(planner)
    assert (plan["id"], plan["goal"]) == (before["id"], "Migrate the blog")
    assert plan["status"] == "running"
    assert plan["awaiting"] is None and plan["question"] is None
    # The answer reaches the model with the plan and the question it answers.
    assert given.startswith("[Continuing task] Current task: Migrate the blog\n")
    assert "\nCurrent step: Export posts\n" in given
    assert given.endswith(f"\n\nYou asked the user: {QUESTION}\nUser's answer: Yes, drafts too")
    assert "waits for the answer" not in (planner.context(S) or "")

    # The next replies are the same plan's, and it finishes as any plan does.
    planner.after_model_reply(S, "Drafts exported too. [done]", 1)
    assert current(planner)["id"] == before["id"]
    assert statuses(planner) == ["completed", "running"]
    planner.after_model_reply(S, "Converted everything.", 0)
    assert current(planner)["status"] == "completed"
    assert not list((tmp_path / ".sessions" / "telegram_42").glob("plan-*.json"))


def test_a_full_width_question_mark_asks_too(planner: SessionPlanner):
    start(planner, "导出文章", "转换格式", message="把博客迁移到 Hugo")
    planner.after_model_reply(S, "文章已导出。要转换成 Markdown 还是 HTML？", 0)
    plan = current(planner)
    assert (plan["status"], plan["awaiting"]) == ("running", "user")
    assert statuses(planner) == ["running", "pending"]
    assert "计划正在等待回答" in (planner.context(S) or "")

    given = planner.on_user_message(S, "Markdown")
    assert given.startswith("[继续任务] 当前任务: 把博客迁移到 Hugo\n")
    assert given.endswith(
        "\n\n你向用户提问: 文章已导出。要转换成 Markdown 还是 HTML？\n用户回答: Markdown"
    )
    assert current(planner)["id"] == plan["id"]


def test_asks_user_false_overrides_a_trailing_question_mark(planner: SessionPlanner):
    start(planner, "Export posts")
    planner.after_model_reply(S, "The blog is migrated. Anything else?", 0, asks_user=False)
    plan = current(planner)
    assert plan["status"] == "completed" and plan["awaiting"] is None
    assert plan["steps"][0]["completed_by"] == "final"


def test_asks_user_true_on_a_reply_without_a_question_mark(planner: SessionPlanner):
    start(planner, "Export posts", "Deploy")
    planner.after_model_reply(S, "Tell me which branch to deploy.", 0, asks_user=True)
    plan = current(planner)
    assert (plan["status"], plan["awaiting"]) == ("running", "user")
    assert plan["question"] == "Tell me which branch to deploy."
    assert statuses(planner) == ["running", "pending"]


def test_a_final_reply_that_is_not_a_question_still_completes(planner: SessionPlanner):
    start(planner, "Export posts", "Convert")
    planner.after_model_reply(S, "Exported. [done]", 1)
    planner.after_model_reply(S, "Everything is migrated.", 0)
    plan = current(planner)
    assert plan["status"] == "completed" and plan["awaiting"] is None
    assert statuses(planner) == ["completed", "completed"]
    assert planner.context(S) is None


def test_a_tool_calling_reply_that_ends_in_a_question_is_not_waiting(planner: SessionPlanner):
    start(planner, "Export posts")
    planner.after_model_reply(S, "Is the API up? Let me check.\nChecking?", 1)
    assert current(planner)["awaiting"] is None
    # Even when the host says so: a reply that calls tools goes on working.
    planner.after_model_reply(S, "Still checking.", 1, asks_user=True)
    assert current(planner)["awaiting"] is None


def test_a_question_completes_its_step_only_on_an_explicit_marker(planner: SessionPlanner):
    start(planner, "Export posts", "Convert")
    planner.after_model_reply(S, "Exporting.", 1)
    # "Now" in a question is what would happen after the answer, not a report.
    planner.after_model_reply(S, "Should I now convert the drafts too?", 0)
    assert statuses(planner) == ["running", "pending"]
    planner.on_user_message(S, "yes")
    planner.after_model_reply(S, "Exported everything [done]. Which format should I use?", 0)
    plan = current(planner)
    assert statuses(planner) == ["completed", "running"]
    assert (plan["status"], plan["awaiting"]) == ("running", "user")


def test_a_second_reply_replaces_the_question_and_tool_calls_end_the_wait(
    planner: SessionPlanner,
):
    start(planner, "Export posts")
    planner.after_model_reply(S, "Which blog?", 0)
    planner.after_model_reply(S, "Or rather: which host?", 0)
    assert current(planner)["question"] == "Or rather: which host?"
    # The host ran the model again without the user: it went on working.
    planner.after_model_reply(S, "Looking it up myself.", 1)
    plan = current(planner)
    assert plan["awaiting"] is None and plan["question"] is None
    assert planner.on_user_message(S, "hello") == "hello"


# ---------------------------------------------------------------- answers of every kind


def test_a_correction_as_the_answer_reopens_the_step_in_the_same_plan(planner: SessionPlanner):
    start(planner, "Export posts", "Convert")
    planner.after_model_reply(S, "Exported. [done]", 1)
    planner.after_model_reply(S, "Converted. Shall I deploy it?", 0)
    asked = current(planner)
    given = planner.on_user_message(S, "The export is not done yet, drafts are missing")
    plan = current(planner)
    assert plan["id"] == asked["id"] and plan["awaiting"] is None
    assert statuses(planner) == ["running", "pending"]
    assert given.endswith("User's answer: The export is not done yet, drafts are missing")


def test_continue_as_the_answer_continues_the_same_plan(planner: SessionPlanner):
    start(planner, "Export posts", "Convert")
    planner.after_model_reply(S, "Shall I go on with the conversion?", 0)
    given = planner.on_user_message(S, "continue")
    assert given.endswith("User's answer: continue")
    plan = current(planner)
    assert plan["status"] == "running" and plan["awaiting"] is None


def test_the_answer_survives_a_restart(tmp_path: Path):
    first = SessionPlanner(tmp_path)
    first.on_user_message(S, "Migrate the blog")
    first.after_model_reply(S, "[Step] Export posts\nWorking.", 1)
    first.after_model_reply(S, "Which host?", 0)
    asked = current(first)

    again = SessionPlanner(tmp_path)  # a new process: plan.json says it waits
    assert "You asked the user: Which host?" in again.on_user_message(S, "Netlify")
    again.after_model_reply(S, "Deploying to Netlify.", 1)
    plan = current(again)
    assert (plan["id"], plan["goal"]) == (asked["id"], "Migrate the blog")


def test_a_question_before_any_plan_is_small_talk(planner: SessionPlanner, tmp_path: Path):
    # Document 001: the plan's goal is the user's message when the first reply
    # calls a tool; a greeting ("How can I help?") before that changes nothing.
    planner.on_user_message(S, "hi")
    planner.after_model_reply(S, "Hi! How can I help?", 0)
    assert planner.plan(S) is None and not (tmp_path / ".sessions").exists()
    planner.on_user_message(S, "Migrate the blog")
    planner.after_model_reply(S, "[Step] Export posts\nExporting.", 1)
    assert current(planner)["goal"] == "Migrate the blog"


# ---------------------------------------------------------------- the limit and pauses


def test_a_question_at_the_iteration_limit_waits_instead_of_pausing(tmp_path: Path):
    planner = SessionPlanner(tmp_path, max_iterations=3)
    start(planner, "Export posts", "Convert")
    planner.after_model_reply(S, "Exporting.", 1)
    planner.after_model_reply(S, "Exported. Convert the drafts too?", 0)  # the 3rd reply
    plan = current(planner)
    assert (plan["status"], plan["awaiting"]) == ("running", "user")
    # The host's loop stopping here does not pause it: the answer carries it on.
    assert planner.on_iteration_limit(S) == (
        "Task waiting for your answer (0/2 steps completed): Exported. Convert the drafts too?"
    )
    assert current(planner)["status"] == "running"

    given = planner.on_user_message(S, "yes")
    assert "\nIterations used: 3/3\n" in given
    plan = current(planner)
    assert plan["status"] == "running" and plan["resumed_at_iteration"] == 3
    # The answer gave a fresh budget: two more replies run, the third pauses.
    planner.after_model_reply(S, "Converting drafts.", 1)
    planner.after_model_reply(S, "Still converting.", 1)
    assert current(planner)["status"] == "running"
    planner.after_model_reply(S, "Almost.", 1)
    assert current(planner)["status"] == "paused"


def test_an_unattended_plan_waiting_on_the_user_fails_at_the_limit(tmp_path: Path):
    planner = SessionPlanner(tmp_path, unattended=True)
    start(planner, "Export posts")
    planner.after_model_reply(S, "Which host?", 0)
    assert current(planner)["awaiting"] == "user"
    assert planner.on_iteration_limit(S) == (
        "Task failed (0/1 steps done): iteration limit reached"
    )
    plan = current(planner)
    assert plan["status"] == "failed" and plan["awaiting"] is None


def test_a_paused_plan_ignores_a_question_and_resumes_on_continue(tmp_path: Path):
    planner = SessionPlanner(tmp_path, max_iterations=2)
    start(planner, "Export posts")
    planner.after_model_reply(S, "Exporting.", 1)
    paused = current(planner)
    assert paused["status"] == "paused"
    # While paused, replies are not recorded, questions included.
    planner.after_model_reply(S, "Shall I go on?", 0)
    assert current(planner) == paused
    assert planner.on_user_message(S, "what happened?") == "what happened?"
    assert current(planner)["status"] == "paused"
    assert planner.on_user_message(S, "continue").startswith("[Resuming task]")
    plan = current(planner)
    assert (plan["id"], plan["status"], plan["awaiting"]) == (paused["id"], "running", None)


# ---------------------------------------------------------------- bad input, files, views


def test_bad_input_never_crashes_the_host(planner: SessionPlanner, caplog):
    start(planner, "Export posts")
    with caplog.at_level(logging.WARNING, logger="waygraph.sessions"):
        planner.after_model_reply(S, "Which host?", 0, asks_user="yes")  # type: ignore[arg-type]
    assert current(planner)["awaiting"] == "user"  # decided by the reply instead
    assert "asks_user must be True, False or None" in caplog.text
    planner.after_model_reply(S, None, None, asks_user=None)  # type: ignore[arg-type]
    assert current(planner)["status"] == "completed"


def test_a_hand_edited_awaiting_value_is_read_as_waiting_on_nobody(
    planner: SessionPlanner, tmp_path: Path
):
    start(planner, "Export posts")
    path = tmp_path / ".sessions" / "telegram_42" / "plan.json"
    data = on_disk(tmp_path)
    data.update(awaiting=42, question=["not", "text"])
    path.write_text(json.dumps(data), encoding="utf-8")
    plan = current(planner)
    assert plan["awaiting"] is None and plan["question"] is None
    assert planner.on_user_message(S, "hello") == "hello"


def test_plans_from_before_awaiting_load_as_waiting_on_nobody(
    planner: SessionPlanner, tmp_path: Path
):
    start(planner, "Export posts")
    path = tmp_path / ".sessions" / "telegram_42" / "plan.json"
    data = on_disk(tmp_path)
    del data["awaiting"], data["question"]
    path.write_text(json.dumps(data), encoding="utf-8")
    assert current(planner)["awaiting"] is None
    planner.after_model_reply(S, "Which host?", 0)
    assert current(planner)["awaiting"] == "user"


def test_people_see_the_plan_waiting(planner: SessionPlanner, tmp_path: Path):
    start(planner, "Export posts")
    planner.after_model_reply(S, "Which host?", 0)
    plan = current(planner)
    assert "\nWaiting for the user's answer to: Which host?\n" in render_summary(plan)
    assert "\n等待用户回答：Which host?\n" in render_summary(plan, "zh")
    (row,) = list_session_plans(tmp_path)
    assert (row["status"], row["awaiting"]) == ("running", "user")


def test_a_long_question_keeps_its_end(planner: SessionPlanner):
    start(planner, "Export posts")
    planner.after_model_reply(S, "Found these posts: " + "post, " * 100 + "which one first?", 0)
    question = current(planner)["question"]
    assert question.startswith("…") and question.endswith("which one first?")
    assert len(question) <= 200


# ---------------------------------------------------------------- in a store


def test_the_store_record_shows_the_plan_waiting_and_the_question_asked(tmp_path: Path):
    store = MemoryStore()
    planner = SessionPlanner(tmp_path, store=store)
    planner.on_user_message("c1", "Ship it")
    planner.after_model_reply("c1", "[Step] Build\n[Step] Upload\nBuilding.", 1)
    planner.after_model_reply("c1", "Built. Upload to staging or production?", 0)

    (record,) = store.list(kind="session", session="c1")
    assert record.status == "running"
    assert record.data["awaiting"] == "user"
    assert record.data["question"] == "Built. Upload to staging or production?"
    events = [e.data for e in store.events(record.key)]
    assert events[-1] == {
        "type": "question_asked",
        "node": "step_1",
        "excerpt": "Built. Upload to staging or production?",
    }
    assert "plan_completed" not in [e["type"] for e in events]

    planner.on_user_message("c1", "staging")
    (record,) = store.list(kind="session", session="c1")
    assert record.status == "running" and record.data["awaiting"] is None
    planner.close()


def test_changes_tell_a_question_once():
    before = to_record(
        {"id": "p", "goal": "Ship", "status": "running", "steps": [], "awaiting": None}
    )
    asked = to_record(dict(before, awaiting="user", question="Which host?"))
    assert [e["type"] for e in changes(before, asked)] == ["question_asked"]
    assert changes(asked, asked) == []
    again = to_record(dict(asked, question="Which region?"))
    assert [e.get("excerpt") for e in changes(asked, again)] == ["Which region?"]
