"""Plans as Graphviz DOT: the Attractor pipeline subset, plus waygraph's own attributes.

One ``digraph`` is one plan. Node shapes give node types (``Mdiamond`` start,
``Msquare`` exit, ``box`` task, ``diamond`` decision, ``octagon`` escalate,
``cylinder`` checkpoint); edges carry a ``condition`` (Attractor's
``outcome=success`` or waygraph's ``on_success`` ...) and an optional ``when``
condition string. ``docs/dot.md`` lists every attribute.

The tokenizer and parser are our own (no Graphviz or pydot), accept a strict
subset, and refuse everything else with a :class:`~waygraph.errors.PlanFormatError`
naming the file, line, plan, node or edge and attribute: nothing in a file is
silently dropped, and nothing in it is evaluated as code.
:func:`plan_to_dot` writes every field, so ``parse_dot(plan_to_dot(p)) == p``.

Example:
    >>> plan = parse_dot('''
    ... digraph deploy {
    ...     goal="Ship the build"
    ...     start [shape=Mdiamond]
    ...     build [label="Build", prompt="Run make", max_retries=2]
    ...     done  [shape=Msquare]
    ...     start -> build
    ...     build -> done [condition="outcome=success"]
    ... }''')
    >>> plan.id, plan.goal, plan.graph.nodes["build"].action
    ('deploy', 'Ship the build', 'Run make')
    >>> parse_dot(plan_to_dot(plan)) == plan
    True
"""

from __future__ import annotations

import itertools
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError

from waygraph.errors import PlanFormatError, PlanSyntaxError
from waygraph.formats.json_library import FILE_BUDGETS, validation_error, verify_to_data
from waygraph.model import CONDITIONS, Edge, Node, Plan, Verify
from waygraph.predicates import (
    MAX_CONDITION_CHARS,
    format_condition,
    parse_condition,
    parse_literal,
)

__all__ = [
    "EDGE_ATTRIBUTES",
    "GRAPH_ATTRIBUTES",
    "MAX_DOT_CHARS",
    "NODE_ATTRIBUTES",
    "SHAPE_OF_TYPE",
    "TYPE_OF_SHAPE",
    "parse_dot",
    "plan_to_dot",
]

#: DOT text longer than this is refused before tokenizing: one file is one plan,
#: and real plans are kilobytes; the bound keeps hostile input to seconds.
MAX_DOT_CHARS = FILE_BUDGETS["dot"]

#: Node type written for each shape (shape names are matched case-insensitively).
TYPE_OF_SHAPE: dict[str, str] = {
    "mdiamond": "start",
    "msquare": "exit",
    "box": "task",
    "rect": "task",
    "rectangle": "task",
    "diamond": "decision",
    "octagon": "escalate",
    "cylinder": "checkpoint",
}
#: Shape written for each node type.
SHAPE_OF_TYPE: dict[str, str] = {
    "start": "Mdiamond",
    "task": "box",
    "decision": "diamond",
    "escalate": "octagon",
    "exit": "Msquare",
    "checkpoint": "cylinder",
}
NODE_ATTRIBUTES: tuple[str, ...] = (
    "shape",
    "type",
    "label",
    "prompt",
    "action",
    "tool",
    "tool_hint",
    "description",
    "verify",
    "max_retries",
    "join",
    "on_fail",
    "required",
    "reason",
    "pace_level",
    "status",
    "meta",
)
EDGE_ATTRIBUTES: tuple[str, ...] = ("condition", "when", "on_event", "label", "weight")
GRAPH_ATTRIBUTES: tuple[str, ...] = (
    "id",
    "name",
    "label",
    "goal",
    "description",
    "domains",
    "triggers",
    "trigger_threshold",
    "stale_after_turns",
    "match_mode",
    "max_transitions",
    "repeat_limit",
    "linear",
    "start",
    "default_max_retry",
    "default_max_retries",
    "meta",
)
# Attractor attributes that waygraph has no meaning for; named in the error so
# a person porting a pipeline knows it is deliberate, not a typo.
_ATTRACTOR_ONLY = frozenset(
    {
        "goal_gate",
        "retry_target",
        "fallback_retry_target",
        "fidelity",
        "default_fidelity",
        "thread_id",
        "class",
        "timeout",
        "llm_model",
        "llm_provider",
        "reasoning_effort",
        "auto_status",
        "allow_partial",
        "model_stylesheet",
        "loop_restart",
        "tool_command",
    }
)
_KEYWORDS = frozenset({"strict", "graph", "digraph", "node", "edge", "subgraph"})
_NODE_TEXT = (
    "tool",
    "tool_hint",
    "description",
    "join",
    "on_fail",
    "reason",
    "pace_level",
    "status",
)
_OUTCOMES = {
    ("==", "success"): "on_success",
    ("==", "fail"): "on_fail",
    ("==", "failure"): "on_fail",
    ("==", "retry"): "on_retry",
    ("!=", "success"): "on_fail",
}

