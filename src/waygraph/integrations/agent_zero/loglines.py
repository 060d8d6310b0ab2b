"""The agent's log lines for plan events, as the HTN plan selector wrote them.

Example:
    >>> record = {"plan_name": "Bug fix", "mode": "graph", "total_nodes": 5}
    >>> event_line("[HTN]", {"type": "plan_activated"}, record)
    ('info', '[HTN] Plan activated: Bug fix (5 nodes, graph)')
    >>> event_line("[HTN]", {"type": "node_verified", "node": "test", "outcome": "unknown",
    ...                      "passed": None, "attempt": 1}, record)
    ('info', '[HTN] Step not judged: test (attempt 1)')
    >>> event_line("[HTN]", {"type": "human_asked", "node": "ok", "prompt": "Ship it?"}, record)
    ('info', '[HTN] Waiting for the user at ok: Ship it?')
"""

from __future__ import annotations

from typing import Any

from waygraph.engine import from_record
from waygraph.model import Plan
from waygraph.render import failed_step

__all__ = ["event_line"]

_SHOWN = frozenset(
    (
        "plan_activated",
        "node_verified",
        "plan_completed",
        "plan_escalated",
        "plan_expired",
        "plan_aborted",
        "stall",
        "human_asked",
        "human_answered",
        "answer_rejected",
        "question_asked",
    )
)
#: Characters of a person's question or answer shown in a log line.
_SAID_CHARS = 200


def event_line(
    prefix: str, event: dict[str, Any], record: dict[str, Any], plan: Plan | None = None
) -> tuple[str, str] | None:
    """The (log type, text) for a plan event worth showing, or None.

    Document 000's lines where it has one ("[HTN] Step 1 verified: Reproduce
    the issue", "[HTN] Plan 'X' expired (no progress for 15 turns)", "[HTN]
    Plan aborted: step 'X' failed verification"); ``plan`` gives step names.
    """
    kind = event.get("type")
    if kind not in _SHOWN:
        return None
    name = record.get("plan_name") or record.get("plan_id") or "plan"
    node = event.get("node")
    linear = record.get("mode") == "linear"
    if kind == "plan_activated":
        # Document 000's line, "[HTN] Plan activated: Bug Fix Workflow (5 steps)".
        if linear:
            return "info", f"{prefix} Plan activated: {name} ({record.get('total_steps')} steps)"
        size = f"{record.get('total_nodes')} nodes, graph"
        return "info", f"{prefix} Plan activated: {name} ({size})"
    if kind == "node_verified":
        step = plan.graph.nodes.get(str(node)) if plan is not None and linear else None
        if event.get("passed") and step is not None and plan is not None:
            index = plan.graph.task_order.get(step.id, 0) + 1
            return "info", f"{prefix} Step {index} verified: {step.name or step.id}"
        if event.get("passed"):
            return "info", f"{prefix} Step verified: {node}"
        if event.get("passed") is None or event.get("outcome") == "unknown":
            # The check could not decide: neither passed nor failed.
            return "info", f"{prefix} Step not judged: {node} (attempt {event.get('attempt')})"
        return "info", f"{prefix} Step failed verification: {node} (attempt {event.get('attempt')})"
    if kind == "plan_completed":
        done = f"{record.get('completed_nodes')}/{record.get('total_nodes')}"
        return "info", f"{prefix} Plan '{name}' completed! ({done} nodes)"
    if kind == "plan_escalated":
        pace = event.get("pace_level") or "contingent"
        return "warning", f"{prefix} Plan '{name}' escalated to PACE {pace}: {event.get('reason')}"
    if kind == "plan_expired":
        turns = record.get("stale_after_turns") or event.get("turns")
        return "info", f"{prefix} Plan '{name}' expired (no progress for {turns} turns)"
    if kind == "plan_aborted":
        failed = failed_step(plan, from_record(record)) if plan is not None and record else None
        if failed is not None:
            return "warning", f"{prefix} Plan aborted: step '{failed}' failed verification"
        return "warning", f"{prefix} Plan '{name}' aborted at {node}: {event.get('reason')}"
    if kind == "stall":
        return "warning", f"{prefix} Plan '{name}' stalled at {node}: {event.get('reason')}"
    return _person_line(prefix, kind, node, event)


def _person_line(prefix: str, kind: Any, node: Any, event: dict[str, Any]) -> tuple[str, str]:
    """Where the run waits for a person, and what they said: only a person moves it on there."""
    if kind == "human_asked":
        asked = str(event.get("prompt") or "a confirmation")[:_SAID_CHARS]
        return "info", f"{prefix} Waiting for the user at {node}: {asked}"
    if kind == "question_asked":
        return "info", f"{prefix} Waiting for the user's answer to the agent's question at {node}"
    said = str(event.get("answer") or "")[:_SAID_CHARS]
    if kind == "answer_rejected":
        return "warning", f"{prefix} The user's answer {said!r} at {node} is not one of the choices"
    return "info", f"{prefix} The user answered at {node}: {said!r}"
