"""The HTTP API's request and response bodies (they make the OpenAPI document).

Text arriving from clients must be valid Unicode: a lone surrogate (which
JSON escapes can carry) could not be stored or echoed back, so it is refused
with a 422 here rather than failing later. Identifiers (session ids, filter
values) must also be free of control and Unicode format characters, by the
same rule as :func:`waygraph.ids.id_problem`.

Example:
    >>> TurnRequest.model_validate({"tool_output": "3 passed", "exit_code": 0}).exit_code
    0
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StrictBool

from waygraph.guided.turns import MAX_BY_CHARS
from waygraph.ids import FORBIDDEN_ID_CHARS, MAX_ID_CHARS

__all__ = [
    "ID_PATTERN",
    "SEARCH_PATTERN",
    "AnswerRequest",
    "AnswerResponse",
    "ErrorBody",
    "EventList",
    "Health",
    "MatchRequest",
    "MatchResponse",
    "MatchResult",
    "PlanList",
    "PlanSummary",
    "RequestProblem",
    "ResetResponse",
    "SessionDetail",
    "SessionList",
    "SessionSummary",
    "Text",
    "TurnRequest",
    "TurnResponse",
    "Waiting",
]

#: Session ids, plan ids and filter values: 1-200 characters, no control or format
#: characters (U+202E, U+200D, U+FEFF, ...): the rule of ``waygraph.ids.id_problem``.
ID_PATTERN = rf"^[^{FORBIDDEN_ID_CHARS}]{{1,{MAX_ID_CHARS}}}$"
#: A search of the sessions table: as an id, but may be empty (a cleared search box).
SEARCH_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]{0,200}$"
#: The largest text field a request may carry (the body limit applies too).
MAX_TEXT = 1_000_000
#: Exit codes as any operating system reports them (POSIX 0-255, Windows 32-bit).
MIN_EXIT_CODE, MAX_EXIT_CODE = -(2**31), 2**32 - 1


def _valid_unicode(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text (no lone surrogates)") from None
    return value


def _json_integer(value: object) -> int:
    # JSON integers only: 3 and 3.0 (the same number in JSON), not true or "3".
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be an integer")
    if isinstance(value, float) and not value.is_integer():
        raise ValueError("must be an integer")
    return int(value)


ExitCode = Annotated[int, Field(ge=MIN_EXIT_CODE, le=MAX_EXIT_CODE), BeforeValidator(_json_integer)]
Text = Annotated[str, Field(max_length=MAX_TEXT), AfterValidator(_valid_unicode)]
Identifier = Annotated[str, Field(pattern=ID_PATTERN), AfterValidator(_valid_unicode)]


class _Request(BaseModel):
    # Unknown keys are refused: a typo ("tool_ouput") must not pass silently.
    model_config = ConfigDict(extra="forbid")


class RequestProblem(BaseModel):
    """One thing wrong with a request: where (``loc``) and what."""

    loc: list[str | int]
    message: str
    type: str


class ErrorBody(BaseModel):
    """Every 4xx/5xx answer: a stable ``error`` code and a message for people."""

    error: str = Field(examples=["session_not_found"])
    message: str = Field(examples=["no session 'chat-9' in sqlite:///runs.db"])
    problems: list[RequestProblem] | None = None


class Health(BaseModel):
    """The server's health: status, version, store and plan count."""

    status: str = Field(examples=["ok"])
    version: str
    store: str
    plans: int


class PlanSummary(BaseModel):
    """A plan in a listing: id, name, triggers and size."""

    id: str
    name: str
    description: str | None
    domains: list[str]
    triggers: list[str]
    trigger_threshold: int
    linear: bool
    nodes: int
    edges: int


class PlanList(BaseModel):
    """Every plan in the library (``GET /api/plans``)."""

    plans: list[PlanSummary]


class MatchRequest(_Request):
    """``POST /api/match``: which plan would this message activate?"""

    message: Text
    domain: Identifier | None = None
    allowed_plans: list[Identifier] | None = Field(default=None, max_length=10_000)


class MatchResult(BaseModel):
    """One plan's match against a message: score, hits and whether it activates."""

    plan_id: str
    score: int
    hits: list[str]
    domain_matched: bool
    activates: bool
    reason: str | None
    #: Matches by meaning only: the cosine similarity, and ``"semantic"``.
    similarity: float | None = None
    matched_by: str | None = None


class MatchResponse(BaseModel):
    """Which plans a message would start (``POST /api/match``)."""

    message: str
    domain: str | None
    matching: str
    activates: str | None
    matched_by: str | None
    matches: list[MatchResult]
    #: Why matching by meaning was not used (the model did not load), else None.
    semantic_off: str | None


class SessionSummary(BaseModel):
    """One row of the sessions table: a session's latest record of one kind.

    ``kind`` is ``run`` for guided runs; planning and event-driven runs
    written to the same store show with their own kinds (``dag``, ``event``).
    """

    session_id: str | None
    kind: str
    key: str
    plan: str | None
    status: str | None
    current_node: str | None
    attempts: int | None
    turn: int | None
    awaiting: str | None = Field(
        default=None, description='"user" while the run waits for a person\'s answer.'
    )
    updated_at: float


