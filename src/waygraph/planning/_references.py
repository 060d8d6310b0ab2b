"""``$step_id`` / ``${step_id}`` references to earlier results in step parameters.

A parameter whose whole value is one reference receives the referenced
result as it is (any type); a reference inside longer text is replaced by the
result's text (JSON for lists, dicts, numbers). ``${id}`` always names a step;
``$id`` is a reference only when ``id`` is the id of a known step (the
longest one that matches), so ``"costs $5"`` stays text unless a step is
called ``5``. Nothing in a parameter is ever evaluated.

Example:
    >>> substitute({"text": "Summary of ${fetch}", "data": "$fetch"},
    ...            {"fetch": [1, 2]}, known={"fetch"})
    {'text': 'Summary of [1, 2]', 'data': [1, 2]}
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any

__all__ = ["find_references", "rename_reference", "substitute"]

_REF = re.compile(r"\$\{([^}]*)\}|\$([A-Za-z0-9_][A-Za-z0-9_.\-]*)")
_WORD_CHAR = re.compile(r"[A-Za-z0-9_]")


def _bare_id(candidate: str, known: Collection[str]) -> str | None:
    """The longest known id that ``candidate`` starts with, ending at a word boundary."""
    for end in range(len(candidate), 0, -1):
        prefix = candidate[:end]
        if prefix in known and (end == len(candidate) or not _WORD_CHAR.match(candidate[end])):
            return prefix
    return None


def _scan(text: str, known: Collection[str], on_ref: Callable[[str, str], str]) -> str:
    """Rewrite every reference in ``text`` with ``on_ref(step_id, original)``."""
    if "$" not in text:  # most parameters: no regex pass at all
        return text

    def replace(match: re.Match[str]) -> str:
        braced, bare = match.group(1), match.group(2)
        if braced is not None:
            return on_ref(braced.strip(), match.group(0))
        step_id = _bare_id(bare, known)
        if step_id is None:
            return match.group(0)
        return on_ref(step_id, "$" + step_id) + bare[len(step_id) :]

    return _REF.sub(replace, text)


def _walk(value: Any, on_text: Callable[[str], Any]) -> Any:
    if isinstance(value, str):
        return on_text(value)
    if isinstance(value, Mapping):
        return {k: _walk(v, on_text) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_walk(v, on_text) for v in value)
    return value


def find_references(value: Any, known: Collection[str]) -> set[str]:
    """Step ids referenced anywhere in ``value``; ``${x}`` counts even when unknown.

    Example:
        >>> sorted(find_references({"a": ["$s1 and ${s9}"], "b": "$5"}, known={"s1"}))
        ['s1', 's9']
    """
    found: set[str] = set()

    def note(step_id: str, original: str) -> str:
        found.add(step_id)
        return original

    for text in _texts(value):
        _scan(text, known, note)
    return found


def _texts(value: Any) -> Iterator[str]:
    """Every string in ``value`` (what :func:`_walk` visits, without building a copy)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _texts(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _texts(v)


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def substitute(value: Any, results: Mapping[str, Any], known: Collection[str]) -> Any:
    """Replace references in ``value`` with entries of ``results``.

    A reference to a step without a result (never run, or skipped) becomes
    ``None`` as a whole value and an empty string inside text.
    """

    def text_of(step_id: str, _original: str) -> str:
        found = results.get(step_id)
        return "" if found is None else _as_text(found)

    def on_text(text: str) -> Any:
        if "$" not in text:
            return text
        whole = _REF.fullmatch(text)
        if whole is not None:
            if whole.group(1) is not None:
                return results.get(whole.group(1).strip())
            if whole.group(2) in known:
                return results.get(whole.group(2))
        return _scan(text, known, text_of)

    return _walk(value, on_text)


def rename_reference(value: Any, old: str, new: str, known: Collection[str]) -> Any:
    """Point references to step ``old`` at step ``new`` (plan revision).

    Example:
        >>> rename_reference({"x": "$a, ${a}"}, "a", "a2", known={"a"})
        {'x': '${a2}, ${a2}'}
    """

    def on_ref(step_id: str, original: str) -> str:
        return "${" + new + "}" if step_id == old else original

    return _walk(value, lambda text: _scan(text, known, on_ref))
