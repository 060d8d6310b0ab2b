"""DOT statements: the tokens of one ``digraph`` into its nodes, edges and attributes.

This is DOT's grammar only: attribute values stay text, each with the line it
came from, so :mod:`waygraph.formats._dot_reader` can name that line when it
turns them into a plan. Node and edge defaults (``node [...]``, ``edge [...]``)
are applied here, to the statements after them, as Graphviz does.

Example:
    >>> from waygraph.formats._dot_syntax import tokenize
    >>> g = parse_statements(tokenize("digraph p { node [shape=box]; a -> b }", None), None)
    >>> g.name, list(g.nodes), g.nodes["b"].attrs["shape"].value, g.edges[0].name
    ('p', ['a', 'b'], 'box', 'a -> b')
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from waygraph.errors import PlanSyntaxError
from waygraph.formats._dot_syntax import Token


@dataclass(frozen=True, slots=True)
class Attr:
    """An attribute value as written (escapes resolved) and the line it is on."""

    value: str
    line: int


@dataclass(slots=True)
class DotNode:
    """A node: the line that first names it, and its attributes with the defaults then in force."""

    line: int
    attrs: dict[str, Attr]


@dataclass(frozen=True, slots=True)
class DotEdge:
    """One ``source -> target`` edge; a chain ``a -> b -> c`` gives one per arrow."""

    source: str
    target: str
    line: int
    attrs: dict[str, Attr]

    @property
    def name(self) -> str:
        return f"{self.source} -> {self.target}"


@dataclass(slots=True)
class DotGraph:
    """The statements of one ``digraph``: its name, graph attributes, nodes in order, edges."""

    name: str | None = None
    line: int = 1
    attrs: dict[str, Attr] = field(default_factory=dict)
    nodes: dict[str, DotNode] = field(default_factory=dict)
    edges: list[DotEdge] = field(default_factory=list)


class _Parser:
    """Statements of one ``digraph``; node and edge defaults apply to later statements."""

    def __init__(self, tokens: list[Token], file: str | None) -> None:
        self.tokens = tokens
        self.i = 0
        self.file = file
        self.graph = DotGraph()
        self.node_defaults: dict[str, Attr] = {}
        self.edge_defaults: dict[str, Attr] = {}

    @property
    def peek(self) -> Token:
        return self.tokens[self.i]

    def advance(self) -> Token:
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

    def error(self, message: str, token: Token | None = None) -> PlanSyntaxError:
        return PlanSyntaxError(message, file=self.file, line=(token or self.peek).line)

    # -- graph
    def parse(self) -> DotGraph:
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
            self.graph.attrs[token.text] = Attr(value.text, token.line)
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

    def edge_chain(self, first: Token) -> None:
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
            self.graph.edges.append(DotEdge(source.text, target.text, source.line, merged))

    def touch(self, token: Token) -> DotNode:
        """The node named by ``token``, created with the current node defaults."""
        node = self.graph.nodes.get(token.text)
        if node is None:
            node = DotNode(token.line, dict(self.node_defaults))
            self.graph.nodes[token.text] = node
        return node

    def no_port(self, token: Token) -> None:
        if self.at(":"):
            raise self.error(
                f"ports ('{token.text}:port') are not supported; connect nodes directly"
            )

    def attr_lists(self) -> dict[str, Attr]:
        attrs: dict[str, Attr] = {}
        while self.accept("["):
            while not self.accept("]"):
                key = self.peek
                if key.kind != "id":
                    raise self.error(f"expected an attribute name or ']', not {key.shown()}")
                self.advance()
                if not self.accept("="):
                    raise self.error(f"attribute {key.text!r} needs a value: {key.text}=...")
                attrs[key.text] = Attr(self.value(key.text).text, key.line)
                if not self.accept(","):
                    self.accept(";")
        return attrs

    def value(self, key: str) -> Token:
        token = self.peek
        if token.kind != "id":
            raise self.error(f"expected a value for {key!r}, not {token.shown()}")
        return self.advance()


def parse_statements(tokens: list[Token], file: str | None) -> DotGraph:
    """The one ``digraph`` in ``tokens``; a :class:`PlanSyntaxError` names the line otherwise."""
    return _Parser(tokens, file).parse()