_NAME_CHARS = r"A-Za-z0-9_\u0080-\U0010ffff"
# One pass with finditer; `bad` catches any character no token starts with.
# Strings use possessive repeats so an unclosed quote fails in linear time.
_TOKEN_RE = re.compile(
    rf"""
      (?P<space>[ \t\n\r\f\v]+)
    | (?P<comment>//[^\n]*|\#[^\n]*|/\*.*?\*/)
    | (?P<punct>->|--|[{{}}\[\]=;,:])
    | (?P<number>-?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?))(?P<glued>[{_NAME_CHARS}])?
    | (?P<name>[A-Za-z_\u0080-\U0010ffff][{_NAME_CHARS}]*+)
    | (?P<string>"(?:[^"\\]++|\\.)*+")
    | (?P<bad>.)
    """,
    re.VERBOSE | re.DOTALL,
)
_BARE_ID_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BARE_NUMBER_RE = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")
_UNESCAPE_RE = re.compile(r"\\(.)", re.DOTALL)
_UNESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "\n": ""}
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_OUTCOME_START_RE = re.compile(r"outcome\s*!?=")
_OUTCOME_RE = re.compile(r"outcome\s*(==|=|!=)\s*([\"']?)([A-Za-z_]+)\2")
# Attractor's own clause form: `context.key=value` with a bare or quoted value.
_CLAUSE_RE = re.compile(
    r"""([^\W\d]\w*(?:\.\w+)*)\s*(!=|=)\s*"""
    r"""("(?:[^"\\]++|\\.)*+"|'(?:[^'\\]++|\\.)*+'|[^\s"'=!<>&|()\[\],]++)""",
    re.DOTALL,
)


# ---------------------------------------------------------------- tokens


class _Token(NamedTuple):
    kind: str  # "id" (bare name, number or quoted string), "punct", "end"
    text: str  # the value: for quoted strings with escapes resolved
    line: int
    quoted: bool = False

    def keyword(self) -> str | None:
        """The DOT keyword this token is, if any (keywords are case-insensitive)."""
        if self.kind == "id" and not self.quoted and self.text.lower() in _KEYWORDS:
            return self.text.lower()
        return None

    def shown(self) -> str:
        return "the end of the file" if self.kind == "end" else repr(self.text)


def _tokenize(text: str, file: str | None) -> list[_Token]:
    tokens: list[_Token] = []
    append = tokens.append
    line = 1
    for match in _TOKEN_RE.finditer(text):
        kind, raw = match.lastgroup, match.group()
        if kind == "name" or kind == "number":
            append(_Token("id", raw, line))
        elif kind == "punct":
            append(_Token("punct", raw, line))
        elif kind == "string":
            append(_Token("id", _UNESCAPE_RE.sub(_unescape_one, raw[1:-1]), line, True))
            line += raw.count("\n")
        elif kind == "glued":
            raise PlanSyntaxError(
                f'a name cannot start with a digit; quote it: "{raw}..."', file=file, line=line
            )
        elif kind == "bad":
            raise PlanSyntaxError(_bad_character(text, match.start()), file=file, line=line)
        else:  # space and comments
            line += raw.count("\n")
    append(_Token("end", "", line))
    return tokens


