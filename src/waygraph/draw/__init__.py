"""Drawing plans: Mermaid and DOT text, and SVG/PNG through Graphviz.

Node shapes say the node type, as the node type table
(:data:`waygraph.model.NODE_TYPE_SPECS`) gives them (Mermaid): start a
stadium, task a rectangle, decision a rhombus, escalate a flag, exit a double
circle, checkpoint a cylinder, human a hexagon (with its question; its edges'
labels are the choices). Failure edges (``on_fail``, ``on_retry``, ``on_exhaust``) are dashed.
Linear plans are drawn top-down as their steps.

Given a run record (``state``: ``current_node``, ``visited``, ``path``, as
:func:`waygraph.engine.to_record` makes it), nodes are coloured done, failed,
current or pending, visited nodes show their attempt count, and the edges the
run followed are highlighted.

Graphviz is optional: :func:`render_with_graphviz` runs its ``dot`` program
when installed and raises :class:`GraphvizNotFoundError` otherwise;
:func:`to_svg` falls back to waygraph's own layout (:mod:`waygraph.draw.svg`).

Example:
    >>> from waygraph.model import Graph
    >>> plan = (Graph.builder().task("build", name="Run make").exit("done")
    ...         .chain("start", "build", "done").plan("ship"))
    >>> print(to_mermaid(plan), end="")
    flowchart TD
        n_start(["start"])
        n_build["build<br/>Run make"]
        n_done((("done")))
        n_start -->|"always"| n_build
        n_build -->|"on_success"| n_done
"""

from __future__ import annotations

import itertools
import re
import shutil
import subprocess
from collections.abc import Mapping
from typing import Any, Literal

from waygraph.errors import (
    ConfigError,
    GraphvizError,
    GraphvizNotFoundError,
    PlanFormatError,
    WaygraphError,
)
from waygraph.model import NODE_TYPE_SPECS, Edge, Node, Plan, Verify
from waygraph.model.record import RunKind
from waygraph.verify_types import label

__all__ = [
    "GRAPHVIZ_TIMEOUT",
    "GraphvizError",
    "GraphvizNotFoundError",
    "mermaid_text",
    "node_status",
    "predicate_label",
    "render_with_graphviz",
    "to_dot",
    "to_mermaid",
    "to_svg",
]

#: Seconds Graphviz may take for one drawing; a plan graph takes milliseconds,
#: so hitting this means something is wrong, not that the plan is big.
GRAPHVIZ_TIMEOUT = 30.0

NodeLook = Literal["done", "failed", "current", "pending"]

#: (opening, closing) brackets of each node type's Mermaid shape (from the
#: node type table, :data:`waygraph.model.NODE_TYPE_SPECS`).
MERMAID_SHAPES: dict[str, tuple[str, str]] = {
    name: spec.mermaid for name, spec in NODE_TYPE_SPECS.items()
}

#: Fill, border and text colours of each status, shared by Mermaid and DOT.
STATUS_COLOURS: dict[str, tuple[str, str, str]] = {
    "done": ("#d3f9d8", "#2b8a3e", "#1b4721"),
    "failed": ("#ffe3e3", "#c92a2a", "#5c1111"),
    "current": ("#fff3bf", "#e67700", "#5c3c00"),
    "pending": ("#f1f3f5", "#adb5bd", "#495057"),
}

FAILURE_CONDITIONS = frozenset({"on_fail", "on_retry", "on_exhaust"})

# Mermaid reads these characters as syntax even inside quoted labels (pipes end
# edge labels, '#' and ';' start entity codes and statements, brackets open
# shapes), so they become entity codes; one pass, so no code is escaped twice.
_MERMAID_ENTITIES = {
    "#": "#35;",
    '"': "#quot;",
    "&": "#amp;",
    "<": "#lt;",
    ">": "#gt;",
    "|": "#124;",
    "[": "#91;",
    "]": "#93;",
    "{": "#123;",
    "}": "#125;",
    "(": "#40;",
    ")": "#41;",
    ";": "#59;",
    "`": "#96;",
}
_MERMAID_ESCAPES = str.maketrans(_MERMAID_ENTITIES)

_NOT_AN_ID = re.compile(r"[^A-Za-z0-9_]")


# ---------------------------------------------------------------- errors


# ---------------------------------------------------------------- shared


