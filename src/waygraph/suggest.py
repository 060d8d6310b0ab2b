""" "Did you mean ...?": the one place a mistyped name is matched to the names meant.

Every lookup of a name that may be mistyped (a plan id on the command line, a
field of a plan or node, a node id in an edge, a verify type, an edge
condition) asks :func:`suggestions` for the close ones and shows them with
:func:`did_you_mean`.

Example:
    >>> did_you_mean("on_failure", ["on_fail", "required", "action"])
    "did you mean 'on_fail'?"
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

__all__ = ["did_you_mean", "suggestions"]

_WORD_BREAK = re.compile(r"[_\-. ]+")


def _score(name: str, candidate: str) -> float:
    """How alike ``name`` and ``candidate`` are (0..1), case ignored.

    Also compared with the first words of ``candidate`` as many as ``name``
    has, so a short guess ("bugfx") matches a long id ("bugfix_workflow").
    """
    a, b = name.casefold(), candidate.casefold()
    best = difflib.SequenceMatcher(None, a, b).ratio()
    words = _WORD_BREAK.split(b)
    wanted = len(_WORD_BREAK.split(a))
    if len(words) > wanted:
        head = "_".join(words[:wanted])
        best = max(best, difflib.SequenceMatcher(None, a, head).ratio() * 0.95)
    return best


def suggestions(
    name: str, candidates: Iterable[str], *, limit: int = 3, cutoff: float = 0.6
) -> list[str]:
    """The candidates most like ``name``, best first (at most ``limit``).

    A candidate containing ``name`` (a short guess for a long id) counts too.

    Example:
        >>> suggestions("bugfx", ["bugfix_workflow", "git_merge_pr", "refactor_safe"])
        ['bugfix_workflow']
        >>> suggestions("tset", ["start", "test", "done"])
        ['test']
    """
    if not isinstance(name, str) or not name:
        return []
    pool = list(dict.fromkeys(c for c in candidates if isinstance(c, str) and c != name))
    scored = [(_score(name, c), i, c) for i, c in enumerate(pool)]
    found = [c for s, _, c in sorted(scored, key=lambda t: (-t[0], t[1])) if s >= cutoff]
    needle = name.casefold()
    found += [c for c in pool if needle in c.casefold() and c not in found]
    return found[:limit]


def did_you_mean(name: str, candidates: Iterable[str], *, limit: int = 3) -> str:
    """``"did you mean 'x'?"`` (or ``'x' or 'y'``) for the close candidates; ``""`` for none.

    Example:
        >>> did_you_mean("tset", ["start", "test", "done"])
        "did you mean 'test'?"
        >>> did_you_mean("zzz", ["start", "test"])
        ''
    """
    close = suggestions(name, candidates, limit=limit)
    if not close:
        return ""
    quoted = [repr(c) for c in close]
    shown = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
    return f"did you mean {shown}?"
