"""Model context: the text injected before the model's next call.

The format is the design documents' (003 for graphs, 000 for linear plans),
with waygraph's own lines below it:

```
[WORKFLOW: Bug Fix Workflow]
  reproduce [DONE] → isolate [DONE] → fix << CURRENT (attempt 2/3)
    Action: ...
    Verify: ...
    On success → test
    On fail (retries left) → retry fix
    On fail (exhausted) → escalate: Fix attempts used up

Execute the current step. Do not skip ahead.
[waygraph] Plan: Bug Fix Workflow (bugfix_workflow) · node fix · ...
```

Linear plans show ``[ACTIVE PLAN: name]`` and ``Step i/n: name [DONE]`` lines.
Finished runs get one short message saying what happened and why. Where an
edge leads is read through the engine's own :func:`~waygraph.engine.pick_edge`,
so what the model is told is what the engine does.

Example:
    >>> import waygraph
    >>> from waygraph import engine
    >>> plan = waygraph.load_library()["bugfix_workflow"]
    >>> run, _ = engine.start(plan, run_id="r", turn=1)
    >>> print(context(plan, run).splitlines()[0])
    [WORKFLOW: Bug Fix Workflow]
"""

from __future__ import annotations

from waygraph.engine import EXHAUST_EDGES, RETRY_EDGES, SUCCESS_EDGES, Run, pick_edge
from waygraph.model import Node, Plan
from waygraph.verify import describe

__all__ = ["context", "evidence_lines", "finished_message", "progress_summary"]

HEADER = "[waygraph]"
#: The documents' closing instruction, for graphs; linear plans name the step.
EXECUTE = "Execute the current step. Do not skip ahead."
INSTRUCTION = (
    "make one tool call for this node, then wait for its result. Claims are not "
    "evidence: only tool results verify a node."
)
FAILURE_CONDITIONS = {"on_fail", "on_retry", "on_exhaust"}
SUCCESS_CONDITIONS = {"on_success"}
ARROW = " → "


def context(plan: Plan, run: Run, *, max_tokens: int | None = None) -> str:
    """The guidance text for ``run``'s current state.

    ``max_tokens`` (about four characters each) shortens the path display
    first; the current node's instructions are never dropped.
    """
    if run.status != "running":
        return finished_message(plan, run)
    node = plan.graph.nodes.get(run.current_node or "")
    if node is None:
        return f"{HEADER} Plan {plan.title!r} is at an unknown node {run.current_node!r}."
    details = _cached_block(plan, run, node) + tuple(
        "    " + line for line in evidence_lines(plan, run, node)
    )
    footer = (
        "",
        _execute_line(plan, node),
        f"{HEADER} Plan: {plan.title} ({plan.id}) · node {node.id} · {INSTRUCTION}",
    )
    decided = tuple(_decided_lines(plan, run))
    if plan.linear:
        head = f"[ACTIVE PLAN: {plan.title}]"
        before, after = _linear_lines(plan, run, node)
        return "\n".join([head, *decided, *before, *details, *after, *footer])
    head = f"[WORKFLOW: {plan.title}]"
    path = _path_marks(plan, run, node)
    budget = None if max_tokens is None else max_tokens * 4
    text = _assemble(head, decided, path, details, footer)
    while budget is not None and len(text) > budget and len(path) > 2:
        path = ["…", *path[2:]] if path[0] == "…" else ["…", *path[1:]]
        text = _assemble(head, decided, path, details, footer)
    return text


def _assemble(
    head: str,
    decided: tuple[str, ...],
    path: list[str],
    details: tuple[str, ...],
    footer: tuple[str, ...],
) -> str:
    return "\n".join([head, *decided, "  " + ARROW.join(path), *details, *footer])


def _execute_line(plan: Plan, node: Node) -> str:
    if plan.linear:
        index = plan.graph.task_order.get(node.id, 0)
        return f"Execute Step {index + 1} now. Do not skip ahead. Verify before proceeding."
    return EXECUTE


# The node block depends only on the plan, the node, its attempts and whether
# its last verification failed, and most turns repeat one of a few states.
_BLOCKS: dict[tuple[int, str, int, bool], tuple[Plan, tuple[str, ...]]] = {}
_MAX_BLOCKS = 4096


