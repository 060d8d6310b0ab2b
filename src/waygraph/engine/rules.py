"""The traversal rules: entering nodes, judging evidence, following edges.

Internal to the engine: the public functions in ``waygraph.engine.guided``
create a :class:`Turn` and call these. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from waygraph.engine.choice import (
    ROUTES_ON,
    data_scope,
    gate_target,
    holds,
    is_data_check,
    max_redirects,
    ordered_edges,
    pick_edge,
    retry_target_of,
    unsatisfied_gate,
)
from waygraph.engine.state import (
    EXCERPT_CHARS,
    EXHAUST_EDGES,
    FAILURE_CONDITIONS,
    MAX_EVENTS,
    MAX_ROUTING_HOPS,
    MAX_SEEN_IDS,
    MAX_TRIED,
    REPORT_EVENTS,
    RETRY_EDGES,
    SUCCESS_EDGES,
    Draft,
    Evidence,
    Judge,
    Run,
    frozen_checkpoint,
)
from waygraph.model import Edge, Node, Plan, RunStatus, Verify
from waygraph.verify_types.people import asks_person, choice_label, choice_of, manual_check
from waygraph.verify_types.people import choices as choice_edges


class Turn:
    """Working state of one engine call."""

    __slots__ = ("choice", "events", "hops", "judge", "last", "output", "plan", "run", "turn")

    def __init__(self, plan: Plan, run: Draft, turn: int, judge: Judge | None) -> None:
        self.plan = plan
        self.run = run
        self.turn = turn
        self.judge = judge
        self.events: list[Mapping[str, Any]] = []
        self.hops = 0
        #: The start of the output this turn judges (at most MAX_LAST_OUTPUT characters).
        self.output: str | None = None
        #: The outcome of the last task judged in this turn: what a decision
        #: without a check of its own routes on.
        self.last: _Outcome | None = None
        #: The label of the choice a person picked in this turn (conditions
        #: read it as ``preferred_label``).
        self.choice = ""

    def scope(self, outcome: str) -> dict[str, Any]:
        """What a data check on an edge reads after ``outcome`` (``success`` or ``fail``)."""
        return data_scope(self.run.context, outcome, self.choice)

    def emit(self, type_: str, node: str | None, **fields: Any) -> None:
        self.record({"type": type_, "turn": self.turn, "node": node, **fields})

    def verified(self, node: str, **fields: Any) -> None:
        """Emit ``node_verified``; the stored event also carries the judged ``output``.

        The run record's own event list keeps the event without it: up to 50
        excerpts of 2,000 characters would make every record write ~100 KB.
        """
        data = {"type": "node_verified", "turn": self.turn, "node": node, **fields}
        if self.output is None:
            self.record(data)
        else:
            self.record(data, {**data, "output": self.output})

    def record(self, data: dict[str, Any], stored: dict[str, Any] | None = None) -> None:
        """Keep one event (``type``, ``turn``, ``node`` and its fields) in the turn and the run.

        ``stored``, when given, is the turn's (the store's) version of the event.
        """
        # Read-only, so the driver can be given the very event the run keeps.
        event = MappingProxyType(data)
        self.events.append(event if stored is None else MappingProxyType(stored))
        run_events = self.run.events
        run_events.append(event)
        if len(run_events) > MAX_EVENTS:
            del run_events[: len(run_events) - MAX_EVENTS]


# ---------------------------------------------------------------- evidence


def fresh_copy(run: Run, turn: int, observation_id: str | None) -> Draft | None:
    """A draft of ``run`` to change for this turn, or None when nothing may change."""
    if run.status != "running" or run.current_node is None:
        return None
    if observation_id is not None and observation_id in run.seen:
        return None
    draft = run.draft()
    draft.turn = turn
    if observation_id is not None:
        draft.seen = (*draft.seen[1 - MAX_SEEN_IDS :], observation_id)
    return draft


class _Outcome(NamedTuple):
    outcome: str
    reason: str | None


_NO_RESULT = _Outcome("unknown", "there is no result to check yet")


def _judge(t: Turn, verify: Verify | None) -> _Outcome:
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


def excerpt(text: str) -> str:
    line = " ".join((text or "").split())
    return line if len(line) <= EXCERPT_CHARS else line[: EXCERPT_CHARS - 3] + "..."


def _first_line(text: str) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return excerpt(line)
    return ""


def verify_task(t: Turn, node: Node, evidence: Evidence | None, tool_name: str | None) -> None:
    run = t.run
    verdict = _judge(t, node.verify)
    attempt = run.attempts(node.id)
    extra = {"reason": verdict.reason} if verdict.reason else {}
    t.verified(
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
    t.last = verdict
    if verdict.outcome == "unknown":
        run.notice = {"kind": "unknown", "node": node.id, "reason": verdict.reason}
        return
    if verdict.outcome == "success":
        run.streak = None
        _set(run, node.id, "success", attempt)
        leave(t, node, SUCCESS_EDGES, "success")
        return
    _set(run, node.id, "fail", attempt)
    if evidence is None or not _repeated(t, node, evidence):
        _fail(t, node)


def _remember(run: Draft, node_id: str, evidence: Evidence, outcome: str) -> None:
    """Keep the node's last attempts, so the model sees what it already tried."""
    state = run.visited.get(node_id) or {"outcome": "pending", "attempts": 0}
    entry = {"tool": evidence.tool, "call": evidence.call, "output": _first_line(evidence.output)}
    entry["verdict"] = outcome
    tried = (*state.get("tried", ())[-(MAX_TRIED - 1) :], MappingProxyType(entry))
    run.visited[node_id] = MappingProxyType({**state, "tried": tried})


