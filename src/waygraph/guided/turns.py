"""What a turn takes and gives: argument checks, the evidence a tool result
becomes, and the :class:`Guidance` the turn returns.

Example:
    >>> call_digest("pytest   -q")
    'pytest -q'
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar

from waygraph import engine, tracing
from waygraph.errors import InputError
from waygraph.ids import MAX_ID_CHARS, id_problem
from waygraph.model import Plan
from waygraph.model.record import RunKind
from waygraph.store import Write
from waygraph.store.retry import retry_conflicts
from waygraph.verify import SOURCES, Observation
from waygraph.verify_types.evidence import context_updates_of

__all__ = [
    "MAX_ID_CHARS",
    "MAX_MESSAGE_CHARS",
    "Event",
    "Guidance",
    "call_digest",
    "check_answer",
    "check_source",
    "check_turn",
    "evidence_of",
    "retry_conflicts",
    "run_write",
]

T = TypeVar("T")

log = logging.getLogger("waygraph.navigator")


#: A user message is matched on its first this many characters.
MAX_MESSAGE_CHARS = 100_000


class Event(dict[str, Any]):
    """An engine event: a JSON-ready dict whose keys also read as attributes.

    Example:
        >>> Event(type="edge_followed", node="fix", to="test").to
        'test'
    """

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    @classmethod
    def copies(cls, events: Iterable[Mapping[str, Any]]) -> list[Event]:
        """A turn's events as the caller's own copies.

        The engine's read-only events are copied with ``.copy()``: a dict made
        from a read-only mapping reads it key by key, about 6x slower.

        Example:
            >>> from types import MappingProxyType
            >>> Event.copies([MappingProxyType({"type": "node_entered"})])[0].type
            'node_entered'
        """
        return [cls(e.copy() if type(e) is MappingProxyType else e) for e in events]


@dataclass(frozen=True, slots=True)
class Guidance:
    """What a turn returns: the model context (or None), new events, the run record."""

    text: str | None = None
    events: list[Event] = field(default_factory=list)
    run: dict[str, Any] | None = None
    #: Set when the turn was not applied (non-strict mode): what went wrong.
    #: A turn that lost every race for ``conflict_timeout`` seconds says so here.
    error: str | None = None

    @property
    def active(self) -> bool:
        """Whether a plan is running for the session."""
        return self.run is not None and self.run.get("status") == "running"


def check_turn(
    session_id: Any,
    user_message: Any,
    domain: Any,
    allowed_plans: Any,
    tool_output: Any,
    tool_name: Any,
    exit_code: Any,
    observation_id: Any,
) -> None:
    """Refuse arguments no turn can use, with one clear :class:`InputError` each."""
    _check_id("session_id", session_id, required=True)
    for name, value in (
        ("observation_id", observation_id),
        ("tool_name", tool_name),
        ("domain", domain),
    ):
        _check_id(name, value, required=False)
    for name, value in (("user_message", user_message), ("tool_output", tool_output)):
        if value is not None and not isinstance(value, str):
            raise InputError(f"{name} must be a string or None, not {type(value).__name__}")
    if exit_code is not None and (isinstance(exit_code, bool) or not isinstance(exit_code, int)):
        raise InputError(f"exit_code must be an int or None, not {exit_code!r}")
    if allowed_plans is not None:
        if isinstance(allowed_plans, str | bytes) or not hasattr(allowed_plans, "__iter__"):
            raise InputError(
                f"allowed_plans must be a list of plan ids, not {type(allowed_plans).__name__}"
            )
        for plan_id in allowed_plans:
            if not isinstance(plan_id, str):
                raise InputError(f"allowed_plans must hold plan ids (strings), not {plan_id!r}")


def check_source(source: Any, *, strict: bool) -> str:
    """``source`` if it is one of ``SOURCES``; else InputError (strict) or ``"tool"``."""
    if source in SOURCES:
        return str(source)
    message = f"source must be one of {', '.join(SOURCES)}, not {source!r}"
    if strict:
        raise InputError(message)
    log.warning("waygraph: %s; treating the result as a tool result", message)
    return "tool"


#: Characters of who answered kept on the event (a name, an address).
MAX_BY_CHARS = 200


def check_answer(session_id: Any, answer: Any, by: Any) -> None:
    """Refuse an answer no session can take (:meth:`Navigator.answer`), with one InputError each."""
    _check_id("session_id", session_id, required=True)
    if not isinstance(answer, str):
        raise InputError(f"answer must be a string, not {type(answer).__name__}")
    if not answer.strip():
        raise InputError("answer is empty")
    if by is not None and (not isinstance(by, str) or len(by) > MAX_BY_CHARS):
        raise InputError(f"by must be a string of at most {MAX_BY_CHARS} characters, or None")


def _check_id(name: str, value: Any, *, required: bool) -> None:
    if value is None and not required:
        return
    if not isinstance(value, str):
        raise InputError(f"{name} must be a string, not {type(value).__name__}")
    if not value and not required:
        return  # an empty tool name or call id says nothing, and harms nothing
    problem = id_problem(value)
    if problem is not None:
        raise InputError(f"{name} {problem}: {value[:40]!r}")


#: Argument names whose value says best what a tool call did.
_CALL_KEYS = ("command", "cmd", "code", "script", "query", "path", "file", "url")


def call_digest(tool_args: Any) -> str | None:
    """A one-line digest of a tool call's command or arguments (None when not given).

    Example:
        >>> call_digest({"runtime": "terminal", "code": "  pytest   -q  "})
        'pytest -q'
        >>> call_digest({"a": 1})
        '{"a": 1}'
    """
    if tool_args is None:
        return None
    if isinstance(tool_args, Mapping):
        for key in _CALL_KEYS:
            value = tool_args.get(key)
            if isinstance(value, str) and value.strip():
                tool_args = value
                break
        else:
            tool_args = json.dumps(tool_args, sort_keys=True, default=str)
    line = " ".join(str(tool_args).split())
    return line if len(line) <= engine.EXCERPT_CHARS else line[: engine.EXCERPT_CHARS - 3] + "..."


def evidence_of(observation: Observation) -> engine.Evidence:
    """The evidence an observation gives the engine (output cut, fingerprinted)."""
    text = observation.text
    key = f"{observation.tool_name}\0{observation.call}\0{observation.exit_code}\0{text}"
    return engine.Evidence(
        source=observation.source,
        tool=observation.tool_name,
        call=observation.call,
        output=text[: engine.MAX_LAST_OUTPUT],
        fingerprint=hashlib.blake2b(key.encode(errors="replace"), digest_size=8).hexdigest(),
        # Read from the whole output: the last line is past the cut of a long one.
        context_updates=None if observation.source == "model" else context_updates_of(text),
    )


def run_write(
    run: engine.Run,
    plan: Plan | None,
    version: int,
    events: list[Mapping[str, Any]],
    *,
    new: bool,
    record: dict[str, Any] | None = None,
) -> Write:
    """The store write of a guided run: its record (made here unless given), events, columns.

    ``new``: the run becomes its session's current run in the same commit.
    """
    return Write(
        run.run_id,
        engine.to_record(plan, run) if record is None else record,
        version,
        tracing.stamp(events),  # a session links to its trace (waygraph serve)
        kind=RunKind.GUIDED.value,
        session=run.session_id,
        status=str(run.status),
        plan=run.plan_id,
        make_current=new,
    )
