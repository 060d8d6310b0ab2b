"""``waygraph check`` on a JSON or YAML plan file: every problem, at its field's line.

:func:`read_plan_file` validates each plan of the file on its own and keeps
every problem pydantic finds (not only the first); the plans that are valid
go on to the semantic checks. :meth:`PlanFile.place` then puts any problem
about the file (a load error or a check's finding) at the line and column of
the field it names.

Example:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.yaml"
    >>> _ = path.write_text("plans:\\n  p:\\n    trigers: [a]\\n    steps: [{name: A}]\\n")
    >>> found = read_plan_file(path)
    >>> [(e.field, found.where(e.plan, e.node, e.edge, e.field)) for e in found.errors]
    [('trigers', (3, 5))]
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from waygraph.errors import PlanFormatError
from waygraph.formats.positions import Positions

if TYPE_CHECKING:
    from waygraph.check import Problem
    from waygraph.model import Plan

__all__ = ["PlanFile", "read_plan_file"]

_STEP = re.compile(r"step_(\d+)")


@dataclass
class PlanFile:
    """What one JSON or YAML file gave: its plans, its problems, and where each key is."""

    meta: dict[str, Any]
    plans: list[Plan]
    errors: list[PlanFormatError]
    positions: Positions
    #: Per plan id, the path of the plan in the file's data.
    bases: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    #: Per plan id, whether it was written as linear steps.
    linear: dict[str, bool] = field(default_factory=dict)

    def where(
        self,
        plan: str | None,
        node: str | None = None,
        edge: str | None = None,
        field: str | None = None,
    ) -> tuple[int, int] | None:
        """``(line, column)`` of the field named, or of the nearest part of it the file has."""
        if field and field.startswith("_meta."):
            return self.positions.find(tuple(field.split(".")))
        base = self.bases.get(plan or "", ())
        linear = self.linear.get(plan or "", False)
        path: tuple[Any, ...] = base
        step = _STEP.fullmatch(node or "")
        if node is not None and step and linear:
            path = (*path, "steps", int(step.group(1)) - 1)
        elif node is not None:
            path = (*path, "graph", "nodes", node)
        elif edge is not None:
            path = (*path, *self._edge_path(plan, edge))
        if field:
            parts = field.split(".")
            if node is None and edge is None and parts[0] == "start":
                parts = ["graph", *parts]
            path = (*path, *parts)
        return self.positions.find(path)

    def _edge_path(self, plan_id: str | None, edge: str) -> tuple[Any, ...]:
        index = re.match(r"#(\d+)", edge)  # a load error's label
        if index:
            return ("graph", "edges", int(index.group(1)))
        plan = next((p for p in self.plans if p.id == plan_id), None)
        if plan is None:
            return ()
        for i, candidate in enumerate(plan.graph.edges):
            if candidate.describe() == edge:
                step = _STEP.fullmatch(candidate.from_)
                if plan.linear:
                    return ("steps", int(step.group(1)) - 1) if step else ()
                return ("graph", "edges", i)
        return ()

    def place(self, problem: Problem) -> Problem:
        """``problem`` with the line and column of its field (unchanged when unknown)."""
        found = self.where(problem.plan, problem.node, problem.edge, problem.field)
        if found is None or problem.line is not None:
            return problem
        return dataclasses.replace(problem, line=found[0], column=found[1])


def read_plan_file(path: Path) -> PlanFile:
    """Every plan and every problem of one JSON or YAML plan file.

    Raises a :class:`~waygraph.errors.WaygraphError` only for a file that
    cannot be read or parsed at all (the loader's own errors).
    """
    from waygraph.formats.json_library import parse_json, read_plans
    from waygraph.formats.yaml_library import parse_yaml
    from waygraph.library import read_plan_text

    name = str(path)
    text, fmt = read_plan_text(path)
    data = parse_json(text, file=name) if fmt == "json" else parse_yaml(text, file=name)
    if data is None:
        raise PlanFormatError("the file is empty", file=name)
    meta, plans, errors = read_plans(data, file=name, text=text, fmt=fmt)
    found = PlanFile(meta, plans, errors, Positions(text, fmt))
    single = isinstance(data, dict) and "plans" not in data
    bodies = data.get("plans") if isinstance(data, dict) and not single else None
    for plan_id in bodies if isinstance(bodies, dict) else [data.get("id")] if single else []:
        if isinstance(plan_id, str):
            found.bases[plan_id] = () if single else ("plans", plan_id)
            body = data if single else bodies.get(plan_id)  # type: ignore[union-attr]
            found.linear[plan_id] = isinstance(body, dict) and "steps" in body
    return found
