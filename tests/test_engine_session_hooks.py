"""The rules behind SessionPlanner's hooks, pure (engine.session_plan): hear (a user
message), take_reply (a model reply) and at_limit (the host's iteration limit)."""

from __future__ import annotations

from typing import Any

import pytest

from waygraph.engine import session_plan as rules
from waygraph.engine.session_plan import SessionPlanRun


def running() -> SessionPlanRun:
    plan = rules.new_plan("s", "Migrate the blog", now="t0", plan_id="plan_1")
    return rules.apply_reply(plan, "[Step] Export\n[Step] Convert\nExporting.", 1, now="t1")


def asked() -> SessionPlanRun:
    return rules.apply_reply(running(), "Drafts too?", 0, now="t2", asks_user=True)


def done_first() -> SessionPlanRun:
    return rules.apply_reply(running(), "Exported. [done]", 1, now="t2")


def reply(plan: SessionPlanRun | None, text: str, calls: int, **given: Any) -> Any:
    settings: dict[str, Any] = {
        "now": "t9",
        "asks_user": False,
        "max_iterations": 20,
        "unattended": False,
        "fresh": False,
        "start": lambda: rules.new_plan("s", "New goal", now="t9", plan_id="plan_2"),
    }
    settings.update(given)
    return rules.take_reply(plan, text, calls, **settings)


# ---------------------------------------------------------------- hear


def test_continue_resumes_a_paused_plan_and_other_words_leave_it():
    paused = rules.pause(running(), now="t2")
    heard = rules.hear(paused, "继续", now="t3")
    assert (heard.handed, heard.plan.status, heard.plan.resumed_at_iteration) == (
        "resume",
        "running",
        1,
    )
    left = rules.hear(paused, "what is the weather?", now="t3")
    assert left.handed == "unchanged" and left.plan is paused


def test_a_message_to_a_plan_waiting_on_the_user_is_the_answer():
    heard = rules.hear(asked(), "Yes, drafts too", now="t3")
    assert heard.handed == "answer"
    assert (heard.plan.awaiting, heard.plan.question, heard.plan.status) == (None, None, "running")


def test_an_answer_that_corrects_reopens_the_step_completed_last():
    waiting = rules.apply_reply(done_first(), "Convert drafts too?", 0, now="t3", asks_user=True)
    heard = rules.hear(waiting, "the export is not done yet", now="t4")
    assert heard.handed == "answer"
    assert [s.status for s in heard.plan.steps] == ["running", "pending"]


def test_a_correction_reopens_a_running_plan_in_place_and_runs_a_completed_one_again():
    heard = rules.hear(done_first(), "not done yet", now="t3")
    assert heard.handed == "reopened" and heard.plan.current_step_index == 0
    completed = rules.apply_reply(done_first(), "All converted.", 0, now="t3")
    again = rules.hear(completed, "还没完成", now="t4")
    assert (again.handed, again.plan.status) == ("resume", "running")


def test_a_message_after_a_finished_plan_asks_for_a_fresh_one():
    failed = rules.fail(running(), "gone", now="t2")
    heard = rules.hear(failed, "not done yet", now="t3")  # corrections do not reopen failed plans
    assert heard.handed == "finished" and heard.plan is failed


# ---------------------------------------------------------------- take_reply


def test_the_first_reply_that_calls_a_tool_starts_the_plan():
    assert reply(None, "Hi! How can I help?", 0) is None
    plan = reply(None, "[Step] Export", 1)
    assert (plan.id, plan.goal, plan.iteration_count) == ("plan_2", "New goal", 1)


def test_a_finished_plan_is_replaced_only_after_the_user_wrote_again():
    failed = rules.fail(running(), "gone", now="t2")
    assert reply(failed, "[Step] More", 1) is None
    assert reply(failed, "[Step] More", 1, fresh=True).id == "plan_2"
    assert reply(rules.pause(running(), now="t2"), "[Step] More", 1, fresh=True) is None


@pytest.mark.parametrize(("unattended", "status"), [(False, "paused"), (True, "failed")])
def test_a_plan_stops_when_its_budget_is_used(unattended: bool, status: str):
    plan = reply(running(), "Still exporting.", 1, max_iterations=2, unattended=unattended)
    assert plan.status == status
    assert reply(running(), "Still exporting.", 1, max_iterations=3).status == "running"


def test_a_question_at_the_budget_waits_instead_of_pausing():
    plan = reply(running(), "Drafts too?", 0, asks_user=True, max_iterations=2, unattended=True)
    assert (plan.status, plan.awaiting) == ("running", "user")


# ---------------------------------------------------------------- at_limit


def test_at_limit_keeps_paused_finished_and_waiting_plans():
    paused = rules.pause(running(), now="t2")
    failed = rules.fail(running(), "gone", now="t2")
    assert rules.at_limit(paused, now="t3", unattended=True) is paused
    assert rules.at_limit(failed, now="t3", unattended=False) is failed
    waiting = asked()
    assert rules.at_limit(waiting, now="t3", unattended=False) is waiting
    stopped = rules.at_limit(waiting, now="t3", unattended=True)
    assert (stopped.status, stopped.awaiting) == ("failed", None)