def _cached_block(plan: Plan, run: Run, node: Node) -> tuple[str, ...]:
    state = run.visited.get(node.id)
    failed = state is not None and state["outcome"] == "fail"
    key = (id(plan), node.id, run.attempts(node.id), failed)
    hit = _BLOCKS.get(key)
    if hit is not None and hit[0] is plan:  # identity: ids of dead plans get reused
        return hit[1]
    lines = tuple("    " + line for line in _node_block(plan, run, node))
    if len(_BLOCKS) >= _MAX_BLOCKS:
        _BLOCKS.clear()
    _BLOCKS[key] = (plan, lines)
    return lines


def evidence_lines(plan: Plan, run: Run, node: Node) -> list[str]:
    """What was already tried at ``node``, and what the last turn could not count.

    Example:
        >>> import waygraph
        >>> from waygraph import engine
        >>> plan = waygraph.load_library()["bugfix_workflow"]
        >>> run, _ = engine.start(plan, run_id="r", turn=1)
        >>> run, _ = engine.claim(plan, run, turn=2, text="Fixed it, all good now")
        >>> print(evidence_lines(plan, run, plan.graph.nodes["reproduce"])[0][:55])
        Your message is a claim, not evidence: reproduce — Make
    """
    lines: list[str] = []
    tried = (run.visited.get(node.id) or {}).get("tried") or ()
    if tried:
        lines.append("Tried here (newest last):")
        for attempt in tried:
            what = attempt.get("call") or attempt.get("tool") or "a tool call"
            verdict = _VERDICT_WORDS.get(attempt.get("verdict", ""), attempt.get("verdict"))
            first = attempt.get("output") or "(no output)"
            lines.append(f"  - `{what}` -> {verdict}: {first}")
    notice = run.notice
    if notice:
        lines.append(_notice_text(plan, node, notice))
    return lines


_VERDICT_WORDS = {"success": "passed", "fail": "FAILED", "unknown": "not judged"}


def _notice_text(plan: Plan, node: Node, notice: dict[str, object]) -> str:
    kind = notice.get("kind")
    reason = notice.get("reason")
    if kind == "unknown":
        return (
            f"The last result could not be judged ({reason or 'the evidence was missing'}); "
            "it did not count as a success or a failure. Give the missing evidence."
        )
    if kind == "claim":
        return (
            f"Your message is a claim, not evidence: {node.title} is still unverified. "
            f"Show a tool result that passes: {describe(node.verify)}."
        )
    if kind == "claim_unverified":
        raw = notice.get("nodes")
        names = ", ".join(str(n) for n in raw) if isinstance(raw, list) and raw else node.id
        return (
            "You told the user the work is done, but the plan is not finished. Still "
            f"unverified: {names}. Verify them with tool results before claiming success."
        )
    gate = plan.graph.nodes.get(str(notice.get("node") or ""))
    check = describe(gate.verify) if gate is not None else "the final check"
    if kind == "gate_unknown":
        return (
            f"Before the plan can finish, waygraph checks: {check}. It could not decide "
            f"({reason or 'no evidence'}); the plan stays here until it can."
        )
    if kind == "gate_failed":
        return (
            f"The final check failed ({reason or check}); the plan is back at {node.title}. "
            "Fix the cause, then show the result again."
        )
    return ""


def _linear_lines(plan: Plan, run: Run, current: Node) -> tuple[list[str], list[str]]:
    """The step lines before the current step's details, and those after."""
    order = plan.graph.task_order
    total = len(order)
    before: list[str] = []
    after: list[str] = []
    lines = before
    for node_id, index in order.items():
        node = plan.graph.nodes[node_id]
        state = run.visited.get(node_id)
        name = node.name or node_id
        if node_id == current.id:
            attempt = (
                f" ({_attempt_text(node, run.attempts(node_id))})" if node.type == "task" else ""
            )
            before.append(f"  Step {index + 1}/{total}: {name} << CURRENT{attempt}")
            lines = after
            continue
        if state and state["outcome"] == "success":
            mark = "[DONE]"
        elif state and state["outcome"] == "fail":
            mark = "[FAILED]"
        else:
            mark = "[PENDING]"
        lines.append(f"  Step {index + 1}/{total}: {name} {mark}")
    return before, after


