"""Request templates, pure: ``{goal_data.topic}`` placeholders filled from a scope.

An event-driven state's action holds its request data as templates; the
engine fills them (:mod:`waygraph.engine.event_run`) when the state sends its
request. Nothing is evaluated: a placeholder is a dotted path into the scope.
``waygraph.events.fill_template`` is this function.

Example:
    >>> fill_template({"q": "{goal_data.topic}"}, {"goal_data": {"topic": "graphs"}})
    {'q': 'graphs'}
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from waygraph.errors import PlanFormatError

__all__ = ["fill_template"]

_TEMPLATE = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")
_PATH = re.compile(r"[A-Za-z_]\w*(?:\.\w+)*")
_MISSING = object()


def fill_template(value: Any, scope: Mapping[str, Any], *, where: str = "data") -> Any:
    """Fill ``{path.to.value}`` placeholders in strings, recursively through dicts and lists.

    A string that is exactly one placeholder takes the value as it is (a
    list stays a list); inside longer text the value is written with
    ``str``. ``{{`` and ``}}`` write literal braces. Paths are dotted keys and
    list indexes; nothing is evaluated. A path with no value raises
    :class:`~waygraph.errors.PlanFormatError` naming ``where``.

    Example:
        >>> scope = {"goal_data": {"topic": "graphs", "tags": ["a", "b"]}}
        >>> fill_template({"q": "about {goal_data.topic}", "t": "{goal_data.tags}"}, scope)
        {'q': 'about graphs', 't': ['a', 'b']}
    """
    if isinstance(value, str):
        return _fill_text(value, scope, where)
    if isinstance(value, Mapping):
        return {k: fill_template(v, scope, where=f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [fill_template(v, scope, where=f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def _fill_text(text: str, scope: Mapping[str, Any], where: str) -> Any:
    if "{" not in text and "}" not in text:
        return text
    whole = _TEMPLATE.fullmatch(text)
    if whole and whole.group(1) is not None:
        return _lookup(whole.group(1), scope, where, text)

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token == "{{":
            return "{"
        if token == "}}":
            return "}"
        return str(_lookup(match.group(1), scope, where, text))

    return _TEMPLATE.sub(replace, text)


def _lookup(path: str, scope: Mapping[str, Any], where: str, text: str) -> Any:
    path = path.strip()
    if not _PATH.fullmatch(path):
        raise PlanFormatError(
            f"template {{{path}}} is not a dotted path like {{goal_data.topic}}; "
            "write {{ and }} for literal braces",
            field=where,
            value=text,
        )
    current: Any = scope
    for part in path.split("."):
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif isinstance(current, list | tuple) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            current = _MISSING
            break
    if current is _MISSING:
        roots = ", ".join(sorted(scope))
        raise PlanFormatError(
            f"template {{{path}}} has no value (the roots are: {roots})", field=where, value=text
        )
    return current
