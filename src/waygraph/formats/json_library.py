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

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from waygraph.errors import PlanFormatError, PlanSyntaxError
from waygraph.model import Edge, Graph, Node, Plan, Step, Verify

__all__ = [
    "MAX_FILE_BYTES",
    "library_to_data",
    "parse_json",
    "plan_to_data",
    "plans_from_data",
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
    data: Any, *, file: str | None = None, text: str | None = None
) -> tuple[dict[str, Any], list[Plan]]:
    """Validate parsed library data; return ``(meta, plans)`` in file order.

    ``text`` (the file's source) lets error messages carry a line number.
    """
    _count_values(data, file)
    if not isinstance(data, dict):
        raise PlanFormatError(
            "a plan library must be an object with 'plans'",
            file=file,
            value=type(data).__name__,
        )
    if "plans" not in data and ("graph" in data or "steps" in data):
        plan_id = data.get("id")
        if not isinstance(plan_id, str) or not plan_id:
            raise PlanFormatError(
                "a single-plan file needs a string 'id'", file=file, field="id", value=plan_id
            )
        # "$schema" lets editors validate a one-plan file too; it is not a plan field.
        body = {k: v for k, v in data.items() if k not in ("id", "$schema")}
        return {}, [plan_from_data(plan_id, body, file=file, text=text)]
    meta = data.get("_meta", {})
    if not isinstance(meta, dict):
        raise PlanFormatError("'_meta' must be an object", file=file, field="_meta", value=meta)
    unknown = sorted(set(data) - {"_meta", "plans", "$schema"})
    if unknown:
        raise PlanFormatError(
            "unknown top-level key; a library has only '_meta' and 'plans'",
            file=file,
            field=unknown[0],
            value=unknown[0],
        )
    plans_data = data.get("plans")
    if not isinstance(plans_data, dict):
        raise PlanFormatError(
            "'plans' must be an object mapping plan ids to plans",
            file=file,
            field="plans",
            value=type(plans_data).__name__,
        )
    plans = [plan_from_data(pid, body, file=file, text=text) for pid, body in plans_data.items()]
    return meta, plans


def plan_from_data(
    plan_id: Any, body: Any, *, file: str | None = None, text: str | None = None
) -> Plan:
    if not isinstance(plan_id, str) or not plan_id.strip():
        raise PlanFormatError("plan ids must be non-empty strings", file=file, value=plan_id)
    # Line numbers are looked up only on error: a search per plan would make
    # loading a 10,000-plan library quadratic in its size.
    if not isinstance(body, dict):
        raise PlanFormatError(
            "a plan must be an object",
            file=file,
            line=_find_line(text, plan_id),
            plan=plan_id,
            value=body,
        )
    if "id" in body and body["id"] != plan_id:
        raise PlanFormatError(
            "the plan's 'id' differs from its key in 'plans'",
            file=file,
            line=_find_line(text, plan_id),
            plan=plan_id,
            field="id",
            value=body["id"],
        )
    try:
        return Plan.model_validate({**body, "id": plan_id})
    except ValidationError as exc:
        raise validation_error(exc, file=file, plan=plan_id, text=text, body=body) from None
    except RecursionError:
        raise PlanFormatError("plan nested too deeply", file=file, plan=plan_id) from None


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
    err = exc.errors()[0]
    ctx_err = (err.get("ctx") or {}).get("error")
    if isinstance(ctx_err, PlanFormatError):
        located = ctx_err.located(file=file, plan=plan)
        if located.line is None and plan:
            located = located.located(line=_find_line(text, plan, located.node))
        return located
    loc = tuple(err.get("loc", ()))
    node = edge = None
    rest: tuple[Any, ...] = loc
    if loc[:2] == ("graph", "nodes") and len(loc) >= 3:
        node, rest = str(loc[2]), loc[3:]
    elif loc[:2] == ("graph", "edges") and len(loc) >= 3:
        edge = _edge_label(body, loc[2])
        rest = loc[3:]
    message = _message(err, rest, node is not None, edge is not None)
    field = ".".join(str(p) for p in rest) or None
    has_value = err.get("type") not in ("missing",) and not (
        err.get("type") == "model_attributes_type" and err.get("input") is None
    )
    value = err.get("input")
    if err.get("type") == "extra_forbidden":
        value = rest[-1] if rest else value
    return PlanFormatError(
        message,
        file=file,
        line=_find_line(text, plan, node),
        plan=plan,
        node=node,
        edge=edge,
        field=field,
        value=value,
        has_value=has_value,
    )


def _edge_label(body: Any, index: Any) -> str:
    try:
        edge = body["graph"]["edges"][index]
        return f"#{index} ({edge.get('from')} -> {edge.get('to')})"
    except (KeyError, IndexError, TypeError, AttributeError):
        return f"#{index}"


def _message(err: ErrorDetails, rest: tuple[Any, ...], in_node: bool, in_edge: bool) -> str:
    kind = err.get("type", "")
    last = rest[-1] if rest else None
    if kind == "extra_forbidden":
        return "unknown field; check its spelling against docs/plans.md"
    if kind == "missing":
        return "required field is missing"
    if kind == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        if in_node and last == "type":
            return f"unknown node type; use one of {expected}"
        if in_edge and last == "condition":
            return f"unknown edge condition; use one of {expected}"
        return f"value not allowed; use one of {expected}"
    msg = str(err.get("msg", "invalid value"))
    return msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")


def _find_line(text: str | None, *keys: str | None) -> int | None:
    """Best-effort line of the last of ``keys`` found in order as object keys."""
    if not text:
        return None
    pos, line = 0, None
    for key in keys:
        if not key:
            continue
        pattern = re.compile(r"""["']?""" + re.escape(key) + r"""["']?\s*:""")
        found = pattern.search(text, pos)
        if not found:
            break
        pos = found.end()
        line = text.count("\n", 0, found.start()) + 1
    return line


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
