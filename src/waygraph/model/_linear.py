"""Linear ``steps`` <-> graph.

The established format's linear plans compile to graphs so one engine runs
both. Rules (DESIGN.md, "Linear plans compile to graphs"):

- step i becomes task node ``step_<i>``; ``start`` leads to ``step_1``; each
  step's ``on_success`` edge leads to the next step, the last to exit ``done``;
- ``warn``/``block``: ``max_retries=None`` and no failure edge, so the step is
  held until it passes (``block`` also tells the model it failed);
- ``skip``, or ``required: false``: an ``on_fail`` edge to the next step;
- ``abort``: an ``on_fail`` edge to exit ``aborted`` (status ``aborted``).

Example:
    >>> g = compile_steps([{"name": "A"}, {"name": "B", "on_fail": "skip"}])
    >>> [(e.from_, e.to, e.condition) for e in g.edges]  # doctest: +NORMALIZE_WHITESPACE
    [('start', 'step_1', 'always'), ('step_1', 'step_2', 'on_success'),
     ('step_2', 'done', 'on_success'), ('step_2', 'done', 'on_fail')]
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from waygraph.errors import PlanFormatError
from waygraph.model import Graph, Step

__all__ = ["compile_steps", "graph_to_steps", "step_errors", "step_node_id"]

START, DONE, ABORTED = "start", "done", "aborted"


def step_node_id(index: int) -> str:
    """Node id of the 0-based step ``index``."""
    return f"step_{index + 1}"


def compile_steps(steps: Any) -> Graph:
    if not isinstance(steps, list | tuple):
        raise ValueError(f"'steps' must be a list of steps, not {type(steps).__name__}")
    if not steps:
        raise ValueError("'steps' is empty; a linear plan needs at least one step")
    parsed = [_step(i, s) for i, s in enumerate(steps)]
    nodes: dict[str, dict[str, Any]] = {START: {"type": "start", "name": "Start"}}
    edges: list[dict[str, Any]] = [{"from": START, "to": step_node_id(0), "condition": "always"}]
    needs_abort = False
    for i, step in enumerate(parsed):
        node_id = step_node_id(i)
        nxt = step_node_id(i + 1) if i + 1 < len(parsed) else DONE
        advances_on_fail = step.on_fail == "skip" or not step.required
        holds = step.on_fail in ("warn", "block") and step.required
        nodes[node_id] = {
            "type": "task",
            "name": step.name,
            "description": step.description,
            "action": step.action,
            "tool": step.tool,
            "tool_hint": step.tool_hint,
            "verify": step.verify,
            "max_retries": None if holds else 0,
            "on_fail": step.on_fail,
            "required": step.required,
        }
        edges.append({"from": node_id, "to": nxt, "condition": "on_success"})
        if advances_on_fail:
            edges.append({"from": node_id, "to": nxt, "condition": "on_fail"})
        elif step.on_fail == "abort":
            needs_abort = True
            edges.append({"from": node_id, "to": ABORTED, "condition": "on_fail"})
    nodes[DONE] = {"type": "exit", "name": "Done"}
    if needs_abort:
        nodes[ABORTED] = {"type": "exit", "name": "Aborted", "status": "aborted"}
    return Graph.model_validate({"start": START, "nodes": nodes, "edges": edges})


def _step(index: int, data: Any) -> Step:
    if isinstance(data, Step):
        return data
    try:
        return Step.model_validate(data)
    except ValidationError as exc:
        raise _step_error(index, exc.errors()[0]) from None


def step_errors(index: int, data: Any) -> list[PlanFormatError]:
    """Every problem of the 0-based step ``index`` (none for a valid step).

    Example:
        >>> [e.field for e in step_errors(0, {"name": "A", "on_failure": "skip"})]
        ['on_failure']
    """
    if isinstance(data, Step):
        return []
    try:
        Step.model_validate(data)
    except ValidationError as exc:
        return [_step_error(index, err) for err in exc.errors()]
    return []


def _step_error(index: int, err: Any) -> PlanFormatError:
    from waygraph.suggest import did_you_mean

    loc = ".".join(str(p) for p in err.get("loc", ())) or None
    kind = err.get("type")
    msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
    if kind == "extra_forbidden":
        msg = "unknown field in step; check its spelling against docs/plans.md"
        name = str(err.get("loc", ("",))[-1])
        hint = did_you_mean(name, Step.model_fields) if len(err.get("loc", ())) == 1 else ""
        msg = f"unknown field in step; {hint} See docs/plans.md" if hint else msg
    return PlanFormatError(
        f"step {index + 1}: {msg}",
        node=step_node_id(index),
        field=loc,
        value=err.get("input") if kind != "extra_forbidden" else loc,
        has_value=kind != "missing",
    )


def graph_to_steps(graph: Graph) -> list[Step]:
    """Recover the steps of a graph compiled by :func:`compile_steps`.

    Follows ``on_success`` edges from the start through task nodes, so a graph
    edited by hand (for example in DOT) still yields its steps in order.
    """
    steps: list[Step] = []
    seen: set[str] = set()
    current = graph.start
    while current and current not in seen:
        seen.add(current)
        node = graph.nodes.get(current)
        if node is None:
            break
        if node.type == "task":
            steps.append(
                Step(
                    name=node.name,
                    description=node.description,
                    action=node.action,
                    tool=node.tool,
                    tool_hint=node.tool_hint,
                    verify=node.verify,
                    on_fail=node.on_fail or "warn",
                    required=True if node.required is None else node.required,
                )
            )
        wanted = "always" if node.type == "start" else "on_success"
        nxt = [e.to for e in graph.out_edges(current) if e.condition in (wanted, "always")]
        current = nxt[0] if nxt else ""
    return steps
