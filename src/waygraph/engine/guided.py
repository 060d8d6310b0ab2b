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

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from waygraph.engine.choice import unverified
from waygraph.engine.rules import (
    Turn,
    answer,
    decide,
    enter,
    escalate,
    excerpt,
    fresh_copy,
    leave,
    route_through,
    verify_task,
)
from waygraph.engine.run_context import merge
from waygraph.engine.state import (
    MAX_LAST_OUTPUT,
    SUCCESS_EDGES,
    Draft,
    Evidence,
    Judge,
    Result,
    Run,
)
from waygraph.model import Plan, RunStatus
from waygraph.verify_types.people import asks_person

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
    run = Draft(
        run_id=run_id,
        plan_id=plan.id,
        plan_name=plan.title,
        mode="linear" if plan.linear else "graph",
        status="running",
        current_node=None,
        visited={},
        path=(),
        started_turn=turn,
        turn=turn,
        turns_since_transition=0,
        stale_after_turns=plan.stale_after_turns,
        transitions=0,
        pace_level=None,
        reason=None,
        events=[],
        seen=(),
        checkpoints=(),
        report=None,
        session_id=session_id,
        plan_version=plan_version,
        domain=domain or (plan.domains[0] if plan.domains else None),
        last_output=None,
        turns_since_progress=0,
        completed=(),
        notice=None,
        streak=None,
        awaiting=None,
        context=MappingProxyType({}),
        redirects=0,
    )
    t = Turn(plan, run, turn, judge)
    t.emit("plan_activated", plan.graph.start, plan_id=plan.id, plan=plan.id, **activation)
    if plan.routing == "attractor" and plan.goal is not None:
        # §5.1: the engine mirrors the graph's goal into the context.
        update_context(t, plan.graph.start, {"graph.goal": plan.goal})
    # A graph.start naming a task is the established format's implicit start.
    enter(t, plan.graph.start, fresh=True)
    return Result(run.freeze(), t.events)


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
    t = _observe(plan, run, judge, turn, observation_id, tool_name, evidence)
    return Result(run, []) if t is None else Result(t.run.freeze(), t.events)


def _observe(
    plan: Plan,
    run: Run,
    judge: Judge,
    turn: int,
    observation_id: str | None,
    tool_name: str | None,
    evidence: Evidence | None,
) -> Turn | None:
    draft = fresh_copy(run, turn, observation_id)
    if draft is None:
        return None
    draft.notice = None
    if evidence is not None and evidence.output:
        draft.last_output = evidence.output[:MAX_LAST_OUTPUT]
    t = Turn(plan, draft, turn, judge)
    if evidence is not None and evidence.output:
        t.output = evidence.output[:MAX_LAST_OUTPUT]
    node = plan.graph.nodes.get(draft.current_node or "")
    if node is not None and draft.awaiting is not None and not asks_person(node):
        # The model went on after asking the user something: the question is moot.
        draft.awaiting = None
    updates = evidence.context_updates if evidence is not None else None
    if updates and node is not None and node.type in ("task", "decision"):
        # Before routing: the edges out of this node may read what it set.
        update_context(t, node.id, updates)
    if node is None:
        escalate(t, None, f"current node {draft.current_node!r} is not in the plan any more")
    elif node.type == "human":
        # A person decides here: a tool result, even one naming a choice, is only recorded.
        output = excerpt(evidence.output) if evidence is not None else ""
        t.emit("result_ignored", node.id, tool=tool_name, output=output)
        draft.notice = {"kind": "awaiting_person", "node": node.id}
    elif node.type == "decision":
        decide(t, node)
    elif node.type == "task":
        verify_task(t, node, evidence, tool_name or (evidence.tool if evidence else None))
    else:
        # A routing node left current by a stall or a gate: route onward again.
        route_through(t, node)
    return t


#: Keys of the context named on one event; more are counted, not listed.
_KEYS_SHOWN = 20


def update_context(t: Turn, node_id: str, updates: Mapping[str, Any]) -> None:
    """Merge ``updates`` into the run's context within its bounds, recording what happened."""
    merged = merge(t.run.context, updates)
    t.run.context = merged.context
    if merged.keys:
        shown = [excerpt(k) for k in merged.keys[:_KEYS_SHOWN]]
        t.emit("context_updated", node_id, keys=shown, count=len(merged.keys))
    if merged.refused:
        shown = [excerpt(k) for k in merged.refused[:_KEYS_SHOWN]]
        t.emit("context_refused", node_id, keys=shown, reason=merged.reason)


