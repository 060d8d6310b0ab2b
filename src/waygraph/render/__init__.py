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

from collections.abc import Mapping
from typing import Protocol

from waygraph.engine import Run
from waygraph.model import Node, Plan
from waygraph.render._compact import compact_context
from waygraph.render._compact import fit as _fit
from waygraph.render._node import ARROW, attempt_text, cached_block
from waygraph.render._node import target as _target  # noqa: F401  (kept importable here)
from waygraph.render._pipeline import context_lines
from waygraph.render.style import COMPACT_TOKENS, FULL, GuidanceStyle
from waygraph.verify import describe
from waygraph.verify_types.people import asks_person, choice_labels, choices_text

__all__ = [
    "context",
    "evidence_lines",
    "failed_step",
    "finished_message",
    "progress_summary",
]

HEADER = "[waygraph]"
#: The documents' closing instruction, for graphs; linear plans name the step.
EXECUTE = "Execute the current step. Do not skip ahead."
INSTRUCTION = (
    "make one tool call for this node, then wait for its result. Claims are not "
    "evidence: only tool results verify a node."
)
#: The closing instruction when ``max_tokens`` leaves no room for the whole one.
SHORT_INSTRUCTION = "one tool call, then wait for its result."
#: The closing instruction where only a person can move the run on.
ASK_INSTRUCTION = (
    "ask the user, then wait for their answer. Only the person's own answer counts: "
    "tool results and your words never do."
)
SHORT_ASK = "ask the user, then wait for their answer."
ELLIPSIS = "…"
STEP_ELLIPSIS = "  …"
FAILURE_CONDITIONS = {"on_fail", "on_retry", "on_exhaust"}
SUCCESS_CONDITIONS = {"on_success"}


def context(
    plan: Plan, run: Run, *, max_tokens: int | None = None, style: GuidanceStyle = FULL
) -> str:
    """The guidance text for ``run``'s current state.

    ``max_tokens`` (about four characters each) drops the oldest path entries
    (for linear plans: the steps farthest from the current one) first, then
    shortens waygraph's own closing line; the current node's lines are never
    dropped. ``style`` (:class:`~waygraph.render.style.GuidanceStyle`) names
    the host's tools instead of the plan's, and its compact style gives only
    the current step, its check and what failed last (at most 120 tokens).
    """
    if run.status != "running":
        done = finished_message(plan, run)
        return _fit(done.splitlines(), COMPACT_TOKENS * 4) if style.compact else done
    node = plan.graph.nodes.get(run.current_node or "")
    if node is None:
        return f"{HEADER} Plan {plan.title!r} is at an unknown node {run.current_node!r}."
    if style.compact:
        notice = _notice_text(plan, node, run.notice) if run.notice else ""
        return compact_context(plan, run, node, style, notice=notice, max_tokens=max_tokens)
    details = cached_block(plan, run, node, style) + tuple(
        "    " + line for line in evidence_lines(plan, run, node)
    )
    if plan.linear:
        head = f"[ACTIVE PLAN: {plan.title}]"
        overview: _Overview = _LinearOverview(*_linear_lines(plan, run, node))
    else:
        head = f"[WORKFLOW: {plan.title}]"
        overview = _PathOverview(_path_marks(plan, run, node))
    decided = _decided_lines(plan, run)
    execute = _execute_line(plan, node)
    short = False

    def assemble() -> str:
        top, bottom = overview.lines()
        closing = _closing_line(plan, node, short=short)
        return "\n".join([head, *decided, *top, *details, *bottom, "", execute, closing])

    text = assemble()
    budget = None if max_tokens is None else max_tokens * 4
    if budget is None:
        return text
    while len(text) > budget and overview.shrink():
        text = assemble()
    if len(text) > budget:
        short = True
        text = assemble()
    return text


