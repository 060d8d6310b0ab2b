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
- A verdict is success, fail or unknown. Unknown (the evidence cannot decide)
  consumes no attempt and follows no edge; the run waits with a notice.
- Words the model wrote (``Evidence.source == "model"``) are never judged:
  :func:`claim` records them and the run stays where it is.
- An exit node with a ``verify`` is a gate: it is judged before the run may
  finish. Success completes; failure is a failed attempt at the task the run
  came from; unknown keeps the run one step before the exit.
- The same failing call with the same output ``plan.repeat_limit`` times in a
  row on one node counts as exhausted (``repeat_detected``): its
  ``on_exhaust``/``on_fail`` edge is followed, else the run escalates.

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
from typing import Any, NamedTuple, Protocol

from waygraph.model import Edge, Node, Plan, Verify

__all__ = [
    "EVENT_TYPES",
    "MAX_EVENTS",
    "MAX_ROUTING_HOPS",
    "Evidence",
    "Judge",
    "Result",
    "Run",
    "abort",
    "advance",
    "claim",
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
    "claim_recorded",
    "claim_unverified",
    "repeat_detected",
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
    domain: str | None = None
    last_output: str | None = None
    turns_since_progress: int = 0
    #: Nodes verified at least once in this run, in the order first completed.
    completed: list[str] = field(default_factory=list)
    #: What the model must be told beyond the node itself (an unknown verdict,
    #: a claim, a failed gate), as data; render turns it into words.
    notice: dict[str, Any] | None = None
    #: The current run of identical failing calls: node, fingerprint, count.
    streak: dict[str, Any] | None = None

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
            self.domain,
            self.last_output,
            self.turns_since_progress,
            list(self.completed),
            self.notice,
            self.streak,
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
    domain: str | None = None,
    **activation: Any,
) -> Result:
    """Begin a run of ``plan``: enter its start node and route to the first task.

    ``activation`` (for example the matched triggers) is recorded on the
    ``plan_activated`` event. ``domain`` is the domain of the message that
    activated the plan (default: the plan's first domain).
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
        domain=domain or (plan.domains[0] if plan.domains else None),
    )
    t = _Turn(plan, run, turn, judge)
    t.emit("plan_activated", plan.graph.start, plan_id=plan.id, plan=plan.id, **activation)
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
    evidence: Evidence | None = None,
) -> Result:
    """Apply one tool (or host) result to the current node and follow the chosen edge.

    ``judge(verify)`` gives the verdict of the result for a predicate. A
    result whose ``observation_id`` was already counted changes nothing.
    """
    fresh = _fresh(run, turn, observation_id)
    if fresh is None:
        return Result(run, [])
    run = fresh
    run.notice = None
    if evidence is not None and evidence.output:
        run.last_output = evidence.output[:MAX_LAST_OUTPUT]
    t = _Turn(plan, run, turn, judge)
    node = plan.graph.nodes.get(run.current_node or "")
    if node is None:
        _escalate(t, None, f"current node {run.current_node!r} is not in the plan any more")
    elif node.type == "decision":
        _decide(t, node)
    elif node.type == "task":
        _verify_task(t, node, evidence, tool_name or (evidence.tool if evidence else None))
    else:
        # A routing node left current by a stall or a gate: route onward again.
        _route_through(t, node)
    return Result(run, t.events)


def claim(
    plan: Plan,
    run: Run,
    *,
    turn: int,
    text: str,
    final: bool = False,
    observation_id: str | None = None,
) -> Result:
    """Record words the model wrote (a reply, a claim of success): never evidence.

    The run stays where it is (``claim_recorded``). With ``final`` (the model
    told the user the work is done) while the run is not finished, the nodes
    still unverified are recorded (``claim_unverified``) and named to the model.
    """
    fresh = _fresh(run, turn, observation_id)
    if fresh is None:
        return Result(run, [])
    run = fresh
    t = _Turn(plan, run, turn, None)
    node_id = run.current_node
    t.emit("claim_recorded", node_id, excerpt=_excerpt(text), final=final)
    if final:
        pending = _unverified(plan, run)
        t.emit("claim_unverified", node_id, nodes=pending)
        run.notice = {"kind": "claim_unverified", "node": node_id, "nodes": pending}
    else:
        run.notice = {"kind": "claim", "node": node_id}
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
    evidence: Evidence | None = None,
    final: bool = False,
) -> Result:
    """One whole turn: apply the observation, then count the turn for staleness.

    With ``judge`` the observation is verified (:func:`observe`); evidence
    whose ``source`` is ``"model"`` is recorded as a claim instead
    (:func:`claim`, ``final`` as there). Without either, the turn only counts.
    """
    events: list[dict[str, Any]] = []
    original = run
    before = run.transitions
    completed_before = len(run.completed)
    if evidence is not None and evidence.source == "model":
        run, events = claim(
            plan,
            run,
            turn=turn,
            text=evidence.output,
            final=final,
            observation_id=observation_id,
        )
    elif judge is not None:
        run, events = observe(
            plan,
            run,
            judge,
            turn=turn,
            observation_id=observation_id,
            tool_name=tool_name,
            evidence=evidence,
        )
    progressed = len(run.completed) != completed_before
    run, more = expire(plan, run, turn=turn, transitioned=run.transitions != before)
    if run.status == "running" or progressed:
        if run is original:
            run = run.copy()
        # Progress is new ground: a node completed for the first time in this
        # run. A fix -> test -> fix loop transitions without progressing.
        run.turns_since_progress = 0 if progressed else run.turns_since_progress + 1
    return Result(run, events + more)


def abort(plan: Plan | None, run: Run, *, turn: int, reason: str) -> Result:
    """End a running run as ``aborted`` (a reset, or a new plan started over it)."""
    if run.status != "running":
        return Result(run, [])
    run = run.copy()
    run.turn = max(run.turn, turn)
    run.status, run.reason = "aborted", reason
    t = _Turn(plan, run, run.turn, None)  # type: ignore[arg-type]
    t.emit("plan_aborted", run.current_node, reason=reason)
    return Result(run, t.events)


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
    run.notice, run.streak = None, None
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


# ---------------------------------------------------------------- evidence


def _fresh(run: Run, turn: int, observation_id: str | None) -> Run | None:
    """A copy of ``run`` to change for this turn, or None when nothing may change."""
    if run.status != "running" or run.current_node is None:
        return None
    if observation_id is not None and observation_id in run.seen:
        return None
    run = run.copy()
    run.turn = turn
    if observation_id is not None:
        run.seen.append(observation_id)
        if len(run.seen) > MAX_SEEN_IDS:
            del run.seen[: len(run.seen) - MAX_SEEN_IDS]
    return run


class _Outcome(NamedTuple):
    outcome: str
    reason: str | None


_NO_RESULT = _Outcome("unknown", "there is no result to check yet")


def _judge(t: _Turn, verify: Verify | None) -> _Outcome:
    if t.judge is None:
        return _NO_RESULT
    answer = t.judge(verify)
    if answer is None:
        return _Outcome("unknown", None)
    if isinstance(answer, bool):
        return _Outcome("success" if answer else "fail", None)
    return _Outcome(answer.outcome, answer.reason)


def _passed(outcome: str) -> bool | None:
    return None if outcome == "unknown" else outcome == "success"


def _excerpt(text: str) -> str:
    line = " ".join((text or "").split())
    return line if len(line) <= EXCERPT_CHARS else line[: EXCERPT_CHARS - 3] + "..."


def _first_line(text: str) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return _excerpt(line)
    return ""


def _verify_task(t: _Turn, node: Node, evidence: Evidence | None, tool_name: str | None) -> None:
    run = t.run
    verdict = _judge(t, node.verify)
    attempt = run.attempts(node.id)
    extra = {"reason": verdict.reason} if verdict.reason else {}
    t.emit(
        "node_verified",
        node.id,
        passed=_passed(verdict.outcome),
        outcome=verdict.outcome,
        attempt=attempt,
        check=node.verify.type if node.verify else None,
        tool=tool_name,
        **extra,
    )
    if evidence is not None:
        _remember(run, node.id, evidence, verdict.outcome)
    if verdict.outcome == "unknown":
        run.notice = {"kind": "unknown", "node": node.id, "reason": verdict.reason}
        return
    if verdict.outcome == "success":
        run.streak = None
        _set(run, node.id, "success", attempt)
        _leave(t, node, SUCCESS_EDGES)
        return
    _set(run, node.id, "fail", attempt)
    if evidence is None or not _repeated(t, node, evidence):
        _fail(t, node)


def _remember(run: Run, node_id: str, evidence: Evidence, outcome: str) -> None:
    """Keep the node's last attempts, so the model sees what it already tried."""
    state = run.visited.get(node_id) or {"outcome": "pending", "attempts": 0}
    entry = {"tool": evidence.tool, "call": evidence.call, "output": _first_line(evidence.output)}
    entry["verdict"] = outcome
    tried = [*state.get("tried", ())[-(MAX_TRIED - 1) :], entry]
    run.visited[node_id] = {**state, "tried": tried}


