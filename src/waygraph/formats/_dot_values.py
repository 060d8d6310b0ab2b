"""DOT attribute values into plan data: every attribute value is text, typed here.

Each function reads one kind of value and raises
:class:`~waygraph.errors.PlanFormatError` quoting the text when it cannot; the
reader adds the file, line, plan, node or edge and attribute.

Example:
    >>> duration("15m"), duration("250ms"), duration("90"), boolean("yes")
    (900.0, 0.25, 90.0, True)
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from waygraph.durations import parse_duration
from waygraph.errors import InputError, PlanFormatError
from waygraph.predicates import parse_condition

_INTEGER = re.compile(r"[+-]?[0-9]{1,18}")


def integer(text: str) -> int:
    """A whole number."""
    stripped = text.strip()
    if not _INTEGER.fullmatch(stripped):
        raise PlanFormatError("must be a whole number", value=text)
    return int(stripped)


def retries(text: str) -> int | None:
    """A retry count, or ``none`` for unbounded."""
    if text.strip().lower() == "none":
        return None  # unbounded: the node is held until it passes
    value = integer(text)
    if value < 0:
        raise PlanFormatError("must be 0 or more (or none for unbounded)", value=text)
    return value


def boolean(text: str) -> bool:
    """``true``/``false`` (also ``yes``/``no``, ``1``/``0``)."""
    folded = text.strip().lower()
    if folded in ("true", "yes", "1"):
        return True
    if folded in ("false", "no", "0"):
        return False
    raise PlanFormatError("must be true or false", value=text)


def number(text: str) -> float:
    """A finite number."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise PlanFormatError("must be a number", value=text)
    return value


def duration(text: str) -> float:
    """Seconds in a duration: ``900s``, ``15m``, ``2h``, ``250ms``, ``1d``, or a bare number of
    seconds."""
    seconds = interval(text)
    if seconds == 0:
        raise PlanFormatError("must be a duration longer than 0, e.g. 900s or 15m", value=text)
    return seconds


def interval(text: str) -> float:
    """:func:`duration`, where 0 is also taken (``0s``: a poll interval of no wait)."""
    stripped = text.strip()
    if re.fullmatch(r"0+(?:\.0*)?(?:ms|[smhd])?", stripped):
        return 0.0
    try:
        seconds = float(stripped)
    except ValueError:
        try:
            return parse_duration(stripped, name="duration")
        except InputError:
            raise PlanFormatError(
                "must be a duration: a number and a unit (ms, s, m, h, d), e.g. 900s or 15m",
                value=text,
            ) from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise PlanFormatError("must be a duration longer than 0, e.g. 900s or 15m", value=text)
    return seconds


def json_value(text: str) -> Any:
    """A JSON value."""
    try:
        return json.loads(text)
    except ValueError as exc:  # JSONDecodeError, or an integer too long to read
        raise PlanFormatError(f"invalid JSON: {getattr(exc, 'msg', exc)}", value=text) from None
    except RecursionError:
        raise PlanFormatError("JSON nested too deeply", value=text[:80]) from None


def json_object(text: str) -> dict[str, Any]:
    """A JSON object."""
    value = json_value(text)
    if not isinstance(value, dict):
        raise PlanFormatError("must be a JSON object", value=text)
    return value


def text_list(text: str) -> list[str]:
    """Comma-separated text, or a JSON list of strings (for items that hold commas)."""
    if text.lstrip().startswith("["):
        items = json_value(text)
        if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
            raise PlanFormatError(
                "must be a JSON list of strings, or comma-separated text", value=text
            )
        return items
    return [item.strip() for item in text.split(",") if item.strip()]


def predicate(text: str) -> Any:
    """A Verify tree: JSON when the text starts with '{', else a condition string."""
    if text.lstrip().startswith("{"):
        return json_value(text)
    try:
        return parse_condition(text)
    except RecursionError:
        raise PlanFormatError("the condition is nested too deeply", value=text[:80]) from None
