"""The interviewers human gates ask through (specification §6, §11.8)."""

from __future__ import annotations

import pytest

from waygraph.pipelines.interviewers import (
    Answer,
    AnswerValue,
    AutoApproveInterviewer,
    CallbackInterviewer,
    ConsoleInterviewer,
    Interviewer,
    Option,
    Question,
    QuestionType,
    QueueInterviewer,
    RecordingInterviewer,
    match_option,
)

CHOICE = Question(
    text="Deploy?",
    options=(Option(key="Y", label="[Y] Yes, deploy"), Option(key="N", label="[N] No")),
    stage="gate",
)


def test_question_types_and_defaults():
    assert {t.name for t in QuestionType} == {
        "YES_NO",
        "MULTIPLE_CHOICE",
        "FREEFORM",
        "CONFIRMATION",
    }
    assert CHOICE.type is QuestionType.MULTIPLE_CHOICE and CHOICE.timeout_seconds is None


@pytest.mark.parametrize(
    ("question", "value"),
    [
        (CHOICE, "Y"),
        (Question(text="Sure?", type=QuestionType.YES_NO), AnswerValue.YES),
        (Question(text="Really?", type=QuestionType.CONFIRMATION), AnswerValue.YES),
        (Question(text="Why?", type=QuestionType.FREEFORM), "auto-approved"),
    ],
)
def test_auto_approve_says_yes_or_takes_the_first_option(question, value):
    answer = AutoApproveInterviewer().ask(question)
    assert answer.value == value
    if question.options:
        assert answer.selected_option == question.options[0]


def test_queue_answers_in_order_then_skips():
    queue = QueueInterviewer(["n", Answer(value="Y")])
    assert [queue.ask(CHOICE).value for _ in range(3)] == ["n", "Y", AnswerValue.SKIPPED]
    assert queue.remaining == 0


def test_callback_gets_the_question():
    seen: list[Question] = []

    def callback(question: Question) -> Answer:
        seen.append(question)
        return Answer(value="N")

    assert CallbackInterviewer(callback).ask(CHOICE).value == "N"
    assert seen == [CHOICE]


def test_recording_keeps_every_pair_and_passes_inform_on():
    told: list[str] = []

    class Inner(QueueInterviewer):
        def inform(self, message: str, stage: str) -> None:
            told.append(f"{stage}:{message}")

    recorder = RecordingInterviewer(Inner(["y"]))
    assert [a.value for a in recorder.ask_multiple([CHOICE, CHOICE])] == ["y", AnswerValue.SKIPPED]
    assert [(q.text, a.value) for q, a in recorder.recordings] == [
        ("Deploy?", "y"),
        ("Deploy?", AnswerValue.SKIPPED),
    ]
    recorder.inform("deployed", "gate")
    assert told == ["gate:deployed"]


def test_console_shows_options_and_reads_a_choice_asking_again_on_nonsense():
    replies = iter(["maybe", "no"])
    shown: list[str] = []
    console = ConsoleInterviewer(read=lambda prompt: next(replies), write=shown.append)
    answer = console.ask(CHOICE)
    assert answer.value == "N" and answer.selected_option == CHOICE.options[1]
    assert shown[:3] == ["[?] Deploy?", "  [Y] [Y] Yes, deploy", "  [N] [N] No"]
    plain = ConsoleInterviewer(read=lambda prompt: "ship", write=shown.append)
    plain.ask(Question(text="Go?", options=(Option(key="S", label="ship"),)))
    assert "  [S] ship" in shown
    assert "'maybe' is none of the choices" in shown


def test_console_yes_no_freeform_and_end_of_input():
    def eof(prompt: str) -> str:
        raise EOFError

    silent: list[str] = []
    yes = ConsoleInterviewer(read=lambda p: "y", write=silent.append)
    assert yes.ask(Question(text="Ok?", type=QuestionType.YES_NO)).value == AnswerValue.YES
    no = ConsoleInterviewer(read=lambda p: "nope", write=silent.append)
    assert no.ask(Question(text="Ok?", type=QuestionType.YES_NO)).value == AnswerValue.NO
    words = ConsoleInterviewer(read=lambda p: "because", write=silent.append)
    assert words.ask(Question(text="Why?", type=QuestionType.FREEFORM)).text == "because"
    gone = ConsoleInterviewer(read=eof, write=silent.append)
    assert gone.ask(CHOICE).value == AnswerValue.SKIPPED


def test_every_interviewer_is_an_interviewer():
    for made in (
        AutoApproveInterviewer(),
        QueueInterviewer([]),
        CallbackInterviewer(lambda q: Answer()),
        ConsoleInterviewer(read=lambda p: "", write=lambda s: None),
        RecordingInterviewer(AutoApproveInterviewer()),
    ):
        assert isinstance(made, Interviewer)


def test_match_option_by_label_words_key_or_nothing():
    assert match_option(CHOICE.options, "yes, deploy") == CHOICE.options[0]
    assert match_option(CHOICE.options, "N") == CHOICE.options[1]
    assert match_option(CHOICE.options, "later") is None
