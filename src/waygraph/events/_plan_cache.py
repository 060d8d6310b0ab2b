"""The plans a planner committed a moment ago and that wait for an answer, kept in memory.

A plan that sent a request waits for its answer, which comes back with the
request's correlation id: a fresh id only that plan knows. Reading the plan
back from the store when the answer arrives costs a round trip and the
decoding of the record, for a plan this process wrote itself. The cache keeps
what the last commit stored (the record's JSON text, so nothing handed out
can change it) under the plan id and its version, found by the correlation
id the plan waits on.

It is a guess the store checks, never a source of truth: the plan built from
it is moved by a version-checked commit, so when another writer changed the
plan since (another process, a pause, a resume), the commit conflicts and
the plan is read again from the store and the change applied to that
(:func:`waygraph.events._plan_changes.change`). Only a plan that would take
the event is served from here; any other answer is asked of the store.

Example:
    >>> cache = PlanCache(size=2)
    >>> cache.keep(Cached("p1", 3, "c1", "job.requested", '{"plan_id": "p1"}'))
    >>> hit = cache.waiting_for("c1")
    >>> (hit.plan_id, hit.version), cache.waiting_for("c2")
    (('p1', 3), None)
    >>> cache.drop("p1"); cache.waiting_for("c1") is None
    True
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field

from waygraph.events.statemachine import StateConfig, StateMachine
from waygraph.store import StoredRecord

__all__ = ["Cached", "PlanCache"]

#: Plans kept at most: the oldest goes first (3 KB records: about 12 MB).
SIZE = 4096


@dataclass(frozen=True, slots=True)
class Cached:
    """One plan as its last commit stored it, waiting on ``correlation_id``: its record
    as JSON text but for the state machine, kept validated (its states are frozen)."""

    plan_id: str
    version: int
    correlation_id: str
    event_type: str | None
    text: str
    states: Mapping[str, StateConfig] = field(default_factory=dict)
    machine: StateMachine | None = None


class PlanCache:
    """Plans this process committed that wait for an answer, by the correlation id
    they wait on; at most ``size``, the least recently kept dropped first."""

    def __init__(self, size: int = SIZE, *, enabled: bool = True) -> None:
        self.size = size
        #: Whether commits keep plans here: not for a store in this process
        #: (memory://, SQLite), whose read costs less than the copy kept.
        self.enabled = enabled
        self._plans: OrderedDict[str, Cached] = OrderedDict()
        self._waiting: dict[str, str] = {}
        self._notes: dict[str, list[StoredRecord]] = {}
        # Commits may finish on store threads and in several event loops.
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._plans)

    def keep(self, entry: Cached) -> None:
        """Remember a plan as committed at ``entry.version``."""
        plan_id, correlation_id, version = entry.plan_id, entry.correlation_id, entry.version
        with self._lock:
            old = self._plans.pop(plan_id, None)
            if old is not None and old.version > version:
                self._plans[plan_id] = old  # a later commit got here first: keep it
                return
            if old is not None:
                self._waiting.pop(old.correlation_id, None)
            self._plans[plan_id] = entry
            self._waiting[correlation_id] = plan_id
            while len(self._plans) > self.size:
                _, gone = self._plans.popitem(last=False)
                self._waiting.pop(gone.correlation_id, None)

    def drop(self, plan_id: str) -> None:
        """Forget ``plan_id`` (it no longer waits, or its commit failed)."""
        with self._lock:
            old = self._plans.pop(plan_id, None)
            if old is not None and self._waiting.get(old.correlation_id) == plan_id:
                del self._waiting[old.correlation_id]

    def note(self, found: dict[str, list[StoredRecord]]) -> None:
        """Keep what a commit read right after it (store.commit_then_list), by id, for the
        handler of the events that commit sent: the records indexed under each id."""
        with self._lock:
            self._notes.update(found)
            while len(self._notes) > self.size:
                del self._notes[next(iter(self._notes))]

    def noted(self, correlation_id: str) -> list[StoredRecord] | None:
        """The records a commit read under ``correlation_id``, once; None when none did."""
        with self._lock:
            return self._notes.pop(correlation_id, None)

    def waiting_for(self, correlation_id: str) -> Cached | None:
        """The plan last seen waiting on ``correlation_id``, or None."""
        with self._lock:
            plan_id = self._waiting.get(correlation_id)
            return None if plan_id is None else self._plans.get(plan_id)