def _repeated(t: Turn, node: Node, evidence: Evidence) -> bool:
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
    edge = pick_edge(t.plan, node.id, ("on_exhaust", "on_fail"))
    if edge is not None:
        _follow(t, edge)
    else:
        escalate(t, node.id, f"the same failing call {count} times at {node.id!r} ({what})")
    return True


# ---------------------------------------------------------------- routing


def _set(run: Draft, node_id: str, outcome: str, attempts: int, *, retrying: bool = False) -> None:
    state = run.visited.get(node_id)
    tried = state.get("tried") if state is not None else None
    new: dict[str, Any] = {"outcome": outcome, "attempts": attempts}
    if tried:
        new["tried"] = tried
    if retrying:
        # Left through its own on_retry route: when the run comes back, the
        # node goes on counting instead of starting again at attempt 1.
        new["retrying"] = True
    # Node states are read-only values: runs and checkpoints share them.
    run.visited[node_id] = MappingProxyType(new)
    if outcome == "success" and node_id not in run.completed:
        run.completed = (*run.completed, node_id)


def leave(t: Turn, node: Node, conditions: tuple[str, ...], outcome: str = "success") -> None:
    edge = pick_edge(t.plan, node.id, conditions, scope=lambda: t.scope(outcome))
    if edge is None:
        t.emit("stall", node.id, reason=f"no {' or '.join(conditions)} edge out of {node.id!r}")
        return
    _follow(t, edge)


def _fail(t: Turn, node: Node) -> None:
    run = t.run
    attractor = t.plan.routing == "attractor"
    if attractor:
        # §3.7: a failure an edge names is routed at once, not retried first.
        edge = pick_edge(t.plan, node.id, ("on_fail", "on_exhaust"), scope=lambda: t.scope("fail"))
        if edge is not None:
            _follow(t, edge)
            return
    attempts = run.attempts(node.id)
    limit = None if node.max_retries is None else 1 + node.max_retries
    if limit is None or attempts < limit:
        edge = pick_edge(t.plan, node.id, RETRY_EDGES)
        if edge is not None:
            _set(run, node.id, "fail", attempts, retrying=True)
            _follow(t, edge)
            return
        _set(run, node.id, "fail", attempts + 1)
        t.emit("retry_triggered", node.id, attempt=attempts + 1, max_attempts=limit)
        return
    if attractor:
        _spent(t, node, attempts)
        return
    leave(t, node, EXHAUST_EDGES, "fail")


