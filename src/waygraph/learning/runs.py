"""What each guided run did, read back from a store as plain facts (one frozen value per run).

A guided run (a Navigator run of a library plan) keeps its events in the
store: which message activated the plan and with which triggers, every node
entered and every verdict, stalls and how the run ended. :func:`run_facts`
turns one run's record and events into a :class:`RunFacts`;
:func:`guided_runs` reads every guided run of a store. ``waygraph tune``
(:mod:`waygraph.learning.tune`) weighs these facts against the library.

A **visit** is one stay at a task node with one retry budget: it starts when
the node is entered fresh (attempt 1) and goes on while the run comes back
through a failure edge (the engine keeps counting attempts then). Each visit
keeps the verdicts by attempt number, so "succeeded on its 3rd attempt" and
"failed its last allowed attempt" can be read off it.

Example:
    >>> from waygraph.store import open_store
    >>> guided_runs(open_store("memory://"))
    []
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from waygraph.model import FINISHED
from waygraph.model.record import RunKind
from waygraph.store import Store

__all__ = ["RunFacts", "Visit", "guided_runs", "run_facts"]

log = logging.getLogger("waygraph.learning")


@dataclass(frozen=True, slots=True)
class Visit:
    """One stay at a task node: its verdicts by attempt, and whether it ended stuck.

    ``verdicts``: ``(attempt, outcome)`` pairs in order, outcome ``success``
    or ``fail`` (unknown verdicts change nothing, so they are left out).
    ``exhausted``: the engine found the node's attempts used up.
    ``stalled``: the node had no edge to leave by when it failed.
    """

    node: str
    verdicts: tuple[tuple[int, str], ...] = ()
    exhausted: bool = False
    stalled: bool = False

    @property
    def success_attempt(self) -> int | None:
        """The attempt the visit ended on a success with, or None (it ended failing or stuck).

        The last verdict decides: a node passed, then sent back by a later
        check's failure edge (fix -> test -> fix), goes on with the same
        visit, and only its final pass counts.
        """
        if self.exhausted or self.stalled or not self.verdicts:
            return None
        attempt, outcome = self.verdicts[-1]
        return attempt if outcome == "success" else None

    @property
    def last_attempt(self) -> int:
        """The highest attempt judged (0: none was)."""
        return max((a for a, _ in self.verdicts), default=0)


@dataclass(frozen=True, slots=True)
class RunFacts:
    """One guided run, as learning reads it.

    ``message``: the user message that activated the plan (recorded since
    ``plan_activated`` events carry it; None for older runs and runs started
    by id). ``triggers``: the triggers that hit it. ``started_by``:
    ``message`` or ``id``. ``matched_by``: how the message started it,
    ``phrase`` (its triggers) or ``semantic`` (its meaning, with
    ``similarity``). ``end_node``: where the run was when it stopped
    (or is now). ``verified``: how many verdicts the run got at all.
    """

    run: str
    plan: str
    status: str
    plan_version: str | None = None
    session: str | None = None
    started_by: str = "message"
    message: str | None = None
    triggers: tuple[str, ...] = ()
    matched_by: str = "phrase"
    similarity: float | None = None
    completed: tuple[str, ...] = ()
    visits: tuple[Visit, ...] = ()
    end_node: str | None = None
    verified: int = 0
    updated_at: float = 0.0

    @property
    def finished(self) -> bool:
        """Whether the run has stopped."""
        return self.status in FINISHED

    @property
    def false_activation(self) -> bool:
        """Activated by a message, then expired or aborted with no verdict at all.

        The agent never worked on the plan: the message was not about it.
        (A run that failed at a node and expired there did work on it.)
        """
        return (
            self.started_by == "message"
            and self.status in ("expired", "aborted")
            and not self.completed
            and self.verified == 0
        )


@dataclass
class _Open:
    node: str
    verdicts: list[tuple[int, str]]
    exhausted: bool = False
    stalled: bool = False

    def close(self) -> Visit:
        return Visit(self.node, tuple(self.verdicts), self.exhausted, self.stalled)


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def run_facts(
    key: str,
    record: Mapping[str, Any],
    events: Iterable[Mapping[str, Any]],
    *,
    updated_at: float = 0.0,
) -> RunFacts:
    """The facts of one guided run from its record and all its events, oldest first.

    Example:
        >>> events = [
        ...     {"type": "plan_activated", "triggers": ["fix bug"], "message": "fix bug"},
        ...     {"type": "node_entered", "node": "fix", "attempt": 1},
        ...     {"type": "node_verified", "node": "fix", "outcome": "fail", "attempt": 1},
        ...     {"type": "node_verified", "node": "fix", "outcome": "success", "attempt": 2},
        ...     {"type": "plan_completed", "node": "done"}]
        >>> facts = run_facts("r1", {"plan": "bugfix", "status": "completed"}, events)
        >>> facts.message, facts.visits[0].success_attempt
        ('fix bug', 2)
    """
    visits: list[Visit] = []
    current: dict[str, _Open] = {}
    message: str | None = None
    triggers: tuple[str, ...] = ()
    started_by = "message"
    matched_by, similarity = "phrase", None
    verified = 0
    for event in events:
        kind = event.get("type")
        node = str(event.get("node") or "")
        if kind == "plan_activated":
            raw = event.get("message")
            message = raw if isinstance(raw, str) and raw.strip() else None
            triggers = tuple(str(t) for t in event.get("triggers") or ())
            if event.get("started_by") == "id":
                started_by = "id"
            if event.get("matched_by") == "semantic":
                matched_by = "semantic"
                raw_similarity = event.get("similarity")
                if isinstance(raw_similarity, int | float) and not isinstance(raw_similarity, bool):
                    similarity = float(raw_similarity)
        elif kind == "node_entered" and "attempt" in event:
            if event.get("exhausted"):
                # Back through a failure edge with no attempts left: the same visit ends.
                current.setdefault(node, _Open(node, [])).exhausted = True
            elif _int(event.get("attempt")) <= 1 or node not in current:
                if node in current:
                    visits.append(current.pop(node).close())
                current[node] = _Open(node, [])
        elif kind == "node_verified" and not event.get("gate") and node in current:
            outcome = event.get("outcome")
            if outcome is None and isinstance(event.get("passed"), bool):
                outcome = "success" if event["passed"] else "fail"
            if outcome in ("success", "fail"):
                verified += 1
                current[node].verdicts.append((_int(event.get("attempt"), 1), str(outcome)))
        elif kind == "stall" and node in current:
            current[node].stalled = True
    visits.extend(v.close() for v in current.values())
    completed = record.get("completed") or ()
    return RunFacts(
        run=key,
        plan=str(record.get("plan") or record.get("plan_id") or ""),
        status=str(record.get("status") or "running"),
        plan_version=record.get("plan_version"),
        session=record.get("session_id"),
        started_by=started_by,
        message=message,
        triggers=triggers,
        matched_by=matched_by,
        similarity=similarity,
        completed=tuple(str(n) for n in completed),
        visits=tuple(visits),
        end_node=end if isinstance(end := record.get("current_node"), str) else None,
        verified=verified,
        updated_at=updated_at,
    )


def guided_runs(
    store: Store, *, plans: Sequence[str] | None = None, limit: int | None = None
) -> list[RunFacts]:
    """The facts of the guided runs in ``store`` (of ``plans`` only, when given), newest first.

    A run whose record or events cannot be read is skipped with a warning line.
    """
    wanted = set(plans) if plans is not None else None
    found: list[RunFacts] = []
    for stored in store.list(kind=RunKind.GUIDED, limit=limit):
        plan = str(stored.data.get("plan") or stored.data.get("plan_id") or stored.plan or "")
        if wanted is not None and plan not in wanted:
            continue
        try:
            events = [e.data for e in store.events(stored.key)]
            found.append(run_facts(stored.key, stored.data, events, updated_at=stored.updated_at))
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            log.warning("skipping guided run %s: %s", stored.key, exc)
    return found
