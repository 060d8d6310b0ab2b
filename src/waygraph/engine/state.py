"""The engine's data: the run, the evidence the driver passes, events, and records.

Example:
    >>> from waygraph.engine import Run
    >>> Run(run_id="r", plan_id="p", plan_name="P").finished
    False
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol

from waygraph.engine.run_context import frozen as frozen_value
from waygraph.engine.run_context import thawed
from waygraph.model import Plan, Verify
from waygraph.model.record import (
    NodeStates,
    RecentEvents,
    RunKind,
    RunRecord,
    stored_dict,
    thawed_node,
)

MAX_EVENTS = 50
#: How many non-task nodes one routing may pass through.
MAX_ROUTING_HOPS = 15
#: How many observation ids a run remembers to ignore repeats.
MAX_SEEN_IDS = 100
#: Events in an escalation report.
REPORT_EVENTS = 5

EVENT_TYPES = (
    "plan_activated",
    "node_entered",
    "node_verified",
    "retry_triggered",
    "edge_followed",
    "plan_completed",
    "plan_escalated",
    "plan_expired",
    "plan_aborted",
    "stall",
    "checkpoint_saved",
    "rewound",
    "claim_recorded",
    "claim_unverified",
    "repeat_detected",
    "question_asked",
    "human_asked",
    "human_answered",
    "answer_rejected",
    "result_ignored",
    "context_updated",
    "context_refused",
    "retry_routed",
    "goal_gate_unsatisfied",
    "plan_failed",
)

#: How many attempts per node the run record keeps (shown to the model).
MAX_TRIED = 3
#: Characters of tool output the run keeps as ``last_tool_output``.
MAX_LAST_OUTPUT = 2000
#: Characters of a claim or output line kept in events and the tried list.
EXCERPT_CHARS = 160


class _Verdictish(Protocol):
    @property
    def outcome(self) -> str: ...

    @property
    def reason(self) -> str | None: ...


#: Answers "does the evidence satisfy this predicate?": True, False, None for
#: unknown, or a verdict object with ``outcome`` and ``reason``
#: (:class:`waygraph.verify.Verdict`).
Judge = Callable[[Verify | None], "bool | _Verdictish | None"]


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the driver knows about the observation besides its verdict.

    ``source``: ``tool``, ``model`` or ``host``. ``call``: a one-line digest of
    the command or arguments. ``output``: the start of the output (the driver
    cuts it). ``fingerprint``: equal for the same call with the same output,
    so repeats can be told apart from new attempts.
    """

    source: str = "tool"
    tool: str | None = None
    call: str | None = None
    output: str = ""
    fingerprint: str | None = None
    #: The keys the result sets in the run's context: the ``context_updates``
    #: (or ``context``) object of a JSON last line of the whole output
    #: (:func:`waygraph.verify_types.evidence.context_updates_of`), read before ``output`` is cut.
    context_updates: Mapping[str, Any] | None = None


SUCCESS_EDGES = ("on_success", "always")
RETRY_EDGES = ("on_retry",)
EXHAUST_EDGES = ("on_exhaust", "on_fail", "always")
FAILURE_CONDITIONS = frozenset({"on_fail", "on_retry", "on_exhaust"})


