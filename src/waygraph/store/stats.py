"""Run statistics as a store keeps them: a finished guided run's facts, and their tallies.

When a guided run finishes, what the statistics need of it (its outcome, its
turns and tool results, per node what happened, the first lines of its
failing outputs, the message that activated it) is read once from its
events into :class:`CountedRun`. :meth:`Store.run_tallies` sums the facts of
the runs finished in a period into :class:`Tallies`, which
:func:`waygraph.learning.stats.plan_stats` turns into statistics.

The SQL stores add each run's facts to counters per plan and *minute* in the
commit that finishes it (:mod:`waygraph.store._stats_sql`), so a query
reads counters, not runs; the memory and file stores compute the same
tallies here by reading every finished run (:func:`scan_tallies`). Periods
are whole minutes: a run counts from the minute it finished in.

Example:
    >>> events = [{"type": "plan_activated", "turn": 1, "message": "fix the bug"},
    ...           {"type": "node_entered", "turn": 1, "node": "fix"},
    ...           {"type": "node_verified", "turn": 2, "node": "fix", "outcome": "success"},
    ...           {"type": "plan_completed", "turn": 2, "node": "done"}]
    >>> facts = counted_run("r1", "bugfix", "completed", events, 120.0)
    >>> facts.minute, facts.turns, facts.tools, facts.nodes["fix"]
    (2, 1, 1, [1, 1, 0, 1, 0])
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from waygraph.model._status import FINISHED
from waygraph.model.record import RunKind

if TYPE_CHECKING:
    from waygraph.store.base import Store

__all__ = [
    "LISTED_ACTIVATIONS",
    "MINUTE",
    "CountedRun",
    "FalseActivation",
    "Tallies",
    "bucket_of",
    "counted_run",
    "first_line",
    "minute_of",
    "periods",
    "scan_tallies",
]

#: Seconds per counter bucket: periods start on a whole minute.
MINUTE = 60
#: Suspected false activations listed (newest first); all are counted.
LISTED_ACTIVATIONS = 20
#: Characters of a failing output's first line kept (longer lines are cut).
LINE_CHARS = 160
#: A node's counters in :attr:`CountedRun.nodes`, in this order.
NODE_FIELDS = ("entered", "attempts", "failures", "successes", "escalations")


def minute_of(when: float) -> int:
    """The counter bucket of an epoch time: whole minutes since the epoch.

    Example:
        >>> minute_of(119.9), minute_of(120.0)
        (1, 2)
    """
    return int(when // MINUTE)


def periods(since_minute: int | None, step: int) -> list[tuple[int, int | None, int | None]]:
    """The counters a period reads: ``(span, from minute, to minute)`` parts.

    ``step`` 1 reads minute counters (span 1); ``step`` 60 hour counters
    (span 60), with minute counters for the hour the period starts in.

    Example:
        >>> periods(None, 60), periods(130, 60), periods(130, 1)
        ([(60, None, None)], [(1, 130, 180), (60, 180, None)], [(1, 130, None)])
    """
    if step not in (1, 60):
        raise ValueError(f"step must be 1 or 60 minutes (got {step!r})")
    if step == 1:
        return [(1, since_minute, None)]
    if since_minute is None:
        return [(60, None, None)]
    hour = -(-since_minute // 60) * 60
    return [(1, since_minute, hour)] * (hour > since_minute) + [(60, hour, None)]


def bucket_of(minute: int, since_minute: int | None, step: int) -> int:
    """The first minute of the counter a run finished in ``minute`` is read from.

    Example:
        >>> bucket_of(200, None, 60), bucket_of(150, 130, 60), bucket_of(150, 130, 1)
        (180, 150, 150)
    """
    for span, low, high in periods(since_minute, step):
        if (low is None or minute >= low) and (high is None or minute < high):
            return minute - minute % span
    return minute


def first_line(text: Any) -> str:
    """The first non-blank line of an output, spaces collapsed, at most 160 characters.

    Example:
        >>> first_line("\\n  FAILED  test_login.py::test_ok\\nmore")
        'FAILED test_login.py::test_ok'
    """
    if not isinstance(text, str):
        return "(no output)" if text is None else first_line(json.dumps(text, default=str))
    for line in text.splitlines():
        words = " ".join(line.split())
        if words:
            return words if len(words) <= LINE_CHARS else words[: LINE_CHARS - 3] + "..."
    return "(no output)"


@dataclass(slots=True)
class CountedRun:
    """What the statistics keep of one finished guided run.

    ``turns``: turns from the activating turn to the last event's;
    ``tools``: turns in which a tool result was judged; ``nodes``: per node,
    the counters of :data:`NODE_FIELDS` (entered is 0 or 1); ``lines``:
    failing outputs' first lines per node; ``false_activation``: the run
    expired or was aborted with no node completed.
    """

    key: str
    plan: str
    status: str
    finished_at: float
    turns: int = 0
    tools: int = 0
    false_activation: bool = False
    message: str | None = None
    nodes: dict[str, list[int]] = field(default_factory=dict)
    lines: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def minute(self) -> int:
        """The minute the run finished in (:func:`minute_of`)."""
        return minute_of(self.finished_at)

    def to_json(self) -> str:
        """The facts as JSON text (the SQL stores keep it to take the facts back out)."""
        return json.dumps(
            {
                "key": self.key,
                "plan": self.plan,
                "status": self.status,
                "finished_at": self.finished_at,
                "turns": self.turns,
                "tools": self.tools,
                "false_activation": self.false_activation,
                "message": self.message,
                "nodes": self.nodes,
                "lines": self.lines,
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> CountedRun:
        """Facts from :meth:`to_json`'s text."""
        return cls(**json.loads(text))


