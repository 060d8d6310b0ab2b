"""Which exact plan a run follows, even after the library changed.

Each run records a content hash of its plan (:func:`plan_version`); the plan
itself is stored once under that hash, so a new process, or a Navigator whose
library was edited meanwhile, finishes an old run on the plan it started with.

Example:
    >>> import waygraph
    >>> from waygraph.store import open_store
    >>> versions = PlanVersions(open_store("memory://"))
    >>> versions.index(waygraph.load_library())
    >>> len(versions.current["bugfix_workflow"])
    16
"""

from __future__ import annotations

import contextlib
import hashlib
import json

from waygraph import engine
from waygraph.errors import Conflict
from waygraph.formats.json_library import plan_to_data, plans_from_data
from waygraph.library import Library
from waygraph.model import Plan
from waygraph.store import Store

__all__ = ["PlanVersions", "plan_version"]


def plan_version(plan: Plan) -> str:
    """A content hash of the plan: runs remember which version they started with."""
    data = json.dumps({"id": plan.id, **plan_to_data(plan)}, sort_keys=True, default=str)
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def _plan_key(plan_id: str, version: str) -> str:
    return f"plan:{plan_id}:{version}"


class PlanVersions:
    """The plan versions one Navigator knows: its library's, and those its store keeps."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._plans: dict[str, Plan] = {}
        self._stored: set[str] = set()
        #: plan id -> the version of the library's current plan.
        self.current: dict[str, str] = {}

    def index(self, library: Library) -> None:
        """Make ``library``'s plans the current versions (older ones stay known)."""
        current = {}
        for plan in library:
            version = plan_version(plan)
            self._plans[version] = plan
            current[plan.id] = version
        self.current = current

    def plan_of(self, run: engine.Run, library: Library) -> Plan:
        """The plan ``run`` follows: its own version, else the library's plan of that id."""
        if run.plan_version and run.plan_version in self._plans:
            return self._plans[run.plan_version]
        if run.plan_version:
            stored = self.store.get(_plan_key(run.plan_id, run.plan_version))
            if stored is not None:
                _, plans = plans_from_data(stored.data)
                self._plans[run.plan_version] = plans[0]
                return plans[0]
        return library[run.plan_id]

    def remember(self, plan: Plan, version: str) -> None:
        """Store ``plan`` under its version once, so any process can finish its runs."""
        self._plans.setdefault(version, plan)
        if version in self._stored:
            return
        key = _plan_key(plan.id, version)
        if self.store.get(key) is None:
            data = {"_meta": {"version": "2.0"}, "plans": {plan.id: plan_to_data(plan)}}
            # Content-addressed: another process storing it first is fine.
            with contextlib.suppress(Conflict):
                self.store.commit(key, data, 0, [], kind="plan", plan=plan.id)
        self._stored.add(version)