def _path_marks(plan: Plan, run: Run, current: Node) -> list[str]:
    shown = [n for n in run.path if _is_work(plan, n)]
    if not shown or shown[-1] != current.id:
        shown.append(current.id)
    marks = []
    for i, node_id in enumerate(shown[:-1]):
        marks.append(f"{node_id} [{_mark(plan, run, node_id, shown[i + 1 : i + 2])}]")
    tail = f"{current.id} << CURRENT"
    if current.type == "task":
        tail += f" ({_attempt_text(current, run.attempts(current.id))})"
    elif current.type == "decision":
        tail += " (decision)"
    return [*marks, tail]


def _is_work(plan: Plan, node_id: str) -> bool:
    node = plan.graph.nodes.get(node_id)
    return node is not None and node.type in ("task", "decision")


def _mark(plan: Plan, run: Run, node_id: str, following: list[str]) -> str:
    if following:
        # Which kind of edge led on tells this visit's outcome even when the
        # node was visited again later.
        conditions = {e.condition for e in plan.graph.out_edges(node_id) if e.to == following[0]}
        if conditions and conditions <= FAILURE_CONDITIONS:
            return "FAILED"
        if conditions & SUCCESS_CONDITIONS and not conditions & FAILURE_CONDITIONS:
            return "DONE"
    state = run.visited.get(node_id)
    return "FAILED" if state and state["outcome"] == "fail" else "DONE"


def _decided_lines(plan: Plan, run: Run) -> list[str]:
    """Decisions that routed the run this turn, described, so the model knows why."""
    lines = []
    for event in run.events:
        if event.get("turn") != run.turn or event.get("type") != "node_verified":
            continue
        node = plan.graph.nodes.get(event.get("node") or "")
        if node is None or node.type != "decision" or event.get("outcome") == "unknown":
            continue
        to = event.get("when")
        if to is None:
            edge = pick_edge(
                plan,
                node.id,
                SUCCESS_EDGES if event.get("outcome") == "success" else EXHAUST_EDGES,
                plain=True,
            )
            to = edge.to if edge is not None else None
        question = node.description or node.name or node.id
        lines.append(f"  Decided at {node.id} ({question}): → {to}")
    return lines


def _attempt_text(node: Node, attempts: int) -> str:
    if node.max_retries is None:
        return f"attempt {attempts}"
    return f"attempt {attempts}/{1 + node.max_retries}"


def _target(plan: Plan, node_id: str) -> str:
    """Where an edge leads, as the documents write it (``escalate: reason``, ``finish``)."""
    node = plan.graph.nodes.get(node_id)
    if node is None:
        return node_id
    if node.type == "exit":
        return f"finish ({node_id})" if node.exit_status == "completed" else f"abort ({node_id})"
    if node.type == "escalate":
        return f"escalate: {node.reason or node.name or node_id}"
    if node.name and node.name != node_id:
        return f"{node_id} — {node.name}"
    return node_id


def _first(plan: Plan, node: Node, conditions: tuple[str, ...]) -> str | None:
    edge = pick_edge(plan, node.id, conditions, plain=node.type == "decision")
    return None if edge is None else _target(plan, edge.to)


def _node_block(plan: Plan, run: Run, node: Node) -> list[str]:
    if node.type == "decision":
        lines = [f"Decide: {node.description or node.name or node.id}"]
        options = [
            f"{_target(plan, e.to)} if {describe(e.when)}"
            for e in plan.graph.out_edges(node.id)
            if e.when is not None
        ]
        if options:
            lines.append("Routes: " + "; ".join(options))
        lines.append(
            "Run one tool call that shows which case holds (for example a status "
            "command); waygraph routes on its result."
        )
        return lines
    lines = []
    if not plan.linear and node.name and node.name != node.id:
        lines.append(f"Node: {node.title}")
    if node.action:
        lines.append(f"Action: {node.action}")
    if node.description and node.description != node.action:
        lines.append(f"About: {node.description}")
    if node.tool:
        lines.append(f"Tool: {node.tool}")
    if node.tool_hint:
        lines.append(f"Hint: {node.tool_hint}")
    lines.append(f"Verify: {describe(node.verify)}")
    lines.extend(_routes(plan, node, run.attempts(node.id)))
    state = run.visited.get(node.id)
    if state and state["outcome"] == "fail":
        failed = "Your last result FAILED verification"
        if node.on_fail == "block":
            lines.append(f"{failed}; this step is blocked until it passes. Fix the cause first.")
        else:
            lines.append(f"{failed}; try a different approach, not the same command again.")
    return lines


