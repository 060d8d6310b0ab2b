"""Reading DOT: text into a validated :class:`~waygraph.model.Plan`.

:func:`parse_dot` tokenizes (:mod:`~waygraph.formats._dot_syntax`), reads the
statements (:mod:`~waygraph.formats._dot_statements`), then turns their
attributes into plan data here: shapes into node types, text into numbers,
booleans, lists, JSON and predicate trees, and ``condition`` through
:mod:`~waygraph.formats._dot_conditions`. Every refusal names the file and the
line of the attribute at fault, including those :class:`Plan` validation finds.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from waygraph.errors import PlanFormatError, PlanSyntaxError
from waygraph.formats._dot_attributes import (
    ATTRACTOR_ONLY,
    EDGE_ATTRIBUTES,
    GRAPH_ATTRIBUTES,
    NODE_ATTRIBUTES,
    SHAPE_OF_TYPE,
    TYPE_OF_SHAPE,
)
from waygraph.formats._dot_conditions import edge_condition
from waygraph.formats._dot_statements import Attr, DotEdge, DotGraph, DotNode, parse_statements
from waygraph.formats._dot_syntax import tokenize
from waygraph.formats.json_library import FILE_BUDGETS, validation_error
from waygraph.model import Plan
from waygraph.predicates import parse_condition

#: DOT text longer than this is refused before tokenizing: one file is one plan,
#: and real plans are kilobytes; the bound keeps hostile input to seconds.
MAX_DOT_CHARS = FILE_BUDGETS["dot"]

_NODE_TEXT = (
    "tool",
    "tool_hint",
    "description",
    "join",
    "on_fail",
    "reason",
    "pace_level",
    "status",
    "next_plan",
    "next_plan_when",
)


class _Builder:
    """Turns parsed statements into a validated :class:`Plan`."""

    def __init__(self, graph: DotGraph, file: str | None) -> None:
        self.g = graph
        self.file = file
        self.plan_id: str | None = None

    def fail(self, message: str, line: int | None, **where: Any) -> PlanFormatError:
        return PlanFormatError(message, file=self.file, line=line, plan=self.plan_id, **where)

    def build(self) -> Plan:
        self.plan_id = self.find_id()
        attrs = self.g.attrs
        self.check_names(attrs, GRAPH_ATTRIBUTES, "graph", {})
        data: dict[str, Any] = {"id": self.plan_id}
        name = attrs.get("name") or attrs.get("label")
        if name is not None:
            data["name"] = name.value
        for key in ("goal", "description", "match_mode"):
            if key in attrs:
                data[key] = attrs[key].value
        for key in ("domains", "triggers"):
            if key in attrs:
                data[key] = self.text_list(attrs[key], key)
        for key in ("trigger_threshold", "stale_after_turns", "max_transitions", "repeat_limit"):
            if key in attrs:
                data[key] = self.integer(attrs[key], {"field": key})
        if "linear" in attrs:
            data["linear"] = self.boolean(attrs["linear"], {"field": "linear"})
        if "meta" in attrs:
            data["meta"] = self.json_object(attrs["meta"], {"field": "meta"})
        default_retries = self.default_retries()
        nodes = {nid: self.node(nid, n, default_retries) for nid, n in self.g.nodes.items()}
        edges = [self.edge(e) for e in self.g.edges]
        data["graph"] = {"start": self.start(nodes), "nodes": nodes, "edges": edges}
        try:
            return Plan.model_validate(data)
        except ValidationError as exc:
            raise self.from_validation(exc, data) from None
        except RecursionError:
            raise self.fail("a verify tree is nested too deeply", None) from None

    def find_id(self) -> str:
        given = self.g.attrs.get("id")
        if given is not None:
            if not given.value:
                raise self.fail("the plan id is empty", given.line, field="id", value="")
            return given.value
        if self.g.name:
            return self.g.name
        if self.file and Path(self.file).stem:
            return Path(self.file).stem
        raise self.fail(
            "the plan has no id: name the digraph (digraph my_plan { ... }) "
            "or set the graph attribute id",
            self.g.line,
        )

    def check_names(
        self, attrs: dict[str, Attr], known: tuple[str, ...], kind: str, where: dict[str, Any]
    ) -> None:
        for key, attr in attrs.items():
            if key in known:
                continue
            if key in ATTRACTOR_ONLY:
                message = f"Attractor {kind} attribute {key!r} is not supported by waygraph"
            else:
                message = f"unknown {kind} attribute {key!r}; use one of: {', '.join(known)}"
                if "meta" in known:
                    message += " (put other data in meta, a JSON object)"
            raise self.fail(message, attr.line, field=key, value=attr.value, **where)

    def default_retries(self) -> tuple[bool, int | None]:
        """``(given, value)`` of the graph's default max_retries (both spellings)."""
        found = [
            (key, self.retries(self.g.attrs[key], {"field": key}))
            for key in ("default_max_retry", "default_max_retries")
            if key in self.g.attrs
        ]
        if len(found) == 2 and found[0][1] != found[1][1]:
            attr = self.g.attrs["default_max_retries"]
            raise self.fail(
                "default_max_retry and default_max_retries disagree; keep one",
                attr.line,
                field="default_max_retries",
                value=attr.value,
            )
        return (True, found[0][1]) if found else (False, None)

    def start(self, nodes: dict[str, dict[str, Any]]) -> str:
        attr = self.g.attrs.get("start")
        if attr is not None:
            return attr.value
        starts = [nid for nid, node in nodes.items() if node.get("type") == "start"]
        if len(starts) == 1:
            return starts[0]
        if not starts:
            raise self.fail(
                "no start node: give one node shape=Mdiamond (or type=start), "
                "or set the graph attribute start",
                self.g.line,
            )
        raise self.fail(
            f"several start nodes ({', '.join(starts)}); set the graph attribute start",
            self.g.nodes[starts[1]].line,
            node=starts[1],
        )

    # -- nodes
    def node(
        self, node_id: str, dn: DotNode, default_retries: tuple[bool, int | None]
    ) -> dict[str, Any]:
        attrs = dn.attrs
        where = {"node": node_id}
        self.check_names(attrs, NODE_ATTRIBUTES, "node", where)
        out: dict[str, Any] = {"type": self.node_type(attrs, where)}
        if "label" in attrs:
            out["name"] = attrs["label"].value
        prompt, action = attrs.get("prompt"), attrs.get("action")
        if out["type"] == "human" and prompt is not None:
            # A human node's prompt is its question, a field of its own (both may be set).
            out["prompt"] = prompt.value
            prompt = None
        if prompt and action and prompt.value != action.value:
            raise self.fail(
                "both prompt and action are set; they are the same field, keep one",
                action.line,
                field="action",
                value=action.value,
                **where,
            )
        given = action or prompt
        if given is not None:
            out["action"] = given.value
        for key in _NODE_TEXT:
            if key in attrs:
                out[key] = attrs[key].value
        if "required" in attrs:
            out["required"] = self.boolean(attrs["required"], {**where, "field": "required"})
        if "max_retries" in attrs:
            out["max_retries"] = self.retries(
                attrs["max_retries"], {**where, "field": "max_retries"}
            )
        elif out["type"] == "task" and default_retries[0]:
            out["max_retries"] = default_retries[1]
        if "verify" in attrs:
            out["verify"] = self.predicate(attrs["verify"], {**where, "field": "verify"})
        if "meta" in attrs:
            out["meta"] = self.json_object(attrs["meta"], {**where, "field": "meta"})
        return out

    def node_type(self, attrs: dict[str, Attr], where: dict[str, Any]) -> str:
        if "type" in attrs:
            # An explicit type wins; the shape is then only how Graphviz draws it.
            return attrs["type"].value
        shape = attrs.get("shape")
        if shape is None:
            return "task"
        kind = TYPE_OF_SHAPE.get(shape.value.lower())
        if kind is None:
            shapes = ", ".join(f"{s} ({t})" for t, s in SHAPE_OF_TYPE.items())
            raise self.fail(
                f"shape {shape.value!r} has no waygraph node type; use one of {shapes}, "
                "or set type=...",
                shape.line,
                field="shape",
                value=shape.value,
                **where,
            )
        return kind

    # -- edges
    def edge(self, de: DotEdge) -> dict[str, Any]:
        attrs = de.attrs
        where = {"edge": de.name}
        self.check_names(attrs, EDGE_ATTRIBUTES, "edge", where)
        out: dict[str, Any] = {"from": de.source, "to": de.target}
        condition, when = "always", None
        if "condition" in attrs:
            condition, when = self.condition(attrs["condition"], where)
        if "when" in attrs:
            if when is not None:
                raise self.fail(
                    "the condition has clauses besides the outcome and 'when' is set too; "
                    "keep the data clauses in one of them",
                    attrs["when"].line,
                    field="when",
                    value=attrs["when"].value,
                    **where,
                )
            when = self.predicate(attrs["when"], {**where, "field": "when"})
        out["condition"] = condition
        if when is not None:
            out["when"] = when
        for key in ("on_event", "label"):
            if key in attrs:
                out[key] = attrs[key].value
        if "weight" in attrs:
            out["weight"] = self.number(attrs["weight"], {**where, "field": "weight"})
        return out

    def condition(self, attr: Attr, where: dict[str, Any]) -> tuple[str, Any]:
        """``condition`` as (edge condition, when): a waygraph name or Attractor clauses."""
        try:
            return edge_condition(attr.value)
        except PlanFormatError as exc:
            loc = {**where, "field": "condition"}
            raise exc.located(file=self.file, line=attr.line, plan=self.plan_id, **loc) from None

    # -- values
    def predicate(self, attr: Attr, loc: dict[str, Any]) -> Any:
        """A Verify tree: JSON when the text starts with '{', else a condition string."""
        if attr.value.lstrip().startswith("{"):
            return self.json_value(attr, loc)
        try:
            return parse_condition(attr.value)
        except PlanFormatError as exc:
            raise exc.located(file=self.file, line=attr.line, plan=self.plan_id, **loc) from None

    def json_value(self, attr: Attr, loc: dict[str, Any]) -> Any:
        try:
            return json.loads(attr.value)
        except ValueError as exc:  # JSONDecodeError, or an integer too long to read
            message = f"invalid JSON: {getattr(exc, 'msg', exc)}"
            raise self.fail(message, attr.line, value=attr.value, **loc) from None
        except RecursionError:
            raise self.fail("JSON nested too deeply", attr.line, **loc) from None

    def json_object(self, attr: Attr, loc: dict[str, Any]) -> dict[str, Any]:
        value = self.json_value(attr, loc)
        if not isinstance(value, dict):
            raise self.fail("must be a JSON object", attr.line, value=attr.value, **loc)
        return value

    def text_list(self, attr: Attr, key: str) -> list[str]:
        if attr.value.lstrip().startswith("["):
            items = self.json_value(attr, {"field": key})
            if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
                raise self.fail(
                    "must be a JSON list of strings, or comma-separated text",
                    attr.line,
                    field=key,
                    value=attr.value,
                )
            return items
        return [item.strip() for item in attr.value.split(",") if item.strip()]

    def integer(self, attr: Attr, loc: dict[str, Any]) -> int:
        text = attr.value.strip()
        if not re.fullmatch(r"[+-]?[0-9]{1,18}", text):
            raise self.fail("must be a whole number", attr.line, value=attr.value, **loc)
        return int(text)

    def retries(self, attr: Attr, loc: dict[str, Any]) -> int | None:
        if attr.value.strip().lower() == "none":
            return None  # unbounded: the node is held until it passes
        return self.integer(attr, loc)

    def boolean(self, attr: Attr, loc: dict[str, Any]) -> bool:
        text = attr.value.strip().lower()
        if text in ("true", "yes", "1"):
            return True
        if text in ("false", "no", "0"):
            return False
        raise self.fail("must be true or false", attr.line, value=attr.value, **loc)

    def number(self, attr: Attr, loc: dict[str, Any]) -> float:
        try:
            value = float(attr.value)
        except ValueError:
            value = math.nan
        if math.isnan(value):
            raise self.fail("must be a number", attr.line, value=attr.value, **loc)
        return value

    # -- errors
    def from_validation(self, exc: ValidationError, data: dict[str, Any]) -> PlanFormatError:
        err = validation_error(exc, file=self.file, plan=self.plan_id, body=data)
        loc = tuple(exc.errors()[0].get("loc", ()))
        line = self.g.line
        if loc[:2] == ("graph", "nodes") and len(loc) >= 3 and str(loc[2]) in self.g.nodes:
            dn = self.g.nodes[str(loc[2])]
            line = self.attr_line(dn.attrs, loc[3:], dn.line)
            if loc[3:4] == ("type",) and "type" not in dn.attrs:
                line = self.attr_line(dn.attrs, ("shape",), dn.line)
        elif loc[:2] == ("graph", "edges") and len(loc) >= 3 and isinstance(loc[2], int):
            de = self.g.edges[loc[2]]
            line = self.attr_line(de.attrs, loc[3:], de.line)
        elif loc:
            line = self.attr_line(self.g.attrs, loc, self.g.line)
        return err.located(line=line)

    @staticmethod
    def attr_line(attrs: dict[str, Attr], rest: tuple[Any, ...], fallback: int) -> int:
        if not rest:
            return fallback
        name = {"name": "label", "action": "prompt"}.get(str(rest[0]), str(rest[0]))
        for key in (str(rest[0]), name):
            if key in attrs:
                return attrs[key].line
        return fallback