def claim(
    plan: Plan,
    run: Run,
    *,
    turn: int,
    text: str,
    final: bool = False,
    observation_id: str | None = None,
    question: bool = False,
) -> Result:
    """Record words the model wrote (a reply, a claim of success): never evidence.

    The run stays where it is (``claim_recorded``). With ``final`` (the model
    told the user the work is done) while the run is not finished, the nodes
    still unverified are recorded (``claim_unverified``) and named to the model.
    With ``question`` (the reply asks the user something), or a ``final``
    reply while the run waits for a person, it is no claim at all:
    ``question_asked`` is recorded and the run waits for the user.
    """
    t = _claim(plan, run, turn, text, final, observation_id, question)
    return Result(run, []) if t is None else Result(t.run.freeze(), t.events)


def _claim(
    plan: Plan,
    run: Run,
    turn: int,
    text: str,
    final: bool,
    observation_id: str | None,
    question: bool = False,
) -> Turn | None:
    draft = fresh_copy(run, turn, observation_id)
    if draft is None:
        return None
    t = Turn(plan, draft, turn, None)
    node_id = draft.current_node
    # At a step only a person can pass, the model's last words hand over to
    # the person ("Reply CONFIRMED to go ahead."): a question, not a claim.
    if question or (final and draft.awaiting == "user"):
        t.emit("question_asked", node_id, excerpt=excerpt(text))
        draft.awaiting = "user"
        draft.notice = {"kind": "question", "node": node_id}
        return t
    t.emit("claim_recorded", node_id, excerpt=excerpt(text), final=final)
    if final:
        pending = unverified(plan, draft)
        t.emit("claim_unverified", node_id, nodes=pending)
        draft.notice = {"kind": "claim_unverified", "node": node_id, "nodes": pending}
    else:
        draft.notice = {"kind": "claim", "node": node_id}
    return t


#: Notices a person's words settle: the question the model asked. A claim's
#: notice stays: "is it really fixed?" after a false claim still needs it.
_SETTLED_BY_PERSON = frozenset({"question"})


def hear(
    plan: Plan,
    run: Run,
    *,
    turn: int,
    text: str,
    judge: Judge | None = None,
    by: str | None = None,
    observation_id: str | None = None,
) -> Result:
    """Apply a person's words (the user's message, an answer) to the node the run is on.

    At a ``human`` node an answer that picks a choice follows that choice's
    edge (``human_answered``); any other is refused (``answer_rejected``) and
    the run stays. At a task with a ``manual`` check, ``judge`` gives the
    verdict of the person's words. A question the model asked is answered,
    and what the model was told about it no longer applies (a claim's notice
    stays: "is it really fixed?" after a false claim still needs it).

    Example:
        >>> from waygraph.model import Graph
        >>> plan = (Graph.builder().human("ok", prompt="Ship it?").exit("done")
        ...         .edge("start", "ok").edge("ok", "done", label="yes").plan("p"))
        >>> run, _ = start(plan, run_id="r", turn=1)
        >>> run.awaiting
        'user'
        >>> hear(plan, run, turn=2, text="Yes").run.status
        'completed'
    """
    draft = fresh_copy(run, turn, observation_id)
    if draft is None:
        return Result(run, [])
    notice = draft.notice
    if notice is not None and notice.get("kind") in _SETTLED_BY_PERSON:
        draft.notice = None
    t = Turn(plan, draft, turn, judge)
    node = plan.graph.nodes.get(draft.current_node or "")
    said = excerpt(text)
    if node is not None and node.type == "human":
        answer(t, node, text, by)
    elif node is not None and node.type == "task" and asks_person(node):
        t.emit("human_answered", node.id, answer=said, by=by)
        verify_task(t, node, Evidence(source="human", output=text[:MAX_LAST_OUTPUT]), None)
    elif draft.awaiting is not None:
        draft.awaiting = None
        t.emit("human_answered", draft.current_node, answer=said, by=by)
    if draft.transitions != run.transitions:
        draft.turns_since_transition = 0
    return Result(draft.freeze(), t.events)


def expire(plan: Plan, run: Run, *, turn: int, transitioned: bool) -> Result:
    """Count a turn for staleness; past ``stale_after_turns`` the run expires."""
    if run.status != "running":
        return Result(run, [])
    t = Turn(plan, run.draft(), turn, None)
    _count_turn(t, transitioned=transitioned, progressed=None)
    return Result(t.run.freeze(), t.events)


