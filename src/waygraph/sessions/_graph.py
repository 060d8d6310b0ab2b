"""A session plan as the shared model: a linear plan that grows as the model declares steps.

Each declared step is a task node (``step_1``, ``step_2``, ... named by the
step's words), joined in order by ``on_success`` edges from a start node to
an exit; :func:`session_view` colours it as the plan file says (completed
steps done, the current one current, a failed one failed), so the dashboard
and ``waygraph draw`` show a session plan as they show any run.

Example:
    >>> data = {"id": "p1", "goal": "Migrate the blog", "status": "running",
    ...         "current_step_index": 1, "steps": [
    ...             {"id": "step_1", "description": "Export posts", "status": "completed"},
    ...             {"id": "step_2", "description": "Convert", "status": "running"}]}
    >>> plan = to_plan(data)
    >>> [n for n in plan.graph.nodes], session_view(data)["current_node"]
    (['start', 'step_1', 'step_2', 'done'], 'step_2')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from waygraph import model

__all__ = ["declared_steps", "session_view", "to_plan"]


def _free(base: str, taken: set[str]) -> str:
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    return name


def declared_steps(data: Mapping[str, Any]) -> tuple[list[str], list[Mapping[str, Any]]]:
    """The node ids of the steps ``data`` (a plan.json) declares, and the steps, in order.

    A step without an id is ``step_<n>``, as the planner names them; entries
    that are not objects are left out.
    """
    steps = [s for s in data.get("steps") or () if isinstance(s, Mapping)]
    return [str(s.get("id") or f"step_{i}") for i, s in enumerate(steps, start=1)], steps


def to_plan(data: Mapping[str, Any]) -> model.Plan:
    """The session plan ``data`` (a plan.json) as a :class:`waygraph.model.Plan`."""
    ids, steps = declared_steps(data)
    start, done = _free("start", set(ids)), _free("done", set(ids))
    builder = model.Graph.builder(start)
    previous = start
    for step_id, step in zip(ids, steps, strict=True):
        words = str(step.get("description") or step_id)
        builder.task(step_id, name=words[:60], description=words, max_retries=None)
        builder.edge(previous, step_id, "always" if previous == start else "on_success")
        previous = step_id
    builder.exit(done, name="Done")
    builder.edge(previous, done, "always" if previous == start else "on_success")
    return model.Plan(
        id=str(data.get("id") or "session-plan"),
        name=str(data.get("goal") or data.get("id") or "session plan")[:80],
        description=str(data.get("goal") or "") or None,
        graph=builder.build(),
    )


def session_view(data: Mapping[str, Any]) -> dict[str, Any]:
    """A run-like state of the session plan ``data`` for the drawings (see the module docstring)."""
    ids, steps = declared_steps(data)
    index = data.get("current_step_index")
    current = ids[index] if isinstance(index, int) and 0 <= index < len(ids) else None
    status = str(data.get("status") or "running")
    finished = [i for i, s in zip(ids, steps, strict=True) if s.get("status") == "completed"]
    start, done = _free("start", set(ids)), _free("done", set(ids))
    return {
        # A paused plan waits at its current step: drawn as current.
        "status": "running" if status in ("running", "paused", "pending") else status,
        "current_node": current,
        "path": [start, *finished]
        + ([current] if current is not None and current not in finished else [])
        + ([done] if status == "completed" else []),
        "visited": {
            i: {"outcome": model.node_outcome(str(s.get("status")))}
            for i, s in zip(ids, steps, strict=True)
        },
    }
