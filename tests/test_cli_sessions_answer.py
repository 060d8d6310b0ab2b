"""``waygraph sessions answer``: a person's answer from the command line (issue 32).

End to end as a subprocess on a SQLite store, and the cases through typer's
CliRunner: a choice, a refused answer, a manual check, the model's question,
a session that waits for nobody, and bad arguments.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.answer_plans import CHOICES, PROMPT, library, write_library
from tests.cli_helpers import wg
from waygraph.cli import app
from waygraph.navigator import Navigator
from waygraph.verify_types.people import MAX_ANSWER_CHARS

runner = CliRunner()


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'runs.db'}"


def started(store: str, plan: str, session: str = "s") -> None:
    with Navigator(library(), store=store, strict=True) as nav:
        nav.start(session, plan)


def record(store: str, session: str = "s") -> tuple[dict, list[dict]]:
    """The session's run record and its events, as the store holds them."""
    with Navigator(library(), store=store, strict=True) as nav:
        key = nav.store.current(session)
        assert key is not None
        found = nav.store.get(key)
        assert found is not None
        return found.data, [e.data for e in nav.store.events(key)]


def answer(store: str, *args: str):
    # CliRunner keeps stderr apart, so a test can tell the error line from the output.
    return runner.invoke(app, ["sessions", "answer", *args, "--store", store])


def test_a_choice_moves_the_run_on_and_says_where_it_went(store: str, tmp_path: Path):
    started(store, "deploy_gate")
    # The server's library need not hold the plan: the run's stored version answers.
    out = wg("sessions", "answer", "s", "y", "--by", "ann", "--store", store)
    assert out.returncode == 0, out.stderr
    assert "ann answered “y” at ok: chose '[Y] Yes' → deploy" in out.stdout
    assert "Session 's' is at node 'deploy'." in out.stdout
    assert "guidance for the model" in out.stdout and "Deploy the release" in out.stdout
    assert out.stderr == ""
    run, events = record(store)
    assert (run["current_node"], run.get("awaiting")) == ("deploy", None)
    answered = [e for e in events if e["type"] == "human_answered"]
    assert [(e["answer"], e["by"], e["choice"], e["to"]) for e in answered] == [
        ("y", "ann", "[Y] Yes", "deploy")
    ]
    # With --library the same command reads the plan from the file.
    started(store, "deploy_gate", "s2")
    lib = write_library(tmp_path)
    out = wg("sessions", "answer", "s2", "No", "--store", store, "--library", str(lib))
    assert out.returncode == 0, out.stderr
    assert "Session 's2': its run is completed." in out.stdout


def test_a_refused_answer_prints_the_choices_exits_1_and_the_run_stays(store: str):
    started(store, "deploy_gate")
    out = wg("sessions", "answer", "s", "maybe", "--store", store)
    assert out.returncode == 1
    assert out.stderr.strip() == (
        "error: session 's' at node 'ok': 'maybe' is not one of the choices: "
        "answer '[Y] Yes' or '[N] No'"
    )
    run, events = record(store)
    assert (run["current_node"], run["awaiting"], run["status"]) == ("ok", "user", "running")
    assert events[-1] == {**events[-1], "type": "answer_rejected", "choices": CHOICES}
    result = answer(store, "s", "later", "--json")
    assert result.exit_code == 1
    body = json.loads(result.stdout)
    assert body["session"] == "s" and body["run"]["current_node"] == "ok"
    assert "'later' is not one of the choices" in body["error"]
    assert [e["type"] for e in body["events"]] == ["answer_rejected"]