def counted_run(
    key: str,
    plan: str | None,
    status: str | None,
    events: Iterable[Mapping[str, Any]],
    finished_at: float,
) -> CountedRun | None:
    """The facts of a guided run from its events, or None while it is not finished.

    Example:
        >>> counted_run("r1", "p", "running", [], 0.0) is None
        True
    """
    if status not in FINISHED:
        return None
    facts = CountedRun(key=key, plan=plan or "", status=str(status), finished_at=finished_at)
    first_turn: int | None = None
    last_turn = 0
    tool_turns: set[int] = set()
    completed_any = False
    for event in events:
        kind = event.get("type")
        turn = event.get("turn")
        if isinstance(turn, int) and not isinstance(turn, bool):
            last_turn = max(last_turn, turn)
        node = event.get("node")
        if kind == "plan_activated":
            if first_turn is None and isinstance(turn, int):
                first_turn = turn
            message = event.get("message")
            if isinstance(message, str):
                facts.message = message
            continue
        if not isinstance(node, str):
            continue
        counters = facts.nodes.get(node)
        if counters is None and kind in ("node_entered", "node_verified"):
            counters = facts.nodes[node] = [1, 0, 0, 0, 0]
        if kind == "node_verified" and counters is not None:
            counters[1] += 1
            outcome = event.get("outcome")
            if isinstance(turn, int) and not event.get("gate"):
                tool_turns.add(turn)
            if outcome == "success":
                counters[3] += 1
                completed_any = completed_any or not event.get("gate")
            elif outcome == "fail":
                counters[2] += 1
                line = first_line(event.get("output"))
                lines = facts.lines.setdefault(node, {})
                lines[line] = lines.get(line, 0) + 1
        elif kind == "plan_escalated":
            if counters is None:
                counters = facts.nodes[node] = [0, 0, 0, 0, 0]
            counters[4] += 1
    facts.turns = max(last_turn - first_turn, 0) if first_turn is not None else 0
    facts.tools = len(tool_turns)
    facts.false_activation = facts.status in ("expired", "aborted") and not completed_any
    return facts


@dataclass(frozen=True, slots=True)
class FalseActivation:
    """A run suspected of a false activation, and the message that activated it."""

    key: str
    plan: str
    status: str
    finished_at: float
    message: str | None


@dataclass(slots=True)
class Tallies:
    """The sums of the facts of the runs finished in a period, as a store answers them.

    ``runs``: (plan, first minute of the counter, status) -> [runs,
    suspected false activations] (see :func:`periods`);
    ``turns``/``tools``: plan -> {value: completed runs}; ``nodes``: (plan,
    node) -> counters of :data:`NODE_FIELDS` (entered summed over runs);
    ``lines``: (plan, node) -> {first line: failures}; ``running``: plan ->
    runs still running that were last written in the period;
    ``activations``: the newest suspected false activations.
    """

    runs: dict[tuple[str, int, str], list[int]] = field(default_factory=dict)
    turns: dict[str, dict[int, int]] = field(default_factory=dict)
    tools: dict[str, dict[int, int]] = field(default_factory=dict)
    nodes: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    lines: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    running: dict[str, int] = field(default_factory=dict)
    activations: list[FalseActivation] = field(default_factory=list)

    def add_runs(self, plan: str, minute: int, status: str, runs: int, false: int) -> None:
        """Add runs of one plan, counter and outcome."""
        counts = self.runs.setdefault((plan, minute, status), [0, 0])
        counts[0] += runs
        counts[1] += false

    def add_node(self, plan: str, node: str, values: list[int]) -> None:
        """Add one node's counters (:data:`NODE_FIELDS`)."""
        sums = self.nodes.setdefault((plan, node), [0] * len(NODE_FIELDS))
        for i, value in enumerate(values):
            sums[i] += value

    def add(self, facts: CountedRun, bucket: int) -> None:
        """Add one run's facts, read from the counter starting at ``bucket`` (the scan's way)."""
        self.add_runs(facts.plan, bucket, facts.status, 1, int(facts.false_activation))
        if facts.status == "completed":
            for table, value in ((self.turns, facts.turns), (self.tools, facts.tools)):
                histogram = table.setdefault(facts.plan, {})
                histogram[value] = histogram.get(value, 0) + 1
        for node, values in facts.nodes.items():
            self.add_node(facts.plan, node, values)
        for node, lines in facts.lines.items():
            counts = self.lines.setdefault((facts.plan, node), {})
            for line, n in lines.items():
                counts[line] = counts.get(line, 0) + n
        if facts.false_activation:
            self.activations.append(
                FalseActivation(
                    facts.key, facts.plan, facts.status, facts.finished_at, facts.message
                )
            )


def scan_tallies(
    store: Store, *, plan: str | None, since_minute: int | None, step: int = 60
) -> Tallies:
    """:meth:`Store.run_tallies` by reading every guided run and its events.

    For the memory and file stores, which are not for fleets; the SQL stores
    keep counters instead.
    """
    tallies = Tallies()
    for record in store.list(kind=RunKind.GUIDED, plan=plan):
        minute = minute_of(record.updated_at)
        if since_minute is not None and minute < since_minute:
            continue
        if record.status == "running":
            name = record.plan or ""
            tallies.running[name] = tallies.running.get(name, 0) + 1
            continue
        if record.status not in FINISHED:
            continue
        events = (e.data for e in store.events(record.key))
        facts = counted_run(record.key, record.plan, record.status, events, record.updated_at)
        if facts is not None:
            tallies.add(facts, bucket_of(minute, since_minute, step))
    tallies.activations.sort(key=lambda a: (-a.finished_at, a.key))
    del tallies.activations[LISTED_ACTIVATIONS:]
    return tallies