def predicate_label(verify: Verify | None) -> str:
    """A short text for a predicate, as drawn on nodes and edges (each verify
    type's spec gives its own: :func:`waygraph.verify_types.label`).

    A check with ``command_matches`` says so: ``exit == 0 from command /pytest/``.

    Example:
        >>> predicate_label(Verify(type="all", checks=(Verify(type="exit_code_zero"),
        ...                 Verify(type="output_not_contains", value="error"))))
        "exit == 0 and not contains 'error'"
    """
    return label(verify)


def node_status(node: Node, state: Mapping[str, Any]) -> NodeLook:
    """How a run record sees ``node``: done, failed, current or pending.

    Task and decision nodes take their ``visited`` outcome; other nodes count
    as done once the run's ``path`` reached them (an escalate node reached
    counts as failed, since the run gave up there).

    Example:
        >>> node_status(Node(id="fix"), {"current_node": "fix", "status": "running",
        ...             "visited": {"fix": {"outcome": "pending", "attempts": 2}}})
        'current'
    """
    running = state.get("status", "running") == "running"
    current = state.get("current_node")
    # Several nodes are current at once in a DAG run (its running steps).
    currents = current if isinstance(current, list) else (current,)
    if node.id in currents and running:
        return "current"
    outcome = (state.get("visited") or {}).get(node.id, {}).get("outcome")
    if outcome == "success":
        return "done"
    if outcome == "fail":
        return "failed"
    reached = node.id in (state.get("path") or ()) or node.id in currents
    if reached and outcome is None:
        return "failed" if node.type == "escalate" else "done"
    return "pending"


def _attempts_text(node: Node, state: Mapping[str, Any]) -> str | None:
    attempts = (state.get("visited") or {}).get(node.id, {}).get("attempts")
    if not attempts:
        return None
    if node.max_retries is None:
        return f"attempt {attempts}"
    return f"attempt {attempts}/{1 + node.max_retries}"


def _edge_text(edge: Edge, *, linear: bool) -> str:
    parts: list[str] = []
    # A linear plan reads as a list of steps: only its failure edges are labelled.
    if not (linear and edge.condition in ("on_success", "always")):
        parts.append(edge.label or edge.condition)
    if edge.when is not None:
        parts.append(f"when {predicate_label(edge.when)}")
    if edge.on_event:
        parts.append(f"on event {edge.on_event}")
    if edge.weight:
        weight = int(edge.weight) if float(edge.weight).is_integer() else edge.weight
        parts.append(f"weight {weight}")
    return "\n".join(parts)


def _followed_edges(plan: Plan, state: Mapping[str, Any]) -> set[int]:
    """Indexes (in ``plan.graph.edges``) of edges the run went along.

    A guided run's path is one walk: the edges between consecutive path
    nodes. A DAG run (``kind: dag``) runs branches side by side: every edge
    from a node it finished (or the start) to a node it reached.
    """
    path = list(state.get("path") or ())
    if state.get("kind") == RunKind.DAG:
        visited = state.get("visited") or {}
        current = state.get("current_node")
        reached = set(path) | set(visited) | set(current if isinstance(current, list) else ())
        done = {plan.graph.start} | {n for n, v in visited.items() if v.get("outcome") == "success"}
        return {i for i, e in enumerate(plan.graph.edges) if e.from_ in done and e.to in reached}
    pairs = set(itertools.pairwise(path))
    return {i for i, e in enumerate(plan.graph.edges) if (e.from_, e.to) in pairs}


# ---------------------------------------------------------------- Mermaid