def _count_turn(t: Turn, *, transitioned: bool, progressed: bool | None) -> None:
    """The turn's bookkeeping on a running draft: staleness, then progress.

    Progress is new ground: a node completed for the first time in this run.
    A fix -> test -> fix loop transitions without progressing. ``progressed``
    None leaves the progress count alone.
    """
    run = t.run
    run.turn = t.turn
    run.turns_since_transition = 0 if transitioned else run.turns_since_transition + 1
    if run.turns_since_transition > run.stale_after_turns:
        run.status, run.awaiting = RunStatus.EXPIRED, None
        run.reason = (
            f"no progress for {run.turns_since_transition} turns "
            f"(the plan allows {run.stale_after_turns})"
        )
        t.emit(
            "plan_expired", run.current_node, turns=run.turns_since_transition, reason=run.reason
        )
    if progressed is not None and (run.status == "running" or progressed):
        run.turns_since_progress = 0 if progressed else run.turns_since_progress + 1


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
    question: bool = False,
) -> Result:
    """One whole turn: apply the observation, then count the turn for staleness.

    With ``judge`` the observation is verified (:func:`observe`); evidence
    whose ``source`` is ``"model"`` is recorded as a claim instead
    (:func:`claim`, ``final`` and ``question`` as there). Without either, the
    turn only counts.
    """
    t: Turn | None = None
    if evidence is not None and evidence.source == "model":
        t = _claim(plan, run, turn, evidence.output, final, observation_id, question)
    elif judge is not None:
        t = _observe(plan, run, judge, turn, observation_id, tool_name, evidence)
    if t is None:
        # Nothing applied (no evidence, a repeated id, a finished run): the
        # turn still counts while the run is running.
        if run.status != "running":
            return Result(run, [])
        t = Turn(plan, run.draft(), turn, None)
    draft = t.run
    progressed = len(draft.completed) != len(run.completed)
    if draft.status == "running":
        _count_turn(t, transitioned=draft.transitions != run.transitions, progressed=progressed)
    elif progressed:
        draft.turns_since_progress = 0
    return Result(draft.freeze(), t.events)


def abort(plan: Plan | None, run: Run, *, turn: int, reason: str) -> Result:
    """End a running run as ``aborted`` (a reset, or a new plan started over it)."""
    if run.status != "running":
        return Result(run, [])
    draft = run.draft()
    draft.turn = max(run.turn, turn)
    draft.status, draft.reason, draft.awaiting = RunStatus.ABORTED, reason, None
    t = Turn(plan, draft, draft.turn, None)  # type: ignore[arg-type]
    t.emit("plan_aborted", draft.current_node, reason=reason)
    return Result(draft.freeze(), t.events)


def rewind(plan: Plan, run: Run, *, turn: int) -> Result:
    """Go back to the last checkpoint passed and continue from there.

    Node outcomes and attempts return to what they were at the checkpoint. A
    finished run (escalated, expired, ...) becomes running again. Without a
    checkpoint nothing changes.
    """
    if not run.checkpoints:
        return Result(run, [])
    draft = run.draft()
    snapshot = run.checkpoints[-1]
    draft.visited = dict(snapshot["visited"])
    draft.path = draft.path[: snapshot["path_len"]]
    draft.status, draft.reason, draft.pace_level, draft.report = "running", None, None, None
    draft.notice, draft.streak = None, None
    draft.turn = turn
    draft.turns_since_transition = 0
    t = Turn(plan, draft, turn, None)
    node = plan.graph.nodes.get(snapshot["node"])
    t.emit("rewound", snapshot["node"])
    if node is None:
        escalate(t, None, f"checkpoint {snapshot['node']!r} is not in the plan any more")
    else:
        draft.current_node = node.id
        leave(t, node, SUCCESS_EDGES)
    return Result(draft.freeze(), t.events)


def next_plan(plan: Plan, run: Run) -> str | None:
    """The plan to start next in the run's session: its exit node's ``next_plan``, if it holds.

    A run that ended at an exit naming ``next_plan`` chains to it when it
    completed, or whatever it ended with when ``next_plan_when`` is ``always``;
    runs that escalated, expired or were reset chain nowhere.

    Example:
        >>> from waygraph.model import Graph
        >>> plan = (Graph.builder().task("t").exit("done", next_plan="deploy")
        ...         .chain("start", "t", "done").plan("build"))
        >>> run = Run(run_id="r", plan_id="build", plan_name="b", status="completed",
        ...           current_node="done")
        >>> next_plan(plan, run)
        'deploy'
    """
    if run.status not in ("completed", "aborted") or run.current_node is None:
        return None
    node = plan.graph.nodes.get(run.current_node)
    if node is None or node.type != "exit" or not node.next_plan:
        return None
    if (node.next_plan_when or "completed") == "completed" and run.status != "completed":
        return None
    return node.next_plan