def _repeated(t: _Turn, node: Node, evidence: Evidence) -> bool:
    """Count identical failing calls; at ``repeat_limit`` treat the node as exhausted."""
    run = t.run
    fingerprint = evidence.fingerprint
    if fingerprint is None:
        run.streak = None
        return False
    streak = run.streak
    same = streak is not None and streak["node"] == node.id and streak["fp"] == fingerprint
    count = streak["count"] + 1 if same and streak is not None else 1
    run.streak = {"node": node.id, "fp": fingerprint, "count": count}
    limit = t.plan.repeat_limit
    if not limit or count < limit:
        return False
    run.streak = None
    what = evidence.call or evidence.tool or "call"
    t.emit("repeat_detected", node.id, count=count, call=what)
    edge = _pick(t.plan, node.id, ("on_exhaust", "on_fail"))
    if edge is not None:
        _follow(t, edge)
    else:
        _escalate(t, node.id, f"the same failing call {count} times at {node.id!r} ({what})")
    return True


def _unverified(plan: Plan, run: Run) -> list[str]:
    """The task and decision nodes between the current node and an exit, on the success route."""
    pending: list[str] = []
    node_id = run.current_node
    seen: set[str] = set()
    while node_id is not None and node_id not in seen:
        seen.add(node_id)
        node = plan.graph.nodes.get(node_id)
        if node is None or node.type in ("exit", "escalate"):
            if node is not None and node.type == "exit" and node.verify is not None:
                pending.append(node_id)
            break
        if node.type in ("task", "decision"):
            pending.append(node_id)
        edge = _pick(plan, node_id, SUCCESS_EDGES)
        node_id = edge.to if edge is not None else None
    return pending


