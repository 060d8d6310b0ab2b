"""Whether a model's reply asks the user something.

A reply that asks the user a question is not a claim that the work is done:
the model is waiting for the person. The rule is the one the guided engine
and session plans share: the reply's last sentence ends with ``?`` (or the
full-width ``？``), after closing quotes, brackets and Markdown emphasis.
Hosts that know better pass ``asks_user=True`` (or False) themselves.

Example:
    >>> asks_user("I found two releases. Which version should I use?")
    True
    >>> asks_user("Fixed: the login test passes now.")
    False
"""

from __future__ import annotations

__all__ = ["asks_user"]

#: Characters that may follow a question mark at the end of a reply.
_TRAILING = " \t\r\n\"'`*_)]}»”’」』）】"
#: A question is judged on the reply's last this many characters.
_TAIL_CHARS = 2000


def asks_user(text: str | None) -> bool:
    """True when the reply's last sentence is a question (ends with ``?`` or ``？``).

    Example:
        >>> asks_user("要用哪个版本？")
        True
        >>> asks_user("**Shall I push the branch?**  ")
        True
    """
    if not text:
        return False
    tail = text[-_TAIL_CHARS:].rstrip(_TRAILING)
    return tail.endswith(("?", "？"))
