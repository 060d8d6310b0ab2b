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

import copy
import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from waygraph.errors import PlanFormatError
from waygraph.formats.positions import Positions

if TYPE_CHECKING:
    from waygraph.check._problem import Problem
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
    #: Plans that failed to load, read again with their broken fields left out,
    #: so that the checks of the rest of the plan still run (:func:`read_plan_file`).
    partial: list[Plan] = field(default_factory=list)

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
        plan = next((p for p in [*self.plans, *self.partial] if p.id == plan_id), None)
        if plan is None:
            return ()
        for i, candidate in enumerate(plan.graph.edges):
            if candidate.describe() == edge:
                step = _STEP.fullmatch(candidate.from_)
                if plan.linear:
                    return ("steps", int(step.group(1)) - 1) if step else ()
                return ("graph", "edges", i)
        return ()

    def beside_errors(self, problem: Problem) -> bool:
        """Whether ``problem`` is about a node or edge that has a load error.

        A check of a :attr:`partial` plan sees it without its broken fields;
        what it says there follows from the error already reported.
        """
        for error in self.errors:
            if error.plan != problem.plan:
                continue
            if problem.node is not None and problem.node == error.node:
                return True
            if problem.edge and error.edge and _ends(problem.edge) == _ends(error.edge):
                return True
        return False

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
    if errors and isinstance(data, dict):
        loaded = {p.id for p in plans}
        try:
            partial = _without_broken_fields(data, errors, name)
        except RecursionError:  # nested deeper than a copy can go: its errors stand alone
            partial = []
        found.partial = [p for p in partial if p.id not in loaded]
    return found


def _without_broken_fields(
    data: dict[str, Any], errors: list[PlanFormatError], file: str
) -> list[Plan]:
    """The plans of ``data`` that load once the fields ``errors`` name are left out.

    A field whose removal leaves its parent invalid (a verify without its
    ``type``) takes the parent with it; a few rounds settle every case the
    reader reports.
    """
    from waygraph.formats.json_library import error_path, read_plans

    single = "plans" not in data
    data = copy.deepcopy(data)
    removed: set[tuple[Any, ...]] = set()
    loaded: dict[str, Plan] = {}
    for _ in range(4):
        changed = False
        for error in errors:
            base = () if single else ("plans", error.plan)
            path = error_path(error, base)
            while path in removed and len(path) > len(base) + 1:
                path = path[:-1]
            if len(path) <= len(base) or path in removed:
                continue
            removed.add(path)
            changed = _remove(data, path) or changed
        if not changed:
            break
        _, plans, errors = read_plans(data, file=file)
        loaded.update((plan.id, plan) for plan in plans)
        if not errors:
            break
    return list(loaded.values())


def _ends(edge: str) -> tuple[str, str] | None:
    """``(from, to)`` of ``a -> b (on_success)``, or of a load error's ``#2 (a -> b)``."""
    found = re.match(r"(?:#\d+ \()?(\S+) -> (\S+?)\)?(?: |$)", edge)
    return (found.group(1), found.group(2)) if found else None


def _remove(data: Any, path: tuple[Any, ...]) -> bool:
    """Delete ``path`` from nested dicts and lists; whether it was there."""
    *parents, last = path
    for key in parents:
        try:
            data = data[key]
        except (KeyError, IndexError, TypeError):
            return False
    if isinstance(data, dict) and last in data:
        del data[last]
        return True
    return False
