"""An Interviewer whose questions wait in the store until the dashboard, API or CLI answers.

``waygraph run --store URL`` gives its human gates a :class:`StoreInterviewer`:
the question is recorded on the run (:meth:`PipelineRecords.ask`), so
``waygraph sessions list`` shows the run paused at the gate, the dashboard
shows its choices as buttons, and ``waygraph sessions answer RUN_ID ANSWER``
or ``POST /api/sessions/RUN_ID/answer`` answers it; the interviewer polls the
store until the answer is there (renewing the run's lease meanwhile, so a
person may take hours) or the question's timeout passes.

It speaks the specification's Interviewer (§6): ``ask(question)`` with a
question's ``text``, ``options`` (``key``, ``label``), ``stage`` and
``timeout_seconds``, answering with ``value``, ``selected_option`` and ``text``.

Example:
    >>> from waygraph.model import Graph
    >>> from waygraph.pipelines.checkpoint import Checkpoint
    >>> plan = (Graph.builder().human("ok", prompt="Ship?").exit("done")
    ...         .edge("start", "ok").edge("ok", "done", label="[Y] Yes").plan("gate"))
    >>> records = PipelineRecords("memory://")
    >>> records.save(Checkpoint(run_id="r1", plan_id="gate", next_node="ok"), plan)
    >>> # A person answers while the runner waits (here: at its first pause).
    >>> person = lambda seconds: PipelineRecords(records.store).answer("r1", "y")
    >>> asker = StoreInterviewer(records, "r1", sleep=person)
    >>> asker.wait("ok", "Ship?", ["[Y] Yes"])["choice"]
    '[Y] Yes'
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from waygraph.pipelines.record import PipelineRecords
from waygraph.planning._lease import RENEW

__all__ = ["OptionShape", "QuestionShape", "StoreInterviewer", "StoredAnswer"]

log = logging.getLogger("waygraph.pipelines")

#: Seconds between two looks at the store while a question waits.
POLL = 1.0
#: What a yes/no question offers a person (the specification's YES_NO and CONFIRMATION).
_YES_NO = ("[Y] Yes", "[N] No")


class OptionShape(Protocol):
    """A choice of a question (§6.2 Option): its accelerator key and its label."""

    @property
    def key(self) -> str:
        """The accelerator key (``Y``)."""
        ...

    @property
    def label(self) -> str:
        """The text shown (``[Y] Yes, deploy``)."""
        ...


class QuestionShape(Protocol):
    """What :meth:`StoreInterviewer.ask` reads of a question (§6.2 Question)."""

    @property
    def text(self) -> str:
        """The question put to the person."""
        ...

    @property
    def options(self) -> Sequence[OptionShape]:
        """The choices (none for a free-form or yes/no question)."""
        ...

    @property
    def stage(self) -> str:
        """The node that asks."""
        ...

    @property
    def timeout_seconds(self) -> float | None:
        """Seconds to wait for an answer (None: as long as it takes)."""
        ...


@dataclass(frozen=True)
class StoredAnswer:
    """An answer as the specification's Answer (§6.3) has it.

    ``value`` is the chosen option's key, ``yes``/``no`` for a yes/no
    question, the words for a free-form one, or ``timeout`` (the values of
    :class:`waygraph.pipelines.interviewers.AnswerValue`).

    Example:
        >>> StoredAnswer("timeout").timed_out
        True
    """

    value: str
    selected_option: Any = None
    text: str = ""
    #: Who answered, as they said (``--by``), when they did.
    by: str | None = None

    @property
    def timed_out(self) -> bool:
        """No answer came within the question's timeout."""
        return self.value == "timeout"


def _kind(question: object) -> str:
    kind = getattr(question, "type", "")
    return str(getattr(kind, "value", kind) or "").upper()


class StoreInterviewer:
    """Asks through the store and waits for an answer (see the module docstring).

    ``records`` must be the runner's own :class:`PipelineRecords` (the one
    that saves the run's checkpoints and holds its lease). ``sleep`` and
    ``clock`` are injectable so a test answers between two looks without
    waiting; ``poll`` is the seconds between looks.
    """

    def __init__(
        self,
        records: PipelineRecords,
        run_id: str,
        *,
        poll: float = POLL,
        sleep: Callable[[float], object] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        renew_every: float = RENEW,
    ) -> None:
        self.records = records
        self.run_id = run_id
        self.poll = poll
        self._sleep = sleep
        self._clock = clock
        self.renew_every = renew_every

    def wait(
        self,
        node: str,
        prompt: str,
        choices: Sequence[str],
        *,
        timeout: float | None = None,
    ) -> dict[str, Any] | None:
        """Record the question, then wait for its answer as stored (None: ``timeout`` passed).

        The answer is ``{"answer", "choice", "by", "node", ...}``: ``choice``
        is the label picked (None for a question without choices). A run
        resumed at the same gate finds an answer given while no process ran it.
        """
        asked = self.records.ask(
            self.run_id, {"node": node, "prompt": prompt, "choices": list(choices)}
        )
        question = str(asked["id"])
        started = renewed = self._clock()
        while True:
            answer = self.records.answered(self.run_id, question)
            if answer is not None:
                return answer
            now = self._clock()
            if timeout is not None and now - started >= timeout:
                return None
            if now - renewed >= self.renew_every:
                # A person may take hours: the run stays held by this process meanwhile.
                self.records.renew(self.run_id)
                renewed = now
            self._sleep(self.poll)

    def ask(self, question: QuestionShape) -> StoredAnswer:
        """The specification's ``ask``: a person's answer to ``question``, or ``timeout``."""
        yes_no = _kind(question) in ("YES_NO", "CONFIRMATION")
        options = list(question.options or ())
        labels = list(_YES_NO) if yes_no else [o.label for o in options]
        got = self.wait(question.stage, question.text, labels, timeout=question.timeout_seconds)
        if got is None:
            return StoredAnswer("timeout")
        said, choice, by = str(got.get("answer") or ""), got.get("choice"), got.get("by")
        if yes_no:
            return StoredAnswer("yes" if choice == _YES_NO[0] else "no", text=said, by=by)
        if choice is None:
            return StoredAnswer(said, text=said, by=by)
        picked = options[labels.index(choice)]
        return StoredAnswer(picked.key, selected_option=picked, text=said, by=by)

    def ask_multiple(self, questions: Sequence[QuestionShape]) -> list[StoredAnswer]:
        """Each question asked in turn (§6.1)."""
        return [self.ask(q) for q in questions]

    def inform(self, message: str, stage: str) -> None:
        """A message for the person (§6.1): logged; the run's events tell the rest."""
        log.info("pipeline run %s at %s: %s", self.run_id, stage, message)
