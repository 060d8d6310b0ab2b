"""DOT's lexical syntax, both ways: text into tokens, and a string into a DOT ID.

The reader (:mod:`waygraph.formats._dot_statements`) reads tokens from
:func:`tokenize`; the writer (:mod:`waygraph.formats._dot_writer`) spells
names and values with :func:`quote_id`. Both sides use the same keywords and
escapes, so what the writer leaves bare the reader reads back as the same text.

The condition strings inside ``when`` and ``condition`` attributes are another
language with its own lexer, :mod:`waygraph.predicates`: DOT sees them as one
quoted ID.

The Attractor grammar adds two things to Graphviz's IDs: attribute names may be
dotted (``human.default_choice``), and a value right after ``=`` may be a bare
run such as ``900s``, ``gpt-4.1-mini`` or ``claude-3.5:latest``. Values stay
text; the reader types them.

Example:
    >>> [t.text for t in tokenize('a -> "b c" [x=1, t=20m]', None)]
    ['a', '->', 'b c', '[', 'x', '=', '1', ',', 't', '=', '20m', ']', '']
    >>> [t.text for t in tokenize("human.default_choice=gpt-4.1:x", None)]
    ['human.default_choice', '=', 'gpt-4.1:x', '']
    >>> quote_id("b c"), quote_id("node"), quote_id("plain_id")
    ('"b c"', '"node"', 'plain_id')
"""

from __future__ import annotations

import re
from typing import NamedTuple

from waygraph.errors import PlanSyntaxError

#: DOT keywords; case-insensitive, so an ID spelling one must be quoted.
KEYWORDS = frozenset({"strict", "graph", "digraph", "node", "edge", "subgraph"})
#: An ID DOT reads without quotes (the ASCII subset the writer leaves bare).
BARE_ID_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

_NAME_CHARS = r"A-Za-z0-9_\u0080-\U0010ffff"
_NAME = rf"[A-Za-z_\u0080-\U0010ffff][{_NAME_CHARS}]*+"
# Matched once at each position; `bad` catches any character no token starts with.
# A name may be dotted (`human.default_choice`); `dangling` catches `human.` alone.
# Strings use possessive repeats so an unclosed quote fails in linear time.
_TOKEN_RE = re.compile(
    rf"""
      (?P<space>[ \t\n\r\f\v]+)
    | (?P<comment>//[^\n]*|\#[^\n]*|/\*.*?\*/)
    | (?P<punct>->|--|[{{}}\[\]=;,:])
    | (?P<number>-?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?))(?P<glued>[{_NAME_CHARS}])?
    | (?P<name>{_NAME}(?:\.{_NAME})*+)(?P<dangling>\.)?
    | (?P<string>"(?:[^"\\]++|\\.)*+")
    | (?P<bad>.)
    """,
    re.VERBOSE | re.DOTALL,
)
# Tried first right after '=': BareValue, Duration and numbers as one text run.
# A '-' is part of it unless it starts '->' or '--', so `a=x->b` stays an edge.
# Each character is taken once (possessive), so a long run is linear.
_VALUE_RE = re.compile(
    rf"(?:-?[0-9]|-?\.[0-9]|[A-Za-z_\u0080-\U0010ffff])(?:[{_NAME_CHARS}.:]|-(?![->]))*+"
)
_BARE_NUMBER_RE = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")
_UNESCAPE_RE = re.compile(r"\\(.)", re.DOTALL)
_UNESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "\n": ""}
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


class Token(NamedTuple):
    """One DOT token and the line it starts on."""

    kind: str  # "id" (bare name, number or quoted string), "punct", "end"
    text: str  # the value: for quoted strings with escapes resolved
    line: int
    quoted: bool = False

    def keyword(self) -> str | None:
        """The DOT keyword this token is, if any (keywords are case-insensitive)."""
        if self.kind == "id" and not self.quoted and self.text.lower() in KEYWORDS:
            return self.text.lower()
        return None

    def shown(self) -> str:
        return "the end of the file" if self.kind == "end" else repr(self.text)


def tokenize(text: str, file: str | None) -> list[Token]:
    """The tokens of ``text``, ending with one ``end`` token.

    Raises :class:`~waygraph.errors.PlanSyntaxError` naming ``file`` and the
    line for a character no token starts with.
    """
    tokens: list[Token] = []
    append = tokens.append
    line = 1
    pos, size = 0, len(text)
    after_equals = False  # the next token is a value: bare runs like 20m are allowed
    while pos < size:
        match = _VALUE_RE.match(text, pos) if after_equals else None
        if match is not None:
            append(Token("id", match.group(), line))
            pos, after_equals = match.end(), False
            continue
        match = _TOKEN_RE.match(text, pos)
        assert match is not None  # `bad` matches any one character
        pos = match.end()
        kind, raw = match.lastgroup, match.group()
        if kind not in ("space", "comment"):
            after_equals = raw == "=" and kind == "punct"
        if kind == "name" or kind == "number":
            append(Token("id", raw, line))
        elif kind == "punct":
            append(Token("punct", raw, line))
        elif kind == "string":
            append(Token("id", _UNESCAPE_RE.sub(_unescape_one, raw[1:-1]), line, True))
            line += raw.count("\n")
        elif kind == "glued":
            raise PlanSyntaxError(
                f'a name cannot start with a digit; quote it: "{raw}..."', file=file, line=line
            )
        elif kind == "bad" or kind == "dangling":
            raise PlanSyntaxError(_bad_character(text, match.end() - 1), file=file, line=line)
        else:  # space and comments
            line += raw.count("\n")
    append(Token("end", "", line))
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
    if char == ".":
        before = re.search(r"[\w.]*$", text[max(0, pos - 80) : pos])
        name = before.group() if before else ""
        return (
            f"unexpected '.' after {name!r}: each part of a dotted attribute name starts"
            " with a letter or '_' (like human.default_choice)"
            if name
            else "unexpected character '.'"
        )
    return f"unexpected character {char!r}"


def _unescape_one(match: re.Match[str]) -> str:
    char = match.group(1)
    # Unknown escapes (Graphviz's \l, \N ...) are kept as written.
    return _UNESCAPES.get(char, "\\" + char)


def quote_id(text: str) -> str:
    """A DOT ID: bare when it is a plain identifier or number, else a quoted string."""
    if (BARE_ID_RE.fullmatch(text) and text.lower() not in KEYWORDS) or _BARE_NUMBER_RE.fullmatch(
        text
    ):
        return text
    return '"' + "".join(_ESCAPES.get(c, c) for c in text) + '"'
