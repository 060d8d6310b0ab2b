"""How a pipeline's human gates ask a person (§6): questions, answers and interviewers.

A ``wait.human`` node builds a :class:`Question` from its outgoing edges and
asks an :class:`Interviewer`; whatever frontend answers (a terminal, a queue
of scripted answers, a callback into a web UI or the store's answer channel)
returns an :class:`Answer`.

- :class:`AutoApproveInterviewer`: YES, or the first option (CI and tests).
- :class:`ConsoleInterviewer`: asks on the terminal (input and output injectable).
- :class:`CallbackInterviewer`: hands the question to a function.
- :class:`QueueInterviewer`: scripted answers in order; SKIPPED once they run out.
- :class:`RecordingInterviewer`: wraps another and records every question and answer.

Example:
    >>> q = Question(text="Deploy?", type=QuestionType.MULTIPLE_CHOICE,
    ...              options=(Option(key="Y", label="[Y] Yes"), Option(key="N", label="[N] No")))
    >>> AutoApproveInterviewer().ask(q).value
    'Y'
    >>> QueueInterviewer([Answer(value="N")]).ask(q).value, QueueInterviewer([]).ask(q).value
    ('N', <AnswerValue.SKIPPED: 'skipped'>)
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from waygraph.verify_types.people import choice_of

__all__ = [
    "Answer",
    "AnswerValue",
    "AutoApproveInterviewer",
    "CallbackInterviewer",
    "ConsoleInterviewer",
    "Interviewer",
    "Option",
    "Question",
    "QuestionType",
    "QueueInterviewer",
    "RecordingInterviewer",
    "match_option",
]


class QuestionType(enum.StrEnum):
    """What kind of answer a question wants."""

    YES_NO = "yes_no"
    MULTIPLE_CHOICE = "multiple_choice"
    FREEFORM = "freeform"
    CONFIRMATION = "confirmation"


class AnswerValue(enum.StrEnum):
    """The answers that are no choice's key or text."""

    YES = "yes"
    NO = "no"
    SKIPPED = "skipped"
    TIMEOUT = "timeout"


class Option(BaseModel):
    """One choice: its accelerator ``key`` and the ``label`` shown."""

    model_config = ConfigDict(frozen=True)

    key: str
    label: str


class Answer(BaseModel):
    """A person's answer: a :class:`AnswerValue` or a choice's key/label, the option, free text."""

    model_config = ConfigDict(frozen=True)

    value: AnswerValue | str = ""
    selected_option: Option | None = None
    text: str = ""


class Question(BaseModel):
    """What a human gate asks (§6.2)."""

    model_config = ConfigDict(frozen=True)

    text: str
    type: QuestionType = QuestionType.MULTIPLE_CHOICE
    options: tuple[Option, ...] = ()
    default: Answer | None = None
    timeout_seconds: float | None = None
    stage: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)


@runtime_checkable
class Interviewer(Protocol):
    """Anything that can put a question to a person and return the answer."""

    def ask(self, question: Question) -> Answer:
        """The answer to ``question`` (blocking until there is one)."""
        ...

    def ask_multiple(self, questions: Sequence[Question]) -> list[Answer]:
        """The answers to ``questions``, in order."""
        ...

    def inform(self, message: str, stage: str) -> None:
        """Tell the person something that needs no answer."""
        ...


class _Base:
    """``ask_multiple`` and ``inform`` for interviewers that define only ``ask``."""

    def ask(self, question: Question) -> Answer:  # pragma: no cover - overridden
        raise NotImplementedError

    def ask_multiple(self, questions: Sequence[Question]) -> list[Answer]:
        return [self.ask(q) for q in questions]

    def inform(self, message: str, stage: str) -> None:
        return None


def match_option(options: Sequence[Option], said: str) -> Option | None:
    """The option ``said`` picks: its label or words
    (:func:`waygraph.verify_types.people.choice_of`), else its key (any case), else None.

    Example:
        >>> opts = [Option(key="A", label="[A] Approve"), Option(key="F", label="[F] Fix")]
        >>> match_option(opts, "fix").key, match_option(opts, "a").key, match_option(opts, "?")
        ('F', 'A', None)
    """
    index = choice_of([o.label for o in options], said)
    if index is not None:
        return options[index]
    for option in options:
        if option.key.strip().lower() == said.strip().lower():
            return option
    return None


