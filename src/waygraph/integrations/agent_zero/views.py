"""This model iteration's run, so the Agent-Zero hooks after a turn need not read it back.

A turn of a running run always commits, so its record and guidance text are
what the store holds and what ``Navigator.context`` would render. The hook
that took the turn keeps them as a :class:`View` on the monologue's
``loop_data``; the hooks after it in the same iteration (the next prompt's
guidance hook, then the plan selector, which drops it) read the view instead
of loading the run and rendering its guidance again. Anything else (a run
that ended, no run, another Navigator after a config change, another
session) means no view, and the hooks read the store as before. A new
user message starts a new ``loop_data``, so no view outlives its monologue.

Example:
    >>> from waygraph.navigator import Guidance, Navigator
    >>> class LoopData: ...
    >>> nav, loop_data = Navigator(store="memory://"), LoopData()
    >>> keep(nav, loop_data, "s", Guidance(text="Plan: X", run={"status": "running"}))
    >>> take(nav, loop_data, "s").text
    'Plan: X'
    >>> take(nav, loop_data, "s") is None
    True
"""

from __future__ import annotations

from typing import Any, NamedTuple

from waygraph.navigator import Guidance, Navigator

__all__ = ["View", "forget", "keep", "remember", "take"]

#: The attribute on ``loop_data`` that holds the view.
ATTR = "_waygraph_view"


class View(NamedTuple):
    """A running run as a turn of this process just committed it, with its guidance text."""

    navigator: Navigator
    session: str
    record: dict[str, Any]
    text: str


def keep(navigator: Navigator, loop_data: Any, session: str, guidance: Guidance) -> None:
    """After a turn: keep a running run's record and text; anything else drops the view."""
    run = guidance.run
    if run is not None and run.get("status") == "running" and guidance.text:
        remember(loop_data, View(navigator, session, run, guidance.text))
    else:
        forget(loop_data)


def remember(loop_data: Any, view: View) -> None:
    """Put ``view`` on ``loop_data`` (a loop_data that takes no attributes keeps none)."""
    # Not contextlib.suppress: every turn of a hook passes here, and try is free.
    try:
        setattr(loop_data, ATTR, view)
    except (AttributeError, TypeError):
        return


def forget(loop_data: Any) -> None:
    """Drop the view on ``loop_data``, if any."""
    if getattr(loop_data, ATTR, None) is not None:
        try:
            setattr(loop_data, ATTR, None)
        except (AttributeError, TypeError):
            return


def take(navigator: Navigator, loop_data: Any, session: str) -> View | None:
    """The view of ``session`` that ``navigator`` left, taken off ``loop_data`` (else None).

    The caller puts it back with :func:`remember` when a later hook of the
    same iteration may use it.
    """
    view = getattr(loop_data, ATTR, None)
    if view is None:
        return None
    forget(loop_data)
    if not isinstance(view, View) or view.navigator is not navigator:
        return None
    return view if view.session == session else None