# ---------------------------------------------------------------- routing


def _set(run: Run, node_id: str, outcome: str, attempts: int) -> None:
    state = run.visited.get(node_id)
    tried = state.get("tried") if state is not None else None
    new = {"outcome": outcome, "attempts": attempts}
    if tried:
        new["tried"] = tried
    run.visited[node_id] = new
    if outcome == "success" and node_id not in run.completed:
        run.completed.append(node_id)


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
    target = t.plan.graph.nodes.get(edge.to)
    gated = target is not None and target.type == "exit" and target.verify is not None
    if gated and not _gate(t, edge, target):  # type: ignore[arg-type]
        return
    # "from"/"to"/"condition" are document 003's keys; "node" is waygraph's.
    fields = {"from": edge.from_, "to": edge.to, "condition": edge.condition}
    t.emit("edge_followed", edge.from_, **fields)
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


def _gate(t: _Turn, edge: Edge, exit_node: Node) -> bool:
    """Judge an exit's ``verify`` before finishing; True lets the run reach the exit."""
    run = t.run
    t.hops += 1
    if t.hops > MAX_ROUTING_HOPS:
        _escalate(t, edge.from_, f"routing passed {MAX_ROUTING_HOPS} nodes without finishing")
        return False
    verdict = _judge(t, exit_node.verify)
    extra = {"reason": verdict.reason} if verdict.reason else {}
    t.emit(
        "node_verified",
        exit_node.id,
        passed=_passed(verdict.outcome),
        outcome=verdict.outcome,
        check=exit_node.verify.type if exit_node.verify else None,
        gate=True,
        **extra,
    )
    if verdict.outcome == "success":
        return True
    if verdict.outcome == "unknown":
        # One step before the exit: the next result is judged there again.
        run.notice = {"kind": "gate_unknown", "node": exit_node.id, "reason": verdict.reason}
        return False
    origin = next(
        (n for n in reversed(run.path) if (o := t.plan.graph.nodes.get(n)) and o.type == "task"),
        None,
    )
    run.notice = {"kind": "gate_failed", "node": exit_node.id, "reason": verdict.reason}
    if origin is None:
        _escalate(t, edge.from_, f"the final check at {exit_node.id!r} failed")
        return False
    node = t.plan.graph.nodes[origin]
    if run.current_node != origin:
        run.path.append(origin)
        run.current_node = origin
    _set(run, origin, "fail", run.attempts(origin))
    _fail(t, node)
    return False


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
    run = t.run
    attempts = run.attempts(node.id) + 1
    edges = t.plan.graph.out_edges(node.id)
    has_when = False
    unknown: _Outcome | None = None
    for edge in edges:
        if edge.when is not None:
            has_when = True
            verdict = _judge(t, edge.when)
            if verdict.outcome == "success":
                _set(run, node.id, "success", attempts)
                t.emit(
                    "node_verified",
                    node.id,
                    passed=True,
                    outcome="success",
                    attempt=attempts,
                    when=edge.to,
                )
                _follow(t, edge)
                return
            if verdict.outcome == "unknown" and unknown is None:
                unknown = verdict
    if node.verify is not None:
        verdict = _judge(t, node.verify)
    else:
        verdict = _Outcome("fail" if has_when else "success", None)
    if verdict.outcome == "fail" and unknown is not None:
        # A route that could not be judged might have held: wait, do not guess.
        verdict = unknown
    if verdict.outcome == "unknown":
        t.emit("node_verified", node.id, passed=None, outcome="unknown", attempt=attempts - 1)
        run.notice = {"kind": "unknown", "node": node.id, "reason": verdict.reason}
        return
    passed = verdict.outcome == "success"
    _set(run, node.id, verdict.outcome, attempts)
    t.emit("node_verified", node.id, passed=passed, outcome=verdict.outcome, attempt=attempts)
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
    "domain",
    "notice",
    "streak",
)


