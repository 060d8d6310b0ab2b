"""An edge's ``condition`` attribute: a waygraph condition name, or Attractor's clauses.

Attractor writes ``condition="outcome=success && context.tests=passed"``;
waygraph keeps the outcome as the edge's condition (``on_success`` ...) and the
other clauses as its ``when`` predicate, so the two spellings load into the
same :class:`~waygraph.model.Edge`. Clauses are read with
:func:`waygraph.predicates.parse_condition`, falling back to Attractor's own
``key=value`` form with a bare value.

Errors are :class:`~waygraph.errors.PlanFormatError` quoting the text; the
reader adds the file, line, plan, edge and field.

Example:
    >>> condition, when = edge_condition("outcome=success && context.tests=passed")
    >>> condition, when.field, when.op, when.value
    ('on_success', 'context.tests', '==', 'passed')
"""

from __future__ import annotations

import re
from typing import Any

from waygraph.errors import PlanFormatError
from waygraph.formats._dot_syntax import BARE_ID_RE
from waygraph.model import CONDITIONS, Verify
from waygraph.predicates import MAX_CONDITION_CHARS, parse_condition, parse_literal

_OUTCOMES = {
    ("==", "success"): "on_success",
    # A guided run has no partial success: a step that passes its check succeeded.
    ("==", "partial_success"): "on_success",
    ("==", "fail"): "on_fail",
    ("==", "failure"): "on_fail",
    ("==", "retry"): "on_retry",
    ("!=", "success"): "on_fail",
    ("!=", "fail"): "on_success",
}
_OUTCOME_START_RE = re.compile(r"outcome\s*!?=")
_OUTCOME_RE = re.compile(r"outcome\s*(==|=|!=)\s*([\"']?)([A-Za-z_]+)\2")
# Attractor's own clause form: `context.key=value` with a bare or quoted value.
_CLAUSE_RE = re.compile(
    r"""([^\W\d]\w*(?:\.\w+)*)\s*(!=|=)\s*"""
    r"""("(?:[^"\\]++|\\.)*+"|'(?:[^'\\]++|\\.)*+'|[^\s"'=!<>&|()\[\],]++)""",
    re.DOTALL,
)


_OTHER_OUTCOMES = frozenset({"skipped", "skip"})
_SPEC_CLAUSE_RE = re.compile(
    r"([^\W\d]\w*(?:\.\w+)*)\s*(!=|=|\s!?contains\s)\s*([^\s\"'=!<>].*?)\s*", re.DOTALL
)


def edge_condition(text: str) -> tuple[str, Verify | None]:
    """``(condition, when)`` for an edge's ``condition`` text.

    ``when`` is None when the text has no data clauses.
    """
    stripped = text.strip()
    if stripped in CONDITIONS:
        return stripped, None
    clauses = _clauses(text)
    if len(clauses) == 1 and BARE_ID_RE.fullmatch(stripped):
        # A lone word is far more likely a misspelt condition than a data flag.
        names = ", ".join(CONDITIONS)
        raise PlanFormatError(
            f"unknown edge condition {stripped!r}; use one of {names}, "
            "outcome=success or outcome=fail, or put a data condition in 'when'",
            value=text,
        )
    condition: str | None = None
    rest: list[Verify] = []
    for clause in clauses:
        named = clause if clause in CONDITIONS else _outcome(clause)
        if named is None:
            rest.append(_clause(clause))
            continue
        if condition is not None:
            raise PlanFormatError("the condition names the outcome twice", value=text)
        condition = named
    when: Verify | None = None
    if len(rest) == 1:
        when = rest[0]
    elif rest:
        when = Verify(type="all", checks=tuple(rest))
    return condition or "always", when


def _clauses(text: str) -> list[str]:
    """Split on top-level ``&&`` (not inside quotes or parentheses)."""
    parts, depth, quote, start, i = [], 0, "", 0, 0
    while i < len(text):
        char = text[i]
        if quote:
            if char == "\\":
                i += 1
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif depth == 0 and text.startswith("&&", i):
            parts.append(text[start:i])
            start = i + 2
            i += 1
        i += 1
    parts.append(text[start:])
    clauses = [p.strip() for p in parts]
    if not all(clauses):
        raise PlanFormatError("the condition has an empty clause", value=text)
    return clauses


def _outcome(clause: str) -> str | None:
    """The condition an ``outcome=...`` clause names; None for any other clause."""
    if not _OUTCOME_START_RE.match(clause):
        return None
    match = _OUTCOME_RE.fullmatch(clause)
    op = "==" if match and match.group(1) == "=" else (match.group(1) if match else "")
    named = _OUTCOMES.get((op, match.group(3).lower())) if match else None
    if named is None and match is not None and match.group(3).lower() in _OTHER_OUTCOMES:
        return None  # outcome=skipped ...: a data clause on "outcome" (see _clause)
    if named is None:
        raise PlanFormatError(
            "an outcome clause is outcome=success, outcome=partial_success, outcome=fail, "
            "outcome=retry or outcome!=success, joined to other clauses with &&",
            value=clause,
        )
    return named


def _clause(clause: str) -> Verify:
    try:
        return parse_condition(clause)
    except PlanFormatError:
        # Attractor writes `context.key=value` with bare text values.
        match = _CLAUSE_RE.fullmatch(clause) if len(clause) <= MAX_CONDITION_CHARS else None
        if match is None:
            # The specification's literal is the rest of the clause, spaces and all
            # (`preferred_label=[A] Approve`).
            spec = _SPEC_CLAUSE_RE.fullmatch(clause) if len(clause) <= MAX_CONDITION_CHARS else None
            if spec is None:
                raise
            path, op, raw = spec.groups()
            if op.strip() == "contains":
                return Verify(type="compare", field=path, op="contains", value=raw)
            if op.strip() == "!contains":
                contains = Verify(type="compare", field=path, op="contains", value=raw)
                return Verify(type="not", checks=(contains,))
            return Verify(type="compare", field=path, op="==" if op == "=" else "!=", value=raw)
        path, op, raw = match.groups()
        value: Any
        try:
            value = parse_literal(raw)
        except PlanFormatError:
            value = raw
        return Verify(type="compare", field=path, op="==" if op == "=" else "!=", value=value)