def parse_dot(text: str, *, file: str | None = None) -> Plan:
    """Parse one DOT ``digraph`` into a :class:`~waygraph.model.Plan`.

    The plan id is the graph attribute ``id``, else the digraph's name, else
    the stem of ``file``. Raises :class:`~waygraph.errors.PlanSyntaxError` for
    text that is not DOT in the supported subset and
    :class:`~waygraph.errors.PlanFormatError` for a bad attribute or plan; both
    name the file and line.

    Example:
        >>> plan = parse_dot("digraph p { s [shape=Mdiamond]; s -> work -> end; "
        ...                  "end [shape=Msquare] }")
        >>> [(e.from_, e.to) for e in plan.graph.edges], plan.graph.nodes["work"].type
        ([('s', 'work'), ('work', 'end')], 'task')
    """
    if not isinstance(text, str):
        raise PlanSyntaxError("DOT text must be a str", file=file, value=type(text).__name__)
    if len(text) > MAX_DOT_CHARS:
        raise PlanSyntaxError(
            f"file is larger than {MAX_DOT_CHARS / (1024 * 1024):g} MiB; a DOT file holds one plan",
            file=file,
        )
    tokens = tokenize(text, file)
    if tokens[0].kind == "end":
        raise PlanSyntaxError("the file is empty; expected 'digraph NAME { ... }'", file=file)
    graph = parse_statements(tokens, file)
    return _Builder(graph, file).build()