def to_record(plan: Plan | None, run: Run) -> dict[str, Any]:
    """The run as a JSON-ready dict, with the supervisor fields of DESIGN.md.

    ``current_step``/``total_steps``/``steps_completed``/``steps_failed``/
    ``turns_since_progress`` are the established selector's names, kept so
    existing supervisors read records unchanged.
    """
    record: dict[str, Any] = {name: getattr(run, name) for name in _RECORD_FIELDS}
    order = plan.graph.task_order if plan is not None else {}
    total = len(order) if order else len(run.visited)
    # The established selector's supervisor fields (documents 000 and 003):
    # lists of indices into the plan's task order, and completed counts.
    steps_completed = sorted(order[n] for n in run.completed if n in order)
    steps_failed = sorted(
        order[n] for n, v in run.visited.items() if v["outcome"] == "fail" and n in order
    )
    completed = len(steps_completed) if order else len(run.completed)
    current_step = total if run.status == "completed" else completed
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
        completed=list(run.completed),
        current_step=current_step,
        total_steps=total,
        steps_completed=steps_completed,
        steps_failed=steps_failed,
        turns_since_progress=run.turns_since_progress,
        last_tool_output=run.last_output,
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
        domain=record.get("domain"),
        last_output=record.get("last_tool_output"),
        turns_since_progress=_int(record.get("turns_since_progress")),
        completed=list(
            record.get("completed")
            # Records written before the list existed: what they had verified.
            or [k for k, v in record.get("visited", {}).items() if v.get("outcome") == "success"]
        ),
        notice=record.get("notice"),
        streak=record.get("streak"),
    )


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