class SessionList(BaseModel):
    """One page of the sessions table (``?offset=``/``?limit=``), newest activity first."""

    sessions: list[SessionSummary]
    total: int = Field(description="Rows matching every filter, on every page.")
    offset: int = Field(description="Rows skipped before this page.")
    limit: int = Field(description="Rows per page asked for.")
    counts: dict[str, int] = Field(
        description="Rows per status matching every filter but status (for filter chips)."
    )


class Waiting(BaseModel):
    """What a run waiting for a person asks them (``describe.waiting_for``)."""

    node: str | None
    kind: str = Field(
        description="choice: answer one of choices; confirm: a manual check (reply value when "
        "set); question: the model asked the user (prompt is the question).",
        examples=["choice"],
    )
    prompt: str | None
    choices: list[str]
    value: str | None


class SessionDetail(BaseModel):
    """A session: its latest record, the guidance now and every record."""

    session_id: str
    key: str
    kind: str
    run: dict[str, Any]
    context: str | None = Field(description="The guidance the model would see now.")
    records: list[SessionSummary]
    trace_id: str | None = Field(
        default=None, description="The OpenTelemetry trace of the latest traced turn (hex)."
    )
    trace_url: str | None = Field(
        default=None, description="That trace in a viewer (WAYGRAPH_TRACE_URL), if set."
    )
    waiting: Waiting | None = Field(
        default=None, description="What the run asks a person, while it waits for an answer."
    )


class EventList(BaseModel):
    """A session's events after a sequence number (``GET /api/sessions/ID/events``)."""

    session_id: str
    key: str
    events: list[dict[str, Any]]


class TurnRequest(_Request):
    """``Navigator.turn``'s keywords: a user message, a tool result, or both.

    ``user_message`` is the user's own message (a person's evidence); a
    person who answers outside the chat uses ``POST .../answer``.
    """

    user_message: Text | None = None
    domain: Identifier | None = None
    allowed_plans: list[Identifier] | None = Field(default=None, max_length=10_000)
    tool_output: Text | None = None
    tool_name: Identifier | None = None
    exit_code: ExitCode | None = None
    observation_id: Identifier | None = None
    tool_args: dict[str, Any] | list[Text] | Text | None = Field(
        default=None,
        description="The call's command or arguments: a command_matches check reads the "
        "command from a string, a mapping's command/cmd/code/script, or an argv list.",
    )
    source: Literal["tool", "model", "host"] = Field(
        default="tool",
        description="What tool_output is: a tool's result, the model's own words (never "
        "evidence) or a check the host ran.",
    )
    final: StrictBool = Field(default=False, description="Model words that end its work (a claim).")
    asks_user: StrictBool | None = Field(
        default=None,
        description="Whether the model's final words ask the user something (None: a reply "
        "whose last sentence ends with ? does); a question is not a claim.",
    )


class TurnResponse(BaseModel):
    """What one turn produced: guidance text, events and the run record."""

    text: str | None = Field(description="Guidance to inject into the model's context.")
    events: list[dict[str, Any]]
    run: dict[str, Any] | None


def _not_blank(value: str) -> str:
    # The Navigator refuses a blank answer too; here it is a 422 naming the field.
    if not value.strip():
        raise ValueError("must not be blank")
    return value


#: Who answered: a name or handle as ``Navigator.answer(by=...)`` takes it, no controls.
BY_PATTERN = rf"^[^\x00-\x1f\x7f-\x9f]{{1,{MAX_BY_CHARS}}}$"
By = Annotated[str, Field(pattern=BY_PATTERN), AfterValidator(_valid_unicode)]


class AnswerRequest(_Request):
    """``Navigator.answer``'s arguments: a person's answer, and who gave it."""

    answer: Annotated[
        Text,
        Field(
            min_length=1,
            description="A choice's label or its accelerator (y for [Y] Yes), the words a manual "
            "check asks for, or the reply to the model's question. Read on its first 100,000 "
            "characters, like a user message.",
        ),
        AfterValidator(_not_blank),
    ]
    by: By | None = Field(
        default=None, description="Who answered (kept on the human_answered event)."
    )


class AnswerResponse(BaseModel):
    """What an answer did: the guidance, events and run; ``error`` when it picked no choice."""

    text: str | None = Field(description="Guidance to inject into the model's context.")
    events: list[dict[str, Any]]
    run: dict[str, Any] | None
    error: str | None = Field(
        description="Set when the answer is none of the choices: it lists them (the run stays).",
        examples=["'maybe' is not one of the choices: answer '[Y] Yes' or '[N] No'"],
    )


class ResetResponse(BaseModel):
    """A session after its run was reset."""

    session_id: str
    run: dict[str, Any] | None
