"""The compact guidance style: the current step, its check and what failed last.

For models with a small context (``guidance="compact"``): no workflow view,
no routes, no closing instructions. Three lines under a one-line header,
within :data:`~waygraph.render.style.COMPACT_TOKENS` tokens (about four
characters each, as everywhere in waygraph)::

    [waygraph] Bug Fix Workflow · step fix (attempt 2/3)
    Do: Change only what the cause needs, usually a few lines in one file. …
    Check: any non-empty output
    Last failed (test): `python -m pytest -q` → 1 failed, 3 passed

The header, the check and the failure are clipped to a share of the budget
each; the action gets what is left. "What failed last" is the run's latest
verification of a task when it failed (a success since then clears it; a
decision's routing is no failure), with the telling line of its output, or
what the last turn could not count (a claim, an unknown verdict).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from waygraph.engine import Run
from waygraph.model import Node, Plan
from waygraph.render._node import attempt_text, node_block
from waygraph.render.style import COMPACT_TOKENS, GuidanceStyle
from waygraph.verify import describe

__all__ = ["clip", "compact_context", "fit", "last_failure"]

HEADER = "[waygraph]"
ELLIPSIS = "…"
#: The most characters of the header, the check and the failure line.
HEADER_CHARS = 80
CHECK_CHARS = 110
FAILURE_CHARS = 150


def clip(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    return line[: max(0, limit - 1)].rstrip() + ELLIPSIS


def compact_context(
    plan: Plan,
    run: Run,
    node: Node,
    style: GuidanceStyle,
    *,
    notice: str = "",
    max_tokens: int | None = None,
) -> str:
    """The compact guidance at ``node`` (``notice``: what the last turn could not count)."""
    tokens = COMPACT_TOKENS if max_tokens is None else min(max_tokens, COMPACT_TOKENS)
    budget = tokens * 4
    where = f"step {node.id}"
    if node.type == "task":
        where += f" ({attempt_text(node, run.attempts(node.id))})"
    header = clip(f"{HEADER} {plan.title} · {where}", HEADER_CHARS)
    if node.type != "task":
        # A decision or a person's step: its own lines, as many as fit.
        lines = [header, *(clip(line, budget) for line in node_block(plan, run, node, style))]
        return fit(lines, budget)
    check = clip(f"Check: {describe(node.verify)}", CHECK_CHARS)
    failed = notice or last_failure(plan, run)
    tail = [check] + ([clip(failed, FAILURE_CHARS)] if failed else [])
    room = budget - len(header) - sum(len(line) + 1 for line in tail) - 1
    action = node.action or node.description or node.title
    # A budget below the default (``max_tokens``) may leave the action no room: then
    # the lines are cut in order, so the text never passes the budget.
    return fit([header, clip(f"Do: {action}", max(room, 12)), *tail], budget)


def fit(lines: list[str], budget: int) -> str:
    """As many of ``lines`` as fit in ``budget`` characters; the last one cut to fit."""
    kept: list[str] = []
    used = 0
    for line in lines:
        room = budget - used - (1 if kept else 0)
        if room <= len(ELLIPSIS):
            break
        kept.append(clip(line, room))
        used += len(kept[-1]) + (1 if len(kept) > 1 else 0)
    return "\n".join(kept)


def last_failure(plan: Plan, run: Run) -> str:
    """ "Last failed …" for the run's latest verification when it failed, else ``""``.

    Example:
        >>> import waygraph
        >>> from waygraph import engine
        >>> plan = waygraph.load_library()["bugfix_workflow"]
        >>> run, _ = engine.start(plan, run_id="r", turn=1)
        >>> last_failure(plan, run)
        ''
    """
    latest = True
    for event in reversed(run.events):
        if event.get("type") == "rewound":
            return ""
        if event.get("type") != "node_verified" or not _is_task(plan, event.get("node")):
            continue  # a decision's "fail" is a route taken, not a result that failed
        outcome = event.get("outcome")
        if outcome == "fail":
            return _failure_text(plan, run, event, latest=latest)
        if outcome != "unknown":  # a success since: nothing failed since the last progress
            return ""
        latest = False
    return ""


def _is_task(plan: Plan, node_id: object) -> bool:
    node = plan.graph.nodes.get(str(node_id or ""))
    return node is not None and node.type == "task"


# The line of a tool's output that says what went wrong (pytest's "1 failed, ...").
_TELLING = re.compile(
    r"error|fail|assert|traceback|exception|denied|not found|fatal|panic|refused", re.I
)


def _failure_text(plan: Plan, run: Run, event: Mapping[str, Any], *, latest: bool) -> str:
    node_id = str(event.get("node") or "")
    where = "" if node_id == run.current_node else f" ({node_id})"
    tried = (run.visited.get(node_id) or {}).get("tried") or ()
    attempt = next((t for t in reversed(tried) if t.get("verdict") == "fail"), None)
    what = ""
    if attempt is not None:
        call = attempt.get("call") or attempt.get("tool")
        what = f"`{call}` → " if call else ""
        first = attempt.get("output") or ""
        whole = run.last_output if latest else None
        result = _telling_line(whole, first) or first or event.get("reason") or "(no output)"
    else:
        node = plan.graph.nodes.get(node_id)
        check = describe(node.verify) if node is not None else "its check"
        result = event.get("reason") or f"did not pass: {check}"
    return f"Last failed{where}: {what}{result}"


def _telling_line(output: str | None, first: str) -> str:
    """The last line of ``output`` that says what went wrong, when ``output`` is that attempt's.

    The attempt keeps only its first line; the run keeps the latest whole
    output, which is this attempt's when its first line matches.
    """
    lines = [" ".join(line.split()) for line in (output or "").splitlines() if line.strip()]
    if not lines or lines[0][:60] != first[:60]:
        return ""
    telling = [line for line in lines if _TELLING.search(line)]
    return telling[-1] if telling else ""