def _closing_line(plan: Plan, node: Node, *, short: bool) -> str:
    # waygraph's own line, below the documents' format; it names plan and node
    # (the scripted eval models read the node from it).
    if asks_person(node):
        tail = SHORT_ASK if short else ASK_INSTRUCTION
    else:
        tail = SHORT_INSTRUCTION if short else INSTRUCTION
    return f"{HEADER} Plan: {plan.title} ({plan.id}) · node {node.id} · {tail}"


class _Overview(Protocol):
    def lines(self) -> tuple[list[str], list[str]]:
        """The lines above the current node's details, and those below them."""
        ...

    def shrink(self) -> bool:
        """Drop the least useful entry; False when nothing more may go."""
        ...


class _PathOverview:
    """Document 003's path line: ``reproduce [DONE] → fix << CURRENT (attempt 2/3)``."""

    def __init__(self, marks: list[str]) -> None:
        self.marks = marks

    def lines(self) -> tuple[list[str], list[str]]:
        return ["  " + ARROW.join(self.marks)], []

    def shrink(self) -> bool:
        marks = self.marks
        if len(marks) <= 2:
            return False
        self.marks = [ELLIPSIS, *marks[2:]] if marks[0] == ELLIPSIS else [ELLIPSIS, *marks[1:]]
        return True


class _LinearOverview:
    """Document 000's step lines: those before the current step, it, and those after."""

    def __init__(self, before: list[str], current: str, after: list[str]) -> None:
        self.before, self.current, self.after = before, current, after

    def lines(self) -> tuple[list[str], list[str]]:
        return [*self.before, self.current], self.after

    def shrink(self) -> bool:
        # Finished steps go first, oldest first; then pending ones, last first.
        done = [line for line in self.before if line != STEP_ELLIPSIS]
        if done:
            self.before = [STEP_ELLIPSIS, *done[1:]]
            return True
        pending = [line for line in self.after if line != STEP_ELLIPSIS]
        if pending:
            self.after = [*pending[:-1], STEP_ELLIPSIS]
            return True
        return False


def _execute_line(plan: Plan, node: Node) -> str:
    if plan.linear:
        index = plan.graph.task_order.get(node.id, 0)
        return f"Execute Step {index + 1} now. Do not skip ahead. Verify before proceeding."
    return EXECUTE


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
    lines: list[str] = context_lines(plan, run)
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