class AutoApproveInterviewer(_Base):
    """YES to yes/no questions, the first option of a choice, else ``auto-approved``."""

    def ask(self, question: Question) -> Answer:
        """YES, the first option, or ``auto-approved``."""
        if question.type in (QuestionType.YES_NO, QuestionType.CONFIRMATION):
            return Answer(value=AnswerValue.YES)
        if question.options:
            first = question.options[0]
            return Answer(value=first.key, selected_option=first)
        return Answer(value="auto-approved", text="auto-approved")


class ConsoleInterviewer(_Base):
    """Asks on the terminal; ``read`` and ``write`` default to :func:`input` and :func:`print`.

    An unreadable input (end of file) is SKIPPED; a choice nobody picks is
    asked again up to ``attempts`` times, then SKIPPED.

    Example:
        >>> lines = iter(["maybe", "f"])
        >>> shown = []
        >>> console = ConsoleInterviewer(read=lambda prompt: next(lines), write=shown.append)
        >>> console.ask(Question(text="Ok?", options=(Option(key="F", label="[F] Fix"),))).value
        'F'
    """

    def __init__(
        self,
        read: Callable[[str], str] | None = None,
        write: Callable[[str], None] | None = None,
        attempts: int = 3,
    ) -> None:
        self._read = read or input
        self._write = write or print
        self._attempts = attempts

    def _input(self, prompt: str) -> str | None:
        try:
            return self._read(prompt)
        except EOFError:
            return None

    def ask(self, question: Question) -> Answer:
        """Ask on the terminal; SKIPPED at the end of input."""
        self._write(f"[?] {question.text}")
        if question.type is QuestionType.FREEFORM:
            said = self._input("> ")
            return Answer(value=AnswerValue.SKIPPED) if said is None else Answer(text=said)
        if question.type in (QuestionType.YES_NO, QuestionType.CONFIRMATION):
            said = self._input("[Y/N]: ")
            if said is None:
                return Answer(value=AnswerValue.SKIPPED)
            yes = said.strip().lower() in ("y", "yes")
            return Answer(value=AnswerValue.YES if yes else AnswerValue.NO)
        for shown in question.options:
            # As §6.4 prints them: the key, then the label as written.
            self._write(f"  [{shown.key}] {shown.label}")
        for _ in range(self._attempts):
            said = self._input("Select: ")
            if said is None:
                break
            option = match_option(question.options, said)
            if option is not None:
                return Answer(value=option.key, selected_option=option)
            self._write(f"'{said.strip()}' is none of the choices")
        return Answer(value=AnswerValue.SKIPPED)

    def inform(self, message: str, stage: str) -> None:
        """Show ``message`` on the terminal."""
        self._write(f"[{stage}] {message}" if stage else message)


class CallbackInterviewer(_Base):
    """Hands every question to ``callback`` (a web UI, a chat bot, the store's answer channel)."""

    def __init__(self, callback: Callable[[Question], Answer]) -> None:
        self._callback = callback

    def ask(self, question: Question) -> Answer:
        """The callback's answer."""
        return self._callback(question)


class QueueInterviewer(_Base):
    """Scripted answers, one per question, in order; SKIPPED once none are left.

    An answer may be an :class:`Answer` or text (a choice's key, label or words).
    """

    def __init__(self, answers: Iterable[Answer | str]) -> None:
        self._answers: deque[Answer] = deque(
            a if isinstance(a, Answer) else Answer(value=a, text=a) for a in answers
        )

    @property
    def remaining(self) -> int:
        """How many answers are left."""
        return len(self._answers)

    def ask(self, question: Question) -> Answer:
        """The next scripted answer, or SKIPPED."""
        if self._answers:
            return self._answers.popleft()
        return Answer(value=AnswerValue.SKIPPED)


class RecordingInterviewer(_Base):
    """Asks ``inner`` and keeps every (question, answer) pair in :attr:`recordings`."""

    def __init__(self, inner: Interviewer) -> None:
        self.inner = inner
        self.recordings: list[tuple[Question, Answer]] = []

    def ask(self, question: Question) -> Answer:
        """The inner interviewer's answer, recorded."""
        answer = self.inner.ask(question)
        self.recordings.append((question, answer))
        return answer

    def inform(self, message: str, stage: str) -> None:
        """Pass ``message`` on to the inner interviewer."""
        self.inner.inform(message, stage)
