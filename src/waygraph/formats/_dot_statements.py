"""DOT statements: the tokens of one ``digraph`` into its nodes, edges and attributes.

This is DOT's grammar only (Attractor's subset, its spec section 2.2): attribute
values stay text, each with the line it came from, so
:mod:`waygraph.formats._dot_reader` can name that line when it turns them into
a plan. Node and edge defaults (``node [...]``, ``edge [...]``) are applied
here, to the statements after them, as Graphviz does.

Subgraphs (``subgraph NAME { ... }`` or a bare ``{ ... }``) are flattened: their
nodes and edges join the graph in file order. Inside one, defaults are scoped
(inherited on ``{``, restored on ``}``), and ``label=...`` or ``graph [...]``
describe the subgraph, never the graph. A labelled subgraph gives each node it
mentions a derived class (``"Loop A"`` -> ``loop-a``) in :attr:`DotNode.classes`.

Example:
    >>> from waygraph.formats._dot_syntax import tokenize
    >>> g = parse_statements(tokenize("digraph p { node [shape=box]; a -> b }", None), None)
    >>> g.name, list(g.nodes), g.nodes["b"].attrs["shape"].value, g.edges[0].name
    ('p', ['a', 'b'], 'box', 'a -> b')
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from waygraph.errors import PlanSyntaxError
from waygraph.formats._dot_syntax import Token


@dataclass(frozen=True, slots=True)
class Attr:
    """An attribute value as written (escapes resolved) and the line it is on."""

    value: str
    line: int


#: Subgraphs nested deeper than this are refused: hostile input, not a plan.
MAX_SUBGRAPH_DEPTH = 200
_NOT_CLASS_RE = re.compile(r"[^a-z0-9-]")
#: A dotted name (`human.default_choice`): an attribute name, never a node or graph id;
#: a number such as `0.5` is an id DOT allows.
_DOTTED_NAME = re.compile(r"[^\W\d]\w*(?:\.\w*)+")


@dataclass(slots=True)
class DotNode:
    """A node: the line that first names it, and its attributes with the defaults then in force.

    ``classes`` are the classes derived from the labels of the subgraphs that
    mention the node (outermost first, no repeats); they are kept apart from
    ``attrs["class"]`` so the reader decides how the two combine.
    """

    line: int
    attrs: dict[str, Attr]
    classes: tuple[str, ...] = ()


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


def subgraph_class(label: str) -> str:
    """The class a subgraph label gives its nodes (Attractor spec section 2.10).

    Lowercased, spaces become hyphens, and anything but ``a-z``, ``0-9`` and
    ``-`` is dropped; an empty result means no class.

    Example:
        >>> subgraph_class("Loop A"), subgraph_class("Review (fast)!")
        ('loop-a', 'review-fast')
    """
    return _NOT_CLASS_RE.sub("", label.lower().replace(" ", "-"))


@dataclass(slots=True)
class _Scope:
    """One ``{ ... }`` body: the graph's own (index 0) or a subgraph's."""

    index: int  # creation order, an index into _Parser.parents and .scope_classes
    line: int  # the line of its '{', for "never closed"
    attrs: dict[str, Attr]
    # Replaced, never mutated, by `node [...]`: a subgraph shares its parent's
    # dict until it sets its own, so entering `{ }` costs nothing.
    node_defaults: dict[str, Attr]
    edge_defaults: dict[str, Attr]


class _Parser:
    """Statements of one ``digraph``; node and edge defaults apply to later statements.

    Subgraphs are read with an explicit stack of scopes, not recursion, so deep
    nesting ends in a :class:`PlanSyntaxError`, never a ``RecursionError``.
    """

    def __init__(self, tokens: list[Token], file: str | None) -> None:
        self.tokens = tokens
        self.i = 0
        self.file = file
        self.graph = DotGraph()
        self.scopes: list[_Scope] = []  # open ones, innermost last
        self.parents: list[int] = []  # per scope ever opened: its parent's index
        self.scope_classes: list[str] = []  # per scope: derived class, "" if none
        # Node id -> the subgraphs (scope indexes) that mention it, in order.
        self.mentions: dict[str, dict[int, None]] = {}

    @property
    def peek(self) -> Token:
        return self.tokens[self.i]

    @property
    def scope(self) -> _Scope:
        return self.scopes[-1]

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
            if not name.quoted and _DOTTED_NAME.fullmatch(name.text):
                raise self.error(f"graph name {name.text!r} has a '.'; quote it", name)
            self.graph.name = name.text
        opening = self.peek
        if not self.accept("{"):
            raise self.error(f"expected '{{' after 'digraph', not {self.peek.shown()}")
        self.open(opening, self.graph.attrs)
        while self.scopes:
            if self.accept("}"):
                self.close()
            elif self.peek.kind == "end":
                raise self.error(f"the '{{' on line {self.scope.line} is never closed with '}}'")
            else:
                self.statement()
        if self.peek.kind != "end":
            raise self.error(
                f"unexpected {self.peek.shown()} after the digraph; a file holds one plan"
            )
        self.assign_classes()
        return self.graph

    def open(self, brace: Token, attrs: dict[str, Attr]) -> None:
        """Enter a ``{``: the graph's body, or a subgraph inheriting the current defaults."""
        if len(self.scopes) > MAX_SUBGRAPH_DEPTH:
            raise self.error(
                f"subgraphs are nested more than {MAX_SUBGRAPH_DEPTH} deep; flatten them", brace
            )
        parent = self.scopes[-1] if self.scopes else None
        self.parents.append(parent.index if parent else -1)
        self.scope_classes.append("")
        self.scopes.append(
            _Scope(
                len(self.parents) - 1,
                brace.line,
                attrs,
                parent.node_defaults if parent else {},
                parent.edge_defaults if parent else {},
            )
        )

    def close(self) -> None:
        """Leave a ``}``: the enclosing defaults are back; a subgraph's label becomes its class."""
        scope = self.scopes.pop()
        if not self.scopes:
            return
        label = scope.attrs.get("label")
        if label is not None:
            self.scope_classes[scope.index] = subgraph_class(label.value)
        if self.at("->") or self.at("--"):
            raise self.error(
                "edges from subgraphs ('{ ... } -> b') are not supported; write one edge per node"
            )

    def statement(self) -> None:
        token = self.peek
        if self.accept(";"):
            return
        if self.accept("{"):
            self.open(token, {})
            return
        if token.kind != "id":
            raise self.error(f"expected a statement, not {token.shown()}")
        word = token.keyword()
        if word == "subgraph":
            self.advance()
            if self.peek.kind == "id" and not self.peek.keyword():
                self.advance()  # the name only matters to Graphviz's layout
            brace = self.peek
            if not self.accept("{"):
                raise self.error(f"expected '{{' to open the subgraph, not {brace.shown()}")
            self.open(brace, {})
            return
        if word in ("graph", "node", "edge"):
            self.advance()
            if not self.at("["):
                raise self.error(f"expected '[' after {word!r}, not {self.peek.shown()}")
            attrs = self.attr_lists()
            scope = self.scope
            if word == "graph":
                scope.attrs.update(attrs)
            elif word == "node":
                scope.node_defaults = {**scope.node_defaults, **attrs}
            else:
                scope.edge_defaults = {**scope.edge_defaults, **attrs}
            return
        if word is not None:
            raise self.error(f"unexpected {token.text!r}; a file holds one digraph", token)
        self.advance()
        if self.accept("="):
            value = self.value(token.text)
            self.scope.attrs[token.text] = Attr(value.text, token.line)
            return
        self.node_id(token)
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
            self.node_id(target)
            if self.at("--"):
                raise self.error("'--' is an undirected edge; use '->'")
            ends.append(target)
        attrs = self.attr_lists() if self.at("[") else {}
        for token in ends:
            self.touch(token)
        defaults = self.scope.edge_defaults
        for source, target in itertools.pairwise(ends):
            merged = {**defaults, **attrs}
            self.graph.edges.append(DotEdge(source.text, target.text, source.line, merged))

    def touch(self, token: Token) -> DotNode:
        """The node named by ``token``, created with the current node defaults.

        A node is in every subgraph that mentions it, even one after its first
        mention (Graphviz's rule), but only defaults in force then apply.
        """
        node = self.graph.nodes.get(token.text)
        if node is None:
            node = DotNode(token.line, dict(self.scope.node_defaults))
            self.graph.nodes[token.text] = node
        index = self.scope.index
        if index:
            seen = self.mentions.get(token.text)
            if seen is None:
                self.mentions[token.text] = {index: None}
            else:
                seen[index] = None
        return node

    def node_id(self, token: Token) -> None:
        """Refuse what the tokenizer allows in a name but a node id is not: dots, ports."""
        if not token.quoted and _DOTTED_NAME.fullmatch(token.text):
            raise self.error(
                f"node id {token.text!r} has a '.': a node id is letters, digits and '_'"
                " (dotted names are attribute names, like human.default_choice=...)",
                token,
            )
        if self.at(":"):
            raise self.error(
                f"ports ('{token.text}:port') are not supported; connect nodes directly"
            )

    def assign_classes(self) -> None:
        """Give each node the classes of the labelled subgraphs around its mentions."""
        # A scope's chain is its parent's plus its own class; parents are
        # opened first, so one pass in creation order builds them all.
        chains: list[tuple[str, ...]] = []
        for index, parent in enumerate(self.parents):
            chain = chains[parent] if parent >= 0 else ()
            own = self.scope_classes[index]
            chains.append((*chain, own) if own and own not in chain else chain)
        for name, scopes in self.mentions.items():
            if len(scopes) == 1:
                classes = chains[next(iter(scopes))]
            else:
                classes = tuple(dict.fromkeys(c for s in scopes for c in chains[s]))
            self.graph.nodes[name].classes = classes

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
