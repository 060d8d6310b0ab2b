"""What an id may be: plan, node and session ids, observation ids, tool names.

One rule everywhere, the same as the HTTP API's id pattern: 1 to
:data:`MAX_ID_CHARS` characters of valid Unicode text (no lone surrogates)
without control characters (C0, DEL, C1). Ids become file names, SQL values,
log lines and HTML; a NUL or a lone surrogate would break one of them, and a
control character can hide what a name really is.

Example:
    >>> id_problem("bugfix_workflow") is None
    True
    >>> id_problem("a\\x00b")
    'must not contain control characters'
"""

from __future__ import annotations

import re

__all__ = ["MAX_ID_CHARS", "id_problem"]

#: Longest id (characters).
MAX_ID_CHARS = 200
_CONTROLS = re.compile("[\\x00-\\x1f\\x7f-\\x9f]")


def id_problem(value: str) -> str | None:
    """Why ``value`` is not a valid id (words to follow "the id ..."), or None."""
    if not value.strip():
        return "must not be empty"
    if len(value) > MAX_ID_CHARS:
        return f"is {len(value)} characters long; the limit is {MAX_ID_CHARS}"
    if _CONTROLS.search(value):
        return "must not contain control characters"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode text (it has a lone surrogate)"
    return None