def _spent(t: Turn, node: Node, attempts: int) -> None:
    """An attractor-routed node failed its last attempt and no edge takes the failure."""
    target = retry_target_of(t.plan, node)
    if target is not None:
        jump(t, node.id, target, "retry_target")
        return
    escalate(
        t,
        node.id,
        f"the pipeline failed: {node.id!r} failed all its {attempts} attempt(s), and it has "
        "no fail edge, retry_target or fallback_retry_target",
    )


def jump(t: Turn, from_id: str, to_id: str, via: str) -> None:
    """Move the run to ``to_id`` along no edge (a retry target, a goal gate's target)."""
    t.emit("retry_routed", from_id, to=to_id, via=via)
    _arrive(t, to_id, fresh=True)


def _follow(t: Turn, edge: Edge) -> None:
    target = t.plan.graph.nodes.get(edge.to)
    gated = target is not None and target.type == "exit" and target.verify is not None
    if gated and not _gate(t, edge, target):  # type: ignore[arg-type]
        return
    # "from"/"to"/"condition" are document 003's keys; "node" is waygraph's.
    # Built directly: "from" cannot be a keyword argument, and this is the
    # event of every transition.
    t.record(
        {
            "type": "edge_followed",
            "turn": t.turn,
            "node": edge.from_,
            "from": edge.from_,
            "to": edge.to,
            "condition": edge.condition,
        }
    )
    # An on_fail/on_exhaust edge back into a node is another attempt at it
    # (test -> fix); an on_retry edge leads to the failing node's own retry
    # route, whose nodes start fresh while the failing node keeps its count.
    _arrive(t, edge.to, fresh=edge.condition not in _COUNTING_CONDITIONS)


def _arrive(t: Turn, node_id: str, *, fresh: bool) -> None:
    run = t.run
    run.transitions += 1
    if run.transitions > t.plan.max_transitions:
        escalate(
            t,
            None,
            f"max_transitions ({t.plan.max_transitions}) reached: the plan is going round "
            "a loop without finishing",
        )
        return
    enter(t, node_id, fresh=fresh)


_COUNTING_CONDITIONS = FAILURE_CONDITIONS - {"on_retry"}


def _ask(t: Turn, node: Node) -> None:
    """The run now waits for a person at ``node``; record what they are asked."""
    t.run.awaiting = "user"
    if node.type == "human":
        labels = [choice_label(e) for e in choice_edges(t.plan.graph, node.id)]
        t.emit("human_asked", node.id, prompt=node.question, choices=labels)
        return
    manual = manual_check(node)
    value = None if manual is None or manual.value is None else str(manual.value)
    t.emit("human_asked", node.id, prompt=node.question, choices=[], value=value)


def enter(t: Turn, node_id: str, *, fresh: bool) -> None:
    run, plan = t.run, t.plan
    node = plan.graph.nodes.get(node_id)
    if node is None:
        escalate(t, None, f"the plan leads to node {node_id!r}, which does not exist")
        return
    t.hops += 1
    if t.hops > MAX_ROUTING_HOPS:
        escalate(t, node_id, f"routing passed {MAX_ROUTING_HOPS} nodes without reaching a task")
        return
    if node.type == "exit" and node.exit_status == RunStatus.COMPLETED and _gate_blocks(t, node):
        return
    run.path = (*run.path, node_id)
    run.current_node = node_id
    run.awaiting = None
    kind = node.type
    if kind == "task":
        state = run.visited.get(node_id)
        if fresh and not (state is not None and state.get("retrying")):
            attempts = 1
        else:
            previous = int(state["attempts"]) if state is not None else 0
            limit = None if node.max_retries is None else 1 + node.max_retries
            if limit is not None and previous >= limit:
                _entered_exhausted(t, node, previous)
                return
            attempts = previous + 1
        _set(run, node_id, "pending", attempts)
        t.emit("node_entered", node_id, attempt=attempts)
        if asks_person(node):
            _ask(t, node)
        return
    t.emit("node_entered", node_id)
    if kind == "human":
        _set(run, node_id, "pending", run.attempts(node_id) + 1)
        _ask(t, node)
        return
    if kind == "decision":
        _set(run, node_id, "pending", run.attempts(node_id))
        if t.judge is not None:
            decide(t, node)
        return
    route_through(t, node)


