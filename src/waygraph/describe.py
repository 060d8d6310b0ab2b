"""Events and times in words, the same for the dashboard and the command line.

:func:`describe_event` is the one description of a run's events: the
dashboard's timeline and ``waygraph play`` both print it, so a user reads
the same sentence wherever a run is shown. :func:`ago` is the short relative
time of the sessions tables. Plain text, no markup: callers escape it for
HTML or rich.

Example:
    >>> describe_event({"type": "plan_completed", "node": "done"})
    'Plan completed at done'
    >>> describe_event({"type": "human_answered", "node": "ok", "answer": "y", "by": "ann",
    ...                 "choice": "[Y] Yes", "to": "deploy"})
    "ann answered “y” at ok: chose '[Y] Yes' → deploy"
    >>> describe_event({"type": "node_finished", "node": "fetch", "status": "failed",
    ...                 "result": {"attempts": 2, "error": "timed out after 60 s"}})
    'Step fetch failed after 2 attempts: timed out after 60 s'
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from waygraph.store import StoredRecord

__all__ = ["ago", "describe_event", "not_waiting", "record_row", "waiting_for"]


def ago(updated_at: float, now: float | None = None) -> str:
    """A short relative time ("4 s ago", "3 min ago").

    Example:
        >>> ago(100.0, now=190.0)
        '1 min ago'
    """
    seconds = max(0, int((now if now is not None else time.time()) - updated_at))
    if seconds < 60:
        return f"{seconds} s ago"
    if seconds < 3600:
        return f"{seconds // 60} min ago"
    if seconds < 86400:
        return f"{seconds // 3600} h ago"
    return f"{seconds // 86400} d ago"


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def record_row(record: StoredRecord) -> dict[str, Any]:
    """A stored record of any kind as one sessions-table row: the dashboard's and the CLI's.

    Example:
        >>> from waygraph.store import StoredRecord
        >>> rec = StoredRecord(key="run_1", kind="guided", version=1, session="s",
        ...     status="running", plan="p", data={"current_node": "fix", "attempts": 2})
        >>> row = record_row(rec)
        >>> row["session_id"], row["key"], row["current_node"], row["attempts"]
        ('s', 'run_1', 'fix', 2)
    """
    data = record.data if isinstance(record.data, dict) else {}
    return {
        "session_id": record.session,
        "kind": record.kind,
        "key": record.key,
        "plan": record.plan or _str(data.get("plan_id")),
        "status": record.status or _str(data.get("status")),
        # Event-driven plans name their position current_state.
        "current_node": _str(data.get("current_node")) or _str(data.get("current_state")),
        "attempts": _int(data.get("attempts")),
        "turn": _int(data.get("turn")),
        # "user" while a person must answer; event-driven plans keep a mapping
        # here (the response they wait for), which is not a person.
        "awaiting": _str(data.get("awaiting")),
        # The progress every kind of run record carries (waygraph.model.record.RunRecord);
        # None for records written before a kind had it.
        "total_nodes": _int(data.get("total_nodes")),
        "completed_nodes": _int(data.get("completed_nodes")),
        "updated_at": float(record.updated_at),
    }


def _list(values: object) -> str:
    return ", ".join(str(v) for v in values) if isinstance(values, list) else str(values)


#: Timeline words for the events of an event-driven plan (waygraph.events).
_EVENT_PLAN_WORDS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "plan_created": lambda ev: f"Plan created in state {ev.get('state')}",
    "state_entered": lambda ev: f"Entered state {ev.get('state')}",
    "event_applied": lambda ev: (
        f"{ev.get('event_type')}: {ev.get('from')} → {ev.get('to')}"
        if ev.get("to")
        else f"{ev.get('event_type')} received in {ev.get('from')}"
    ),
    "request_sent": lambda ev: f"Sent {ev.get('event_type')} from {ev.get('state')}",
    "plan_paused": lambda ev: f"Paused in state {ev.get('state')}",
    "plan_resumed": lambda ev: (
        f"Resumed in state {ev.get('state')}"
        if "state" in ev
        else "Resumed" + (f"; to run: {_list(ev.get('rerun'))}" if ev.get("rerun") else "")
    ),
    "dependencies_met": lambda ev: f"Dependencies met: {_list(ev.get('depends_on'))}",
    "plan_saved": lambda ev: "Plan saved",
}


def _excerpt(value: object, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _step_finished(ev: Mapping[str, Any]) -> str:
    result = ev.get("result") if isinstance(ev.get("result"), Mapping) else {}
    assert isinstance(result, Mapping)
    status = ev.get("status") or result.get("status")
    attempts = result.get("attempts")
    tries = f" after {attempts} attempts" if isinstance(attempts, int) and attempts > 1 else ""
    if status == "completed":
        output = result.get("output")
        return f"Step {ev.get('node')} completed{tries}" + (
            f": {_excerpt(output)}" if output is not None else ""
        )
    error = ev.get("error") or result.get("error")
    return f"Step {ev.get('node')} {status}{tries}" + (f": {_excerpt(error)}" if error else "")


#: Timeline words for the events of a generated plan's run (waygraph.planning).
_DAG_WORDS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "plan_started": lambda ev: f"Plan started: {ev.get('steps')} steps for “{ev.get('goal')}”",
    "node_started": lambda ev: f"Step {ev.get('node')} started",
    "node_finished": _step_finished,
    "node_interrupted": lambda ev: (
        f"Step {ev.get('node')} interrupted (running when the run stopped); it runs again"
    ),
    "run_checkpoint": lambda ev: "Run state saved (after a revision or a resume)",
}


def _step_settled(ev: Mapping[str, Any]) -> str:
    how = f" ({ev.get('completed_by')})" if ev.get("completed_by") else ""
    said = f": {_excerpt(ev.get('result'))}" if ev.get("result") else ""
    verb = "completed" if ev.get("type") == "step_completed" else "failed"
    return f"Step {ev.get('node')} {verb}{how}{said}"


def _quoted(value: object) -> str:
    return f"“{_excerpt(value)}”"


def _choices(value: object) -> str:
    from waygraph.verify_types.people import choices_text

    return choices_text([str(v) for v in value]) if isinstance(value, list) else ""


def _at(ev: Mapping[str, Any]) -> str:
    return f" at {ev.get('node')}" if ev.get("node") is not None else ""


def _human_asked(ev: Mapping[str, Any]) -> str:
    prompt = f": {_quoted(ev.get('prompt'))}" if ev.get("prompt") else ""
    choices = _choices(ev.get("choices"))
    if choices:
        return f"Asked the user{_at(ev)}{prompt}; choices {choices}"
    # A manual check: the person confirms, with the value when the plan names one.
    value = f" (reply {ev.get('value')!r})" if ev.get("value") else ""
    return f"Asked the user to confirm{_at(ev)}{prompt}{value}"


def _human_answered(ev: Mapping[str, Any]) -> str:
    who = str(ev.get("by")) if ev.get("by") else "The user"
    said = f"{who} answered {_quoted(ev.get('answer', ''))}{_at(ev)}"
    if ev.get("choice") is None:
        return said
    return (
        said + f": chose {str(ev.get('choice'))!r}" + (f" → {ev.get('to')}" if ev.get("to") else "")
    )


def _result_ignored(ev: Mapping[str, Any]) -> str:
    what = f"A result of {ev.get('tool')}" if ev.get("tool") else "A tool result"
    return f"{what}{_at(ev)} was only recorded: a person decides here"


#: Timeline words for what people are asked and answer (waygraph.verify_types.people).
_PERSON_WORDS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "question_asked": lambda ev: (
        f"The model asked the user{_at(ev)}"
        + (f": {_quoted(ev.get('excerpt'))}" if ev.get("excerpt") else "")
    ),
    "human_asked": _human_asked,
    "human_answered": _human_answered,
    "answer_rejected": lambda ev: (
        f"Answer {_quoted(ev.get('answer', ''))}{_at(ev)} is not "
        f"one of the choices" + (f": {_choices(ev.get('choices'))}" if ev.get("choices") else "")
    ),
    "result_ignored": _result_ignored,
}


#: Timeline words for a session plan's events (waygraph.sessions with a store).
_SESSION_WORDS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "session_plan_started": lambda ev: f"Plan started for “{_excerpt(ev.get('goal'))}”",
    "step_declared": lambda ev: f"Declared {ev.get('node')}: {_excerpt(ev.get('description'))}",
    "step_completed": _step_settled,
    "step_failed": _step_settled,
    "step_reopened": lambda ev: f"Step {ev.get('node')} reopened (not done yet)",
    "plan_paused": lambda ev: f"Paused at {ev.get('node')} (iteration limit)",
    "plan_resumed": lambda ev: f"Resumed at {ev.get('node')}",
}


def describe_event(event: Mapping[str, Any]) -> str:
    """One line for a run's timeline (the dashboard's script words live events the same way).

    Example:
        >>> describe_event({"type": "edge_followed", "node": "fix", "to": "test",
        ...                 "condition": "on_success"})
        'fix → test (on_success)'
    """
    kind = event.get("type")
    node = event.get("node")
    if kind == "plan_activated":
        triggers = ", ".join(str(t) for t in event.get("triggers") or [])
        return f"Plan {event.get('plan_id')} activated" + (f" by “{triggers}”" if triggers else "")
    if kind == "node_entered":
        attempt = event.get("attempt")
        return f"Entered {node}" + (f" (attempt {attempt})" if attempt else "")
    if kind == "node_verified":
        outcome = event.get("outcome")
        if outcome is None:  # records written before outcomes were three-valued
            outcome = "success" if event.get("passed") else "fail"
        verdict = {"success": "passed", "fail": "failed"}.get(outcome, "could not decide")
        check = f" ({event.get('check')})" if event.get("check") else ""
        why = f": {event.get('reason')}" if outcome == "unknown" and event.get("reason") else ""
        return f"Verification {verdict} at {node}{check}{why}"
    if kind == "retry_triggered":
        most = event.get("max_attempts")
        return f"Retry {node}: attempt {event.get('attempt')}" + (f" of {most}" if most else "")
    if kind == "edge_followed":
        return f"{node} → {event.get('to')} ({event.get('condition')})"
    state = event.get("state")
    # Event-driven plans say where they are as a state, guided runs as a node.
    where = node if node is not None else state
    if kind in (
        "plan_completed",
        "plan_escalated",
        "plan_expired",
        "plan_aborted",
        "plan_failed",
        "stall",
    ):
        label = kind.replace("plan_", "Plan ").replace("stall", "Stalled")
        reason = event.get("reason")
        at = f" at {where}" if where is not None else ""
        return f"{label}{at}" + (f": {reason}" if reason else "")
    if kind == "checkpoint_saved":
        return f"Checkpoint saved at {node}"
    if kind in _SESSION_WORDS and (node is not None or kind not in _EVENT_PLAN_WORDS):
        return _SESSION_WORDS[kind](event)
    if kind in _EVENT_PLAN_WORDS:
        return _EVENT_PLAN_WORDS[kind](event)
    if kind in _DAG_WORDS:
        return _DAG_WORDS[kind](event)
    if kind == "rewound":
        return f"Rewound to checkpoint {node}"
    if kind == "claim_recorded":
        return f"The model said (not evidence) at {node}: “{event.get('excerpt', '')}”"
    if kind == "claim_unverified":
        return f"The model claimed it was done; unverified: {_list(event.get('nodes') or [])}"
    if kind == "repeat_detected":
        return f"The same failing call {event.get('count')} times at {node}: {event.get('call')}"
    if kind in _PERSON_WORDS:
        return _PERSON_WORDS[kind](event)
    # An event type this module does not know (a newer waygraph, a custom event):
    # its fields in words, never a JSON dump.
    details = ", ".join(
        f"{k} {v}" for k, v in event.items() if k not in ("seq", "type", "key", "turn")
    )
    return f"{str(kind).replace('_', ' ').capitalize()}" + (f": {details[:200]}" if details else "")


#: The events that say what a person is asked: a human node or a manual check
#: (``human_asked``), a question the model put to the user (``question_asked``).
_ASKS = ("human_asked", "question_asked")


def waiting_for(
    run: Mapping[str, Any], events: Iterable[Mapping[str, Any]]
) -> dict[str, Any] | None:
    """What a guided run waiting for a person asks them; None when it waits for nobody.

    ``kind`` is ``choice`` (a human node: answer one of ``choices``),
    ``confirm`` (a manual check: the person's words, with ``value`` when the
    plan names the words) or ``question`` (the model asked the user;
    ``prompt`` is the question). The ask is read from the run's events: the
    last ``human_asked`` of the current node, else the last question.

    Example:
        >>> run = {"status": "running", "awaiting": "user", "current_node": "ok"}
        >>> waiting_for(run, [{"type": "human_asked", "node": "ok", "prompt": "Ship?",
        ...                    "choices": ["yes", "no"]}])["choices"]
        ['yes', 'no']
        >>> waiting_for({**run, "awaiting": None}, []) is None
        True
    """
    if run.get("status") != "running" or run.get("awaiting") != "user":
        return None
    node = _str(run.get("current_node"))
    asked: Mapping[str, Any] | None = None
    question: Mapping[str, Any] | None = None
    for event in events:
        if event.get("type") == "human_asked" and event.get("node") == node:
            asked = event
        elif event.get("type") == "question_asked":
            question = event
    if asked is not None:
        raw = asked.get("choices")
        choices = [str(c) for c in raw] if isinstance(raw, list) else []
        value = asked.get("value")
        return {
            "node": node,
            "kind": "choice" if choices else "confirm",
            "prompt": _str(asked.get("prompt")),
            "choices": choices,
            "value": None if value is None else str(value),
        }
    prompt = _str(question.get("excerpt")) if question is not None else None
    return {"node": node, "kind": "question", "prompt": prompt, "choices": [], "value": None}


def not_waiting(session_id: str, run: Mapping[str, Any] | None) -> str:
    """Why an answer for ``session_id`` (whose run record is ``run``) had nowhere to go.

    Example:
        >>> not_waiting("s", {"status": "completed", "current_node": "done"})
        "session 's' is not waiting for an answer: its run is completed (at node 'done')"
        >>> not_waiting("s", {"status": "running", "current_node": "fix"})
        "session 's' is not waiting for an answer: its run is at node 'fix', waiting for the agent"
    """
    start = f"session {session_id!r} is not waiting for an answer"
    if run is None:
        return f"{start}: it has no current run"
    node = _str(run.get("current_node"))
    status = _str(run.get("status")) or "unknown"
    if status == "running":
        return f"{start}: its run is at node {node!r}, waiting for the agent"
    return f"{start}: its run is {status}" + (f" (at node {node!r})" if node else "")
