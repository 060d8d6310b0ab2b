"""The Attractor condition language (specification §10): ``outcome=success && context.x=y``.

An executed pipeline routes on the condition text as its file wrote it, read
here exactly as the specification says: clauses joined by ``&&``, each
``key=value``, ``key!=value`` or a bare key (true when its value is not
empty); keys are ``outcome``, ``preferred_label``, ``context.<path>`` (looked
up with and without the ``context.`` prefix) or any other context key;
values are compared as text, and a missing key is the empty string. An empty
condition is true.

Some readings go beyond the specification's text, each documented in
docs/dot.md: ``==`` is read as ``=`` (real files write it); ``outcome``
compares without regard to case (``outcome=SUCCESS``); ``key contains text``
and ``key !contains text`` test for a substring and ``!clause`` negates a
clause (§10.7 lists ``contains`` as
a future operator; a public port reads it so, and real files use it); the
ordering operators (``<``, ``<=``, ``>``, ``>=``) of waygraph's own
conditions compare numbers (false when either side is not a number).

Example:
    >>> context = {"tests_passed": True, "graph.goal": "ship"}
    >>> evaluate_condition("outcome=success && context.tests_passed=true",
    ...                    outcome="success", context=context)
    True
    >>> evaluate_condition("context.missing!=x", outcome="fail", context=context)
    True
    >>> condition_problem("outcome=>success") is None
    False
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "MAX_CONDITION_TEXT",
    "condition_problem",
    "evaluate_condition",
    "resolve_key",
    "value_text",
]

#: Condition text longer than this is refused (a real condition is a line).
MAX_CONDITION_TEXT = 4_000

_KEY = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*"
_CLAUSE = re.compile(
    rf"""\s*(?P<key>{_KEY})\s*(?:(?P<op>!=|==|=|>=|<=|>|<|(?<=\s)!?contains(?=\s))\s*(?P<value>"(?:[^"\\]|\\.)*"|(?![=!<>])[^"]*?))?\s*""",
    re.DOTALL,
)
#: ``!clause``: the clause does not hold (not the specification's; ports read it so).
_NEGATED = re.compile(r"\s*!(?!=)")
_UNESCAPE = re.compile(r"\\(.)", re.DOTALL)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}


def value_text(value: Any) -> str:
    """A context value as conditions compare it: ``true``/``false``, numbers as
    written, objects as JSON, None as the empty string.

    Example:
        >>> value_text(True), value_text(3), value_text(None), value_text({"a": 1})
        ('true', '3', '', '{"a": 1}')
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return str(value)
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


def resolve_key(
    key: str, *, outcome: str = "", preferred_label: str = "", context: Mapping[str, Any]
) -> str:
    """The text a condition key stands for (specification §10.4).

    Example:
        >>> resolve_key("context.human.gate.selected", context={"human.gate.selected": "A"})
        'A'
    """
    if key == "outcome":
        return outcome
    if key == "preferred_label":
        return preferred_label
    if key in context:
        return value_text(context[key])
    if key.startswith("context."):
        return value_text(context.get(key[len("context.") :]))
    return ""


def _split(text: str) -> list[str]:
    """The clauses of ``text``: split on ``&&`` outside double quotes."""
    parts: list[str] = []
    start, quoted, i = 0, False, 0
    while i < len(text):
        char = text[i]
        if quoted and char == "\\":
            i += 2
            continue
        if char == '"':
            quoted = not quoted
        elif not quoted and text.startswith("&&", i):
            parts.append(text[start:i])
            start = i + 2
            i += 1
        i += 1
    parts.append(text[start:])
    return parts


def _literal(raw: str) -> str:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        return _UNESCAPE.sub(lambda m: _ESCAPES.get(m.group(1), m.group(1)), raw[1:-1])
    return raw


def condition_problem(text: str) -> str | None:
    """Why ``text`` is not a condition the specification's language can read, or None.

    Example:
        >>> condition_problem("outcome=success && context.ok=true") is None
        True
        >>> condition_problem("outcome=success || outcome=retry")
        "'||' (or) is not in the language; give each alternative its own edge"
    """
    if len(text) > MAX_CONDITION_TEXT:
        return f"the condition is longer than {MAX_CONDITION_TEXT} characters"
    clauses = _split(text)
    if len(clauses) > 1 and not all(c.strip() for c in clauses):
        return "a clause between '&&' is empty"
    for clause in clauses:
        if not clause.strip() and len(clauses) == 1:
            continue
        while (negated := _NEGATED.match(clause)) is not None:
            clause = clause[negated.end() :]
        if _CLAUSE.fullmatch(clause) is None:
            return f"clause {clause.strip()!r} is not key=value, key!=value or a key"
        if "||" in _literal_free(clause):
            return "'||' (or) is not in the language; give each alternative its own edge"
    return None


def _literal_free(clause: str) -> str:
    """``clause`` without its quoted strings (an operator inside quotes is text)."""
    return re.sub(r'"(?:[^"\\]|\\.)*"', '""', clause)


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return None if math.isnan(value) else value


def _clause_holds(clause: str, outcome: str, preferred_label: str, ctx: Mapping[str, Any]) -> bool:
    negated = _NEGATED.match(clause)
    if negated is not None:
        return not _clause_holds(clause[negated.end() :], outcome, preferred_label, ctx)
    found = _CLAUSE.fullmatch(clause)
    if found is None:
        return False  # condition_problem reports it; an unreadable clause never holds
    key, op = found.group("key"), found.group("op")
    have = resolve_key(key, outcome=outcome, preferred_label=preferred_label, context=ctx)
    if op is None:
        return bool(have)
    want = _literal(found.group("value") or "")
    if key == "outcome":
        have, want = have.lower(), want.lower()
    if op in ("=", "=="):
        return have == want
    if op == "!=":
        return have != want
    if op.endswith("contains"):
        return (want in have) != op.startswith("!")
    left, right = _number(have), _number(want)
    if left is None or right is None:
        return False
    return {">": left > right, ">=": left >= right, "<": left < right, "<=": left <= right}[op]


def evaluate_condition(
    text: str,
    *,
    outcome: str = "",
    preferred_label: str = "",
    context: Mapping[str, Any] | None = None,
) -> bool:
    """Whether ``text`` holds for a node's outcome and the run's context (§10.5).

    Example:
        >>> evaluate_condition("", outcome="fail")
        True
        >>> evaluate_condition("preferred_label=Fix", preferred_label="Fix")
        True
    """
    ctx = context or {}
    if len(text) > MAX_CONDITION_TEXT:
        return False
    return all(
        _clause_holds(clause, outcome, preferred_label, ctx)
        for clause in _split(text)
        if clause.strip()
    )