def _notice_text(plan: Plan, node: Node, notice: Mapping[str, object]) -> str:
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
    if kind == "question":
        return (
            "You asked the user a question: wait for their answer before going on with this step."
        )
    if kind == "awaiting_person":
        return (
            f"A person decides at {node.id}; tool results do not count here. Ask the user "
            "and wait for their answer."
        )
    if kind == "choices":
        labels = choice_labels(plan.graph, node.id)
        return (
            f"The answer {notice.get('answer')!r} is not one of the choices; the person "
            f"must answer {choices_text(labels)}."
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


def _linear_lines(plan: Plan, run: Run, current: Node) -> tuple[list[str], str, list[str]]:
    """The step lines before the current step, the current step's, and those after."""
    order = plan.graph.task_order
    total = len(order)
    before: list[str] = []
    after: list[str] = []
    lines = before
    current_line = f"  {current.name or current.id} << CURRENT"
    for node_id, index in order.items():
        node = plan.graph.nodes[node_id]
        state = run.visited.get(node_id)
        name = node.name or node_id
        if node_id == current.id:
            # Document 000 writes "<< CURRENT"; the attempt is worth saying once
            # the step is being tried again.
            attempts = run.attempts(node_id)
            attempt = f" ({attempt_text(node, attempts)})" if attempts > 1 else ""
            current_line = f"  Step {index + 1}/{total}: {name} << CURRENT{attempt}"
            lines = after
            continue
        if state and state["outcome"] == "success":
            mark = "[DONE]"
        elif state and state["outcome"] == "fail":
            mark = "[FAILED]"
        else:
            mark = "[PENDING]"
        lines.append(f"  Step {index + 1}/{total}: {name} {mark}")
    return before, current_line, after


def _path_marks(plan: Plan, run: Run, current: Node) -> list[str]:
    shown = [n for n in run.path if _is_work(plan, n)]
    if not shown or shown[-1] != current.id:
        shown.append(current.id)
    marks = []
    for i, node_id in enumerate(shown[:-1]):
        marks.append(f"{node_id} [{_mark(plan, run, node_id, shown[i + 1 : i + 2])}]")
    tail = f"{current.id} << CURRENT"
    if current.type == "task":
        tail += f" ({attempt_text(current, run.attempts(current.id))})"
    elif current.type == "decision":
        tail += " (decision)"
    return [*marks, tail]


def _is_work(plan: Plan, node_id: str) -> bool:
    node = plan.graph.nodes.get(node_id)
    return node is not None and node.type in ("task", "decision", "human")


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
    """Decisions that routed the run in this turn, described, so the model knows why.

    Read from the turn's ``edge_followed`` events out of decision nodes, so a
    decision passed through on the way to the current node counts, and one
    that found no route does not. A rewind undoes the routing before it.
    """
    lines: list[str] = []
    for event in reversed(run.events):
        if event.get("turn") != run.turn or event.get("type") == "rewound":
            break
        if event.get("type") != "edge_followed":
            continue
        # Records written before the document's keys have only "node".
        node = plan.graph.nodes.get(event.get("from") or event.get("node") or "")
        if node is None or node.type not in ("decision", "human"):
            continue
        if node.type == "human":
            # A person's choice: say whose decision it was.
            lines.append(f"  The user decided at {node.id} ({node.question}): → {event.get('to')}")
            continue
        question = node.description or node.name or node.id
        lines.append(f"  Decided at {node.id} ({question}): → {event.get('to')}")
    return lines[::-1]


def finished_message(plan: Plan | None, run: Run) -> str:
    """The short message for a run that ended (completed, escalated, expired, aborted).

    A decision that routed the run to its end in this turn is described
    under the first line, as on a running plan.
    """
    text = _finished_text(plan, run)
    decided = _decided_lines(plan, run) if plan is not None else []
    if not decided:
        return text
    first, _, rest = text.partition("\n")
    return "\n".join([first, *decided, *([rest] if rest else [])])


def _finished_text(plan: Plan | None, run: Run) -> str:
    title = plan.title if plan is not None else run.plan_name
    if run.status == "escalated":
        text = f"Plan escalated: {run.reason or 'no reason given'}"
        if run.pace_level:
            text += f"\nPace level: {run.pace_level}"
        return (
            text + f"\nStop working on '{title}'. Tell the user what was tried, what failed "
            "and what you need from them."
        )
    if run.status == "failed":
        why = run.reason or "no reason given"
        return f"Plan failed: {why}\nStop working on '{title}'; tell the user what failed."
    if run.status == "expired":
        return (
            f"Plan expired: '{title}' made {run.reason or 'no progress'}. It is no longer "
            "guiding you; ask the user how to continue if the task is unfinished."
        )
    if run.status == "aborted":
        step = failed_step(plan, run)
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


def failed_step(plan: Plan | None, run: Run) -> str | None:
    """The name of the task whose failure led the run to an ``aborted`` exit, or None.

    Example:
        >>> from waygraph.model import Plan
        >>> from waygraph import engine
        >>> plan = Plan.model_validate({"id": "p", "steps": [{"name": "Deploy", "on_fail": "abort",
        ...     "verify": {"type": "output_contains", "value": "ok"}}]})
        >>> run, _ = engine.start(plan, run_id="r", turn=1)
        >>> run, _ = engine.observe(plan, run, lambda verify: False, turn=2)
        >>> failed_step(plan, run)
        'Deploy'
    """
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
            text += f" ({attempt_text(node, run.attempts(node.id))})"
        if node.action:
            text += f" — {node.action}"
    elif run.reason:
        text += f". Reason: {run.reason}"
    # An action or reason that ends a sentence itself gets no second full stop.
    return text if text.endswith((".", "!", "?")) else text + "."
