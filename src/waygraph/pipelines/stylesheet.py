"""The Attractor model stylesheet (specification §8): CSS-like LLM defaults for nodes.

A pipeline's ``model_stylesheet`` graph attribute holds rules such as
``* { llm_model: claude-sonnet-4-5; } .code { llm_model: claude-opus-4-6; }``.
:func:`parse_stylesheet` reads the text of §8.2's grammar into a
:class:`Stylesheet`; :meth:`Stylesheet.properties_for` gives the properties a
node gets from it, merged by specificity (``*`` 0 < shape 1 < ``.class`` 2 <
``#id`` 3; a later rule of equal specificity wins). Whoever applies them
(the DOT reader, :class:`waygraph.pipelines.transforms.StylesheetTransform`)
sets only the properties a node does not set itself (§8.5).

Readings beyond the grammar's text, each because real files need it:

* any property named ``[a-z_][a-z0-9_.]*`` is kept, not only ``llm_model``,
  ``llm_provider`` and ``reasoning_effort`` (files also write ``fidelity`` or
  ``max_tokens``; the caller decides what to do with them);
* ``/* ... */`` comments are allowed wherever whitespace is;
* values are a double- or single-quoted string (``\\`` escapes the next
  character) or a bare run of characters up to ``;``, ``}`` or whitespace;
* a rule with no declarations and an empty or blank stylesheet are accepted
  and set nothing;
* class names may also hold ``_`` and capitals (DOT ``class`` values do);
  shape names match without regard to case (``box`` and ``Box`` are one
  Graphviz shape).

Errors raise :class:`~waygraph.errors.PlanFormatError` naming the rule number
and character offset. Parsing is one left-to-right pass, and text over
:data:`MAX_STYLESHEET_CHARS` is refused before it is read.

Example:
    >>> sheet = parse_stylesheet('''
    ...     * { llm_model: claude-sonnet-4-5; llm_provider: anthropic; }
    ...     .code { llm_model: claude-opus-4-6; }
    ...     #review { llm_model: "gpt-5.2"; reasoning_effort: high; }
    ... ''')
    >>> sheet.properties_for("implement", "box", ["code"])["llm_model"]
    'claude-opus-4-6'
    >>> sheet.properties_for("review", "box", ["code"])["reasoning_effort"]
    'high'
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType

from waygraph.errors import PlanFormatError

__all__ = [
    "MAX_STYLESHEET_CHARS",
    "RECOGNIZED_PROPERTIES",
    "StyleRule",
    "Stylesheet",
    "parse_stylesheet",
]

#: A stylesheet longer than this is refused: real ones are a few lines, and a
#: bound keeps a hostile file from costing unbounded time or memory.
MAX_STYLESHEET_CHARS = 100_000

#: The properties §8.4 names; others are kept too (see the module docstring).
RECOGNIZED_PROPERTIES = frozenset({"llm_model", "llm_provider", "reasoning_effort"})

_SPACE = re.compile(r"(?:\s+|/\*.*?\*/)*", re.DOTALL)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NODE_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")
_CLASS = re.compile(r"[A-Za-z0-9_\-]+")
_PROPERTY = re.compile(r"[a-z_][a-z0-9_.]*")
_WORD = re.compile(r"(?:[^\s;{}\"'/]|/(?!\*))+")
_NAME = re.compile(r"[A-Za-z0-9_.\-]+")
_QUOTED = {
    '"': re.compile(r'"((?:[^"\\]|\\.)*)"', re.DOTALL),
    "'": re.compile(r"'((?:[^'\\]|\\.)*)'", re.DOTALL),
}
_UNESCAPE = re.compile(r"\\(.)", re.DOTALL)


@dataclass(frozen=True)
class StyleRule:
    """One rule: its selector as written, its specificity and its declarations.

    ``specificity`` is 0 for ``*``, 1 for a shape, 2 for ``.class``, 3 for
    ``#id``; ``declarations`` maps property to value in the order written
    (a property declared twice keeps its last value).

    Example:
        >>> rule = parse_stylesheet("#plan { llm_model: gpt-5.2; }").rules[0]
        >>> (rule.selector, rule.specificity, dict(rule.declarations))
        ('#plan', 3, {'llm_model': 'gpt-5.2'})
    """

    selector: str
    specificity: int
    declarations: Mapping[str, str] = field(default_factory=dict)

    def matches(self, node_id: str, shape: str | None, classes: Sequence[str]) -> bool:
        """Whether this rule's selector selects a node with this id, shape and classes.

        Example:
            >>> StyleRule("Box", 1).matches("n", "box", [])
            True
        """
        if self.specificity == 0:
            return True
        if self.specificity == 1:
            return shape is not None and shape.casefold() == self.selector.casefold()
        if self.specificity == 2:
            return self.selector[1:] in classes
        return self.selector[1:] == node_id


@dataclass(frozen=True)
class Stylesheet:
    """A parsed model stylesheet: its rules in the order written.

    Example:
        >>> sheet = parse_stylesheet("* { llm_provider: openai; } box { llm_provider: anthropic; }")
        >>> sheet.properties_for("n", "box", ())
        {'llm_provider': 'anthropic'}
        >>> sheet.properties_for("n", "diamond", ())
        {'llm_provider': 'openai'}
    """

    rules: tuple[StyleRule, ...] = ()

    @cached_property
    def _by_specificity(self) -> tuple[StyleRule, ...]:
        # sorted() is stable, so rules of equal specificity keep their written order.
        return tuple(sorted(self.rules, key=lambda r: r.specificity))

    def properties_for(
        self, node_id: str, shape: str | None, classes: Sequence[str]
    ) -> dict[str, str]:
        """The properties the rules give a node, the most specific rule winning.

        Rules apply in order of specificity, then of writing, so a later rule
        of equal specificity overrides an earlier one (§8.3).

        Example:
            >>> parse_stylesheet(".a { x: 1; } .b { x: 2; }").properties_for("n", None, ["b", "a"])
            {'x': '2'}
        """
        merged: dict[str, str] = {}
        wanted = tuple(classes)
        for rule in self._by_specificity:
            if rule.matches(node_id, shape, wanted):
                merged.update(rule.declarations)
        return merged


class _Reader:
    """One pass over the stylesheet text; ``at`` only moves forward."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0
        self.rule = 0

    def fail(self, what: str, at: int | None = None) -> PlanFormatError:
        where = self.at if at is None else at
        snippet = self.text[where : where + 40]
        rule = f"rule {self.rule}, " if self.rule else ""
        end = "" if snippet else " (at the end of the stylesheet)"
        return PlanFormatError(
            f"{rule}character {where}: {what}{end}",
            field="model_stylesheet",
            value=snippet or None,
        )

    def skip_space(self) -> None:
        match = _SPACE.match(self.text, self.at)
        if match:
            self.at = match.end()
        if self.text.startswith("/*", self.at):
            raise self.fail("a comment '/*' is never closed with '*/'")

    def take(self, pattern: re.Pattern[str]) -> str | None:
        match = pattern.match(self.text, self.at)
        if not match or not match.group(0):
            return None
        self.at = match.end()
        return match.group(0)

    def expect(self, char: str, what: str) -> None:
        self.skip_space()
        if not self.text.startswith(char, self.at):
            raise self.fail(f"expected {char!r} {what}")
        self.at += 1

    def selector(self) -> StyleRule:
        start = self.at
        head = self.text[start : start + 1]
        if head == "*":
            self.at += 1
            return StyleRule("*", 0)
        if head in ("#", "."):
            self.at += 1
            name = self.take(_NODE_ID if head == "#" else _CLASS)
            if name is None:
                kind = "a node id" if head == "#" else "a class name"
                raise self.fail(f"expected {kind} after {head!r}", start)
            return StyleRule(head + name, 3 if head == "#" else 2)
        name = self.take(_IDENT)
        if name is None:
            raise self.fail("expected a selector ('*', a shape name, '#id' or '.class')")
        return StyleRule(name, 1)

    def value(self) -> str:
        self.skip_space()
        quote = self.text[self.at : self.at + 1]
        if quote in _QUOTED:
            match = _QUOTED[quote].match(self.text, self.at)
            if match is None:
                raise self.fail(f"a value opened with {quote} is never closed")
            self.at = match.end()
            return _UNESCAPE.sub(r"\1", match.group(1))
        word = self.take(_WORD)
        if word is None:
            raise self.fail("expected a value")
        return word

    def declarations(self) -> Mapping[str, str]:
        found: dict[str, str] = {}
        while True:
            self.skip_space()
            if self.text.startswith("}", self.at):
                self.at += 1
                # Read-only: a frozen rule must not change through its mapping.
                return MappingProxyType(found)
            if self.at >= len(self.text):
                raise self.fail("expected '}' to close the rule")
            start = self.at
            name = self.take(_NAME)
            if name is None or not _PROPERTY.fullmatch(name):
                raise self.fail(
                    "expected a property name of lowercase letters, digits, '_' or '.'", start
                )
            self.expect(":", f"after the property {name!r}")
            found[name] = self.value()  # declared twice: the last value wins, as in CSS
            self.skip_space()
            if self.text.startswith(";", self.at):
                self.at += 1
            elif not self.text.startswith("}", self.at):
                raise self.fail(f"expected ';' or '}}' after the value of {name!r}")

    def stylesheet(self) -> Stylesheet:
        rules: list[StyleRule] = []
        while True:
            self.skip_space()
            if self.at >= len(self.text):
                return Stylesheet(tuple(rules))
            self.rule += 1
            selector = self.selector()
            self.expect("{", f"after the selector {selector.selector!r}")
            rules.append(StyleRule(selector.selector, selector.specificity, self.declarations()))


def parse_stylesheet(text: str) -> Stylesheet:
    """Read a ``model_stylesheet`` text (§8.2) into a :class:`Stylesheet`.

    Raises :class:`~waygraph.errors.PlanFormatError` saying what is wrong,
    in which rule and at which character, quoting the text there.

    Example:
        >>> [r.selector for r in parse_stylesheet("* {a: 1} /* note */ #n {b: 'x y';}").rules]
        ['*', '#n']
    """
    if not isinstance(text, str):
        raise PlanFormatError("model_stylesheet must be text", field="model_stylesheet", value=text)
    if len(text) > MAX_STYLESHEET_CHARS:
        raise PlanFormatError(
            f"model_stylesheet is {len(text)} characters; at most {MAX_STYLESHEET_CHARS} are read",
            field="model_stylesheet",
            value=text[:40],
        )
    return _Reader(text).stylesheet()
