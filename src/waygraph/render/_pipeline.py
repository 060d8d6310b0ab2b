"""What the model is told about a pipeline node beyond document 003's lines.

A node read from an Attractor pipeline may name the command it runs
(``tool_command``), the model settings its stage asks for, and routes that
read the run's context. :mod:`waygraph.render` adds these lines in its block
for the current node, so a guided agent sees what an executed run would do.

Example:
    >>> from waygraph.model import Node
    >>> node = Node(id="t", command="make test",
    ...             attrs={"llm_model": "opus", "llm_provider": "anthropic",
    ...                    "reasoning_effort": "high"})
    >>> settings_lines(node)
    ['Run: make test', 'Model: opus (anthropic), reasoning effort high']
"""

from __future__ import annotations

from waygraph.engine import Run
from waygraph.engine.choice import pick_edge, reads_context, retry_target_of
from waygraph.model import Node, Plan

__all__ = [
    "attractor_fail_routes",
    "context_lines",
    "exit_status_line",
    "settings_lines",
    "uses_context",
]

#: Context keys named in the guidance before "and N more".
_KEYS_SHOWN = 12
#: Characters of one key shown.
_KEY_CHARS = 40
ARROW = " → "


def settings_lines(node: Node) -> list[str]:
    """``Run:`` for a tool node, ``Model:`` for a node with model settings."""
    lines = []
    if node.command:
        lines.append(f"Run: {node.command}")
    attrs = node.attrs or {}
    model = attrs.get("llm_model")
    provider = attrs.get("llm_provider")
    effort = attrs.get("reasoning_effort")
    if model or provider or effort:
        parts = [f"Model: {model or 'default'}" + (f" ({provider})" if provider else "")]
        if effort:
            parts.append(f"reasoning effort {effort}")
        lines.append(", ".join(parts))
    return lines


def exit_status_line(plan: Plan, node: Node) -> list[str]:
    """An attractor task without ``verify`` passes or fails on its exit status alone."""
    if plan.routing != "attractor" or node.type != "task" or node.verify is not None:
        return []
    return ["Its exit status decides: 0 passes, non-zero fails."]


def attractor_fail_routes(plan: Plan, node: Node, attempts: int) -> list[str]:
    """Where a failure goes in an attractor-routed plan (§3.7): a fail edge at once,
    else another attempt while retries are left, then the retry target."""
    edge = pick_edge(plan, node.id, ("on_fail", "on_exhaust"))
    if edge is not None:
        return [f"On fail{ARROW}{edge.to}"]
    lines = []
    limit = None if node.max_retries is None else 1 + node.max_retries
    if limit is None or attempts < limit:
        retry = pick_edge(plan, node.id, ("on_retry",))
        lines.append(f"On fail (retries left){ARROW}{retry.to if retry else f'retry {node.id}'}")
    if limit is not None:
        target = retry_target_of(plan, node)
        lines.append(f"On fail (exhausted){ARROW}{target or 'the pipeline fails'}")
    return lines


#: uses_context's answers by plan (plans are immutable; the plan is kept to
#: check identity, as ids of dead plans get reused).
_USES: dict[int, tuple[Plan, bool]] = {}


def uses_context(plan: Plan) -> bool:
    """Whether an edge of ``plan`` routes on the run's context."""
    hit = _USES.get(id(plan))
    if hit is not None and hit[0] is plan:
        return hit[1]
    found = any(e.when is not None and reads_context(e.when) for e in plan.graph.edges)
    if len(_USES) >= 1024:
        _USES.clear()
    _USES[id(plan)] = (plan, found)
    return found


def context_lines(plan: Plan, run: Run) -> list[str]:
    """The context keys set so far, and how a result sets more, for a plan that reads them."""
    if not uses_context(plan):
        return []
    keys = [k if len(k) <= _KEY_CHARS else k[: _KEY_CHARS - 1] + "…" for k in run.context]
    shown = ", ".join(keys[:_KEYS_SHOWN]) or "none"
    if len(keys) > _KEYS_SHOWN:
        shown += f" and {len(keys) - _KEYS_SHOWN} more"
    return [
        f"Context set: {shown}. A tool result sets more when its last line is "
        '{"context_updates": {"key": value}}.'
    ]