@dataclass(frozen=True, slots=True)
class Run:
    """The state of one plan run in one session: an immutable value.

    Engine functions take a run and return a new one; the run they were given
    never changes (its containers are tuples and read-only mappings, down to
    each node's state and each event), so a driver may cache, share or
    compare runs freely. To change one outside the engine, use
    :func:`dataclasses.replace`.
    """

    run_id: str
    plan_id: str
    plan_name: str
    mode: str = "graph"
    status: str = "running"
    current_node: str | None = None
    visited: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: _EMPTY)
    path: tuple[str, ...] = ()
    started_turn: int = 0
    turn: int = 0
    turns_since_transition: int = 0
    stale_after_turns: int = 10
    transitions: int = 0
    pace_level: str | None = None
    reason: str | None = None
    events: tuple[Mapping[str, Any], ...] = ()
    seen: tuple[str, ...] = ()
    checkpoints: tuple[Mapping[str, Any], ...] = ()
    report: tuple[Mapping[str, Any], ...] | None = None
    session_id: str | None = None
    plan_version: str | None = None
    domain: str | None = None
    last_output: str | None = None
    turns_since_progress: int = 0
    #: Nodes verified at least once in this run, in the order first completed.
    completed: tuple[str, ...] = ()
    #: What the model must be told beyond the node itself (an unknown verdict,
    #: a claim, a failed gate), as data; render turns it into words.
    notice: Mapping[str, Any] | None = None
    #: The current run of identical failing calls: node, fingerprint, count.
    streak: Mapping[str, Any] | None = None
    #: Who the run waits for: ``"user"`` at a ``human`` node, a ``manual``
    #: check, or after the model asked the user a question; None otherwise.
    awaiting: str | None = None
    #: The run's context (§5.1): keys tool results set, read by edge
    #: conditions (``context.tests_passed``); bounded by
    #: :mod:`waygraph.engine.run_context`.
    context: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    #: Times an unsatisfied goal gate sent the run back (bounded by the
    #: plan's ``max_goal_gate_redirects``).
    redirects: int = 0

    def __post_init__(self) -> None:
        # A run built by hand (or by dataclasses.replace) with lists and dicts
        # is made read-only too; the engine's own runs skip this (Draft.freeze).
        for name in ("path", "events", "seen", "checkpoints", "completed"):
            value = getattr(self, name)
            if not isinstance(value, tuple):
                object.__setattr__(
                    self, name, tuple(_frozen(v) if isinstance(v, dict) else v for v in value)
                )
        if type(self.visited) is not MappingProxyType:
            frozen = {k: frozen_node(v) for k, v in self.visited.items()}
            object.__setattr__(self, "visited", MappingProxyType(frozen))
        for name in ("notice", "streak"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))
        if self.report is not None and not isinstance(self.report, tuple):
            object.__setattr__(self, "report", tuple(_frozen(e) for e in self.report))
        if type(self.context) is not MappingProxyType:
            object.__setattr__(self, "context", frozen_value(self.context))

    @property
    def finished(self) -> bool:
        """Whether the run has stopped (completed, failed, escalated or aborted)."""
        return self.status != "running"

    def attempts(self, node_id: str | None = None) -> int:
        """Attempts made at ``node_id`` (default: the current node) in its latest entry."""
        state = self.visited.get(node_id or self.current_node or "")
        return int(state["attempts"]) if state else 0

    def draft(self) -> Draft:
        """A working copy for one engine call, settable (engine-internal)."""
        # Positional and attribute by attribute: the fastest copy of a slotted
        # object in CPython, and the engine makes one per call.
        return Draft(
            self.run_id,
            self.plan_id,
            self.plan_name,
            self.mode,
            self.status,
            self.current_node,
            self.visited.copy(),  # type: ignore[attr-defined]
            self.path,
            self.started_turn,
            self.turn,
            self.turns_since_transition,
            self.stale_after_turns,
            self.transitions,
            self.pace_level,
            self.reason,
            list(self.events),
            self.seen,
            self.checkpoints,
            self.report,
            self.session_id,
            self.plan_version,
            self.domain,
            self.last_output,
            self.turns_since_progress,
            self.completed,
            self.notice,
            self.streak,
            self.awaiting,
            self.context,
            self.redirects,
        )


@dataclass(slots=True)
class Draft:
    """A run being changed inside one engine call: :class:`Run`'s fields, settable.

    Only the engine makes drafts (``run.draft()``) and turns them into runs
    (:meth:`freeze`). Everything it stores is read-only already (tuples,
    node states from :func:`frozen_node`, events and checkpoints as
    read-only mappings); the node-state table and the event list are the only
    containers changed in place. The two classes have the same slots in the
    same order, so freezing is a change of class, not a copy.
    """

    run_id: str
    plan_id: str
    plan_name: str
    mode: str
    status: str
    current_node: str | None
    visited: dict[str, Mapping[str, Any]]
    path: tuple[str, ...]
    started_turn: int
    turn: int
    turns_since_transition: int
    stale_after_turns: int
    transitions: int
    pace_level: str | None
    reason: str | None
    events: list[Mapping[str, Any]]
    seen: tuple[str, ...]
    checkpoints: tuple[Mapping[str, Any], ...]
    report: tuple[Mapping[str, Any], ...] | None
    session_id: str | None
    plan_version: str | None
    domain: str | None
    last_output: str | None
    turns_since_progress: int
    completed: tuple[str, ...]
    notice: Mapping[str, Any] | None
    streak: Mapping[str, Any] | None
    awaiting: str | None
    context: Mapping[str, Any]
    redirects: int

    def attempts(self, node_id: str | None = None) -> int:
        state = self.visited.get(node_id or self.current_node or "")
        return int(state["attempts"]) if state else 0

    def freeze(self) -> Run:
        """This draft, now a :class:`Run`; it is not used as a draft after this."""
        self.visited = MappingProxyType(self.visited)  # type: ignore[assignment]
        self.events = tuple(self.events)  # type: ignore[assignment]
        if type(self.notice) is dict:
            self.notice = MappingProxyType(self.notice)
        if type(self.streak) is dict:
            self.streak = MappingProxyType(self.streak)
        self.__class__ = Run  # type: ignore[assignment]
        return self  # type: ignore[return-value]