def test_a_session_that_waits_for_nobody_is_one_line_exit_1_and_nothing_changes(store: str):
    with Navigator(store=store, strict=True) as nav:
        nav.start("busy", "bugfix_workflow")  # at a task: the agent's turn, not a person's
    started(store, "deploy_gate", "done")
    assert answer(store, "done", "n").exit_code == 0  # to stop: completed
    cases = {
        "busy": "error: session 'busy' is not waiting for an answer: its run is at node "
        "'reproduce', waiting for the agent",
        "done": "error: session 'done' is not waiting for an answer: its run is completed "
        "(at node 'stop')",
        "ghost": "error: session 'ghost' is not waiting for an answer: it has no current run",
    }
    for session, line in cases.items():
        before = record(store, session) if session != "ghost" else None
        out = wg("sessions", "answer", session, "y", "--store", store)
        assert (out.returncode, out.stdout, out.stderr) == (1, "", line + "\n"), session
        assert (record(store, session) if session != "ghost" else None) == before


def test_bad_arguments_exit_2_and_change_nothing(store: str):
    started(store, "deploy_gate")
    before = record(store)
    for blank in ("", "   "):
        result = answer(store, "s", blank)
        assert result.exit_code == 2 and "answer is empty" in result.stderr
    long_by = answer(store, "s", "y", "--by", "x" * 201)
    assert long_by.exit_code == 2 and "by must be a string of at most 200" in long_by.stderr
    missing = runner.invoke(app, ["sessions", "answer", "s", "--store", store])
    assert missing.exit_code == 2 and "ANSWER" in missing.stderr
    assert record(store) == before


def test_an_oversized_answer_is_read_on_its_first_characters_like_a_user_message(store: str):
    started(store, "deploy_gate")
    # Past the limit nothing is read: "y" there picks nothing, and no 200 kB lands in the store.
    result = answer(store, "s", "x" * MAX_ANSWER_CHARS + "y")
    assert result.exit_code == 1 and "is not one of the choices" in result.stderr
    _, events = record(store)
    assert events[-1]["type"] == "answer_rejected" and len(events[-1]["answer"]) < 1000


def test_a_manual_check_passes_only_on_the_words_it_asks_for(store: str):
    started(store, "migration")
    result = answer(store, "s", "sure, go ahead")
    assert result.exit_code == 0, result.stderr
    assert "The user answered “sure, go ahead” at migrate" in result.stdout
    assert "Session 's' still waits for the user at node 'migrate'." in result.stdout
    result = answer(store, "s", "CONFIRMED", "--by", "bob")
    assert result.exit_code == 0, result.stderr
    assert "bob answered “CONFIRMED” at migrate" in result.stdout
    assert "Session 's' is at node 'notes'." in result.stdout
    run, _ = record(store)
    assert run["visited"]["migrate"]["outcome"] == "success"


def test_the_reply_to_the_models_question_is_taken(store: str):
    with Navigator(library(), store=store, strict=True) as nav:
        nav.start("s", "migration")
        nav.answer("s", "CONFIRMED")
        nav.turn("s", tool_output="Shall I add the changelog too?", source="model", final=True)
    result = answer(store, "s", "yes, please", "--json")
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["error"] is None and body["run"]["awaiting"] is None
    assert [(e["type"], e["node"], e["answer"]) for e in body["events"]] == [
        ("human_answered", "notes", "yes, please")
    ]


def test_list_and_show_say_the_session_waits_for_the_user(store: str):
    started(store, "deploy_gate")
    rows = json.loads(wg("sessions", "list", "--store", store, "--json").stdout)["sessions"]
    assert [(r["session"], r["status"], r["awaiting"]) for r in rows] == [("s", "running", "user")]
    listed = wg("sessions", "list", "--store", store)
    assert "running, waiting for the user" in listed.stdout
    shown = runner.invoke(app, ["sessions", "show", "s", "--store", store], env={"COLUMNS": "300"})
    assert shown.exit_code == 0, shown.stderr
    assert (
        f"Waiting for the user at ok: {PROMPT} Choices: '[Y] Yes' or '[N] No'. "
        "Answer with `waygraph sessions answer s ANSWER`." in shown.stdout
    )
    answer(store, "s", "y")
    assert "waiting for the user" not in wg("sessions", "list", "--store", store).stdout


def test_help_names_the_command_and_its_options():
    result = runner.invoke(app, ["sessions", "answer", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for word in ("SESSION", "ANSWER", "--by", "--store", "--library", "--json"):
        assert word in result.stdout, word