def _bad_character(text: str, pos: int) -> str:
    char = text[pos]
    if text.startswith("/*", pos):
        return "comment '/*' is not closed with '*/'"
    if char == '"':
        return "string is not closed with '\"'"
    if char == "<":
        return "HTML-like labels (<...>) are not supported; use a quoted string"
    if char == "+":
        return "joining strings with '+' is not supported; write one quoted string"
    return f"unexpected character {char!r}"


def _unescape_one(match: re.Match[str]) -> str:
    char = match.group(1)
    # Unknown escapes (Graphviz's \l, \N ...) are kept as written.
    return _UNESCAPES.get(char, "\\" + char)


# ---------------------------------------------------------------- statements


@dataclass(frozen=True, slots=True)
class _Attr:
    value: str
    line: int


@dataclass(slots=True)
class _DotNode:
    line: int
    attrs: dict[str, _Attr]


@dataclass(frozen=True, slots=True)
class _DotEdge:
    source: str
    target: str
    line: int
    attrs: dict[str, _Attr]

    @property
    def name(self) -> str:
        return f"{self.source} -> {self.target}"


@dataclass(slots=True)
class _DotGraph:
    name: str | None = None
    line: int = 1
    attrs: dict[str, _Attr] = field(default_factory=dict)
    nodes: dict[str, _DotNode] = field(default_factory=dict)
    edges: list[_DotEdge] = field(default_factory=list)


