"""plan.json files written before the session-plan rules moved into the engine still load,
give back the same bytes and go on (issue 38 item 3: the file format is a contract).

tests/fixtures/session_plans/ holds plan.json files SessionPlanner wrote before
the move, and document 001's own example (README.md there says how they were
made).
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from tests.session_helpers import Clock
from waygraph.sessions import SessionPlanner, list_session_plans, load_session_plan, read_plan_file

FIXTURES = Path(__file__).parent / "fixtures" / "session_plans"
WRITTEN = sorted(p for p in FIXTURES.glob("*.json") if p.name != "document_001.json")


def workspace_with(tmp_path: Path, fixture: str, folder: str) -> Path:
    target = tmp_path / ".sessions" / folder / "plan.json"
    target.parent.mkdir(parents=True)
    shutil.copyfile(FIXTURES / fixture, target)
    return target


@pytest.mark.parametrize("path", WRITTEN, ids=lambda p: p.name)
def test_a_plan_file_written_before_reads_back_as_the_same_bytes(path: Path):
    raw = path.read_text(encoding="utf-8")
    plan = read_plan_file(path)
    assert plan is not None
    assert json.dumps(plan, ensure_ascii=False, indent=2) + "\n" == raw


def test_a_running_plan_written_before_goes_on(tmp_path: Path):
    target = workspace_with(tmp_path, "running.json", "telegram_42")
    planner = SessionPlanner(tmp_path, clock=Clock())
    assert planner.plan("telegram:42") == json.loads((FIXTURES / "running.json").read_text())
    planner.after_model_reply("telegram:42", "Converted all 40. [done]", 1)
    saved = json.loads(target.read_text(encoding="utf-8"))
    assert [s["status"] for s in saved["steps"]] == ["completed", "completed", "running"]
    assert saved["steps"][1]["progress"] == {"current": 12, "total": 40}
    assert saved["iteration_count"] == 4


def test_a_paused_plan_written_before_resumes_on_continue(tmp_path: Path):
    workspace_with(tmp_path, "paused.json", "telegram_42")
    planner = SessionPlanner(tmp_path, max_iterations=4, clock=Clock())
    message = planner.on_user_message("telegram:42", "continue")
    assert message.startswith("[Resuming task] Current task: Migrate my blog to Hugo")
    assert "Iterations used: 3/4" in message
    plan = planner.plan("telegram:42")
    assert (plan["status"], plan["resumed_at_iteration"]) == ("running", 3)


def test_a_plan_written_waiting_on_the_user_takes_the_answer(tmp_path: Path):
    workspace_with(tmp_path, "awaiting_user.json", "telegram_42")
    planner = SessionPlanner(tmp_path, clock=Clock())
    message = planner.on_user_message("telegram:42", "Yes, drafts too")
    assert "You asked the user: Converted. Should the drafts be converted too?" in message
    assert message.endswith("User's answer: Yes, drafts too")
    assert planner.plan("telegram:42")["awaiting"] is None


def test_document_001s_plan_file_loads_and_keeps_its_shape(tmp_path: Path):
    target = workspace_with(tmp_path, "document_001.json", "wx_7")
    original = json.loads(target.read_text(encoding="utf-8"))
    planner = SessionPlanner(tmp_path, clock=Clock())
    assert load_session_plan(tmp_path, "wx_7")["session_id"] == "wx_7"
    planner.after_model_reply("wx_7", "全部下载完成。[完成]", 1)
    saved = json.loads(target.read_text(encoding="utf-8"))
    # The document's keys keep their order; what waygraph adds comes after them.
    assert list(saved)[: len(original)] == list(original)
    assert list(saved)[len(original) :] == [
        "session_id",
        "resumed_at_iteration",
        "failure_reason",
        "awaiting",
        "question",
    ]
    step = saved["steps"][1]
    assert list(step)[:7] == list(original["steps"][1])
    assert (step["status"], step["completed_by"]) == ("completed", "marker")
    assert saved["steps"][0] == {**original["steps"][0], "iterations": 0, "completed_by": None}


def test_a_field_of_the_wrong_type_makes_the_file_corrupt_named_in_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    target = workspace_with(tmp_path, "running.json", "telegram_42")
    data = json.loads(target.read_text(encoding="utf-8"))
    data["steps"][1]["iterations"] = "one"
    target.write_text(json.dumps(data), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="waygraph.sessions"):
        assert list_session_plans(tmp_path) == []
        planner = SessionPlanner(tmp_path, clock=Clock())
        assert planner.plan("telegram:42") is None
        # The next plan moves the corrupt file aside instead of failing on every hook.
        planner.on_user_message("telegram:42", "Tidy the docs")
        planner.after_model_reply("telegram:42", "[Step] List files", 1)
    assert "step 1 (step_2): field 'iterations' is not a whole number" in caplog.text
    assert planner.plan("telegram:42")["goal"] == "Tidy the docs"
    assert len(list(target.parent.glob("plan.json.corrupt-*"))) == 1