def mermaid_text(text: str) -> str:
    """``text`` made safe inside a quoted Mermaid label (newlines become ``<br/>``).

    Example:
        >>> mermaid_text('say "hi" | bye\\nnow')
        'say #quot;hi#quot; #124; bye<br/>now'
    """
    lines = str(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "<br/>".join(line.translate(_MERMAID_ESCAPES) for line in lines)


def _mermaid_ids(plan: Plan) -> dict[str, str]:
    """Mermaid node ids: ``n_`` plus the node id with other characters as ``_``.

    The prefix keeps ids clear of Mermaid keywords (``end``) and of edge syntax
    (``--o``, ``--x``); a numeric suffix keeps sanitised ids distinct.
    """
    ids: dict[str, str] = {}
    taken: set[str] = set()
    for node_id in plan.graph.nodes:
        base = "n_" + _NOT_AN_ID.sub("_", node_id)
        candidate, n = base, 2
        while candidate in taken:
            candidate, n = f"{base}_{n}", n + 1
        ids[node_id] = candidate
        taken.add(candidate)
    return ids


def _node_label(plan: Plan, node: Node, index: dict[str, int]) -> str:
    head = f"step {index[node.id] + 1}" if plan.linear and node.id in index else node.id
    lines = [head]
    # "done" named "Done" says nothing twice.
    if node.name and node.name.casefold() != node.id.casefold():
        lines.append(node.name)
    # A human node is its question; one that falls back to the name or id is already shown.
    if node.type == "human" and node.question not in (node.id, node.name):
        lines.append(node.question)
    # skip and abort show as edges; block is the one failure mode with no edge
    # (and an optional step is skipped whatever its on_fail says).
    if plan.linear and node.on_fail == "block" and node.required is not False:
        lines.append("on fail: block")
    return "\n".join(lines)


def to_mermaid(plan: Plan, *, state: Mapping[str, Any] | None = None) -> str:
    """The plan as a Mermaid flowchart (top-down).

    ``state`` is a run record; with it, nodes get the classes ``done``,
    ``failed``, ``current`` or ``pending``, visited nodes show ``attempt k/n``,
    and the edges along the run's path are drawn thicker.

    Example:
        >>> from waygraph.model import Graph
        >>> plan = Graph.builder().exit("done").edge("start", "done").plan("p")
        >>> to_mermaid(plan).splitlines()[-1]
        '    n_start -->|"always"| n_done'
    """
    ids = _mermaid_ids(plan)
    order = plan.graph.task_order
    lines = ["flowchart TD"]
    for node in plan.graph.nodes.values():
        label = _node_label(plan, node, order)
        if state is not None:
            attempts = _attempts_text(node, state)
            if attempts:
                label += f"\n{attempts}"
        opening, closing = MERMAID_SHAPES.get(node.type, MERMAID_SHAPES["task"])
        lines.append(f'    {ids[node.id]}{opening}"{mermaid_text(label)}"{closing}')
    # An edge to a missing node (check reports it) is still drawn, to a node
    # marked missing, so the drawing helps find the mistake.
    for edge in plan.graph.edges:
        for end in (edge.from_, edge.to):
            if end not in ids:
                taken = set(ids.values())
                ids[end] = next(
                    f"n_missing_{i}" for i in range(len(ids) + 1) if f"n_missing_{i}" not in taken
                )
                label = mermaid_text(f"{end}\n(missing)")
                lines.append(f'    {ids[end]}["{label}"]')
    for edge in plan.graph.edges:
        arrow = "-.->" if edge.condition in FAILURE_CONDITIONS else "-->"
        text = _edge_text(edge, linear=plan.linear)
        label = f'|"{mermaid_text(text)}"|' if text else ""
        lines.append(f"    {ids[edge.from_]} {arrow}{label} {ids[edge.to]}")
    if state is not None:
        lines.extend(_mermaid_state(plan, state, ids))
    return "\n".join(lines) + "\n"


def _mermaid_state(plan: Plan, state: Mapping[str, Any], ids: dict[str, str]) -> list[str]:
    lines = []
    for status, (fill, stroke, colour) in STATUS_COLOURS.items():
        width = "3px" if status == "current" else "1px"
        lines.append(
            f"    classDef {status} fill:{fill},stroke:{stroke},color:{colour},stroke-width:{width}"
        )
    groups: dict[str, list[str]] = {}
    for node in plan.graph.nodes.values():
        groups.setdefault(node_status(node, state), []).append(ids[node.id])
    for status in STATUS_COLOURS:
        if status in groups:
            lines.append(f"    class {','.join(groups[status])} {status}")
    followed = sorted(_followed_edges(plan, state))
    if followed:
        indexes = ",".join(str(i) for i in followed)
        lines.append(f"    linkStyle {indexes} stroke:#2b8a3e,stroke-width:3px")
    return lines


# ---------------------------------------------------------------- DOT


def _dot_quote(text: str) -> str:
    # Always quoted: DOT keywords (node, edge, graph) would otherwise be misread.
    escaped = str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def to_dot(plan: Plan, *, state: Mapping[str, Any] | None = None) -> str:
    """The plan as a Graphviz DOT document.

    Without ``state`` this is exactly :func:`waygraph.formats.dot.plan_to_dot`
    (a DOT plan file that loads back). With a run record, node statements that
    fill each node by status and show attempts (``xlabel``) are added at the end;
    DOT merges repeated node statements, so the plan's own attributes stay.

    Example:
        >>> from waygraph.model import Graph
        >>> plan = Graph.builder().exit("done").edge("start", "done").plan("p")
        >>> 'fillcolor="#fff3bf"' in to_dot(plan, state={"current_node": "start"})
        True
    """
    from waygraph.formats.dot import plan_to_dot

    try:
        text = plan_to_dot(plan)
    except WaygraphError:
        raise
    except ValueError as exc:
        # plan_to_dot refuses plans DOT cannot hold (an edge to a missing node);
        # as a WaygraphError the CLI prints it as one line instead of a traceback.
        raise PlanFormatError(str(exc), plan=plan.id) from None
    if state is None:
        return text
    extra = ["  // run state"]
    for node in plan.graph.nodes.values():
        status = node_status(node, state)
        fill, stroke, colour = STATUS_COLOURS[status]
        attrs = [
            f'fillcolor="{fill}"',
            f'color="{stroke}"',
            f'fontcolor="{colour}"',
            f"penwidth={3 if status == 'current' else 1}",
            'style="filled"',
        ]
        attempts = _attempts_text(node, state)
        if attempts:
            attrs.append(f"xlabel={_dot_quote(attempts)}")
        extra.append(f"  {_dot_quote(node.id)} [{', '.join(attrs)}];")
    closing = text.rstrip().rfind("}")
    if closing < 0:
        raise GraphvizError("DOT text from plan_to_dot has no closing brace")
    return text[:closing] + "\n".join(extra) + "\n}\n"


# ---------------------------------------------------------------- Graphviz

GRAPHVIZ_MISSING = (
    "Graphviz 'dot' is not installed; install it (e.g. apt-get install graphviz) "
    "or use --format mermaid|dot"
)


def render_with_graphviz(
    dot_text: str, fmt: Literal["svg", "png"], *, timeout: float = GRAPHVIZ_TIMEOUT
) -> bytes:
    """Run Graphviz's ``dot`` on ``dot_text``; return the ``svg`` or ``png`` bytes.

    Raises :class:`GraphvizNotFoundError` when ``dot`` is not on PATH and
    :class:`GraphvizError` when it fails or runs past ``timeout`` seconds.

    Example:
        >>> svg = render_with_graphviz("digraph { a -> b }", "svg")  # doctest: +SKIP
        >>> svg.startswith(b"<?xml")  # doctest: +SKIP
        True
    """
    if fmt not in ("svg", "png"):
        raise ConfigError(f"Graphviz output format must be svg or png, not {fmt!r}")
    program = shutil.which("dot")
    if program is None:
        raise GraphvizNotFoundError(GRAPHVIZ_MISSING)
    try:
        proc = subprocess.run(
            [program, f"-T{fmt}"],
            input=dot_text.encode("utf-8"),
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise GraphvizError(f"Graphviz 'dot' did not finish within {timeout:g} s") from None
    except OSError as exc:
        raise GraphvizError(f"cannot run Graphviz 'dot' ({program}): {exc}") from None
    if proc.returncode != 0:
        detail = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        reason = detail[0] if detail else "no error message"
        raise GraphvizError(f"Graphviz 'dot' failed (exit code {proc.returncode}): {reason}")
    if not proc.stdout:
        raise GraphvizError("Graphviz 'dot' produced no output")
    return proc.stdout


def to_svg(plan: Plan, *, state: Mapping[str, Any] | None = None) -> str:
    """The plan as SVG text: through Graphviz when installed, else :func:`waygraph.draw.svg.to_svg`.

    Example:
        >>> from waygraph.model import Graph
        >>> plan = Graph.builder().exit("done").edge("start", "done").plan("p")
        >>> "<svg" in to_svg(plan)
        True
    """
    try:
        return render_with_graphviz(to_dot(plan, state=state), "svg").decode("utf-8", "replace")
    except GraphvizNotFoundError:
        from waygraph.draw.svg import to_svg as native_svg

        return native_svg(plan, state=state)