class _Parser:
    """Statements of one ``digraph``; node and edge defaults apply to later statements."""

    def __init__(self, tokens: list[_Token], file: str | None) -> None:
        self.tokens = tokens
        self.i = 0
        self.file = file
        self.graph = _DotGraph()
        self.node_defaults: dict[str, _Attr] = {}
        self.edge_defaults: dict[str, _Attr] = {}

    @property
    def peek(self) -> _Token:
        return self.tokens[self.i]

    def advance(self) -> _Token:
        token = self.tokens[self.i]
        if token.kind != "end":
            self.i += 1
        return token

    def at(self, punct: str) -> bool:
        return self.peek.kind == "punct" and self.peek.text == punct

    def accept(self, punct: str) -> bool:
        if self.at(punct):
            self.i += 1
            return True
        return False

    def error(self, message: str, token: _Token | None = None) -> PlanSyntaxError:
        return PlanSyntaxError(message, file=self.file, line=(token or self.peek).line)

    # -- graph
    def parse(self) -> _DotGraph:
        head = self.advance()
        word = head.keyword()
        if word == "strict":
            raise self.error(
                "'strict' graphs are not supported: waygraph keeps every edge; remove 'strict'",
                head,
            )
        if word == "graph":
            raise self.error(
                "undirected 'graph' is not supported; a plan is a 'digraph NAME { ... }'", head
            )
        if word != "digraph":
            raise self.error(f"expected 'digraph NAME {{', not {head.shown()}", head)
        self.graph.line = head.line
        if self.peek.kind == "id":
            name = self.advance()
            if name.keyword():
                raise self.error(f"{name.text!r} is a keyword; quote the graph name", name)
            self.graph.name = name.text
        opening = self.peek
        if not self.accept("{"):
            raise self.error(f"expected '{{' after 'digraph', not {self.peek.shown()}")
        while not self.accept("}"):
            if self.peek.kind == "end":
                raise self.error(f"the '{{' on line {opening.line} is never closed with '}}'")
            self.statement()
        if self.peek.kind != "end":
            raise self.error(
                f"unexpected {self.peek.shown()} after the digraph; a file holds one plan"
            )
        return self.graph

    def statement(self) -> None:
        token = self.peek
        if self.accept(";"):
            return
        if token.kind != "id":
            if token.text == "{":
                raise self.error("subgraphs ('{ ... }') are not supported; list nodes directly")
            raise self.error(f"expected a statement, not {token.shown()}")
        word = token.keyword()
        if word == "subgraph":
            raise self.error("subgraphs are not supported; list nodes and edges directly")
        if word in ("graph", "node", "edge"):
            self.advance()
            if not self.at("["):
                raise self.error(f"expected '[' after {word!r}, not {self.peek.shown()}")
            attrs = self.attr_lists()
            target = {
                "graph": self.graph.attrs,
                "node": self.node_defaults,
                "edge": self.edge_defaults,
            }[word]
            target.update(attrs)
            return
        if word is not None:
            raise self.error(f"unexpected {token.text!r}; a file holds one digraph", token)
        self.advance()
        if self.accept("="):
            value = self.value(token.text)
            self.graph.attrs[token.text] = _Attr(value.text, token.line)
            return
        self.no_port(token)
        if self.at("--"):
            raise self.error("'--' is an undirected edge; waygraph plans are directed: use '->'")
        if self.at("->"):
            self.edge_chain(token)
            return
        attrs = self.attr_lists() if self.at("[") else {}
        node = self.touch(token)
        node.attrs.update(attrs)

    def edge_chain(self, first: _Token) -> None:
        ends = [first]
        while self.accept("->"):
            target = self.peek
            if target.kind != "id" or target.keyword():
                if self.at("{") or target.keyword() == "subgraph":
                    raise self.error("edges to subgraphs ('{ ... }') are not supported")
                raise self.error(f"expected a node id after '->', not {target.shown()}")
            self.advance()
            self.no_port(target)
            if self.at("--"):
                raise self.error("'--' is an undirected edge; use '->'")
            ends.append(target)
        attrs = self.attr_lists() if self.at("[") else {}
        for token in ends:
            self.touch(token)
        for source, target in itertools.pairwise(ends):
            merged = {**self.edge_defaults, **attrs}
            self.graph.edges.append(_DotEdge(source.text, target.text, source.line, merged))

    def touch(self, token: _Token) -> _DotNode:
        """The node named by ``token``, created with the current node defaults."""
        node = self.graph.nodes.get(token.text)
        if node is None:
            node = _DotNode(token.line, dict(self.node_defaults))
            self.graph.nodes[token.text] = node
        return node

    def no_port(self, token: _Token) -> None:
        if self.at(":"):
            raise self.error(
                f"ports ('{token.text}:port') are not supported; connect nodes directly"
            )

    def attr_lists(self) -> dict[str, _Attr]:
        attrs: dict[str, _Attr] = {}
        while self.accept("["):
            while not self.accept("]"):
                key = self.peek
                if key.kind != "id":
                    raise self.error(f"expected an attribute name or ']', not {key.shown()}")
                self.advance()
                if not self.accept("="):
                    raise self.error(f"attribute {key.text!r} needs a value: {key.text}=...")
                attrs[key.text] = _Attr(self.value(key.text).text, key.line)
                if not self.accept(","):
                    self.accept(";")
        return attrs

    def value(self, key: str) -> _Token:
        token = self.peek
        if token.kind != "id":
            raise self.error(f"expected a value for {key!r}, not {token.shown()}")
        return self.advance()


# ---------------------------------------------------------------- building the plan