def _entered_exhausted(t: Turn, node: Node, attempts: int) -> None:
    """A failure led back into ``node`` after its last attempt: it takes its exhaust route.

    Only an on_exhaust or on_fail edge counts here: an ``always`` edge would
    skip the node and go round the loop again, unbounded.
    """
    t.emit("node_entered", node.id, attempt=attempts, exhausted=True)
    if t.plan.routing == "attractor":
        _spent(t, node, attempts)
        return
    edge = pick_edge(t.plan, node.id, ("on_exhaust", "on_fail"))
    if edge is not None:
        _follow(t, edge)
        return
    escalate(
        t,
        node.id,
        f"{node.id!r} failed all its {attempts} attempt(s) and has no on_exhaust or on_fail route",
    )


def _gate(t: Turn, edge: Edge, exit_node: Node) -> bool:
    """Judge an exit's ``verify`` before finishing; True lets the run reach the exit."""
    run = t.run
    t.hops += 1
    if t.hops > MAX_ROUTING_HOPS:
        escalate(t, edge.from_, f"routing passed {MAX_ROUTING_HOPS} nodes without finishing")
        return False
    verdict = _judge(t, exit_node.verify)
    extra = {"reason": verdict.reason} if verdict.reason else {}
    t.verified(
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
        escalate(t, edge.from_, f"the final check at {exit_node.id!r} failed")
        return False
    node = t.plan.graph.nodes[origin]
    if run.current_node != origin:
        run.path = (*run.path, origin)
        run.current_node = origin
    _set(run, origin, "fail", run.attempts(origin))
    _fail(t, node)
    return False


def route_through(t: Turn, node: Node) -> None:
    run = t.run
    kind = node.type
    if kind == "exit":
        run.status = node.exit_status
        run.reason = node.reason
        if run.status == RunStatus.ABORTED:
            t.emit("plan_aborted", node.id, reason=node.reason)
        else:
            t.emit("plan_completed", node.id)
        return
    if kind == "escalate":
        escalate(t, node.id, node.reason or f"escalated at {node.id!r}", node.pace_level)
        return
    if kind == "checkpoint":
        snapshot = frozen_checkpoint(node.id, len(run.path), run.visited)
        run.checkpoints = (*run.checkpoints[-9:], snapshot)
        t.emit("checkpoint_saved", node.id)
    leave(t, node, SUCCESS_EDGES)


def decide(t: Turn, node: Node) -> None:
    run = t.run
    attempts = run.attempts(node.id) + 1
    edges = ordered_edges(t.plan, node.id)
    has_when = False
    unknown: _Outcome | None = None
    scope: dict[str, Any] | None = None
    for edge in edges:
        if edge.when is not None:
            has_when = True
            if is_data_check(edge.when):
                if scope is None:
                    scope = t.scope("fail" if _basis(t).outcome == "fail" else "success")
                # Judged here, over the run's context: the edge's condition must name
                # the outcome routed on too (outcome=success && context.x=true).
                held = scope["outcome"] in ROUTES_ON.get(edge.condition, ())
                held = held and holds(edge.when, scope)
                verdict = _Outcome("success" if held else "fail", None)
            else:
                verdict = _judge(t, edge.when)
            if verdict.outcome == "success":
                _set(run, node.id, "success", attempts)
                t.verified(
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
    elif has_when and t.plan.routing != "attractor":
        verdict = _Outcome("fail", None)
    else:
        # No check of its own: route on the result that led here (in an
        # attractor-routed plan also when no condition held: §3.3's fallback).
        verdict = _basis(t)
    if verdict.outcome == "fail" and unknown is not None:
        # A route that could not be judged might have held: wait, do not guess.
        verdict = unknown
    if verdict.outcome == "unknown":
        t.verified(node.id, passed=None, outcome="unknown", attempt=attempts - 1)
        run.notice = {"kind": "unknown", "node": node.id, "reason": verdict.reason}
        return
    passed = verdict.outcome == "success"
    _set(run, node.id, verdict.outcome, attempts)
    t.verified(node.id, passed=passed, outcome=verdict.outcome, attempt=attempts)
    route = pick_edge(t.plan, node.id, SUCCESS_EDGES if passed else EXHAUST_EDGES, plain=True)
    if route is not None:
        _follow(t, route)
        return
    t.emit("stall", node.id, reason=f"no route out of decision {node.id!r}; waiting")


def _basis(t: Turn) -> _Outcome:
    """What a decision without a check of its own routes on: the result that led to it."""
    return t.last if t.last is not None else _judge(t, None)


def _gate_blocks(t: Turn, exit_node: Node) -> bool:
    """§3.4: a goal gate not passed keeps a finishing run from its exit (True: it did)."""
    run = t.run
    gate = unsatisfied_gate(t.plan, run.visited)
    if gate is None:
        return False
    target = gate_target(t.plan, gate)
    limit = max_redirects(t.plan)
    t.emit("goal_gate_unsatisfied", exit_node.id, gate=gate.id, to=target, redirects=run.redirects)
    if target is None or run.redirects >= limit:
        why = (
            "no retry_target or fallback_retry_target names a node to go back to"
            if target is None
            else f"the run was sent back {limit} times already (max_goal_gate_redirects)"
        )
        fail(t, gate.id, f"goal gate {gate.id!r} did not succeed before {exit_node.id!r}: {why}")
        return True
    run.redirects += 1
    jump(t, exit_node.id, target, "goal_gate")
    return True


def fail(t: Turn, node_id: str | None, reason: str) -> None:
    """End the run as ``failed`` (the pipeline did not reach its goal), naming why."""
    run = t.run
    run.status, run.reason, run.awaiting = RunStatus.FAILED, reason, None
    t.emit("plan_failed", node_id, reason=reason)
    run.report = tuple(run.events[-REPORT_EVENTS:])


def escalate(t: Turn, node_id: str | None, reason: str, pace_level: str | None = None) -> None:
    run = t.run
    run.status = RunStatus.ESCALATED
    run.reason = reason
    run.awaiting = None
    run.pace_level = pace_level
    if node_id is not None:
        run.current_node = node_id
    t.emit("plan_escalated", node_id, reason=reason, pace_level=pace_level)
    run.report = tuple(run.events[-REPORT_EVENTS:])


def answer(t: Turn, node: Node, text: str, by: str | None) -> None:
    """A person's ``text`` at a human node: follow the choice it picks, or list the choices."""
    options = choice_edges(t.plan.graph, node.id)
    picked = choice_of([choice_label(e) for e in options], text)
    if picked is None:
        labels = [choice_label(e) for e in options]
        t.emit("answer_rejected", node.id, answer=excerpt(text), choices=labels)
        t.run.notice = {"kind": "choices", "node": node.id, "answer": excerpt(text)}
        return
    edge = options[picked]
    run = t.run
    run.awaiting, run.notice = None, None
    choice = choice_label(edge)
    t.choice = choice
    t.emit("human_answered", node.id, answer=excerpt(text), by=by, choice=choice, to=edge.to)
    _set(run, node.id, "success", run.attempts(node.id))
    _follow(t, edge)
