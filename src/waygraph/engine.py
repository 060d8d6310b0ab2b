"""The pure traversal engine: (plan, run, outcome) -> (new run, events).

No I/O, no clock, no globals: every function takes what it needs and returns
a new :class:`Run` (the input is never modified) plus the events it produced.
Verifications that need I/O run in the driver; the engine receives a
``judge`` callable that answers "does the latest observation satisfy this
predicate?" for the current node's ``verify`` and decision ``when`` edges.

The rules (DESIGN.md, "Engine semantics"):

- A fresh entry into a task (through ``on_success`` or ``always``) sets its
  attempt count to 1. Failing verification, or being entered through a
  failure edge (``on_fail``/``on_retry``/``on_exhaust``), starts a new attempt
  when the count is below ``1 + max_retries`` (``None``: unbounded); otherwise
  the node is exhausted.
- Success follows ``on_success``, else ``always``. Failure with attempts left
  follows ``on_retry``, else stays on the node (``retry_triggered``).
  Exhausted follows ``on_exhaust``, else ``on_fail``, else ``always``, else
  stays (``stall``). Within one condition: higher weight, then file order.
- Decision nodes route on the latest observation at once: the first ``when``
  edge that holds, else their ``verify`` (or, without one, success when they
  have no ``when`` edges) through the plain edges.
- Routing through non-task nodes is bounded (15 hops); more than
  ``max_transitions`` edges ends the run as escalated; a run with more than
  ``stale_after_turns`` turns without a transition expires.

Example:
    >>> import waygraph
    >>> plan = waygraph.load_library()["bugfix_workflow"]
    >>> run, events = start(plan, run_id="r1", turn=1)
    >>> run.current_node, [e["type"] for e in events][:2]
    ('reproduce', ['plan_activated', 'node_entered'])
    >>> run, events = observe(plan, run, lambda verify: True, turn=2)
    >>> run.current_node
    'isolate'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from waygraph.model import Edge, Node, Plan, Verify

__all__ = [
    "EVENT_TYPES",
    "MAX_EVENTS",
    "MAX_ROUTING_HOPS",
    "Judge",
    "Result",
    "Run",
    "advance",
    "expire",
    "from_record",
    "observe",
    "rewind",
    "start",
    "to_record",
]

#: How many events a run record keeps (the store keeps them all).
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
)

Judge = Callable[[Verify | None], bool]

SUCCESS_EDGES = ("on_success", "always")
RETRY_EDGES = ("on_retry",)
EXHAUST_EDGES = ("on_exhaust", "on_fail", "always")
FAILURE_CONDITIONS = frozenset({"on_fail", "on_retry", "on_exhaust"})


@dataclass(slots=True)
class Run:
    """The state of one plan run in one session (mutable only inside the engine)."""

    run_id: str
    plan_id: str
    plan_name: str
    mode: str = "graph"
    status: str = "running"
    current_node: str | None = None
    visited: dict[str, dict[str, Any]] = field(default_factory=dict)
    path: list[str] = field(default_factory=list)
    started_turn: int = 0
    turn: int = 0
    turns_since_transition: int = 0
    stale_after_turns: int = 10
    transitions: int = 0
    pace_level: str | None = None
    reason: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    seen: list[str] = field(default_factory=list)
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    report: list[dict[str, Any]] | None = None
    session_id: str | None = None
    plan_version: str | None = None

    def copy(self) -> Run:
        # visited's inner dicts are replaced, never mutated, so a shallow copy
        # of each container is enough to leave the original untouched.
        return Run(
            self.run_id,
            self.plan_id,
            self.plan_name,
            self.mode,
            self.status,
            self.current_node,
            dict(self.visited),
            list(self.path),
            self.started_turn,
            self.turn,
            self.turns_since_transition,
            self.stale_after_turns,
            self.transitions,
            self.pace_level,
            self.reason,
            list(self.events),
            list(self.seen),
            list(self.checkpoints),
            self.report,
            self.session_id,
            self.plan_version,
        )

    @property
    def finished(self) -> bool:
        return self.status != "running"

    def attempts(self, node_id: str | None = None) -> int:
        state = self.visited.get(node_id or self.current_node or "")
        return int(state["attempts"]) if state else 0


class Result(NamedTuple):
    """What an engine call returns: the new run and the events it produced."""

    run: Run
    events: list[dict[str, Any]]


class _Turn:
    """Working state of one engine call."""

    __slots__ = ("events", "hops", "judge", "plan", "run", "turn")

    def __init__(self, plan: Plan, run: Run, turn: int, judge: Judge | None) -> None:
        self.plan = plan
        self.run = run
        self.turn = turn
        self.judge = judge
        self.events: list[dict[str, Any]] = []
        self.hops = 0

    def emit(self, type_: str, node: str | None, **fields: Any) -> None:
        event = {"type": type_, "turn": self.turn, "node": node, **fields}
        self.events.append(event)
        run_events = self.run.events
        run_events.append(event)
        if len(run_events) > MAX_EVENTS:
            del run_events[: len(run_events) - MAX_EVENTS]


# ---------------------------------------------------------------- public API


def start(
    plan: Plan,
    *,
    run_id: str,
    turn: int = 0,
    session_id: str | None = None,
    plan_version: str | None = None,
    judge: Judge | None = None,
    **activation: Any,
) -> Result:
    """Begin a run of ``plan``: enter its start node and route to the first task.

    ``activation`` (for example the matched triggers) is recorded on the
    ``plan_activated`` event.
    """
    run = Run(
        run_id=run_id,
        plan_id=plan.id,
        plan_name=plan.title,
        mode="linear" if plan.linear else "graph",
        started_turn=turn,
        turn=turn,
        stale_after_turns=plan.stale_after_turns,
        session_id=session_id,
        plan_version=plan_version,
    )
    t = _Turn(plan, run, turn, judge)
    t.emit("plan_activated", plan.graph.start, plan_id=plan.id, **activation)
    # A graph.start naming a task is the established format's implicit start.
    _enter(t, plan.graph.start, fresh=True)
    return Result(run, t.events)


def observe(
    plan: Plan,
    run: Run,
    judge: Judge,
    *,
    turn: int,
    observation_id: str | None = None,
    tool_name: str | None = None,
) -> Result:
    """Apply one tool result to the current node and follow the chosen edge.

    ``judge(verify)`` says whether the result satisfies a predicate. A result
    whose ``observation_id`` was already counted changes nothing.
    """
    if run.status != "running" or run.current_node is None:
        return Result(run, [])
    if observation_id is not None and observation_id in run.seen:
        return Result(run, [])
    run = run.copy()
    run.turn = turn
    if observation_id is not None:
        run.seen.append(observation_id)
        if len(run.seen) > MAX_SEEN_IDS:
            del run.seen[: len(run.seen) - MAX_SEEN_IDS]
    t = _Turn(plan, run, turn, judge)
    node = plan.graph.nodes.get(run.current_node)
    if node is None:
        _escalate(t, None, f"current node {run.current_node!r} is not in the plan any more")
    elif node.type == "decision":
        _decide(t, node)
    elif node.type == "task":
        passed = judge(node.verify)
        attempt = run.attempts(node.id)
        t.emit(
            "node_verified",
            node.id,
            passed=passed,
            attempt=attempt,
            check=node.verify.type if node.verify else None,
            tool=tool_name,
        )
        if passed:
            _set(run, node.id, "success", attempt)
            _leave(t, node, SUCCESS_EDGES)
        else:
            _set(run, node.id, "fail", attempt)
            _fail(t, node)
    else:
        # A routing node left current by a stall: try to route onward again.
        _route_through(t, node)
    return Result(run, t.events)


def expire(plan: Plan, run: Run, *, turn: int, transitioned: bool) -> Result:
    """Count a turn for staleness; past ``stale_after_turns`` the run expires."""
    if run.status != "running":
        return Result(run, [])
    run = run.copy()
    run.turn = turn
    if transitioned:
        run.turns_since_transition = 0
        return Result(run, [])
    run.turns_since_transition += 1
    if run.turns_since_transition <= run.stale_after_turns:
        return Result(run, [])
    t = _Turn(plan, run, turn, None)
    run.status = "expired"
    run.reason = (
        f"no progress for {run.turns_since_transition} turns "
        f"(the plan allows {run.stale_after_turns})"
    )
    t.emit("plan_expired", run.current_node, turns=run.turns_since_transition, reason=run.reason)
    return Result(run, t.events)


def advance(
    plan: Plan,
    run: Run,
    *,
    turn: int,
    judge: Judge | None = None,
    observation_id: str | None = None,
    tool_name: str | None = None,
) -> Result:
    """One whole turn: apply the observation (when ``judge`` is given), then staleness."""
    events: list[dict[str, Any]] = []
    before = run.transitions
    if judge is not None:
        run, events = observe(
            plan, run, judge, turn=turn, observation_id=observation_id, tool_name=tool_name
        )
    run, more = expire(plan, run, turn=turn, transitioned=run.transitions != before)
    return Result(run, events + more)


def rewind(plan: Plan, run: Run, *, turn: int) -> Result:
    """Go back to the last checkpoint passed and continue from there.

    Node outcomes and attempts return to what they were at the checkpoint. A
    finished run (escalated, expired, ...) becomes running again. Without a
    checkpoint nothing changes.
    """
    if not run.checkpoints:
        return Result(run, [])
    run = run.copy()
    snapshot = run.checkpoints[-1]
    run.visited = dict(snapshot["visited"])
    run.path = run.path[: snapshot["path_len"]]
    run.status, run.reason, run.pace_level, run.report = "running", None, None, None
    run.turn = turn
    run.turns_since_transition = 0
    t = _Turn(plan, run, turn, None)
    node = plan.graph.nodes.get(snapshot["node"])
    t.emit("rewound", snapshot["node"])
    if node is None:
        _escalate(t, None, f"checkpoint {snapshot['node']!r} is not in the plan any more")
    else:
        run.current_node = node.id
        _leave(t, node, SUCCESS_EDGES)
    return Result(run, t.events)


# ---------------------------------------------------------------- routing


def _set(run: Run, node_id: str, outcome: str, attempts: int) -> None:
    run.visited[node_id] = {"outcome": outcome, "attempts": attempts}


def _pick(plan: Plan, node_id: str, conditions: tuple[str, ...]) -> Edge | None:
    edges = plan.graph.out_edges(node_id)
    for condition in conditions:
        for edge in edges:
            if edge.condition == condition:
                return edge
    return None


def _leave(t: _Turn, node: Node, conditions: tuple[str, ...]) -> None:
    edge = _pick(t.plan, node.id, conditions)
    if edge is None:
        t.emit("stall", node.id, reason=f"no {' or '.join(conditions)} edge out of {node.id!r}")
        return
    _follow(t, edge)


def _fail(t: _Turn, node: Node) -> None:
    run = t.run
    attempts = run.attempts(node.id)
    limit = None if node.max_retries is None else 1 + node.max_retries
    if limit is None or attempts < limit:
        edge = _pick(t.plan, node.id, RETRY_EDGES)
        if edge is not None:
            _follow(t, edge)
            return
        _set(run, node.id, "fail", attempts + 1)
        t.emit("retry_triggered", node.id, attempt=attempts + 1, max_attempts=limit)
        return
    _leave(t, node, EXHAUST_EDGES)


def _follow(t: _Turn, edge: Edge) -> None:
    run = t.run
    t.emit("edge_followed", edge.from_, to=edge.to, condition=edge.condition)
    run.transitions += 1
    if run.transitions > t.plan.max_transitions:
        _escalate(
            t,
            None,
            f"max_transitions ({t.plan.max_transitions}) reached: the plan is going round "
            "a loop without finishing",
        )
        return
    _enter(t, edge.to, fresh=edge.condition not in FAILURE_CONDITIONS)


def _enter(t: _Turn, node_id: str, *, fresh: bool) -> None:
    run, plan = t.run, t.plan
    node = plan.graph.nodes.get(node_id)
    if node is None:
        _escalate(t, None, f"the plan leads to node {node_id!r}, which does not exist")
        return
    t.hops += 1
    if t.hops > MAX_ROUTING_HOPS:
        _escalate(t, node_id, f"routing passed {MAX_ROUTING_HOPS} nodes without reaching a task")
        return
    run.path.append(node_id)
    run.current_node = node_id
    kind = node.type
    if kind == "task":
        if fresh:
            attempts = 1
        else:
            previous = run.attempts(node_id)
            limit = None if node.max_retries is None else 1 + node.max_retries
            if limit is not None and previous >= limit:
                t.emit("node_entered", node_id, attempt=previous, exhausted=True)
                _leave(t, node, EXHAUST_EDGES)
                return
            attempts = previous + 1
        _set(run, node_id, "pending", attempts)
        t.emit("node_entered", node_id, attempt=attempts)
        return
    t.emit("node_entered", node_id)
    if kind == "decision":
        _set(run, node_id, "pending", run.attempts(node_id))
        if t.judge is not None:
            _decide(t, node)
        return
    _route_through(t, node)


def _route_through(t: _Turn, node: Node) -> None:
    run = t.run
    kind = node.type
    if kind == "exit":
        run.status = node.exit_status
        run.reason = node.reason
        if run.status == "aborted":
            t.emit("plan_aborted", node.id, reason=node.reason)
        else:
            t.emit("plan_completed", node.id)
        return
    if kind == "escalate":
        _escalate(t, node.id, node.reason or f"escalated at {node.id!r}", node.pace_level)
        return
    if kind == "checkpoint":
        snapshot = {"node": node.id, "path_len": len(run.path), "visited": dict(run.visited)}
        run.checkpoints = [*run.checkpoints[-9:], snapshot]
        t.emit("checkpoint_saved", node.id)
    _leave(t, node, SUCCESS_EDGES)


def _decide(t: _Turn, node: Node) -> None:
    run, judge = t.run, t.judge
    assert judge is not None
    attempts = run.attempts(node.id) + 1
    edges = t.plan.graph.out_edges(node.id)
    has_when = False
    for edge in edges:
        if edge.when is not None:
            has_when = True
            if judge(edge.when):
                _set(run, node.id, "success", attempts)
                t.emit("node_verified", node.id, passed=True, attempt=attempts, when=edge.to)
                _follow(t, edge)
                return
    passed = judge(node.verify) if node.verify is not None else not has_when
    _set(run, node.id, "success" if passed else "fail", attempts)
    t.emit("node_verified", node.id, passed=passed, attempt=attempts)
    plain = SUCCESS_EDGES if passed else EXHAUST_EDGES
    for condition in plain:
        for edge in edges:
            if edge.condition == condition and edge.when is None:
                _follow(t, edge)
                return
    t.emit("stall", node.id, reason=f"no route out of decision {node.id!r}; waiting")


def _escalate(t: _Turn, node_id: str | None, reason: str, pace_level: str | None = None) -> None:
    run = t.run
    run.status = "escalated"
    run.reason = reason
    run.pace_level = pace_level
    if node_id is not None:
        run.current_node = node_id
    t.emit("plan_escalated", node_id, reason=reason, pace_level=pace_level)
    run.report = [dict(e) for e in run.events[-REPORT_EVENTS:]]


# ---------------------------------------------------------------- records

_RECORD_FIELDS = (
    "run_id",
    "plan_id",
    "plan_name",
    "mode",
    "status",
    "current_node",
    "started_turn",
    "turn",
    "turns_since_transition",
    "stale_after_turns",
    "transitions",
    "pace_level",
    "reason",
    "session_id",
    "plan_version",
)


def to_record(plan: Plan | None, run: Run) -> dict[str, Any]:
    """The run as a JSON-ready dict, with the supervisor fields of DESIGN.md.

    ``current_step``/``total_steps``/``steps_completed``/``steps_failed``/
    ``turns_since_progress`` are the established selector's names, kept so
    existing supervisors read records unchanged.
    """
    record: dict[str, Any] = {name: getattr(run, name) for name in _RECORD_FIELDS}
    order = plan.graph.task_order if plan is not None else {}
    completed = sum(1 for v in run.visited.values() if v["outcome"] == "success")
    failed = sum(1 for v in run.visited.values() if v["outcome"] == "fail")
    total = len(order) if order else len(run.visited)
    if run.status == "completed":
        current_step = total
    else:
        current_step = order.get(run.current_node or "", completed)
    record.update(
        visited={k: dict(v) for k, v in run.visited.items()},
        path=list(run.path),
        total_nodes=total,
        completed_nodes=completed,
        events=[dict(e) for e in run.events],
        seen=list(run.seen),
        checkpoints=[
            {**c, "visited": {k: dict(v) for k, v in c["visited"].items()}} for c in run.checkpoints
        ],
        report=run.report,
        attempts=run.attempts(),
        current_step=current_step,
        total_steps=total,
        steps_completed=completed,
        steps_failed=failed,
        turns_since_progress=run.turns_since_transition,
    )
    return record


def from_record(record: dict[str, Any]) -> Run:
    """Rebuild a :class:`Run` from :func:`to_record`'s dict."""
    return Run(
        run_id=record["run_id"],
        plan_id=record["plan_id"],
        plan_name=record.get("plan_name", record["plan_id"]),
        mode=record.get("mode", "graph"),
        status=record.get("status", "running"),
        current_node=record.get("current_node"),
        visited={k: dict(v) for k, v in record.get("visited", {}).items()},
        path=list(record.get("path", [])),
        started_turn=record.get("started_turn", 0),
        turn=record.get("turn", 0),
        turns_since_transition=record.get("turns_since_transition", 0),
        stale_after_turns=record.get("stale_after_turns", 10),
        transitions=record.get("transitions", 0),
        pace_level=record.get("pace_level"),
        reason=record.get("reason"),
        events=list(record.get("events", [])),
        seen=list(record.get("seen", [])),
        checkpoints=list(record.get("checkpoints", [])),
        report=record.get("report"),
        session_id=record.get("session_id"),
        plan_version=record.get("plan_version"),
    )