class _Builder:
    """Turns parsed statements into a validated :class:`Plan`."""

    def __init__(self, graph: _DotGraph, file: str | None) -> None:
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
        self, attrs: dict[str, _Attr], known: tuple[str, ...], kind: str, where: dict[str, Any]
    ) -> None:
        for key, attr in attrs.items():
            if key in known:
                continue
            if key in _ATTRACTOR_ONLY:
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
        self, node_id: str, dn: _DotNode, default_retries: tuple[bool, int | None]
    ) -> dict[str, Any]:
        attrs = dn.attrs
        where = {"node": node_id}
        self.check_names(attrs, NODE_ATTRIBUTES, "node", where)
        out: dict[str, Any] = {"type": self.node_type(attrs, where)}
        if "label" in attrs:
            out["name"] = attrs["label"].value
        prompt, action = attrs.get("prompt"), attrs.get("action")
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

    def node_type(self, attrs: dict[str, _Attr], where: dict[str, Any]) -> str:
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
    def edge(self, de: _DotEdge) -> dict[str, Any]:
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

    def condition(self, attr: _Attr, where: dict[str, Any]) -> tuple[str, Any]:
        """``condition`` as (edge condition, when): a waygraph name or Attractor clauses."""
        loc = {**where, "field": "condition"}
        text = attr.value.strip()
        if text in CONDITIONS:
            return text, None
        clauses = self.clauses(attr, loc)
        if len(clauses) == 1 and _BARE_ID_RE.fullmatch(text):
            # A lone word is far more likely a misspelt condition than a data flag.
            names = ", ".join(CONDITIONS)
            raise self.fail(
                f"unknown edge condition {text!r}; use one of {names}, "
                "outcome=success or outcome=fail, or put a data condition in 'when'",
                attr.line,
                value=attr.value,
                **loc,
            )
        condition: str | None = None
        rest: list[Verify] = []
        for clause in clauses:
            named = clause if clause in CONDITIONS else self.outcome(clause, attr, loc)
            if named is None:
                rest.append(self.clause(clause, attr, loc))
                continue
            if condition is not None:
                raise self.fail(
                    "the condition names the outcome twice", attr.line, value=attr.value, **loc
                )
            condition = named
        when: Verify | None = None
        if len(rest) == 1:
            when = rest[0]
        elif rest:
            when = Verify(type="all", checks=tuple(rest))
        return condition or "always", when

    def clauses(self, attr: _Attr, loc: dict[str, Any]) -> list[str]:
        """Split on top-level ``&&`` (not inside quotes or parentheses)."""
        text, parts, depth, quote, start, i = attr.value, [], 0, "", 0, 0
        while i < len(text):
            char = text[i]
            if quote:
                if char == "\\":
                    i += 1
                elif char == quote:
                    quote = ""
            elif char in "'\"":
                quote = char
            elif char in "([":
                depth += 1
            elif char in ")]":
                depth -= 1
            elif depth == 0 and text.startswith("&&", i):
                parts.append(text[start:i])
                start = i + 2
                i += 1
            i += 1
        parts.append(text[start:])
        clauses = [p.strip() for p in parts]
        if not all(clauses):
            raise self.fail("the condition has an empty clause", attr.line, value=attr.value, **loc)
        return clauses

    def outcome(self, clause: str, attr: _Attr, loc: dict[str, Any]) -> str | None:
        if not _OUTCOME_START_RE.match(clause):
            return None
        match = _OUTCOME_RE.fullmatch(clause)
        op = "==" if match and match.group(1) == "=" else (match.group(1) if match else "")
        named = _OUTCOMES.get((op, match.group(3).lower())) if match else None
        if named is None:
            raise self.fail(
                "an outcome clause is outcome=success, outcome=fail, outcome=retry or "
                "outcome!=success, joined to other clauses with &&",
                attr.line,
                value=clause,
                **loc,
            )
        return named

    def clause(self, clause: str, attr: _Attr, loc: dict[str, Any]) -> Verify:
        try:
            return parse_condition(clause)
        except PlanFormatError as exc:
            # Attractor writes `context.key=value` with bare text values.
            match = _CLAUSE_RE.fullmatch(clause) if len(clause) <= MAX_CONDITION_CHARS else None
            if match is None:
                raise exc.located(
                    file=self.file, line=attr.line, plan=self.plan_id, **loc
                ) from None
            path, op, raw = match.groups()
            value: Any
            try:
                value = parse_literal(raw)
            except PlanFormatError:
                value = raw
            return Verify(type="compare", field=path, op="==" if op == "=" else op, value=value)

    # -- values
    def predicate(self, attr: _Attr, loc: dict[str, Any]) -> Any:
        """A Verify tree: JSON when the text starts with '{', else a condition string."""
        if attr.value.lstrip().startswith("{"):
            return self.json_value(attr, loc)
        try:
            return parse_condition(attr.value)
        except PlanFormatError as exc:
            raise exc.located(file=self.file, line=attr.line, plan=self.plan_id, **loc) from None

    def json_value(self, attr: _Attr, loc: dict[str, Any]) -> Any:
        try:
            return json.loads(attr.value)
        except ValueError as exc:  # JSONDecodeError, or an integer too long to read
            message = f"invalid JSON: {getattr(exc, 'msg', exc)}"
            raise self.fail(message, attr.line, value=attr.value, **loc) from None
        except RecursionError:
            raise self.fail("JSON nested too deeply", attr.line, **loc) from None

    def json_object(self, attr: _Attr, loc: dict[str, Any]) -> dict[str, Any]:
        value = self.json_value(attr, loc)
        if not isinstance(value, dict):
            raise self.fail("must be a JSON object", attr.line, value=attr.value, **loc)
        return value

    def text_list(self, attr: _Attr, key: str) -> list[str]:
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

    def integer(self, attr: _Attr, loc: dict[str, Any]) -> int:
        text = attr.value.strip()
        if not re.fullmatch(r"[+-]?[0-9]{1,18}", text):
            raise self.fail("must be a whole number", attr.line, value=attr.value, **loc)
        return int(text)

    def retries(self, attr: _Attr, loc: dict[str, Any]) -> int | None:
        if attr.value.strip().lower() == "none":
            return None  # unbounded: the node is held until it passes
        return self.integer(attr, loc)

    def boolean(self, attr: _Attr, loc: dict[str, Any]) -> bool:
        text = attr.value.strip().lower()
        if text in ("true", "yes", "1"):
            return True
        if text in ("false", "no", "0"):
            return False
        raise self.fail("must be true or false", attr.line, value=attr.value, **loc)

    def number(self, attr: _Attr, loc: dict[str, Any]) -> float:
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
    def attr_line(attrs: dict[str, _Attr], rest: tuple[Any, ...], fallback: int) -> int:
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
    tokens = _tokenize(text, file)
    if tokens[0].kind == "end":
        raise PlanSyntaxError("the file is empty; expected 'digraph NAME { ... }'", file=file)
    graph = _Parser(tokens, file).parse()
    return _Builder(graph, file).build()


