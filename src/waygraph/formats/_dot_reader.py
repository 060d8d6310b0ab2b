"""Reading DOT: text into a validated :class:`~waygraph.model.Plan`, with every problem found.

:func:`read_dot` tokenizes (:mod:`~waygraph.formats._dot_syntax`), reads the
statements (:mod:`~waygraph.formats._dot_statements`), then turns their
attributes into plan data here: shapes and ``type=`` into node types and
Attractor handlers, text into typed values (:mod:`~waygraph.formats._dot_values`),
``condition`` through :mod:`~waygraph.formats._dot_conditions`, the
``model_stylesheet`` onto the nodes it selects, and ``$goal`` in prompts
into the goal. It does not stop at the first bad attribute: the
:class:`DotReport` lists every error and warning, each naming the file, line
and attribute. Graphviz's layout and styling attributes are ignored; any
other attribute it does not know is kept in ``attrs`` with a warning.
:func:`parse_dot` is the strict form: a plan, or the first error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from waygraph.errors import PlanFormatError, PlanSyntaxError
from waygraph.formats import _dot_values as values
from waygraph.formats._dot_attributes import (
    ATTRACTOR_EDGE_ATTRIBUTES,
    ATTRACTOR_GRAPH_ATTRIBUTES,
    ATTRACTOR_NODE_ATTRIBUTES,
    BOOLEAN_ATTRIBUTES,
    DURATION_ATTRIBUTES,
    EDGE_ATTRIBUTES,
    GRAPH_ATTRIBUTES,
    GRAPHVIZ_ATTRIBUTES,
    HANDLER_OF_SHAPE,
    INTEGER_ATTRIBUTES,
    NODE_ATTRIBUTES,
    OWN_HANDLERS,
    SHAPE_OF_HANDLER,
    SHAPE_OF_TYPE,
    TYPE_OF_HANDLER,
    TYPE_OF_SHAPE,
)
from waygraph.formats._dot_conditions import edge_condition
from waygraph.formats._dot_statements import Attr, DotEdge, DotGraph, DotNode, parse_statements
from waygraph.formats._dot_syntax import tokenize
from waygraph.formats.json_library import FILE_BUDGETS, validation_error
from waygraph.model import CONDITIONS, NODE_TYPES, Plan

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
    "retry_target",
    "fallback_retry_target",
)
_T = TypeVar("_T")
_BAD = object()  # what a typed read gives back after recording its error


@dataclass(frozen=True, slots=True)
class DotReport:
    """What reading one DOT file found: the plan (None when there are errors), every
    error and warning, and the line of each node and edge (for later checks to name).

    Example:
        >>> report = read_dot("digraph p { rankdir=LR; s [shape=Mdiamond, colour=red]; "
        ...                   "s -> e; e [shape=Msquare] }")
        >>> report.plan is not None, [w.field for w in report.warnings]
        (True, ['colour'])
    """

    plan: Plan | None
    errors: tuple[PlanFormatError, ...] = ()
    warnings: tuple[PlanFormatError, ...] = ()
    node_lines: Mapping[str, int] = field(default_factory=dict)
    edge_lines: tuple[int, ...] = ()


def expand_goal(text: str, goal: str | None) -> str:
    """``text`` with ``$goal`` replaced by the graph's goal (specification §9.2).

    Example:
        >>> expand_goal("Plan how to: $goal", "ship it")
        'Plan how to: ship it'
    """
    return text.replace("$goal", goal) if goal is not None and "$goal" in text else text


class _Builder:
    """Turns parsed statements into a :class:`Plan`, recording every problem on the way."""

    def __init__(self, graph: DotGraph, file: str | None) -> None:
        self.g = graph
        self.file = file
        self.plan_id: str | None = None
        self.errors: list[PlanFormatError] = []
        self.warnings: list[PlanFormatError] = []
        self.stylesheet: Any = None

    def problem(self, message: str, line: int | None, *, warn: bool = False, **where: Any) -> None:
        err = PlanFormatError(message, file=self.file, line=line, plan=self.plan_id, **where)
        (self.warnings if warn else self.errors).append(err)

    def read(self, attr: Attr, reader: Callable[[str], _T], **where: Any) -> _T | Any:
        """``reader(attr.value)``, or :data:`_BAD` after recording its error with the line."""
        try:
            return reader(attr.value)
        except PlanFormatError as exc:
            self.errors.append(
                exc.located(file=self.file, line=attr.line, plan=self.plan_id, **where)
            )
            return _BAD

    def report(self) -> DotReport:
        plan = self.build()
        return DotReport(
            plan if not self.errors else None,
            tuple(self.errors),
            tuple(self.warnings),
            {nid: n.line for nid, n in self.g.nodes.items()},
            tuple(e.line for e in self.g.edges),
        )

    # -- graph
    def build(self) -> Plan | None:
        self.plan_id = self.find_id()
        attrs = self.g.attrs
        data: dict[str, Any] = {"id": self.plan_id}
        extra = self.extras(attrs, GRAPH_ATTRIBUTES, ATTRACTOR_GRAPH_ATTRIBUTES, "graph", {})
        name = attrs.get("name") or attrs.get("label")
        if name is not None:
            data["name"] = name.value
        for key in ("goal", "description", "match_mode"):
            if key in attrs:
                data[key] = attrs[key].value
        # A DOT file is an Attractor pipeline unless it says otherwise: it
        # routes as the specification does (waygraph.engine documents how).
        data["routing"] = attrs["routing"].value if "routing" in attrs else "attractor"
        for key in ("domains", "triggers", "examples"):
            if key in attrs:
                data[key] = self.read(attrs[key], values.text_list, field=key)
        for key in ("trigger_threshold", "stale_after_turns", "max_transitions", "repeat_limit"):
            if key in attrs:
                data[key] = self.read(attrs[key], values.integer, field=key)
        if "linear" in attrs:
            data["linear"] = self.read(attrs["linear"], values.boolean, field="linear")
        if "meta" in attrs:
            data["meta"] = self.read(attrs["meta"], values.json_object, field="meta")
        if "model_stylesheet" in attrs:
            self.stylesheet = self.read(
                attrs["model_stylesheet"], _stylesheet, field="model_stylesheet"
            )
        if extra:
            data["attrs"] = extra
        default_retries = self.default_retries()
        has_start = any(self.shape_type(n) == "start" for n in self.g.nodes.values())
        has_exit = any(self.shape_type(n) == "exit" for n in self.g.nodes.values())
        nodes = {
            nid: self.node(nid, n, default_retries, has_start, has_exit)
            for nid, n in self.g.nodes.items()
        }
        edges = [self.edge(e) for e in self.g.edges]
        start = self.start(nodes)
        if self.errors or _BAD in data.values():
            return None
        data["graph"] = {"start": start, "nodes": nodes, "edges": edges}
        try:
            return Plan.model_validate(data)
        except ValidationError as exc:
            self.errors.append(self.from_validation(exc, data))
        except RecursionError:
            self.problem("a verify tree is nested too deeply", None)
        return None

    def find_id(self) -> str:
        given = self.g.attrs.get("id")
        if given is not None:
            if not given.value:
                raise PlanFormatError(
                    "the plan id is empty", file=self.file, line=given.line, field="id", value=""
                )
            return given.value
        if self.g.name:
            return self.g.name
        if self.file and Path(self.file).stem:
            return Path(self.file).stem
        raise PlanFormatError(
            "the plan has no id: name the digraph (digraph my_plan { ... }) "
            "or set the graph attribute id",
            file=self.file,
            line=self.g.line,
        )

    def extras(
        self,
        attrs: Mapping[str, Attr],
        own: tuple[str, ...],
        attractor: tuple[str, ...],
        kind: str,
        where: dict[str, Any],
    ) -> dict[str, str]:
        """The attributes kept as written (Attractor's, typed; unknown ones, with a warning);
        Graphviz's drawing attributes are dropped."""
        kept: dict[str, str] = {}
        for key, attr in attrs.items():
            if key in own:
                continue
            loc = {**where, "field": key}
            if key in attractor:
                text = self.typed_extra(key, attr, loc)
                if text is not None:
                    kept[key] = text
            elif key.lower() not in GRAPHVIZ_ATTRIBUTES:
                self.problem(
                    f"{kind} attribute {key!r} is not one waygraph or the Attractor "
                    "specification defines; kept as written for a custom handler "
                    "(check the spelling)",
                    attr.line,
                    warn=True,
                    value=attr.value,
                    **loc,
                )
                kept[key] = attr.value
        return kept

    def typed_extra(self, key: str, attr: Attr, loc: dict[str, Any]) -> str | None:
        if key in BOOLEAN_ATTRIBUTES:
            flag = self.read(attr, values.boolean, **loc)
            return None if flag is _BAD else ("true" if flag else "false")
        reader = {
            **dict.fromkeys(INTEGER_ATTRIBUTES, values.integer),
            **dict.fromkeys(DURATION_ATTRIBUTES, values.interval),
        }.get(key)
        if reader is not None and self.read(attr, reader, **loc) is _BAD:
            return None
        return attr.value

    def default_retries(self) -> tuple[bool, int | None]:
        """``(given, value)`` of the graph's default max_retries (both spellings)."""
        found = []
        for key in ("default_max_retry", "default_max_retries"):
            if key in self.g.attrs:
                value = self.read(self.g.attrs[key], values.retries, field=key)
                if value is not _BAD:
                    found.append((key, value))
        if len(found) == 2 and found[0][1] != found[1][1]:
            attr = self.g.attrs["default_max_retries"]
            self.problem(
                "default_max_retry and default_max_retries disagree; keep one",
                attr.line,
                field="default_max_retries",
                value=attr.value,
            )
        return (True, found[-1][1]) if found else (False, None)

    def start(self, nodes: dict[str, dict[str, Any]]) -> str:
        attr = self.g.attrs.get("start")
        if attr is not None:
            return attr.value
        starts = [nid for nid, node in nodes.items() if node.get("type") == "start"]
        if len(starts) == 1:
            return starts[0]
        if not starts:
            self.problem(
                "no start node: give one node shape=Mdiamond (or type=start, or the id "
                "start), or set the graph attribute start",
                self.g.line,
            )
            return ""
        self.problem(
            f"several start nodes ({', '.join(starts)}); set the graph attribute start",
            self.g.nodes[starts[1]].line,
            node=starts[1],
        )
        return starts[0]

    # -- nodes
    def shape_type(self, dn: DotNode) -> str | None:
        """The node type a node's explicit ``type`` or ``shape`` gives, if any."""
        given = dn.attrs.get("type")
        if given is not None and given.value.strip():
            value = given.value.strip()
            return value if value in NODE_TYPES else TYPE_OF_HANDLER.get(value, "task")
        shape = dn.attrs.get("shape")
        return TYPE_OF_SHAPE.get(shape.value.lower()) if shape is not None else None

    def node_kind(
        self, node_id: str, dn: DotNode, has_start: bool, has_exit: bool, where: dict[str, Any]
    ) -> tuple[str, str | None]:
        """``(node type, handler)``: ``type=`` wins, then ``shape``, then the ids the
        specification reserves (``start``/``Start``, ``exit``/``end``)."""
        given = dn.attrs.get("type")
        if given is not None and given.value.strip():
            value = given.value.strip()
            if value in NODE_TYPES:
                return value, None
            if value in TYPE_OF_HANDLER:
                return TYPE_OF_HANDLER[value], None if value in OWN_HANDLERS else value
            return "task", value  # a custom handler (lint: type_known)
        shape = dn.attrs.get("shape")
        if shape is not None:
            folded = shape.value.lower()
            if folded in TYPE_OF_SHAPE:
                return TYPE_OF_SHAPE[folded], HANDLER_OF_SHAPE.get(folded)
            self.problem(
                f"shape {shape.value!r} names no handler in the Attractor specification; "
                "read as a task (codergen); set type=... to say otherwise",
                shape.line,
                warn=True,
                field="shape",
                value=shape.value,
                **where,
            )
            return "task", None
        if not has_start and node_id in ("start", "Start"):
            return "start", None
        if not has_exit and node_id in ("exit", "end", "Exit", "End"):
            return "exit", None
        return "task", None

    def node(
        self,
        node_id: str,
        dn: DotNode,
        default_retries: tuple[bool, int | None],
        has_start: bool,
        has_exit: bool,
    ) -> dict[str, Any]:
        attrs = dn.attrs
        where: dict[str, Any] = {"node": node_id}
        kind, handler = self.node_kind(node_id, dn, has_start, has_exit, where)
        out: dict[str, Any] = {"type": kind}
        if handler is not None:
            out["handler"] = handler
        if "label" in attrs:
            out["name"] = attrs["label"].value
        goal = self.g.attrs["goal"].value if "goal" in self.g.attrs else None
        prompt, action = attrs.get("prompt"), attrs.get("action")
        if kind == "human" and prompt is not None:
            # A human node's prompt is its question, a field of its own (both may be set).
            out["prompt"] = expand_goal(prompt.value, goal)
            prompt = None
        if prompt and action and prompt.value != action.value:
            self.problem(
                "both prompt and action are set; they are the same field, keep one",
                action.line,
                field="action",
                value=action.value,
                **where,
            )
        given = action or prompt
        if given is not None:
            out["action"] = expand_goal(given.value, goal)
            if "$goal" in given.value and goal is None:
                self.problem(
                    "the prompt uses $goal but the graph sets no goal; it is shown as written",
                    given.line,
                    warn=True,
                    field="action" if given is action else "prompt",
                    **where,
                )
        for key in _NODE_TEXT:
            if key in attrs:
                out[key] = attrs[key].value
        if "tool_command" in attrs:
            out["command"] = attrs["tool_command"].value
        for key in ("required", "goal_gate", "allow_partial"):
            if key in attrs:
                out[key] = self.read(attrs[key], values.boolean, field=key, **where)
        if "timeout" in attrs:
            out["timeout"] = self.read(attrs["timeout"], values.duration, field="timeout", **where)
        if "max_retries" in attrs:
            out["max_retries"] = self.read(
                attrs["max_retries"], values.retries, field="max_retries", **where
            )
        elif kind == "task" and default_retries[0]:
            out["max_retries"] = default_retries[1]
        if "verify" in attrs:
            out["verify"] = self.read(attrs["verify"], values.predicate, field="verify", **where)
        if "meta" in attrs:
            out["meta"] = self.read(attrs["meta"], values.json_object, field="meta", **where)
        extra = self.extras(attrs, NODE_ATTRIBUTES, ATTRACTOR_NODE_ATTRIBUTES, "node", where)
        extra = self.node_extras(node_id, dn, kind, handler, extra)
        if extra:
            out["attrs"] = extra
        return out

    def node_extras(
        self, node_id: str, dn: DotNode, kind: str, handler: str | None, extra: dict[str, str]
    ) -> dict[str, str]:
        """Classes from enclosing subgraphs, a drawing shape the type does not imply, and the
        stylesheet's values for what the node does not set itself."""
        classes = [c.strip() for c in extra.get("class", "").split(",") if c.strip()]
        for derived in getattr(dn, "classes", ()):
            if derived not in classes:
                classes.append(derived)
        if classes:
            extra["class"] = ",".join(classes)
        shape = dn.attrs.get("shape")
        drawn = SHAPE_OF_HANDLER.get(handler or "") or SHAPE_OF_TYPE.get(kind, "box")
        if shape is not None and shape.value.lower() != drawn.lower():
            extra["shape"] = shape.value
        if self.stylesheet not in (None, _BAD):
            styled = self.stylesheet.properties_for(
                node_id, shape.value if shape is not None else drawn, classes
            )
            for key, value in styled.items():
                if key not in dn.attrs:
                    extra[key] = value
        return extra

    # -- edges
    def edge(self, de: DotEdge) -> dict[str, Any]:
        attrs = de.attrs
        where: dict[str, Any] = {"edge": de.name}
        out: dict[str, Any] = {"from": de.source, "to": de.target}
        condition, when = "always", None
        extra = self.extras(attrs, EDGE_ATTRIBUTES, ATTRACTOR_EDGE_ATTRIBUTES, "edge", where)
        given = attrs.get("condition")
        if given is not None and given.value.strip():
            text = given.value.strip()
            if text not in CONDITIONS:
                extra["condition"] = given.value  # the specification's text, routed on when run
            parsed = self.read(given, edge_condition, field="condition", **where)
            if parsed is not _BAD:
                condition, when = parsed
        if "when" in attrs:
            if when is not None:
                self.problem(
                    "the condition has clauses besides the outcome and 'when' is set too; "
                    "keep the data clauses in one of them",
                    attrs["when"].line,
                    field="when",
                    value=attrs["when"].value,
                    **where,
                )
            when = self.read(attrs["when"], values.predicate, field="when", **where)
        out["condition"] = condition
        if when is not None:
            out["when"] = when
        for key in ("on_event", "label"):
            if key in attrs:
                out[key] = attrs[key].value
        if "weight" in attrs:
            out["weight"] = self.read(attrs["weight"], values.number, field="weight", **where)
        if extra:
            out["attrs"] = extra
        return out

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
        name = {"name": "label", "action": "prompt", "command": "tool_command"}.get(
            str(rest[0]), str(rest[0])
        )
        for key in (str(rest[0]), name):
            if key in attrs:
                return attrs[key].line
        return fallback


def _stylesheet(text: str) -> Any:
    # Imported here: waygraph.pipelines imports the plan model, which formats load first.
    from waygraph.pipelines.stylesheet import parse_stylesheet

    return parse_stylesheet(text)


def read_dot(text: str, *, file: str | None = None) -> DotReport:
    """Read one DOT ``digraph``: the plan and every problem found in it.

    Text that is not DOT at all gives a report with that one error (DOT's
    grammar cannot go on past it); otherwise every bad attribute is an error
    naming its file, line and attribute, and the plan is None when there are
    any. Warnings (an attribute kept as written, a shape with no handler, a
    ``$goal`` without a goal) never stop the plan.

    Example:
        >>> report = read_dot("digraph p { a [max_retries=x, timeout=soon] }")
        >>> [(e.line, e.node, e.field) for e in report.errors][:2]
        [(1, 'a', 'timeout'), (1, 'a', 'max_retries')]
    """
    if not isinstance(text, str):
        raise PlanSyntaxError("DOT text must be a str", file=file, value=type(text).__name__)
    try:
        if len(text) > MAX_DOT_CHARS:
            raise PlanSyntaxError(
                f"file is larger than {MAX_DOT_CHARS / (1024 * 1024):g} MiB; "
                "a DOT file holds one plan",
                file=file,
            )
        tokens = tokenize(text, file)
        if tokens[0].kind == "end":
            raise PlanSyntaxError("the file is empty; expected 'digraph NAME { ... }'", file=file)
        graph = parse_statements(tokens, file)
        return _Builder(graph, file).report()
    except PlanFormatError as exc:
        return DotReport(None, (exc,))


def parse_dot(text: str, *, file: str | None = None) -> Plan:
    """Parse one DOT ``digraph`` into a :class:`~waygraph.model.Plan`.

    The plan id is the graph attribute ``id``, else the digraph's name, else
    the stem of ``file``. Raises :class:`~waygraph.errors.PlanSyntaxError` for
    text that is not DOT in the supported subset and
    :class:`~waygraph.errors.PlanFormatError` for a bad attribute or plan (the
    first one; :func:`read_dot` and ``waygraph check`` list them all); both
    name the file and line.

    Example:
        >>> plan = parse_dot("digraph p { s [shape=Mdiamond]; s -> work -> end; "
        ...                  "end [shape=Msquare] }")
        >>> [(e.from_, e.to) for e in plan.graph.edges], plan.graph.nodes["work"].type
        ([('s', 'work'), ('work', 'end')], 'task')
    """
    report = read_dot(text, file=file)
    if report.plan is None:
        first = report.errors[0]
        if len(report.errors) > 1:
            more = len(report.errors) - 1
            note = f" (and {more} more problem{'s' if more > 1 else ''}: waygraph check lists all)"
            raise type(first)(
                first.reason + note,
                file=first.file,
                line=first.line,
                plan=first.plan,
                node=first.node,
                edge=first.edge,
                field=first.field,
                value=first.value,
                has_value=first.has_value,
            )
        raise first
    return report.plan
