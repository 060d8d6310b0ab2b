"""Model context: the text injected before the model's next call.

For graph plans: the plan, the path so far with DONE/FAILED marks, the current
node by id and name with its attempt count, the action, tool, hint, what
verification checks, where success, failure and exhaustion lead, and one
instruction line. Linear plans keep the established "Step i of n" look.
Finished runs get one short message saying what happened and why.

Example:
    >>> import waygraph
    >>> from waygraph import engine
    >>> plan = waygraph.load_library()["bugfix_workflow"]
    >>> run, _ = engine.start(plan, run_id="r", turn=1)
    >>> print(context(plan, run).splitlines()[0])
    [waygraph] Plan: Bug Fix Workflow (bugfix_workflow)
"""

from __future__ import annotations

from waygraph.engine import EXHAUST_EDGES, RETRY_EDGES, SUCCESS_EDGES, Run
from waygraph.model import Node, Plan
from waygraph.verify import describe

__all__ = ["context", "finished_message", "progress_summary"]

HEADER = "[waygraph]"
INSTRUCTION = (
    "Do only this node now: make one tool call for the action above, then wait for its "
    "result. Do not skip ahead or claim success without running it."
)
FAILURE_CONDITIONS = {"on_fail", "on_retry", "on_exhaust"}
SUCCESS_CONDITIONS = {"on_success"}


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
    head = f"{HEADER} Plan: {plan.title} ({plan.id})"
    body = _cached_block(plan, run, node) + tuple(evidence_lines(plan, run, node))
    overview = _linear_lines(plan, run) if plan.linear else _path_lines(plan, run)
    budget = None if max_tokens is None else max_tokens * 4
    text = _assemble(head, overview, body)
    while budget is not None and len(text) > budget and len(overview) > 1:
        overview = _shorten(overview)
        text = _assemble(head, overview, body)
    return text


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
    lines = tuple(_node_block(plan, run, node))
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


def _assemble(head: str, overview: list[str], body: tuple[str, ...]) -> str:
    return "\n".join([head, *overview, *body])


def _shorten(lines: list[str]) -> list[str]:
    # Drop the oldest entry, keeping an ellipsis marker in front.
    kept = [ln for ln in lines if ln != "  ..."]
    return ["  ...", *kept[2:]] if len(kept) > 2 else kept[-1:]


def _linear_lines(plan: Plan, run: Run) -> list[str]:
    order = plan.graph.task_order
    total = len(order)
    lines = []
    for node_id, index in order.items():
        node = plan.graph.nodes[node_id]
        state = run.visited.get(node_id)
        if node_id == run.current_node:
            mark = "<< CURRENT"
        elif state and state["outcome"] == "success":
            mark = "COMPLETED"
        elif state and state["outcome"] == "fail":
            mark = "FAILED (skipped)"
        else:
            mark = "PENDING"
        lines.append(f"  Step {index + 1} of {total}: {node.name or node_id} — {mark}")
    return lines


def _path_lines(plan: Plan, run: Run) -> list[str]:
    shown = [n for n in run.path if _is_work(plan, n)]
    marks = []
    for i, node_id in enumerate(shown):
        if i == len(shown) - 1 and node_id == run.current_node:
            marks.append(f"{node_id} (current)")
            continue
        marks.append(f"{node_id} {_mark(plan, run, node_id, shown[i + 1 : i + 2])}")
    if not marks:
        return []
    lines = ["Path so far:"]
    lines.extend(f"  {m}" for m in marks)
    return lines


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


def _attempt_text(node: Node, attempts: int) -> str:
    if node.max_retries is None:
        return f"attempt {attempts}"
    return f"attempt {attempts}/{1 + node.max_retries}"


def _target(plan: Plan, node_id: str) -> str:
    node = plan.graph.nodes.get(node_id)
    if node is None:
        return node_id
    if node.type == "exit":
        return f"{node.title} (finish)" if node.exit_status == "completed" else node.title
    if node.type == "escalate":
        return f"{node.title} (escalate)"
    return node.title


def _first(plan: Plan, node_id: str, conditions: tuple[str, ...]) -> str | None:
    edges = plan.graph.out_edges(node_id)
    for condition in conditions:
        for edge in edges:
            if edge.condition == condition and edge.when is None:
                return _target(plan, edge.to)
    return None


def _node_block(plan: Plan, run: Run, node: Node) -> list[str]:
    attempts = run.attempts(node.id)
    if plan.linear:
        index = plan.graph.task_order.get(node.id, 0)
        title = f"Current step {index + 1} of {len(plan.graph.task_order)}: {node.name or node.id}"
    else:
        title = f"Current node: {node.title}"
    if node.type == "task":
        title += f" ({_attempt_text(node, attempts)})"
    lines = [title]
    if node.type == "decision":
        lines.append(f"Decide: {node.description or node.name or node.id}")
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
    if node.action:
        lines.append(f"Action: {node.action}")
    if node.description and node.description != node.action:
        lines.append(f"About: {node.description}")
    if node.tool:
        lines.append(f"Tool: {node.tool}")
    if node.tool_hint:
        lines.append(f"Hint: {node.tool_hint}")
    lines.append(f"Verification: {describe(node.verify)}")
    state = run.visited.get(node.id)
    if state and state["outcome"] == "fail":
        failed = "Your last result FAILED verification"
        if node.on_fail == "block":
            lines.append(f"{failed}; this step is blocked until it passes. Fix the cause first.")
        else:
            lines.append(f"{failed}; try a different approach, not the same command again.")
    lines.extend(_routes(plan, node, attempts))
    lines.append(INSTRUCTION)
    return lines


def _routes(plan: Plan, node: Node, attempts: int) -> list[str]:
    success = _first(plan, node.id, SUCCESS_EDGES)
    limit = None if node.max_retries is None else 1 + node.max_retries
    has_left = limit is None or attempts < limit
    retry = _first(plan, node.id, RETRY_EDGES) if has_left else None
    exhaust = _first(plan, node.id, EXHAUST_EDGES)
    parts = []
    if success:
        parts.append(f"on success -> {success}")
    if has_left:
        if retry:
            parts.append(f"on failure -> {retry}")
        elif limit is None:
            parts.append("on failure -> retry this node")
        else:
            left = limit - attempts
            plural = "attempt" if left == 1 else "attempts"
            parts.append(f"on failure -> retry this node ({left} {plural} left)")
        if exhaust and limit is not None:
            parts.append(f"when attempts run out -> {exhaust}")
    elif exhaust:
        parts.append(f"on failure -> {exhaust} (no attempts left)")
    else:
        parts.append("on failure -> stays here (no attempts left)")
    return [f"Next: {'; '.join(parts)}"] if parts else []


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
        return (
            f"Plan aborted: '{title}' stopped at {run.current_node}"
            f"{': ' + run.reason if run.reason else ''}. Tell the user what happened."
        )
    done = sum(1 for v in run.visited.values() if v["outcome"] == "success")
    return (
        f"Plan completed: '{title}' — {done} step(s) verified. Summarize the result for the user."
    )


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
