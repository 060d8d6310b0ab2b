"""The JSON plan library format (also the data shape behind YAML).

Compatible with the established Agent-Zero HTN library shapes::

    {"_meta": {"version": "2.0", ...},
     "plans": {"plan_id": {"name", "domains", "triggers", "trigger_threshold",
                           "stale_after_turns", "steps": [...] | "graph": {...}}}}

A file may also hold one plan on its own (an object with ``id`` and ``graph``
or ``steps``). This module converts between that data and the model, turning
every validation failure into a :class:`~waygraph.errors.PlanFormatError`
that names the file, line, plan, node or edge, and field.

Example:
    >>> data = {"plans": {"p": {"triggers": ["a b"], "trigger_threshold": 1,
    ...                         "steps": [{"name": "Do it"}]}}}
    >>> meta, plans = plans_from_data(data)
    >>> plans[0].id, plans[0].linear
    ('p', True)
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from waygraph.errors import PlanFormatError, PlanSyntaxError
from waygraph.formats.positions import Positions
from waygraph.model import Edge, Graph, Node, Plan, Step, Verify
from waygraph.suggest import did_you_mean

__all__ = [
    "MAX_FILE_BYTES",
    "library_to_data",
    "parse_json",
    "plan_to_data",
    "plans_from_data",
    "read_plans",
    "to_json",
]

#: Plan files larger than this are refused before parsing, per format. The
#: budgets keep the cost of loading (or refusing) any file under about 2 s and
#: 300 MB on a small machine (docs/reliability.md has the measurements); a
#: larger library is split into several files of one folder.
FILE_BUDGETS = {"json": 4 * 1024 * 1024, "yaml": 1024 * 1024, "dot": 1024 * 1024}
#: The JSON budget, the largest of them (kept under its old name).
MAX_FILE_BYTES = FILE_BUDGETS["json"]
#: Upper bound on values visited while validating one file; YAML aliases can
#: make a small file expand enormously, and this stops that early.
MAX_VALUES = 2_000_000

PLAN_KEY_ORDER = (
    "name",
    "description",
    "goal",
    "domains",
    "triggers",
    "examples",
    "trigger_threshold",
    "stale_after_turns",
    "match_mode",
    "max_transitions",
    "repeat_limit",
    "routing",
    "meta",
)


# ---------------------------------------------------------------- parsing


def parse_json(text: str, *, file: str | None = None) -> Any:
    """Parse JSON text, raising :class:`PlanSyntaxError` with the line on failure."""
    _check_size(text, file, "json")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise PlanSyntaxError(f"invalid JSON: {exc.msg}", file=file, line=exc.lineno) from None
    except RecursionError:
        raise PlanSyntaxError("JSON nested too deeply", file=file) from None


def _check_size(text: str | bytes, file: str | None, fmt: str = "json") -> None:
    check_file_size(len(text), fmt, file)


def check_file_size(size: int, fmt: str, file: str | None = None) -> None:
    """Refuse a plan file of ``size`` bytes (or characters) over its format's budget.

    Example:
        >>> check_file_size(10, "yaml")
    """
    budget = FILE_BUDGETS.get(fmt, MAX_FILE_BYTES)
    if size > budget:
        shown = f"{budget / (1024 * 1024):g} MiB"
        raise PlanSyntaxError(
            f"the {fmt.upper()} file is {size} bytes, over the {shown} a plan file may have; "
            "split the library into several files in one folder",
            file=file,
        )


def _count_values(data: Any, file: str | None) -> None:
    budget = MAX_VALUES
    stack = [data]
    while stack:
        item = stack.pop()
        budget -= 1
        if budget < 0:
            raise PlanFormatError(
                f"file expands to more than {MAX_VALUES:,} values (YAML aliases?)", file=file
            )
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)


def plans_from_data(
    data: Any, *, file: str | None = None, text: str | None = None, fmt: str | None = None
) -> tuple[dict[str, Any], list[Plan]]:
    """Validate parsed library data; return ``(meta, plans)`` in file order.

    ``text`` (the file's source, of format ``fmt``: ``json`` or ``yaml``) lets
    error messages carry the line of the field. The first problem is raised;
    :func:`read_plans` returns them all.
    """
    meta, plans, _errors = read_plans(data, file=file, text=text, fmt=fmt, every=False)
    return meta, plans


def read_plans(
    data: Any,
    *,
    file: str | None = None,
    text: str | None = None,
    fmt: str | None = None,
    every: bool = True,
) -> tuple[dict[str, Any], list[Plan], list[PlanFormatError]]:
    """Every plan of parsed library data that is valid, and every problem of the rest.

    Returns ``(meta, plans, errors)``; each error names the line of its field
    when ``text`` is given. Without ``every`` the first problem is raised.

    Example:
        >>> data = {"plans": {"p": {"steps": [{"name": "A", "on_failure": "skip"}]},
        ...                   "q": {"steps": [{"name": "B"}]}}}
        >>> meta, plans, errors = read_plans(data)
        >>> [p.id for p in plans], [e.field for e in errors]
        (['q'], ['on_failure'])
    """
    found = _Found(file, text, fmt, every)
    _count_values(data, file)
    if not isinstance(data, dict):
        found.add(
            PlanFormatError(
                "a plan library must be an object with 'plans'",
                file=file,
                value=type(data).__name__,
            )
        )
        return {}, [], found.errors
    if "plans" not in data and ("graph" in data or "steps" in data):
        plan_id = data.get("id")
        if not isinstance(plan_id, str) or not plan_id:
            found.add(
                PlanFormatError(
                    "a single-plan file needs a string 'id'", file=file, field="id", value=plan_id
                ),
                ("id",),
            )
            return {}, [], found.errors
        # "$schema" lets editors validate a one-plan file too; it is not a plan field.
        body = {k: v for k, v in data.items() if k not in ("id", "$schema")}
        plan = found.plan(plan_id, body, ())
        return {}, [plan] if plan else [], found.errors
    meta = data.get("_meta", {})
    if not isinstance(meta, dict):
        found.add(
            PlanFormatError("'_meta' must be an object", file=file, field="_meta", value=meta),
            ("_meta",),
        )
        meta = {}
    for key in sorted(set(data) - {"_meta", "plans", "$schema"}, key=str):
        hint = did_you_mean(str(key), ["_meta", "plans", "$schema"])
        found.add(
            PlanFormatError(
                "unknown top-level key; "
                + (f"{hint} A library" if hint else "a library")
                + " has only '_meta' and 'plans'",
                file=file,
                field=str(key),
                value=key,
            ),
            (key,),
        )
    plans_data = data.get("plans")
    if not isinstance(plans_data, dict):
        found.add(
            PlanFormatError(
                "'plans' must be an object mapping plan ids to plans",
                file=file,
                field="plans",
                value=type(plans_data).__name__,
            ),
            ("plans",),
        )
        return meta, [], found.errors
    plans = [found.plan(pid, body, ("plans", pid)) for pid, body in plans_data.items()]
    return meta, [p for p in plans if p is not None], found.errors


class _Found:
    """The problems :func:`read_plans` finds, each placed at its field's line."""

    def __init__(self, file: str | None, text: str | None, fmt: str | None, every: bool) -> None:
        self.file = file
        self.every = every
        self.positions = Positions(text, fmt) if text else None
        self.errors: list[PlanFormatError] = []

    def line(self, path: tuple[Any, ...]) -> int | None:
        found = self.positions.find(path) if self.positions is not None else None
        return found[0] if found else None

    def add(self, error: PlanFormatError, path: tuple[Any, ...] = ()) -> None:
        if error.line is None and path:
            error = error.located(line=self.line(path))
        if not self.every:
            raise error
        self.errors.append(error)

    def plan(self, plan_id: Any, body: Any, base: tuple[Any, ...]) -> Plan | None:
        """The plan, or None after adding its problems."""
        file = self.file
        if not isinstance(plan_id, str) or not plan_id.strip():
            self.add(
                PlanFormatError("plan ids must be non-empty strings", file=file, value=plan_id)
            )
            return None
        if not isinstance(body, dict):
            self.add(
                PlanFormatError("a plan must be an object", file=file, plan=plan_id, value=body),
                base,
            )
            return None
        if "id" in body and body["id"] != plan_id:
            self.add(
                PlanFormatError(
                    "the plan's 'id' differs from its key in 'plans'",
                    file=file,
                    plan=plan_id,
                    field="id",
                    value=body["id"],
                ),
                (*base, "id"),
            )
            return None
        checked = body
        if self.every and isinstance(body.get("steps"), list | tuple):
            from waygraph.model._linear import step_errors

            step_problems = [e for i, s in enumerate(body["steps"]) for e in step_errors(i, s)]
            for error in step_problems:
                self.add(error.located(file=file, plan=plan_id), error_path(error, base))
            if step_problems:  # still look for the plan's own problems
                checked = {**body, "steps": [{}]}
        try:
            plan = Plan.model_validate({**checked, "id": plan_id})
        except ValidationError as exc:
            for error in validation_errors(exc, file=file, plan=plan_id, body=body):
                self.add(error, error_path(error, base))
            return None
        except RecursionError:
            self.add(PlanFormatError("plan nested too deeply", file=file, plan=plan_id))
            return None
        return None if checked is not body else plan


def error_path(error: PlanFormatError, base: tuple[Any, ...] = ()) -> tuple[Any, ...]:
    """The path in the file's data of what ``error`` (or a check problem) is about.

    ``base`` is the plan's own path (``("plans", id)``, or ``()`` in a
    single-plan file). A node ``step_N`` of a linear plan is its step.

    Example:
        >>> error_path(PlanFormatError("x", node="build", field="verify.type"), ("plans", "p"))
        ('plans', 'p', 'graph', 'nodes', 'build', 'verify', 'type')
    """
    path = base
    if error.node is not None:
        step = re.fullmatch(r"step_(\d+)", error.node)
        if step and error.field is not None and error.reason.startswith("step "):
            path = (*path, "steps", int(step.group(1)) - 1)
        else:
            path = (*path, "graph", "nodes", error.node)
    elif error.edge is not None:
        index = re.match(r"#(\d+)", error.edge)
        path = (*path, "graph", "edges", int(index.group(1))) if index else path
    if error.field:
        path = (*path, *error.field.split("."))
    return path


def plan_from_data(
    plan_id: Any, body: Any, *, file: str | None = None, text: str | None = None
) -> Plan:
    """One plan from its id and data; raises the first problem (with its line).

    Example:
        >>> plan_from_data("p", {"steps": [{"name": "A"}]}).linear
        True
    """
    plan = _Found(file, text, None, every=False).plan(plan_id, body, ("plans", plan_id))
    assert plan is not None  # every=False raised otherwise
    return plan


# ---------------------------------------------------------------- errors


def validation_error(
    exc: ValidationError,
    *,
    file: str | None,
    plan: str | None,
    text: str | None = None,
    body: Any = None,
) -> PlanFormatError:
    """Turn pydantic's first error into a located :class:`PlanFormatError`."""
    error = validation_errors(exc, file=file, plan=plan, body=body)[0]
    if text and error.line is None:
        base: tuple[Any, ...] = ("plans", plan) if plan else ()
        found = Positions(text).find(error_path(error, base))
        error = error.located(line=found[0] if found else None)
    return error


def validation_errors(
    exc: ValidationError, *, file: str | None, plan: str | None, body: Any = None
) -> list[PlanFormatError]:
    """Every error pydantic found, each as a :class:`PlanFormatError` naming its field."""
    out = []
    for err in exc.errors():
        ctx_err = (err.get("ctx") or {}).get("error")
        if isinstance(ctx_err, PlanFormatError):
            out.append(ctx_err.located(file=file, plan=plan))
            continue
        loc = tuple(err.get("loc", ()))
        node = edge = None
        rest: tuple[Any, ...] = loc
        if loc[:2] == ("graph", "nodes") and len(loc) >= 3:
            node, rest = str(loc[2]), loc[3:]
        elif loc[:2] == ("graph", "edges") and len(loc) >= 3:
            edge = _edge_label(body, loc[2])
            rest = loc[3:]
        message = _message(err, loc, rest, node is not None, edge is not None)
        field = ".".join(str(p) for p in rest) or None
        has_value = err.get("type") not in ("missing",) and not (
            err.get("type") == "model_attributes_type" and err.get("input") is None
        )
        value = err.get("input")
        if err.get("type") == "extra_forbidden":
            value = rest[-1] if rest else value
        out.append(
            PlanFormatError(
                message,
                file=file,
                plan=plan,
                node=node,
                edge=edge,
                field=field,
                value=value,
                has_value=has_value,
            )
        )
    return out


def _edge_label(body: Any, index: Any) -> str:
    try:
        edge = body["graph"]["edges"][index]
        return f"#{index} ({edge.get('from')} -> {edge.get('to')})"
    except (KeyError, IndexError, TypeError, AttributeError):
        return f"#{index}"


def _message(
    err: ErrorDetails, loc: tuple[Any, ...], rest: tuple[Any, ...], in_node: bool, in_edge: bool
) -> str:
    kind = err.get("type", "")
    last = rest[-1] if rest else None
    if kind == "extra_forbidden":
        hint = did_you_mean(str(last), _fields_at(loc[:-1]))
        if hint:
            return f"unknown field; {hint} See docs/plans.md"
        return "unknown field; check its spelling against docs/plans.md"
    if kind == "missing":
        return "required field is missing"
    if kind == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        hint = did_you_mean(str(err.get("input")), re.findall(r"'([^']*)'", expected))
        hint = f"{hint} " if hint else ""
        if in_node and last == "type":
            return f"unknown node type; {hint}use one of {expected}"
        if in_edge and last == "condition":
            return f"unknown edge condition; {hint}use one of {expected}"
        return f"value not allowed; {hint}use one of {expected}"
    msg = str(err.get("msg", "invalid value"))
    return msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")


#: Where a field leads, from each model: the model inside, and how many parts
#: of the path (a key or index) stand between.
_INNER: dict[tuple[type[BaseModel], str], tuple[type[BaseModel], int]] = {
    (Plan, "graph"): (Graph, 0),
    (Plan, "steps"): (Step, 1),
    (Graph, "nodes"): (Node, 1),
    (Graph, "edges"): (Edge, 1),
    (Node, "verify"): (Verify, 0),
    (Step, "verify"): (Verify, 0),
    (Edge, "when"): (Verify, 0),
    (Verify, "checks"): (Verify, 1),
    (Verify, "expect"): (Verify, 0),
}


def _fields_at(loc: tuple[Any, ...]) -> list[str]:
    """The field names allowed in the object at ``loc`` inside a plan (for "did you mean")."""
    model: type[BaseModel] = Plan
    skip = 0
    for part in loc:
        if skip:
            skip -= 1
            continue
        inner = _INNER.get((model, str(part)))
        if inner is None:
            return []
        model, skip = inner
    names = [f.alias or name for name, f in model.model_fields.items()]
    return [*names, "steps"] if model is Plan else names


# ---------------------------------------------------------------- writing


def verify_to_data(verify: Verify) -> dict[str, Any]:
    return verify.model_dump(mode="json", exclude_none=True)


def node_to_data(node: Node) -> dict[str, Any]:
    data = node.model_dump(mode="json", exclude_none=True, exclude={"id"})
    if node.type in ("task", "decision"):
        # Written even when null: null means unbounded, and a missing key means 0.
        data["max_retries"] = node.max_retries
    elif node.max_retries == 0:
        data.pop("max_retries", None)
    if node.join == "any":
        data.pop("join", None)
    return data


def edge_to_data(edge: Edge) -> dict[str, Any]:
    data: dict[str, Any] = {"from": edge.from_, "to": edge.to, "condition": edge.condition}
    if edge.when is not None:
        data["when"] = verify_to_data(edge.when)
    if edge.on_event is not None:
        data["on_event"] = edge.on_event
    if edge.weight:
        data["weight"] = int(edge.weight) if float(edge.weight).is_integer() else edge.weight
    if edge.label is not None:
        data["label"] = edge.label
    return data


def graph_to_data(graph: Graph) -> dict[str, Any]:
    return {
        "start": graph.start,
        "nodes": {nid: node_to_data(n) for nid, n in graph.nodes.items()},
        "edges": [edge_to_data(e) for e in graph.edges],
    }


def step_to_data(step: Step) -> dict[str, Any]:
    return step.model_dump(mode="json", exclude_none=True)


def plan_to_data(plan: Plan) -> dict[str, Any]:
    """A plan as it appears under ``plans`` in a library file (without its id)."""
    data: dict[str, Any] = {}
    for key in PLAN_KEY_ORDER:
        value = getattr(plan, key)
        if value is None:
            continue
        if (key, value) in (("max_transitions", 100), ("repeat_limit", 3), ("routing", "waygraph")):
            continue
        data[key] = list(value) if isinstance(value, tuple) else value
    if plan.linear:
        data["steps"] = [step_to_data(s) for s in plan.steps()]
    else:
        data["graph"] = graph_to_data(plan.graph)
    return data


def library_to_data(plans: list[Plan], meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """The library shape ``{"_meta": ..., "plans": {id: ...}}``."""
    out_meta = dict(meta) if meta else {"version": "2.0"}
    out_meta.setdefault("generator", "waygraph")
    return {"_meta": out_meta, "plans": {p.id: plan_to_data(p) for p in plans}}


def to_json(data: Any) -> str:
    """Plan data as the JSON library format writes it (indented, UTF-8, final newline)."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
