"""Condition strings as data: parse, format and evaluate ``compare``/``truthy`` trees.

State machines and DOT edges write conditions as short strings such as
``data.status == 'ok' && results.search.count >= 2``. This module parses them,
with a recursive-descent parser of its own, into the one predicate tree of
:class:`waygraph.model.Verify`; nothing is ever passed to ``eval``, because
plans may be written by a model.

Grammar (lowest precedence first)::

    condition  := or
    or         := and (("||" | "or") and)*                 -> type "any"
    and        := unary (("&&" | "and") unary)*            -> type "all"
    unary      := ("!" | "not") unary | primary            -> type "not"
    primary    := "(" or ")" | path [op literal]           -> "compare", else "truthy"
    op         := "==" | "!=" | ">" | ">=" | "<" | "<=" | "in" | "not" "in" | "contains"
    literal    := int | float | 'text' | "text" | true | false | null | "[" literal, ... "]"
    path       := name ("." (name | digits))*              (True/False/None also work)

A chain ``a && b && c`` is one ``all`` with three checks; parentheses keep
their own node, so ``parse_condition(format_condition(v)) == v``.

Example:
    >>> v = parse_condition("data.status == 'ok' && !data.error")
    >>> v.type, [c.type for c in v.checks]
    ('all', ['compare', 'not'])
    >>> evaluate_data(v, {"data": {"status": "ok"}})
    True
    >>> format_condition(v)
    "data.status == 'ok' && !data.error"
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from waygraph.errors import PlanFormatError
from waygraph.model import CompareOp, Verify
from waygraph.verify_types import BUILTIN_VERIFY_SPECS

__all__ = [
    "DATA_VERIFY_TYPES",
    "MAX_CONDITION_CHARS",
    "MAX_CONDITION_DEPTH",
    "evaluate_data",
    "format_condition",
    "parse_condition",
    "parse_literal",
]

#: Conditions longer than this are refused: a routing condition is a line, and
#: the bound keeps parsing cheap on hostile input.
MAX_CONDITION_CHARS = 4096
#: Nesting bound (parentheses, ``!``/``not`` and list brackets each add one),
#: so deep input is refused before Python's recursion limit is anywhere near.
MAX_CONDITION_DEPTH = 64
#: Verify types that have a condition-string form and are evaluated over data
#: (their specs say ``over_data``).
DATA_VERIFY_TYPES: tuple[str, ...] = tuple(s.name for s in BUILTIN_VERIFY_SPECS if s.over_data)

_NAME = r"[^\W\d]\w*"
_PATH_RE = re.compile(rf"{_NAME}(?:\.(?:{_NAME}|[0-9]+))*")
_NUMBER_RE = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_SPACE_RE = re.compile(r"\s+")
# Longest operators first so ">=" is never read as ">" then "=".
_SYMBOLS = ("&&", "||", "==", "!=", ">=", "<=", ">", "<", "!", "(", ")", "[", "]", ",")
_LITERAL_WORDS: dict[str, Any] = {
    "true": True,
    "True": True,
    "false": False,
    "False": False,
    "null": None,
    "None": None,
}
_KEYWORDS = frozenset({"and", "or", "not", "in", "contains", *_LITERAL_WORDS})
_COMPARE_OPS = ("==", "!=", ">", ">=", "<", "<=", "in", "not in", "contains")
_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "r": "\r", "t": "\t", "0": "\0"}
_FORMAT_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


# ---------------------------------------------------------------- tokens


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "path", "word" (keyword), "number", "string", "symbol", "end"
    text: str
    pos: int
    value: Any = None


def _fail(text: str, pos: int, message: str) -> PlanFormatError:
    return PlanFormatError(f"bad condition at column {pos + 1}: {message}", value=text)


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos, end = 0, len(text)
    while pos < end:
        space = _SPACE_RE.match(text, pos)
        if space:
            pos = space.end()
            continue
        char = text[pos]
        number = _NUMBER_RE.match(text, pos) if char in "-0123456789" else None
        if number:
            tokens.append(_number_token(text, pos, number.group()))
            pos = number.end()
            continue
        path = _PATH_RE.match(text, pos)
        if path:
            word = path.group()
            tokens.append(_Token("word" if word in _KEYWORDS else "path", word, pos))
            pos = path.end()
            continue
        if char in "'\"":
            token = _string_token(text, pos)
            tokens.append(token)
            pos += len(token.text)
            continue
        symbol = next((s for s in _SYMBOLS if text.startswith(s, pos)), None)
        if symbol:
            tokens.append(_Token("symbol", symbol, pos))
            pos += len(symbol)
            continue
        raise _fail(text, pos, _unexpected_char_hint(char))
    tokens.append(_Token("end", "", end))
    return tokens


def _unexpected_char_hint(char: str) -> str:
    if char == "=":
        return "unexpected '='; use '==' to compare"
    if char in "&|":
        return (
            f"unexpected {char!r}; use '{char * 2}' (or the word {'and' if char == '&' else 'or'})"
        )
    return f"unexpected character {char!r}"


def _number_token(text: str, pos: int, raw: str) -> _Token:
    is_float = any(c in raw for c in ".eE")
    try:
        value: int | float = float(raw) if is_float else int(raw)
    except ValueError:  # int() refuses absurdly long digit strings
        raise _fail(text, pos, "number too long") from None
    return _Token("number", raw, pos, value)


def _string_token(text: str, start: int) -> _Token:
    quote = text[start]
    out: list[str] = []
    pos = start + 1
    while pos < len(text):
        char = text[pos]
        if char == quote:
            return _Token("string", text[start : pos + 1], start, "".join(out))
        if char != "\\":
            out.append(char)
            pos += 1
            continue
        escape = text[pos + 1 : pos + 2]
        if escape in _ESCAPES:
            out.append(_ESCAPES[escape])
            pos += 2
        elif escape in ("u", "U"):
            width = 4 if escape == "u" else 8
            digits = text[pos + 2 : pos + 2 + width]
            if len(digits) != width or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise _fail(text, pos, f"'\\{escape}' needs {width} hex digits")
            code = int(digits, 16)
            if code > 0x10FFFF:
                raise _fail(text, pos, f"'\\{escape}{digits}' is not a Unicode code point")
            out.append(chr(code))
            pos += 2 + width
        else:
            shown = escape or "end of text"
            raise _fail(text, pos, f"unknown escape '\\{shown}' in a string")
    raise _fail(text, start, "string is not closed")


# ---------------------------------------------------------------- parsing


def parse_condition(text: str) -> Verify:
    """Parse a condition string into a :class:`~waygraph.model.Verify` tree.

    ``&&``/``and`` become ``all``, ``||``/``or`` become ``any``, ``!``/``not``
    becomes ``not``, ``path op literal`` becomes ``compare`` and a bare path
    becomes ``truthy``. Raises :class:`~waygraph.errors.PlanFormatError` naming
    the column and quoting the text; callers add the file, plan and edge with
    ``err.located(...)``.

    Example:
        >>> v = parse_condition("data.kind in ['x', 'y'] || not data.ok")
        >>> v.type, v.checks[0].op, v.checks[0].value
        ('any', 'in', ['x', 'y'])
    """
    if not isinstance(text, str):
        raise PlanFormatError("a condition must be a string", value=text)
    if len(text) > MAX_CONDITION_CHARS:
        raise PlanFormatError(
            f"condition is longer than {MAX_CONDITION_CHARS} characters", value=text
        )
    if not text.strip():
        raise PlanFormatError("condition is empty", value=text)
    return _Parser(text, _tokenize(text)).parse()


def parse_literal(text: str) -> Any:
    """Parse one literal of the condition language (number, string, bool, null, list).

    Example:
        >>> parse_literal("['a', 2, true]")
        ['a', 2, True]
    """
    if not isinstance(text, str):
        raise PlanFormatError("a literal must be a string", value=text)
    if len(text) > MAX_CONDITION_CHARS:
        raise PlanFormatError(
            f"literal is longer than {MAX_CONDITION_CHARS} characters", value=text
        )
    parser = _Parser(text, _tokenize(text))
    value = parser.literal(0)
    parser.expect_end()
    return value


class _Parser:
    """Recursive descent over the token list; ``depth`` counts nesting."""

    def __init__(self, text: str, tokens: list[_Token]) -> None:
        self.text = text
        self.tokens = tokens
        self.i = 0

    # -- helpers
    @property
    def peek(self) -> _Token:
        return self.tokens[self.i]

    def advance(self) -> _Token:
        token = self.tokens[self.i]
        if token.kind != "end":
            self.i += 1
        return token

    def accept(self, *texts: str) -> _Token | None:
        token = self.peek
        if token.kind in ("symbol", "word") and token.text in texts:
            return self.advance()
        return None

    def error(self, token: _Token, message: str) -> PlanFormatError:
        return _fail(self.text, token.pos, message)

    def deeper(self, depth: int, token: _Token) -> int:
        if depth + 1 > MAX_CONDITION_DEPTH:
            raise self.error(token, f"nested more than {MAX_CONDITION_DEPTH} levels deep")
        return depth + 1

    def expect_end(self) -> None:
        token = self.peek
        if token.kind != "end":
            hint = " (join conditions with && or ||)" if token.kind == "path" else ""
            raise self.error(token, f"unexpected {_shown(token)}{hint}")

    # -- grammar
    def parse(self) -> Verify:
        verify = self.or_(0)
        self.expect_end()
        return verify

    def or_(self, depth: int) -> Verify:
        checks = [self.and_(depth)]
        while self.accept("||", "or"):
            checks.append(self.and_(depth))
        return checks[0] if len(checks) == 1 else Verify(type="any", checks=tuple(checks))

    def and_(self, depth: int) -> Verify:
        checks = [self.unary(depth)]
        while self.accept("&&", "and"):
            checks.append(self.unary(depth))
        return checks[0] if len(checks) == 1 else Verify(type="all", checks=tuple(checks))

    def unary(self, depth: int) -> Verify:
        token = self.accept("!", "not")
        if token:
            inner = self.unary(self.deeper(depth, token))
            return Verify(type="not", checks=(inner,))
        return self.primary(depth)

    def primary(self, depth: int) -> Verify:
        token = self.peek
        if self.accept("("):
            inner = self.or_(self.deeper(depth, token))
            if not self.accept(")"):
                opened = f"the '(' at column {token.pos + 1}"
                raise self.error(self.peek, f"expected ')' to close {opened}")
            return inner
        if token.kind != "path":
            raise self.error(token, f"expected a field path, '(' or '!', not {_shown(token)}")
        self.advance()
        op = self.operator()
        if op is None:
            return Verify(type="truthy", field=token.text)
        value = self.literal(depth, after=op)
        return Verify(type="compare", field=token.text, op=op, value=value)

    def operator(self) -> CompareOp | None:
        token = self.peek
        if token.kind == "symbol" and token.text in _COMPARE_OPS:
            return cast(CompareOp, self.advance().text)
        if token.kind == "word" and token.text in ("in", "contains"):
            return cast(CompareOp, self.advance().text)
        if token.kind == "word" and token.text == "not":
            following = self.tokens[self.i + 1]
            if following.kind == "word" and following.text == "in":
                self.i += 2
                return "not in"
            raise self.error(following, f"expected 'in' after 'not', not {_shown(following)}")
        return None

    def literal(self, depth: int, *, after: str | None = None) -> Any:
        token = self.peek
        if token.kind in ("number", "string"):
            self.advance()
            return token.value
        if token.kind == "word" and token.text in _LITERAL_WORDS:
            self.advance()
            return _LITERAL_WORDS[token.text]
        if self.accept("["):
            inner_depth = self.deeper(depth, token)
            items: list[Any] = []
            while not self.accept("]"):
                items.append(self.literal(inner_depth))
                if not self.accept(","):
                    if self.accept("]"):
                        break
                    raise self.error(self.peek, f"expected ',' or ']', not {_shown(self.peek)}")
            return items
        where = f" after {after!r}" if after else ""
        hint = "; quote text values: 'like this'" if token.kind == "path" else ""
        raise self.error(token, f"expected a value{where}, not {_shown(token)}{hint}")


def _shown(token: _Token) -> str:
    return "the end of the condition" if token.kind == "end" else repr(token.text)


# ---------------------------------------------------------------- formatting


def format_condition(verify: Verify) -> str:
    """Write a ``compare``/``truthy``/``all``/``any``/``not`` tree as a condition string.

    The result parses back to an equal tree. Raises :class:`ValueError` for
    trees with no exact string form: output-based checks (``output_contains``,
    ``regex``, ...), ``all``/``any`` with fewer than two checks, field paths or
    values the language cannot spell (a dict, NaN), or trees beyond the
    parser's length and depth bounds.

    Example:
        >>> format_condition(parse_condition("a || (b and c.0 >= 2.5)"))
        'a || (b && c.0 >= 2.5)'
    """
    text = _format(verify, 0)
    if len(text) > MAX_CONDITION_CHARS:
        raise ValueError(f"the condition would be longer than {MAX_CONDITION_CHARS} characters")
    return text


def _format(v: Verify, depth: int) -> str:
    if v.type == "compare":
        _only(v, "field", "op", "value")
        if v.op not in _COMPARE_OPS:
            raise ValueError(f"a compare needs an operator, one of {', '.join(_COMPARE_OPS)}")
        return f"{_format_path(v.field)} {v.op} {_format_literal(v.value, depth)}"
    if v.type == "truthy":
        _only(v, "field")
        return _format_path(v.field)
    if v.type == "not":
        _only(v, "checks")
        if v.checks is None or len(v.checks) != 1:
            raise ValueError("a 'not' needs exactly one check")
        return "!" + _format_operand(v.checks[0], _deeper(depth), ("all", "any"))
    if v.type in ("all", "any"):
        _only(v, "checks")
        if v.checks is None or len(v.checks) < 2:
            raise ValueError(
                f"an {v.type!r} with fewer than two checks has no condition-string form"
            )
        joiner = " && " if v.type == "all" else " || "
        # Every nested group is parenthesised: `a || b && c` would parse the same,
        # but the parentheses say what is meant and keep nested nodes apart.
        return joiner.join(_format_operand(c, depth, ("all", "any")) for c in v.checks)
    raise ValueError(
        f"verify type {v.type!r} is checked against tool output and has no condition-string form"
    )


def _format_operand(v: Verify, depth: int, grouped: tuple[str, ...]) -> str:
    if v.type in grouped:
        return "(" + _format(v, _deeper(depth)) + ")"
    return _format(v, depth)


def _deeper(depth: int) -> int:
    if depth + 1 > MAX_CONDITION_DEPTH:
        raise ValueError(f"the condition is nested more than {MAX_CONDITION_DEPTH} levels deep")
    return depth + 1


def _only(v: Verify, *allowed: str) -> None:
    for name in ("value", "checks", "field", "op", "flags"):
        if name not in allowed and getattr(v, name) is not None:
            raise ValueError(f"a {v.type!r} check with {name!r} set has no condition-string form")


def _format_path(field: str | None) -> str:
    if field is None or not _PATH_RE.fullmatch(field) or field in _KEYWORDS:
        raise ValueError(f"{field!r} is not a field path like 'data.items.0.name'")
    return field


def _format_literal(value: Any, depth: int) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} has no condition-string form")
        return repr(value)
    if isinstance(value, str):
        return "'" + "".join(_format_char(c) for c in value) + "'"
    if isinstance(value, list | tuple):
        inner = _deeper(depth)
        return "[" + ", ".join(_format_literal(item, inner) for item in value) + "]"
    raise ValueError(f"a {type(value).__name__} value has no condition-string form")


def _format_char(char: str) -> str:
    if char in _FORMAT_ESCAPES:
        return _FORMAT_ESCAPES[char]
    if char.isprintable():
        return char
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


# ---------------------------------------------------------------- evaluation

_MISSING = object()


def evaluate_data(verify: Verify, data: Mapping[str, Any]) -> bool:
    """Evaluate a ``compare``/``truthy``/``all``/``any``/``not`` tree over nested data.

    Field paths are dotted: mapping keys, and list indexes written as numbers
    (``results.0.name``). A missing path is never truthy and compares False,
    except ``!=``, which is True. Values of different types (``'a' > 1``,
    ``true == 1``) compare False instead of raising. Output-based verify types
    are checked against tool output by :func:`waygraph.verify.check` and raise
    :class:`ValueError` here.

    Example:
        >>> evaluate_data(parse_condition("data.items.1 == 'b'"), {"data": {"items": ["a", "b"]}})
        True
        >>> evaluate_data(parse_condition("data.count > 0"), {"data": {"count": "3"}})
        False
    """
    return _evaluate(verify, data, 0)


def _evaluate(v: Verify, data: Mapping[str, Any], depth: int) -> bool:
    if depth > 4 * MAX_CONDITION_DEPTH:
        # Trees from JSON files are not bounded by the parser; stay clear of
        # RecursionError with a message that says what is wrong.
        raise ValueError("the condition is nested too deeply to evaluate")
    kind = v.type
    if kind == "all":
        return all(_evaluate(c, data, depth + 1) for c in v.checks or ())
    if kind == "any":
        return any(_evaluate(c, data, depth + 1) for c in v.checks or ())
    if kind == "not":
        # Same rule as waygraph.verify: a malformed `not` never passes.
        children = v.checks or ()
        return len(children) == 1 and not _evaluate(children[0], data, depth + 1)
    if kind == "truthy":
        found = _resolve(data, v.field)
        return found is not _MISSING and bool(found)
    if kind == "compare":
        if v.op is None:
            raise ValueError(f"compare on {v.field!r} has no 'op'")
        found = _resolve(data, v.field)
        if found is _MISSING:
            return v.op == "!="
        return _compare(v.op, found, v.value)
    raise ValueError(
        f"verify type {kind!r} is checked against tool output, not data; "
        "use waygraph.verify.check for it"
    )


def _resolve(data: Any, path: str | None) -> Any:
    if not path:
        return _MISSING
    current = data
    for part in path.split("."):
        if isinstance(current, Mapping):
            try:
                current = current[part]
            except (KeyError, TypeError):
                return _MISSING
        elif isinstance(current, list | tuple) and part.isascii() and part.isdigit():
            index = int(part)
            if index >= len(current):
                return _MISSING
            current = current[index]
        else:
            return _MISSING
    return current


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _equal(left: Any, right: Any) -> bool:
    # bool is an int in Python; in data it means something else, so true != 1.
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left is right
    if _is_number(left) and _is_number(right):
        return bool(left == right)
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        return len(left) == len(right) and all(map(_equal, left, right))
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        return left.keys() == right.keys() and all(_equal(left[k], right[k]) for k in left)
    if type(left) is not type(right):
        return False
    try:
        return bool(left == right)
    except Exception:  # a caller's odd object must not break routing
        return False


def _ordered(op: str, left: Any, right: Any) -> bool:
    if not (
        (_is_number(left) and _is_number(right))
        or (isinstance(left, str) and isinstance(right, str))
    ):
        return False
    if op == ">":
        return bool(left > right)
    if op == ">=":
        return bool(left >= right)
    if op == "<":
        return bool(left < right)
    return bool(left <= right)


def _member(item: Any, container: Any) -> bool | None:
    """Whether ``item`` is in ``container``; None when the types cannot be compared."""
    if isinstance(container, str):
        return item in container if isinstance(item, str) else None
    if isinstance(container, list | tuple):
        return any(_equal(item, x) for x in container)
    if isinstance(container, Mapping):
        try:
            return item in container
        except TypeError:
            return None
    return None


def _compare(op: str, left: Any, right: Any) -> bool:
    if op == "==":
        return _equal(left, right)
    if op == "!=":
        return not _equal(left, right)
    if op in (">", ">=", "<", "<="):
        return _ordered(op, left, right)
    if op == "in":
        return _member(left, right) is True
    if op == "not in":
        return _member(left, right) is False
    if op == "contains":
        return _member(right, left) is True
    raise ValueError(f"unknown compare operator {op!r}")
