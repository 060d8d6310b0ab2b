"""Regular expressions from plan files: compiled once, matched with a time bound.

Plans may be written by a model, and a pattern such as ``(a+)+$`` takes
exponential time on ``'a' * 28 + '!'`` with Python's ``re``, holding the GIL
(a whole server stalls). waygraph matches plan patterns with the ``regex``
package instead: the same syntax as ``re``, a ``timeout`` that stops a
runaway match, and the GIL released while it runs. A match that times out
is reported as :class:`PatternTimeout`; verification turns it into an
``unknown`` verdict naming the pattern, and ``waygraph check`` warns about
nested quantifiers (``regex-backtracking``) before a plan ever runs.

Example:
    >>> search(r"\\d+ passed", "i", "3 PASSED in 0.1s")
    True
    >>> nested_quantifier("(a+)+$")
    True
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import regex

from waygraph.errors import PatternTimeout

__all__ = [
    "FLAGS",
    "MATCH_TIMEOUT",
    "PatternTimeout",
    "compile_pattern",
    "nested_quantifier",
    "search",
]

#: Seconds one search of one output may take before it counts as timed out.
MATCH_TIMEOUT = 1.0
#: Flag letters a plan may give, and what they mean.
FLAGS = {"i": regex.IGNORECASE, "m": regex.MULTILINE, "s": regex.DOTALL, "x": regex.VERBOSE}


@lru_cache(maxsize=512)
def compile_pattern(pattern: str, flags: str | None = None) -> Any:
    """``pattern`` compiled with ``flags`` (letters of :data:`FLAGS`); ``regex.error`` if bad.

    ``VERSION0`` keeps the ``re`` module's syntax and semantics.
    """
    bits = regex.VERSION0
    for letter in flags or "":
        bits |= FLAGS.get(letter, 0)
    return regex.compile(pattern, bits)


def search(pattern: str, flags: str | None, text: str, *, timeout: float = MATCH_TIMEOUT) -> bool:
    """True when ``pattern`` matches somewhere in ``text``.

    Raises :class:`PatternTimeout` after ``timeout`` seconds, and
    ``regex.error`` for a pattern that does not compile.
    """
    try:
        return (
            compile_pattern(pattern, flags).search(text, timeout=timeout, concurrent=True)
            is not None
        )
    except TimeoutError as exc:
        raise PatternTimeout(
            f"the pattern /{pattern}/ took longer than {timeout:g}s on {len(text)} characters"
        ) from exc


def nested_quantifier(pattern: str) -> bool:
    """True when a repeated group itself repeats without bound (``(a+)+``, ``(\\w+\\s?)*``).

    Such patterns can take exponential time on input that almost matches.
    Patterns ``re`` cannot parse are left to the compile check (False).
    """
    try:
        from re import _parser  # type: ignore[attr-defined]

        tree = _parser.parse(pattern)
    except (re.error, ImportError, RecursionError, OverflowError):
        return False
    return _nested(list(tree), inside=False)


def _nested(items: list[tuple[Any, Any]], *, inside: bool) -> bool:
    from re import _constants as c  # type: ignore[attr-defined]

    for op, av in items:
        if op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)):
            _, high, sub = av
            unbounded = high == c.MAXREPEAT or high > 16
            if unbounded and inside and op is not getattr(c, "POSSESSIVE_REPEAT", None):
                return True
            if _nested(list(sub), inside=inside or unbounded):
                return True
        elif op is c.SUBPATTERN:
            if _nested(list(av[-1]), inside=inside):
                return True
        elif op is c.BRANCH:
            if any(_nested(list(alt), inside=inside) for alt in av[1]):
                return True
        elif op in (c.ASSERT, c.ASSERT_NOT):
            if _nested(list(av[1]), inside=inside):
                return True
        elif op is getattr(c, "ATOMIC_GROUP", None):
            continue  # atomic groups do not backtrack into themselves
    return False
