"""A guided run's context: the key-value data tool results set (§5.1), bounded.

A tool result that prints ``{"context_updates": {...}}`` as its last line
(:func:`waygraph.verify_types.evidence.context_updates_of`) merges those keys into
``Run.context``; edge conditions such as ``context.tests_passed=true`` read
them (:mod:`waygraph.engine.choice`). The context is bounded so a run record
stays small: at most :data:`MAX_CONTEXT_KEYS` keys and
:data:`MAX_CONTEXT_BYTES` of JSON in all; an update past either bound is
refused, key by key, and the refusal recorded.

Values are kept read-only (mappings as read-only mappings, lists as tuples),
like everything else a run holds; :func:`thawed` gives them back as JSON data.

Example:
    >>> merged = merge({"a": 1}, {"b": [1, 2]})
    >>> dict(merged.context), merged.keys, merged.refused
    ({'a': 1, 'b': (1, 2)}, ['b'], [])
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

__all__ = ["MAX_CONTEXT_BYTES", "MAX_CONTEXT_KEYS", "Merged", "frozen", "merge", "thawed"]

#: Keys a run's context may hold.
MAX_CONTEXT_KEYS = 256
#: Characters of JSON (keys and values) a run's context may hold in all.
MAX_CONTEXT_BYTES = 64 * 1024
#: Characters of one key.
MAX_KEY_CHARS = 200


class Merged(NamedTuple):
    """What :func:`merge` did: the new context, the keys set and those refused, and why."""

    context: Mapping[str, Any]
    keys: list[str]
    refused: list[str]
    reason: str | None


def frozen(value: Any) -> Any:
    """``value`` (JSON data) made read-only: mappings as read-only mappings, lists as tuples."""
    if isinstance(value, Mapping):
        return MappingProxyType({str(k): frozen(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(frozen(v) for v in value)
    return value


def thawed(value: Any) -> Any:
    """``value`` as plain JSON data again (the inverse of :func:`frozen`)."""
    kind = type(value)
    # Every turn thaws the run's context: the types it holds are told apart
    # without an ABC check where the type says it.
    if kind is str or kind is int or kind is bool or kind is float or value is None:
        return value
    if kind is MappingProxyType or isinstance(value, Mapping):
        return {k: thawed(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [thawed(v) for v in value]
    return value


def _size(key: str, value: Any) -> int | None:
    try:
        return len(key) + len(json.dumps(thawed(value), ensure_ascii=False))
    except (TypeError, ValueError, RecursionError):
        return None


def merge(context: Mapping[str, Any], updates: Mapping[str, Any]) -> Merged:
    """``context`` with ``updates`` merged in, within the bounds (see the module docstring).

    Example:
        >>> merge({}, {"x" * 300: 1}).reason
        'a key is longer than 200 characters'
    """
    new = dict(context)
    total = sum(_size(k, v) or 0 for k, v in new.items())
    keys: list[str] = []
    refused: list[str] = []
    reason: str | None = None
    for key, value in updates.items():
        key = str(key)
        size = _size(key, value)
        # What the key holds now gives its room back when it is replaced.
        old = (_size(key, new[key]) or 0) if key in new else 0
        if len(key) > MAX_KEY_CHARS:
            why = f"a key is longer than {MAX_KEY_CHARS} characters"
        elif size is None:
            why = "a value is not JSON data"
        elif key not in new and len(new) >= MAX_CONTEXT_KEYS:
            why = f"the context holds {MAX_CONTEXT_KEYS} keys already"
        elif total - old + size > MAX_CONTEXT_BYTES:
            why = f"the context would hold more than {MAX_CONTEXT_BYTES} characters of JSON"
        else:
            new[key] = frozen(value)
            total += size - old
            keys.append(key)
            continue
        refused.append(key)
        reason = reason or why
    return Merged(MappingProxyType(new), keys, refused, reason)
