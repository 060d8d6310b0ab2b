"""The current node's lines in the model's guidance (document 003's block).

What to do at the node (``Action``, ``Tool``, ``Hint``, ``Verify``), where each
outcome leads (``On success → test``) and waygraph's own lines below them; a
decision's routes and a person's choices. :func:`waygraph.render.context`
puts the block under the plan's overview.

The ``Tool:`` line names the host's tool (:mod:`waygraph.render.style`).
A plan's ``tool_hint`` is an example, and the ``Hint`` line says so: small
models copied ``tests/test_login.py`` and ``<module>`` into their commands.
Its placeholders (``<module>``, ``{file}``, ``PATH/TO/FILE``) are named as
what to replace, and project file paths in it (``tests/test_login.py``) are
said to be examples.
"""

from __future__ import annotations

import re

from waygraph.engine import EXHAUST_EDGES, RETRY_EDGES, SUCCESS_EDGES, Run, pick_edge
from waygraph.engine.choice import ordered_edges
from waygraph.model import Node, Plan
from waygraph.render._pipeline import attractor_fail_routes, exit_status_line, settings_lines
from waygraph.render.style import FULL, GuidanceStyle, HostTools
from waygraph.verify import describe
from waygraph.verify_types import person_request
from waygraph.verify_types.people import choice_labels, human_lines

__all__ = ["ARROW", "attempt_text", "cached_block", "hint_line", "node_block", "target"]

ARROW = " → "


# The node block depends only on the plan, the node, its attempts, whether
# its last verification failed and the host's tools, and most turns repeat
# one of a few states.
_BLOCKS: dict[tuple[int, str, int, bool, HostTools | None], tuple[Plan, tuple[str, ...]]] = {}
_MAX_BLOCKS = 4096


def cached_block(plan: Plan, run: Run, node: Node, style: GuidanceStyle = FULL) -> tuple[str, ...]:
    state = run.visited.get(node.id)
    failed = state is not None and state["outcome"] == "fail"
    key = (id(plan), node.id, run.attempts(node.id), failed, style.tools)
    hit = _BLOCKS.get(key)
    if hit is not None and hit[0] is plan:  # identity: ids of dead plans get reused
        return hit[1]
    lines = tuple("    " + line for line in node_block(plan, run, node, style))
    if len(_BLOCKS) >= _MAX_BLOCKS:
        _BLOCKS.clear()
    _BLOCKS[key] = (plan, lines)
    return lines


def attempt_text(node: Node, attempts: int) -> str:
    if node.max_retries is None:
        return f"attempt {attempts}"
    return f"attempt {attempts}/{1 + node.max_retries}"


def target(plan: Plan, node_id: str) -> str:
    """Where an edge leads, as document 003 writes it (``test``, ``escalate: unable to fix``)."""
    node = plan.graph.nodes.get(node_id)
    if node is None:
        return node_id
    if node.type == "exit":
        return f"finish ({node_id})" if node.exit_status == "completed" else f"abort ({node_id})"
    if node.type == "escalate":
        return f"escalate: {_escalation_label(node)}"
    return node_id


_ESCALATE_WORD = re.compile(r"^escalate\b[\s:—–-]*", re.IGNORECASE)


def _escalation_label(node: Node) -> str:
    """A short why: the node's name without a leading "Escalate", else its reason.

    Document 003's node named "Escalate — unable to fix" reads "escalate:
    unable to fix"; the longer ``reason`` is what the model is told when the
    escalation happens.
    """
    label = _ESCALATE_WORD.sub("", (node.name or "").strip()).strip()
    return label or node.reason or node.id


def _first(plan: Plan, node: Node, conditions: tuple[str, ...]) -> str | None:
    edge = pick_edge(plan, node.id, conditions, plain=node.type == "decision")
    return None if edge is None else target(plan, edge.to)


