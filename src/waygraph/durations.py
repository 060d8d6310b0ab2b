"""Durations written as a number and a unit (``30m``, ``12h``, ``7d``), as ``--since`` takes them.

One reader for ``waygraph stats --since`` and the server's ``?since=``, so
both accept and refuse the same words; ``name`` is the option or field the
error names.

Example:
    >>> parse_duration("1.5h")
    5400.0
"""

from __future__ import annotations

import re

from waygraph.errors import InputError

__all__ = ["MAX_SECONDS", "PATTERN", "parse_duration"]

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(r"\s*(\d{1,12}(?:\.\d{1,9})?)\s*(ms|[smhdw])\s*")
#: The longest period taken: two thousand years (a longer one would start before any calendar).
MAX_SECONDS = 2000 * 365 * 86400.0
#: A JSON Schema pattern of durations taken (as documents describe ``since``); a subset of
#: what :func:`parse_duration` takes, without spaces or leading zeros.
PATTERN = r"^(?:[1-9][0-9]{0,4}(?:\.[0-9]{1,9})?|0\.[0-9]{0,8}[1-9])[smhdw]$"


def parse_duration(text: str, *, name: str = "--since") -> float:
    """Seconds in a duration such as ``30m``, ``12h``, ``7d`` or ``2w``.

    Example:
        >>> parse_duration("12h"), parse_duration("30m")
        (43200.0, 1800.0)
        >>> parse_duration("soon")
        Traceback (most recent call last):
        ...
        waygraph.errors.InputError: --since 'soon' is not a duration: use a number and a unit \
(ms, s, m, h, d, w), e.g. 30m, 12h or 7d
    """
    found = _DURATION.fullmatch(text)
    if found is None or float(found.group(1)) <= 0:
        raise InputError(
            f"{name} {text!r} is not a duration: use a number and a unit "
            "(ms, s, m, h, d, w), e.g. 30m, 12h or 7d"
        )
    seconds = float(found.group(1)) * _UNITS[found.group(2)]
    if seconds > MAX_SECONDS:
        raise InputError(f"{name} {text!r} is longer than 2000 years; leave it out for every run")
    return seconds
