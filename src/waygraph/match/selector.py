"""Which way plans are matched: by phrase, by meaning, or both (``matching=``).

- ``"phrase"`` (the default): triggers only (:mod:`waygraph.match`); nothing
  else is loaded, and nothing changes without the ``semantic`` extra.
- ``"semantic"``: by meaning only (:mod:`waygraph.match.semantic`).
- ``"both"``: phrases first; when no plan activates by its triggers, meaning
  decides.

:class:`PlanSelector` is what a Navigator asks. Without the extra, a mode
other than ``"phrase"`` raises :class:`~waygraph.errors.MissingExtra` when it
is set up (one line naming the extra). A model that cannot be loaded, or a
library whose semantic thresholds are bad, never raises into the host: one
warning, and the selector matches by phrase from then on. The model loads in
a background thread as soon as the selector is made, so the first message
waits for it only when it comes first.

Example:
    >>> from waygraph.library import load_library
    >>> from waygraph.match import Matcher
    >>> library = load_library()
    >>> selector = PlanSelector("phrase")
    >>> selector.best(library, Matcher(library), "fix the login bug", None, None).plan_id
    'bugfix_workflow'
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from waygraph.errors import ConfigError
from waygraph.library import Library
from waygraph.match import Match, Matcher

if TYPE_CHECKING:
    from waygraph.match.semantic import SemanticMatcher

__all__ = ["MATCHING_MODES", "PlanSelector", "check_matching"]

log = logging.getLogger("waygraph.match")

#: The values of ``matching=``.
MATCHING_MODES = ("phrase", "semantic", "both")


def check_matching(matching: object) -> str:
    """``matching`` when it is one of :data:`MATCHING_MODES`, else a ConfigError naming them.

    Example:
        >>> check_matching("both")
        'both'
    """
    if matching not in MATCHING_MODES:
        raise ConfigError(
            f"matching must be one of {', '.join(repr(m) for m in MATCHING_MODES)} "
            f"(got {matching!r})"
        )
    return str(matching)


class PlanSelector:
    """Picks the plan a message starts, in one of the :data:`MATCHING_MODES`.

    ``cache_dir``: where plan embeddings are kept on disk (None: memory
    only). ``library``: warm up for it (load the model, embed its plans) in a
    background thread.
    """

    def __init__(
        self,
        matching: str = "phrase",
        *,
        cache_dir: Path | None = None,
        library: Library | None = None,
    ) -> None:
        self.mode = check_matching(matching)
        self.cache_dir = cache_dir
        #: Why matching by meaning is off (the model did not load, ...), or None.
        self.failure: str | None = None
        self._lock = threading.Lock()
        self._library: Library | None = None
        self._semantic: SemanticMatcher | None = None
        if self.mode != "phrase":
            from waygraph.match.semantic import check_extra

            check_extra(f'matching="{self.mode}"')

    def warm(self, library: Library) -> None:
        """Load the model and embed ``library``'s plans in a background thread (not by phrase)."""
        if self.mode != "phrase":
            threading.Thread(
                target=self.semantic_for, args=(library,), name="waygraph-embed", daemon=True
            ).start()

    def semantic_for(self, library: Library) -> SemanticMatcher | None:
        """The library's semantic matcher (built on first use), or None when meaning is off."""
        if self.mode == "phrase":
            return None
        with self._lock:
            if self.failure is not None:
                return None
            if self._library is library and self._semantic is not None:
                return self._semantic
            try:
                from waygraph.match.semantic import SemanticMatcher

                self._semantic = SemanticMatcher(library, cache_dir=self.cache_dir)
                self._library = library
            except Exception as exc:
                self._off(exc)
                return None
            return self._semantic

    def _off(self, exc: BaseException) -> None:
        self.failure = str(exc) or type(exc).__name__
        self._semantic = None
        log.warning(
            "waygraph: matching by meaning is off, plans start by their triggers only: %s",
            self.failure,
        )

    def best(
        self,
        library: Library,
        matcher: Matcher,
        message: str,
        domain: str | None,
        allowed_plans: Collection[str] | None,
    ) -> Match | None:
        """The plan ``message`` starts, or None (``matcher``: the library's phrase matcher)."""
        if self.mode != "semantic":
            found = matcher.best(message, domain, allowed_plans)
            if found is not None or self.mode == "phrase":
                return found
        semantic = self.semantic_for(library)
        if semantic is not None:
            try:
                return semantic.best(message, domain, allowed_plans)
            except Exception as exc:
                with self._lock:
                    self._off(exc)
        # Meaning is off: "semantic" falls back to phrases ("both" tried them already).
        return matcher.best(message, domain, allowed_plans) if self.mode == "semantic" else None

    def match(
        self,
        library: Library,
        matcher: Matcher,
        message: str,
        domain: str | None,
        allowed_plans: Collection[str] | None,
    ) -> list[Match]:
        """Every result with the reason for each miss: phrase results, then meaning's.

        In ``"both"`` mode meaning's results follow only when no phrase result
        activates (as :meth:`best` decides); the one that activates comes first.
        """
        phrase = matcher.match(message, domain, allowed_plans) if self.mode != "semantic" else []
        if self.mode == "phrase" or any(m.activates for m in phrase):
            return phrase
        semantic = self.semantic_for(library)
        if semantic is None:
            return phrase or matcher.match(message, domain, allowed_plans)
        try:
            by_meaning = semantic.match(message, domain, allowed_plans)
        except Exception as exc:
            with self._lock:
                self._off(exc)
            return phrase or matcher.match(message, domain, allowed_plans)
        winners = [m for m in by_meaning if m.activates]
        return winners + phrase + [m for m in by_meaning if not m.activates]