# ---------------------------------------------------------------- writing


def plan_to_dot(plan: Plan) -> str:
    """Write ``plan`` as DOT that :func:`parse_dot` reads back to an equal plan.

    Graph attributes come first, then one node per line, then the edges. Node
    types are written as shapes, so Graphviz draws the plan as it runs.
    Raises :class:`PlanFormatError` (a ``ValueError``) for a plan DOT cannot
    hold: an empty id, or an edge to a node that does not exist (DOT would
    create that node).

    Example:
        >>> from waygraph.model import Graph
        >>> plan = (Graph.builder().task("build", action="make").exit("done")
        ...         .chain("start", "build", "done").plan("ci", name="CI"))
        >>> print(plan_to_dot(plan))
        digraph ci {
          label=CI
        <BLANKLINE>
          start [shape=Mdiamond, label=Start]
          build [shape=box, action=make]
          done [shape=Msquare]
        <BLANKLINE>
          start -> build
          build -> done [condition=on_success]
        }
        <BLANKLINE>
    """
    if not plan.id:
        raise PlanFormatError("a plan needs a non-empty id to be written as DOT", field="id")
    graph = plan.graph
    for edge in graph.edges:
        for end in (edge.from_, edge.to):
            if end not in graph.nodes:
                raise PlanFormatError(
                    f"names node {end!r}, which does not exist; DOT would create it",
                    plan=plan.id,
                    edge=edge.describe(),
                    value=end,
                )
    lines = [f"digraph {_quote(plan.id)} {{"]
    head = [f"  {key}={value}" for key, value in _graph_attributes(plan)]
    if head:
        lines += [*head, ""]
    lines += [f"  {_quote(nid)}{_attr_list(_node_attributes(n))}" for nid, n in graph.nodes.items()]
    if graph.edges:
        lines.append("")
        lines += [
            f"  {_quote(e.from_)} -> {_quote(e.to)}{_attr_list(_edge_attributes(e))}"
            for e in graph.edges
        ]
    lines.append("}")
    return "\n".join(lines) + "\n"


