"""The engine's public functions: start, observe, claim, advance, expire, abort, rewind.

Each takes a run and returns a new one (the input is never modified) with the
events it produced.

Example:
    >>> import waygraph
    >>> from waygraph.engine import start
    >>> run, events = start(waygraph.load_library()["bugfix_workflow"], run_id="r", turn=1)
    >>> run.current_node
    'reproduce'
"""

from __future__ import annotations

from typing import Any

from waygraph.engine.rules import (
    Turn,
    decide,
    enter,
    escalate,
    excerpt,
    fresh_copy,
    leave,
    route_through,
    unverified,
    verify_task,
)
from waygraph.engine.state import MAX_LAST_OUTPUT, SUCCESS_EDGES, Evidence, Judge, Result, Run
from waygraph.model import Plan

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
    t = Turn(plan, run, turn, judge)
    t.emit("plan_activated", plan.graph.start, plan_id=plan.id, plan=plan.id, **activation)
    # A graph.start naming a task is the established format's implicit start.
    enter(t, plan.graph.start, fresh=True)
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
    fresh = fresh_copy(run, turn, observation_id)
    if fresh is None:
        return Result(run, [])
    run = fresh
    run.notice = None
    if evidence is not None and evidence.output:
        run.last_output = evidence.output[:MAX_LAST_OUTPUT]
    t = Turn(plan, run, turn, judge)
    node = plan.graph.nodes.get(run.current_node or "")
    if node is None:
        escalate(t, None, f"current node {run.current_node!r} is not in the plan any more")
    elif node.type == "decision":
        decide(t, node)
    elif node.type == "task":
        verify_task(t, node, evidence, tool_name or (evidence.tool if evidence else None))
    else:
        # A routing node left current by a stall or a gate: route onward again.
        route_through(t, node)
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
    fresh = fresh_copy(run, turn, observation_id)
    if fresh is None:
        return Result(run, [])
    run = fresh
    t = Turn(plan, run, turn, None)
    node_id = run.current_node
    t.emit("claim_recorded", node_id, excerpt=excerpt(text), final=final)
    if final:
        pending = unverified(plan, run)
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
    t = Turn(plan, run, turn, None)
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
    t = Turn(plan, run, run.turn, None)  # type: ignore[arg-type]
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
    t = Turn(plan, run, turn, None)
    node = plan.graph.nodes.get(snapshot["node"])
    t.emit("rewound", snapshot["node"])
    if node is None:
        escalate(t, None, f"checkpoint {snapshot['node']!r} is not in the plan any more")
    else:
        run.current_node = node.id
        leave(t, node, SUCCESS_EDGES)
    return Result(run, t.events)
