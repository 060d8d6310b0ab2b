"""What people are asked and answer, in the words the timeline and ``waygraph play`` print."""

from __future__ import annotations

from waygraph.describe import describe_event, not_waiting, waiting_for

ASKED = {
    "type": "human_asked",
    "node": "ok",
    "prompt": "Deploy to production?",
    "choices": ["[Y] Yes", "[N] No"],
}


def test_each_event_of_a_person_reads_as_a_sentence():
    said = {
        "Asked the user at ok: “Deploy to production?”; choices '[Y] Yes' or '[N] No'": ASKED,
        "Asked the user to confirm at migrate: “Run the migration” (reply 'CONFIRMED')": {
            "type": "human_asked",
            "node": "migrate",
            "prompt": "Run the migration",
            "choices": [],
            "value": "CONFIRMED",
        },
        "Asked the user to confirm at migrate": {
            "type": "human_asked",
            "node": "migrate",
            "prompt": None,
            "choices": [],
            "value": None,
        },
        "ann answered “y” at ok: chose '[Y] Yes' → deploy": {
            "type": "human_answered",
            "node": "ok",
            "answer": "y",
            "by": "ann",
            "choice": "[Y] Yes",
            "to": "deploy",
        },
        "The user answered “CONFIRMED” at migrate": {
            "type": "human_answered",
            "node": "migrate",
            "answer": "CONFIRMED",
            "by": None,
        },
        "Answer “maybe” at ok is not one of the choices: '[Y] Yes' or '[N] No'": {
            "type": "answer_rejected",
            "node": "ok",
            "answer": "maybe",
            "choices": ["[Y] Yes", "[N] No"],
        },
        "The model asked the user at notes: “Shall I add the changelog?”": {
            "type": "question_asked",
            "node": "notes",
            "excerpt": "Shall I add the changelog?",
        },
        # A session plan's question may come before any step.
        "The model asked the user": {"type": "question_asked", "node": None, "excerpt": None},
        "A result of bash at ok was only recorded: a person decides here": {
            "type": "result_ignored",
            "node": "ok",
            "tool": "bash",
            "output": "y",
        },
        "A tool result at ok was only recorded: a person decides here": {
            "type": "result_ignored",
            "node": "ok",
            "tool": None,
            "output": "",
        },
    }
    for words, event in said.items():
        assert describe_event({**event, "seq": 3, "turn": 2}) == words


def test_a_long_answer_is_told_as_an_excerpt():
    text = describe_event({"type": "human_answered", "node": "ok", "answer": "word " * 500})
    assert len(text) < 200 and text.endswith("…” at ok")


def test_what_a_waiting_run_asks_comes_from_the_ask_of_its_current_node():
    run = {"status": "running", "awaiting": "user", "current_node": "ok"}
    earlier = {**ASKED, "node": "gate", "choices": ["go"]}
    question = {"type": "question_asked", "node": "ok", "excerpt": "Which region?"}
    # A human node's choices win over a question the model asked there.
    assert waiting_for(run, [earlier, ASKED, question]) == {
        "node": "ok",
        "kind": "choice",
        "prompt": "Deploy to production?",
        "choices": ["[Y] Yes", "[N] No"],
        "value": None,
    }
    at_task = {**run, "current_node": "notes"}
    assert waiting_for(at_task, [ASKED, {**question, "node": "notes"}]) == {
        "node": "notes",
        "kind": "question",
        "prompt": "Which region?",
        "choices": [],
        "value": None,
    }
    assert waiting_for(at_task, [])["prompt"] is None  # type: ignore[index]
    assert waiting_for({**run, "status": "completed"}, [ASKED]) is None
    assert waiting_for({**run, "awaiting": None}, [ASKED]) is None


def test_why_a_session_is_not_waiting_names_where_its_run_is():
    assert (
        not_waiting("s", None) == "session 's' is not waiting for an answer: it has no current run"
    )
    assert not_waiting("s", {"status": "escalated", "current_node": "fix"}) == (
        "session 's' is not waiting for an answer: its run is escalated (at node 'fix')"
    )