_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _frozen(value: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    # Mappings the engine wrote are plain dicts; ones it kept are proxies already.
    if value is None or type(value) is MappingProxyType:
        return value
    return MappingProxyType(dict(value))


def frozen_node(state: Mapping[str, Any]) -> Mapping[str, Any]:
    """A node's state (outcome, attempts, tried) as the read-only value a run holds."""
    if type(state) is MappingProxyType:
        return state
    tried = state.get("tried")
    if tried is None:
        return MappingProxyType(dict(state))
    return MappingProxyType({**state, "tried": tuple(_frozen(e) for e in tried)})


def frozen_checkpoint(node_id: str, path_len: int, visited: Mapping[str, Any]) -> Mapping[str, Any]:
    """A checkpoint as a run holds it: where it was, and the node states then."""
    states = MappingProxyType({k: frozen_node(v) for k, v in visited.items()})
    return MappingProxyType({"node": node_id, "path_len": path_len, "visited": states})


class Result(NamedTuple):
    """What an engine call returns: the new run and the events it produced.

    The events are the run's own, read-only; ``dict(event)`` is a copy to change.
    """

    run: Run
    events: list[Mapping[str, Any]]


def to_record(plan: Plan | None, run: Run) -> dict[str, Any]:
    """The run as a JSON-ready dict, with the supervisor fields of DESIGN.md.

    ``current_step``/``total_steps``/``steps_completed``/``steps_failed``/
    ``turns_since_progress`` are the established selector's names, kept so
    existing supervisors read records unchanged. It is :func:`guided_record`'s
    stored form.
    """
    return stored_dict(*_guided_parts(plan, run))


#: A guided record's fields, as :func:`~waygraph.model.record.stored_dict` takes them.
_Parts = tuple[RunKind, str, str, str, str | None, NodeStates, list[str], int, int, dict[str, Any]]


def guided_record(plan: Plan | None, run: Run) -> RunRecord:
    """The guided run as the one :class:`~waygraph.model.record.RunRecord` of every kind.

    Example:
        >>> from waygraph.engine import Run
        >>> rec = guided_record(None, Run(run_id="r1", plan_id="p", plan_name="P", mode="graph",
        ...                                 status="running", current_node="fix"))
        >>> rec.kind, rec.plan, rec.current_node, rec.total_nodes
        (<RunKind.GUIDED: 'guided'>, 'p', 'fix', 0)
    """
    # The parts are the record's first fields, in order.
    return RunRecord(*_guided_parts(plan, run), session=run.session_id)


def _guided_parts(plan: Plan | None, run: Run) -> _Parts:
    """A guided record's fields in :func:`~waygraph.model.record.stored_dict`'s order."""
    order = plan.graph.task_order if plan is not None else {}
    total = len(order) if order else len(run.visited)
    # The established selector's supervisor fields (documents 000 and 003):
    # lists of indices into the plan's task order, and completed counts.
    steps_completed = sorted([order[n] for n in run.completed if n in order])
    steps_failed = sorted(
        [order[n] for n, v in run.visited.items() if v["outcome"] == "fail" and n in order]
    )
    completed = len(steps_completed) if order else len(run.completed)
    notice, streak, report = run.notice, run.streak, run.report
    # One dict display: the record's own keys, in the order records have kept them.
    details: dict[str, Any] = {
        "plan_id": run.plan_id,
        "plan_name": run.plan_name,
        "mode": run.mode,
        "started_turn": run.started_turn,
        "turn": run.turn,
        "turns_since_transition": run.turns_since_transition,
        "stale_after_turns": run.stale_after_turns,
        "transitions": run.transitions,
        "pace_level": run.pace_level,
        "reason": run.reason,
        "session_id": run.session_id,
        "plan_version": run.plan_version,
        "domain": run.domain,
        # Read-only mappings: .copy() is their dict's copy, made in C.
        "notice": None if notice is None else notice.copy(),  # type: ignore[attr-defined]
        "streak": None if streak is None else streak.copy(),  # type: ignore[attr-defined]
        "awaiting": run.awaiting,
        "redirects": run.redirects,
        "seen": list(run.seen),
        "checkpoints": [
            {
                "node": c["node"],
                "path_len": c["path_len"],
                "visited": {k: thawed_node(v) for k, v in c["visited"].items()},
            }
            for c in run.checkpoints
        ],
        "report": None if report is None else [e.copy() for e in report],  # type: ignore[attr-defined]
        "attempts": run.attempts(),
        "completed": list(run.completed),
        "current_step": total if run.status == "completed" else completed,
        "total_steps": total,
        "steps_completed": steps_completed,
        "steps_failed": steps_failed,
        "turns_since_progress": run.turns_since_progress,
        "last_tool_output": run.last_output,
        "context": thawed(run.context),
        # Last, where a JSON store splices it in: copies of the run's own
        # read-only events, which a store encodes (or copies) once per event.
        "events": RecentEvents.of(run.events),
    }
    return (
        RunKind.GUIDED,
        run.run_id,
        run.plan_id,
        # Plain text in records, whatever the engine set (a RunStatus is a str subclass).
        str(run.status),
        run.current_node,
        NodeStates.of(run.visited),
        list(run.path),
        total,
        completed,
        details,
    )


def from_record(record: dict[str, Any]) -> Run:
    """Rebuild a :class:`Run` from :func:`to_record`'s dict (nothing of it is shared)."""
    visited = record.get("visited", {})
    return Run(
        run_id=record["run_id"],
        plan_id=record["plan_id"],
        plan_name=record.get("plan_name", record["plan_id"]),
        mode=record.get("mode", "graph"),
        status=record.get("status", "running"),
        current_node=record.get("current_node"),
        visited=MappingProxyType({k: frozen_node(v) for k, v in visited.items()}),
        path=tuple(record.get("path", ())),
        started_turn=record.get("started_turn", 0),
        turn=record.get("turn", 0),
        turns_since_transition=record.get("turns_since_transition", 0),
        stale_after_turns=record.get("stale_after_turns", 10),
        transitions=record.get("transitions", 0),
        pace_level=record.get("pace_level"),
        reason=record.get("reason"),
        events=tuple(MappingProxyType(dict(e)) for e in record.get("events", ())),
        seen=tuple(record.get("seen", ())),
        checkpoints=tuple(
            frozen_checkpoint(c["node"], c["path_len"], c["visited"])
            for c in record.get("checkpoints", ())
        ),
        report=_frozen_all(record.get("report")),
        session_id=record.get("session_id"),
        plan_version=record.get("plan_version"),
        domain=record.get("domain"),
        last_output=record.get("last_tool_output"),
        turns_since_progress=_int(record.get("turns_since_progress")),
        completed=tuple(
            record.get("completed")
            # Records written before the list existed: what they had verified.
            or [k for k, v in visited.items() if v.get("outcome") == "success"]
        ),
        notice=_frozen(record.get("notice")),
        streak=_frozen(record.get("streak")),
        awaiting=record.get("awaiting") if isinstance(record.get("awaiting"), str) else None,
        # Records written before guided runs had a context load with none.
        context=frozen_value(_mapping(record.get("context"))),
        redirects=_int(record.get("redirects")),
    )


def _frozen_all(
    entries: Sequence[Mapping[str, Any]] | None,
) -> tuple[Mapping[str, Any], ...] | None:
    return None if entries is None else tuple(MappingProxyType(dict(e)) for e in entries)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