def _graph_attributes(plan: Plan) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if plan.name:
        out.append(("label", _quote(plan.name)))
    for key in ("goal", "description"):
        value = getattr(plan, key)
        if value is not None:
            out.append((key, _quote(value)))
    for key in ("domains", "triggers"):
        items: tuple[str, ...] = getattr(plan, key)
        if items:
            out.append((key, _quote(_text_list(items))))
    defaults = {
        "trigger_threshold": 2,
        "stale_after_turns": 10,
        "max_transitions": 100,
        "repeat_limit": 3,
    }
    for key, default in defaults.items():
        if getattr(plan, key) != default:
            out.append((key, str(getattr(plan, key))))
    if plan.match_mode is not None:
        out.append(("match_mode", _quote(plan.match_mode)))
    if plan.linear:
        out.append(("linear", "true"))
    if plan.meta is not None:
        out.append(("meta", _quote(_json(plan.meta))))
    starts = [nid for nid, n in plan.graph.nodes.items() if n.type == "start"]
    if starts != [plan.graph.start]:
        out.append(("start", _quote(plan.graph.start)))
    return out


def _node_attributes(node: Node) -> list[tuple[str, str]]:
    out = [("shape", SHAPE_OF_TYPE[node.type])]
    if node.name:
        out.append(("label", _quote(node.name)))
    for key in ("action", "tool", "tool_hint", "description"):
        value = getattr(node, key)
        if value is not None:
            out.append((key, _quote(value)))
    if node.verify is not None:
        out.append(("verify", _quote(_json(verify_to_data(node.verify)))))
    if node.max_retries != 0:
        out.append(("max_retries", "none" if node.max_retries is None else str(node.max_retries)))
    if node.join != "any":
        out.append(("join", _quote(node.join)))
    for key in ("on_fail", "reason", "pace_level", "status"):
        value = getattr(node, key)
        if value is not None:
            out.append((key, _quote(value)))
    if node.required is not None:
        out.append(("required", "true" if node.required else "false"))
    if node.meta is not None:
        out.append(("meta", _quote(_json(node.meta))))
    return out


def _edge_attributes(edge: Edge) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if edge.condition != "always":
        out.append(("condition", edge.condition))
    if edge.when is not None:
        out.append(("when", _quote(_when_text(edge.when))))
    if edge.on_event is not None:
        out.append(("on_event", _quote(edge.on_event)))
    if edge.weight:
        out.append(("weight", _quote(_number_text(edge.weight))))
    if edge.label is not None:
        out.append(("label", _quote(edge.label)))
    return out


def _when_text(verify: Verify) -> str:
    """The condition string when it reads back exactly, else the JSON tree."""
    try:
        text = format_condition(verify)
    except ValueError:
        return _json(verify_to_data(verify))
    return text


def _number_text(value: float) -> str:
    if math.isfinite(value) and float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


def _text_list(items: tuple[str, ...]) -> str:
    # Comma-separated reads best; JSON keeps items with commas or edge spaces intact.
    plain = all(item and item == item.strip() and "," not in item for item in items)
    if plain and not items[0].startswith("["):
        return ", ".join(items)
    return _json(list(items))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _attr_list(attrs: list[tuple[str, str]]) -> str:
    if not attrs:
        return ""
    return " [" + ", ".join(f"{key}={value}" for key, value in attrs) + "]"


def _quote(text: str) -> str:
    """A DOT ID: bare when it is a plain identifier or number, else a quoted string."""
    if (_BARE_ID_RE.fullmatch(text) and text.lower() not in _KEYWORDS) or _BARE_NUMBER_RE.fullmatch(
        text
    ):
        return text
    return '"' + "".join(_ESCAPES.get(c, c) for c in text) + '"'
