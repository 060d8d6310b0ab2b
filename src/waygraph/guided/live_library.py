"""The plan library a Navigator guides with, reloaded when its files change.

A library loaded from files is looked at once a second (at most); when a
file changed, the library is loaded again and the matcher rebuilt. A
library that no longer loads keeps the last good one guiding and says why
in :attr:`LiveLibrary.error`. Each run keeps the plan version it started
with (:class:`~waygraph.guided.versions.PlanVersions`), so a reload never changes
a run midway.

Example:
    >>> from waygraph.store import open_store
    >>> live = LiveLibrary(None, open_store("memory://"))
    >>> live.matcher.best("I need to fix a bug in the login module", None, None).plan_id
    'bugfix_workflow'
"""

from __future__ import annotations

import logging
import os
import threading
import time

from waygraph.errors import WaygraphError
from waygraph.guided.versions import PlanVersions
from waygraph.library import Library, load_library
from waygraph.match import Matcher
from waygraph.store import Store

__all__ = ["RELOAD_CHECK_SECONDS", "LiveLibrary"]

log = logging.getLogger("waygraph.navigator")

#: How often (seconds) the library files are looked at for changes.
RELOAD_CHECK_SECONDS = 1.0


class LiveLibrary:
    """A library, its matcher and its plan versions, kept up to date with the files."""

    def __init__(self, library: Library | str | os.PathLike[str] | None, store: Store) -> None:
        self.library = library if isinstance(library, Library) else load_library(library)
        self.versions = PlanVersions(store)
        self._lock = threading.Lock()
        self._index(self.library)
        self._mtimes = self.library.mtimes()
        #: Why the library on disk does not load (the last good one keeps
        #: guiding); None while it loads. Hosts show it where people look.
        self.error: str | None = None
        self._next_check = time.monotonic() + RELOAD_CHECK_SECONDS

    def _index(self, library: Library) -> None:
        self.matcher = Matcher(library)
        self.versions.index(library)

    def refresh(self) -> None:
        """Reload the library if a file changed since the last look (at most once a second)."""
        if not self.library.files or time.monotonic() < self._next_check:
            return
        self._next_check = time.monotonic() + RELOAD_CHECK_SECONDS
        mtimes = self.library.mtimes()
        if mtimes == self._mtimes:
            return
        self._mtimes = mtimes
        try:
            library = load_library(self.library.path)
        except WaygraphError as exc:
            # Keep guiding with the last good library rather than stopping.
            log.warning("library changed on disk but does not load; keeping the old one: %s", exc)
            self.error = str(exc)
            return
        with self._lock:
            self.library = library
            self._index(library)
            self.error = None
        log.info("reloaded plan library from %s (%d plans)", library.path, len(library))

    def reload(self) -> None:
        """Look at the files now, and reload whatever changed."""
        self._next_check = 0.0
        self._mtimes = {}
        self.refresh()