def node_block(plan: Plan, run: Run, node: Node, style: GuidanceStyle = FULL) -> list[str]:
    if node.type == "human":
        return human_lines(node.question, choice_labels(plan.graph, node.id))
    if node.type == "decision":
        lines = [f"Decide: {node.description or node.name or node.id}"]
        options = [
            f"{target(plan, e.to)} if {describe(e.when)}"
            for e in ordered_edges(plan, node.id)
            if e.when is not None
        ]
        if options:
            lines.append("Routes: " + "; ".join(options))
        lines.append(
            "Run one tool call that shows which case holds (for example a status "
            "command); waygraph routes on its result."
        )
        return lines
    # The documents' lines first, in their order; waygraph's own below them.
    lines = []
    if node.action:
        lines.append(f"Action: {node.action}")
    tool = style.tool_text(node.tool) if node.tool else None
    if tool:
        lines.append(f"Tool: {tool}")
    if node.tool_hint:
        lines.append(hint_line(node.tool_hint))
    lines.append(f"Verify: {describe(node.verify)}")
    lines += settings_lines(node) + exit_status_line(plan, node)
    # A check only a person passes (manual): its spec says what to ask.
    request = person_request(node.verify)
    if request is not None:
        lines.append(f"Ask the user: {request}.")
    elif node.verify is not None and node.verify.command_matches and node.tool_hint:
        lines.append(f"Only the step's own command counts (for example: {node.tool_hint}).")
    attempts = run.attempts(node.id)
    lines.extend(_routes(plan, node, attempts))
    if not plan.linear and node.name and node.name != node.id:
        lines.append(f"Node: {node.title}")
    if node.description and node.description != node.action:
        lines.append(f"About: {node.description}")
    limit = None if node.max_retries is None else 1 + node.max_retries
    if limit is not None and attempts < limit:
        left = limit - attempts
        lines.append(
            f"Attempt {attempts} of {limit} ({left} {'attempt' if left == 1 else 'attempts'} left)."
        )
    state = run.visited.get(node.id)
    if state and state["outcome"] == "fail":
        if node.on_fail == "block":
            # Document 000's words for a blocked step: "Step X failed verification".
            step = f"Step {plan.graph.task_order.get(node.id, 0) + 1}" if plan.linear else node.id
            lines.append(
                f"{step} failed verification; it is blocked until it passes. Fix the cause first."
            )
        else:
            lines.append(
                "Your last result FAILED verification; try a different approach, "
                "not the same command again."
            )
    return lines


def _routes(plan: Plan, node: Node, attempts: int) -> list[str]:
    """Document 003's "On success → / On fail (retries left) → / On fail (exhausted) →" lines."""
    lines = []
    success = _first(plan, node, SUCCESS_EDGES)
    if success:
        lines.append(f"On success{ARROW}{success}")
    if plan.routing == "attractor":
        return lines + attractor_fail_routes(plan, node, attempts)
    limit = None if node.max_retries is None else 1 + node.max_retries
    if limit is None or attempts < limit:
        retry = _first(plan, node, RETRY_EDGES)
        lines.append(f"On fail (retries left){ARROW}{retry or f'retry {node.id}'}")
    if limit is not None:
        exhaust = _first(plan, node, EXHAUST_EDGES)
        lines.append(f"On fail (exhausted){ARROW}{exhaust or 'stays here (no route out)'}")
    return lines


#: How the ``Hint`` line begins: the hint is an example, not a command to copy.
HINT = "Hint (example, adapt it): "
# Placeholders: <module>, {file} (not curl's %{http_code} or a shell's ${x}), PATH/TO/FILE.
_PLACEHOLDER = re.compile(
    r"<[A-Za-z][^<>\n]{0,40}>"
    r"|(?<![%$])\{[A-Za-z_][\w .-]{0,30}\}"
    r"|\b[A-Z][A-Z0-9_]*(?:/[A-Z0-9_]+)+(?:\.\w+)?"
)
# A project file's path: relative, with a folder and a known extension (not a
# glob like '*.py', nor /tmp/x.txt or a name the plan itself picks).
_FILE = re.compile(
    r"(?<![\w*.$/-])\w[\w.-]*/[\w./-]*\.(?:py|txt|toml|cfg|ini|json|ya?ml|js|ts|md|log|sh|rs|go)\b"
)
_MAX_NAMED = 3


def hint_line(hint: str) -> str:
    """The ``Hint`` line: the hint as an example, its placeholders and file paths marked.

    Example:
        >>> hint_line("python -c 'import <module>'")
        "Hint (example, adapt it): python -c 'import <module>' — replace <module> with yours"
        >>> hint_line("python -m pytest -q tests/test_login.py")[-43:]
        'tests/test_login.py is only an example name'
    """
    hint = " ".join(hint.split())
    notes = []
    placeholders = _distinct(_PLACEHOLDER.findall(hint))
    if placeholders:
        notes.append(f"replace {_listed(placeholders)} with yours")
    files = _distinct(_FILE.findall(_PLACEHOLDER.sub(" ", hint)))
    if files:
        names = "an example name" if len(files) == 1 else "example names"
        notes.append(f"{_listed(files)} {'is' if len(files) == 1 else 'are'} only {names}")
    return HINT + hint + (" — " + "; ".join(notes) if notes else "")


def _distinct(found: list[str]) -> list[str]:
    return list(dict.fromkeys(found))


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:_MAX_NAMED])
    return shown + (", …" if len(names) > _MAX_NAMED else "")
