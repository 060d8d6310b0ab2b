"""Getting JSON out of a model's plain-text reply.

Models without structured output wrap JSON in prose or code fences and make
small mistakes. :func:`extract_json` tries, in order: the whole reply, each
fenced code block, then each ``{``/``[`` span in the text; each candidate is
parsed as it is and, failing that, after :func:`repair_json`. Nothing is ever
evaluated: repair is a character-level rewrite.

Example:
    >>> extract_json('Here is the plan:\\n```json\\n{"goal": "x", "steps": [1, 2,],}\\n```')
    {'goal': 'x', 'steps': [1, 2]}
"""

from __future__ import annotations

import json
import re
from typing import Any

from waygraph.errors import PlanParseError

__all__ = ["extract_json", "repair_json"]

_FENCE = re.compile(r"```[ \t]*[A-Za-z0-9_-]*[ \t]*\r?\n?(.*?)```", re.S)
_WORD = re.compile(r"[A-Za-z_$][A-Za-z0-9_$.\-]*")
_LITERALS = {
    "true": "true",
    "false": "false",
    "null": "null",
    "True": "true",
    "False": "false",
    "None": "null",
}
# Spans tried per reply: a reply with hundreds of braces in prose is not a plan.
_MAX_SPANS = 20


def extract_json(text: str) -> Any:
    """Parse the JSON value in ``text``, repairing common mistakes.

    Handles text around the JSON, fenced code blocks, trailing commas,
    comments, single quotes, Python literals (True/None), unquoted keys,
    missing commas between objects and output cut off mid-way.
    Raises :class:`PlanParseError` when nothing usable is found.

    Example:
        >>> extract_json("Sure! {goal: 'x', 'steps': [],} Hope that helps.")
        {'goal': 'x', 'steps': []}
    """
    if not text or not text.strip():
        raise PlanParseError("the model's reply is empty; expected a JSON plan")
    for candidate in _candidates(text):
        try:
            return json.loads(candidate)
        except ValueError:
            pass
        # Only what looks like an object or array is repaired: prose "repaired"
        # into a JSON string would hide that there is no plan at all.
        if candidate[:1] in "{[":
            try:
                return json.loads(repair_json(candidate))
            except ValueError:
                continue
    shown = " ".join(text.split())
    if len(shown) > 80:
        shown = shown[:77] + "..."
    raise PlanParseError(f"no JSON object could be read from the model's reply: {shown!r}")


def _candidates(text: str) -> list[str]:
    found = [text.strip()]
    found += [block.strip() for block in _FENCE.findall(text) if block.strip()]
    starts = [i for i, c in enumerate(text) if c in "{["][:_MAX_SPANS]
    found += [_span(text, i) for i in starts]
    # First occurrence of each, in order.
    return list(dict.fromkeys(found))


def _span(text: str, start: int) -> str:
    """The balanced ``{...}``/``[...]`` from ``start`` (to the end when cut off)."""
    depth = 0
    quote: str | None = None
    i = start
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
        i += 1
    return text[start:]


def repair_json(text: str) -> str:
    """Rewrite almost-JSON into JSON (see :func:`extract_json` for what is fixed).

    Example:
        >>> repair_json("{'a': True, b: [1, 2,],}")
        '{"a": true, "b": [1, 2]}'
    """
    out: list[str] = []
    closers: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            if _value_starts(out, closers):
                out.append(",")
            literal, i = _string(text, i)
            out.append(literal)
            continue
        if text.startswith("//", i) or c == "#":
            i = _skip_to(text, i, "\n")
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        if c in "{[":
            if _value_starts(out, closers):
                out.append(",")
            closers.append("}" if c == "{" else "]")
            out.append(c)
        elif c in "}]":
            _drop_trailing_comma(out)
            if closers:
                closers.pop()
            out.append(c)
        elif c.isalpha() or c in "_$":
            word = _WORD.match(text, i)
            assert word is not None  # the first character always matches
            token = word.group()
            if _value_starts(out, closers):
                out.append(",")
            out.append(_LITERALS.get(token, json.dumps(token)))
            i = word.end()
            continue
        else:
            out.append(c)
        i += 1
    # A reply cut off mid-way: finish the open value and close every container.
    _drop_trailing_comma(out)
    if _last(out) == ":":
        out.append(" null")
    out.extend(reversed(closers))
    return "".join(out)


def _string(text: str, i: int) -> tuple[str, int]:
    """Read the string starting at ``text[i]`` and return it as JSON and the next index."""
    quote = text[i]
    j = i + 1
    chars: list[str] = []
    while j < len(text):
        ch = text[j]
        if ch == "\\" and j + 1 < len(text):
            nxt = text[j + 1]
            # \' is valid in single-quoted strings but not in JSON.
            chars.append("'" if nxt == "'" else ch + nxt)
            j += 2
            continue
        if ch == quote:
            j += 1
            break
        if ch == "\n":
            chars.append("\\n")
        elif ch == '"':
            chars.append('\\"')
        else:
            chars.append(ch)
        j += 1
    return '"' + "".join(chars) + '"', j


def _skip_to(text: str, i: int, mark: str) -> int:
    end = text.find(mark, i)
    return len(text) if end < 0 else end


def _last(out: list[str]) -> str:
    """The last non-blank character written so far."""
    for piece in reversed(out):
        stripped = piece.rstrip()
        if stripped:
            return stripped[-1]
    return ""


def _value_starts(out: list[str], closers: list[str]) -> bool:
    """True when a new value follows another one without the comma between them."""
    last = _last(out)
    return bool(closers) and (last in ('"', "}", "]") or last.isalnum())


def _drop_trailing_comma(out: list[str]) -> None:
    for k in range(len(out) - 1, -1, -1):
        stripped = out[k].rstrip()
        if not stripped:
            continue
        if stripped.endswith(","):
            out[k] = stripped[:-1]
        return