def _routes(plan: Plan, node: Node, attempts: int) -> list[str]:
    """The documents' "On success → / On fail (...) →" lines."""
    lines = []
    success = _first(plan, node, SUCCESS_EDGES)
    if success:
        lines.append(f"On success{ARROW}{success}")
    limit = None if node.max_retries is None else 1 + node.max_retries
    has_left = limit is None or attempts < limit
    retry = _first(plan, node, RETRY_EDGES)
    exhaust = _first(plan, node, EXHAUST_EDGES)
    if has_left:
        target = retry or f"retry {node.id}"
        if limit is not None:
            n = limit - attempts
            target += f" ({n} {'attempt' if n == 1 else 'attempts'} left)"
        lines.append(f"On fail (retries left){ARROW}{target}")
    if limit is not None:
        lines.append(f"On fail (exhausted){ARROW}{exhaust or 'stays here (no route out)'}")
    return lines


def finished_message(plan: Plan | None, run: Run) -> str:
    """The short message for a run that ended (completed, escalated, expired, aborted)."""
    title = plan.title if plan is not None else run.plan_name
    if run.status == "escalated":
        text = f"Plan escalated: {run.reason or 'no reason given'}"
        if run.pace_level:
            text += f"\nPace level: {run.pace_level}"
        return (
            text + f"\nStop working on '{title}'. Tell the user what was tried, what failed "
            "and what you need from them."
        )
    if run.status == "expired":
        return (
            f"Plan expired: '{title}' made {run.reason or 'no progress'}. It is no longer "
            "guiding you; ask the user how to continue if the task is unfinished."
        )
    if run.status == "aborted":
        step = _failed_step(plan, run)
        if step is not None:
            # Document 000's words for a step whose on_fail is abort.
            return (
                f"Plan aborted due to step {step} failure ('{title}'). Tell the user what happened."
            )
        return (
            f"Plan aborted: '{title}' stopped at {run.current_node}"
            f"{': ' + run.reason if run.reason else ''}. Tell the user what happened."
        )
    done = sum(1 for v in run.visited.values() if v["outcome"] == "success")
    return (
        f"Plan completed: '{title}' — {done} step(s) verified. Summarize the result for the user."
    )


def _failed_step(plan: Plan | None, run: Run) -> str | None:
    """The task whose failure led to an ``aborted`` exit node, or None."""
    node = plan.graph.nodes.get(run.current_node or "") if plan is not None else None
    if plan is None or node is None or node.type != "exit":
        return None
    for node_id in reversed(run.path[:-1]):
        task = plan.graph.nodes.get(node_id)
        if task is not None and task.type == "task":
            state = run.visited.get(node_id)
            if state is not None and state["outcome"] == "fail":
                return task.name or node_id
            return None
    return None


def progress_summary(plan: Plan, run: Run) -> str:
    """One paragraph for resuming after an interruption."""
    order = plan.graph.task_order
    done = [n for n in order if run.visited.get(n, {}).get("outcome") == "success"]
    failed = [n for n in order if run.visited.get(n, {}).get("outcome") == "fail"]
    text = (
        f"Plan '{plan.title}' ({plan.id}) is {run.status}: {len(done)} of {len(order)} nodes done"
    )
    text += f" ({', '.join(done)})" if done else ""
    if failed:
        text += f", failed so far: {', '.join(failed)}"
    node = plan.graph.nodes.get(run.current_node or "")
    if run.status == "running" and node is not None:
        text += f". Current: {node.title}"
        if node.type == "task":
            text += f" ({_attempt_text(node, run.attempts(node.id))})"
        if node.action:
            text += f" — {node.action}"
    elif run.reason:
        text += f". Reason: {run.reason}"
    return text + "."
