"""What an id may be: plan, node and session ids, observation ids, tool names.

One rule everywhere, the same as the HTTP API's id pattern: 1 to
:data:`MAX_ID_CHARS` characters of valid Unicode text (no lone surrogates)
without control characters (C0, DEL, C1) or Unicode format characters
(category Cf: U+202E RIGHT-TO-LEFT OVERRIDE, U+200D ZERO WIDTH JOINER,
U+FEFF, ...). Ids become file names, SQL values, log lines and HTML; a NUL or
a lone surrogate would break one of them, and a control or format character
can hide what a name really is (a U+202E turns the rest of a ``check`` table
row around, the Trojan Source trick; a U+200B makes two ids look the same).

Example:
    >>> id_problem("bugfix_workflow") is None
    True
    >>> id_problem("a\\x00b")
    'must not contain control characters'
    >>> id_problem("evil\\u202eexe.txt")
    'must not contain invisible or direction-changing format characters (U+202E)'
"""

from __future__ import annotations

import re

__all__ = ["FORBIDDEN_ID_CHARS", "MAX_ID_CHARS", "id_problem", "shown_id"]

#: Longest id (characters).
MAX_ID_CHARS = 200

# Unicode category Cf as (first, last) code points, hard-coded because scanning
# unicodedata at import costs a tenth of a second. Unicode 14 (Python 3.11)
# plus 13439-1343F, which Unicode 15 (Python 3.12+) made Cf: refusing a code
# point that is still unassigned harms no real id. tests/test_ids.py checks
# that every Cf character of the running Python is in here.
_FORMAT_RANGES: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
)


def _escape(code: int) -> str:
    # \uXXXX and \UXXXXXXXX mean the same to Python's re and to the Rust regex
    # engine pydantic checks the server's patterns with, and read well in the
    # OpenAPI schema (the characters themselves would be invisible there).
    return f"\\u{code:04X}" if code <= 0xFFFF else f"\\U{code:08X}"


_CONTROL_CLASS = "\\x00-\\x1f\\x7f-\\x9f"
_FORMAT_CLASS = "".join(
    _escape(first) if first == last else f"{_escape(first)}-{_escape(last)}"
    for first, last in _FORMAT_RANGES
)
#: The characters no id may hold, as the inside of a regular expression class
#: (``[...]``): controls, then format characters. The server's ``ID_PATTERN``
#: is built from it, so the API and :func:`id_problem` agree.
FORBIDDEN_ID_CHARS = _CONTROL_CLASS + _FORMAT_CLASS
_CONTROLS = re.compile(f"[{_CONTROL_CLASS}]")
_FORMATS = re.compile(f"[{_FORMAT_CLASS}]")
_UNSHOWABLE = re.compile(f"[{FORBIDDEN_ID_CHARS}\\ud800-\\udfff]")


def id_problem(value: str) -> str | None:
    """Why ``value`` is not a valid id (words to follow "the id ..."), or None.

    Example:
        >>> id_problem("p\\ufeff")
        'must not contain invisible or direction-changing format characters (U+FEFF)'
    """
    if value.isascii() and value.isprintable() and len(value) <= MAX_ID_CHARS:
        # The usual id, checked in C: printable ASCII holds no control, format
        # or surrogate character (an id is checked every turn).
        return None if value.strip() else "must not be empty"
    if not value.strip():
        return "must not be empty"
    if len(value) > MAX_ID_CHARS:
        return f"is {len(value)} characters long; the limit is {MAX_ID_CHARS}"
    if _CONTROLS.search(value):
        return "must not contain control characters"
    if found := _FORMATS.search(value):
        # Named by code point: the character itself would not show.
        return (
            "must not contain invisible or direction-changing format characters "
            f"(U+{ord(found.group()):04X})"
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode text (it has a lone surrogate)"
    return None


def shown_id(value: str) -> str:
    """``value`` with every character no id may hold written as a ``\\uXXXX`` escape.

    For showing a refused id where it names the place of a problem (the
    ``where`` column of ``waygraph check``): a U+202E would turn the rest of
    the row around, a U+200B would not show, a lone surrogate would not print.

    Example:
        >>> print(shown_id("evil\\u202eexe.txt"))
        evil\\u202eexe.txt
    """
    return _UNSHOWABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", value)
