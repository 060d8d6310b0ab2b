"""Statistics over the stored guided runs: how each plan and each node fares (``waygraph stats``).

:func:`plan_stats` asks the store for the summed facts of the runs finished
in a period (:meth:`waygraph.store.Store.run_tallies`: SQL aggregates over
counters in SQLite and PostgreSQL, a scan in the others) and returns a
:class:`Statistics`, a pydantic model that ``waygraph stats --json``
prints. Per plan: outcomes and their shares, the median turns and tool
results of completed runs, and the outcomes over the period in equal
buckets; per node: failure rate, mean attempts, the commonest failing
outputs' first lines and the escalations from it; and the runs suspected of a
false activation (expired or aborted with no node completed), with the
message that activated them. Periods start on a whole minute.

Example:
    >>> from waygraph.store import open_store
    >>> plan_stats(open_store("memory://"), now=600.0).plans
    []
"""

from __future__ import annotations

import time

from pydantic import BaseModel, Field

from waygraph.store import Store
from waygraph.store.stats import MINUTE, NODE_FIELDS, Tallies, minute_of

__all__ = [
    "OUTCOMES",
    "TABLE_OUTCOMES",
    "Bucket",
    "FailingOutput",
    "FalseActivationStats",
    "NodeStats",
    "PlanStats",
    "Statistics",
    "plan_stats",
]

#: The outcomes counted and shared, in display order; ``running`` is counted beside them.
OUTCOMES = ("completed", "escalated", "expired", "aborted", "failed")
#: The outcomes tables give a column each (a guided run rarely fails: ``failed`` is in the JSON).
TABLE_OUTCOMES = OUTCOMES[:4]
#: Failing outputs listed per node.
TOP_OUTPUTS = 5
#: Buckets the period is split into for the trend.
BUCKETS = 8
#: Periods shorter than this (minutes) are counted per minute, longer ones per hour.
FINE_MINUTES = 4 * 60


class Bucket(BaseModel):
    """One slice of the period: runs finished in it, per outcome, and their shares."""

    start: float = Field(description="Epoch seconds (inclusive).")
    end: float = Field(description="Epoch seconds (exclusive).")
    runs: int
    counts: dict[str, int]
    shares: dict[str, float]


class FailingOutput(BaseModel):
    """A failing output's first line and how many failing results had it."""

    line: str
    count: int


class NodeStats(BaseModel):
    """How one node of a plan fared over the period's finished runs."""

    node: str
    runs: int = Field(description="Finished runs that entered the node (or were judged at it).")
    attempts: int = Field(description="Results judged at the node.")
    failures: int
    failure_rate: float = Field(description="failures / attempts (0 with no attempts).")
    mean_attempts: float = Field(description="attempts / runs.")
    escalations: int = Field(description="Runs that escalated from this node.")
    failing_outputs: list[FailingOutput]


class PlanStats(BaseModel):
    """One plan's runs over the period."""

    plan: str
    runs: int = Field(description="Finished runs.")
    running: int = Field(description="Runs still running, last written in the period.")
    counts: dict[str, int]
    shares: dict[str, float] = Field(description="Share of the finished runs per outcome.")
    median_turns: float | None = Field(description="Completed runs: turns after activation.")
    median_tool_results: float | None = Field(description="Completed runs: turns with a result.")
    false_activations: int
    trend: list[Bucket]
    nodes: list[NodeStats]


class FalseActivationStats(BaseModel):
    """A run that expired or was aborted with no node completed."""

    run: str
    plan: str
    status: str
    finished_at: float
    message: str | None = Field(description="The message that activated it (if recorded).")


class Statistics(BaseModel):
    """What ``waygraph stats`` reports: every plan with runs in the period."""

    since: float | None = Field(description="Start of the period (a whole minute), or None.")
    now: float
    plans: list[PlanStats]
    false_activations: int
    suspected_false_activations: list[FalseActivationStats] = Field(
        description="The newest suspected false activations (at most 20)."
    )


def plan_stats(
    store: Store,
    *,
    plan: str | None = None,
    since: float | None = None,
    now: float | None = None,
) -> Statistics:
    """Statistics of the guided runs in ``store`` finished in the period.

    ``since``: the period's start in epoch seconds, rounded down to a whole
    minute (None: every run). ``plan``: one plan only. ``now``: the
    period's end for the trend (default: the clock).

    Example:
        >>> from waygraph.store import open_store
        >>> store = open_store("memory://")
        >>> _ = store.commit("r1", {}, 0, [{"type": "plan_activated", "turn": 1}],
        ...                  status="aborted", plan="p")
        >>> stats = plan_stats(store)
        >>> stats.plans[0].counts["aborted"], stats.false_activations
        (1, 1)
    """
    end = time.time() if now is None else now
    since_minute = None if since is None else minute_of(since)
    end_minute = minute_of(end)
    # Short periods read minute counters, longer ones hour counters: the
    # rows read stay a few thousand whatever the period (docs/stores.md).
    fine = since_minute is not None and end_minute - since_minute < FINE_MINUTES
    step = 1 if fine else 60
    tallies = store.run_tallies(plan=plan, since_minute=since_minute, step=step)
    minutes = [m for (_, m, _) in tallies.runs]
    first = since_minute if since_minute is not None else min(minutes, default=end_minute)
    last = max(end_minute, max(minutes, default=first))
    names = sorted({p for (p, _, _) in tallies.runs} | set(tallies.running))
    plans = [_plan(tallies, name, _Buckets(first, last, step)) for name in names]
    return Statistics(
        since=None if since_minute is None else float(since_minute * MINUTE),
        now=end,
        plans=plans,
        false_activations=sum(p.false_activations for p in plans),
        suspected_false_activations=[
            FalseActivationStats(
                run=a.key,
                plan=a.plan,
                status=a.status,
                finished_at=a.finished_at,
                message=a.message,
            )
            for a in tallies.activations
        ],
    )


class _Buckets:
    """The trend's equal slices of minutes ``first``..``last``, in whole ``step`` counters."""

    def __init__(self, first: int, last: int, step: int) -> None:
        self.first = first
        self.origin = first - first % step
        units = (last - last % step - self.origin) // step + 1
        self.width = step * -(-units // BUCKETS)
        self.count = -(-units * step // self.width)

    def index(self, minute: int) -> int:
        return min(max(minute - self.origin, 0) // self.width, self.count - 1)

    def bounds(self, i: int) -> tuple[float, float]:
        start = max(self.first, self.origin + i * self.width)
        return float(start * MINUTE), float((self.origin + (i + 1) * self.width) * MINUTE)


def _plan(tallies: Tallies, name: str, buckets: _Buckets) -> PlanStats:
    counts = dict.fromkeys(OUTCOMES, 0)
    false = 0
    slices = [dict.fromkeys(OUTCOMES, 0) for _ in range(buckets.count)]
    for (plan, minute, status), (runs, false_runs) in tallies.runs.items():
        if plan != name:
            continue
        counts[status] = counts.get(status, 0) + runs
        false += false_runs
        bucket = slices[buckets.index(minute)]
        bucket[status] = bucket.get(status, 0) + runs
    trend = [
        Bucket(
            start=buckets.bounds(i)[0],
            end=buckets.bounds(i)[1],
            runs=sum(bucket.values()),
            counts=bucket,
            shares=_shares(bucket),
        )
        for i, bucket in enumerate(slices)
    ]
    return PlanStats(
        plan=name,
        runs=sum(counts.values()),
        running=tallies.running.get(name, 0),
        counts=counts,
        shares=_shares(counts),
        median_turns=_median(tallies.turns.get(name, {})),
        median_tool_results=_median(tallies.tools.get(name, {})),
        false_activations=false,
        trend=trend,
        nodes=_nodes(tallies, name),
    )


def _nodes(tallies: Tallies, name: str) -> list[NodeStats]:
    nodes = []
    for (plan, node), values in tallies.nodes.items():
        if plan != name:
            continue
        sums = dict(zip(NODE_FIELDS, values, strict=True))
        runs, attempts, failures = sums["entered"], sums["attempts"], sums["failures"]
        lines = tallies.lines.get((plan, node), {})
        top = sorted(lines.items(), key=lambda item: (-item[1], item[0]))[:TOP_OUTPUTS]
        nodes.append(
            NodeStats(
                node=node,
                runs=runs,
                attempts=attempts,
                failures=failures,
                failure_rate=round(failures / attempts, 4) if attempts else 0.0,
                mean_attempts=round(attempts / runs, 4) if runs else 0.0,
                escalations=sums["escalations"],
                failing_outputs=[FailingOutput(line=line, count=n) for line, n in top],
            )
        )
    # Where runs go wrong first: most failures, then escalations, then name.
    nodes.sort(key=lambda n: (-n.failures, -n.escalations, n.node))
    return nodes


def _shares(counts: dict[str, int]) -> dict[str, float]:
    total = sum(counts.values())
    return {k: round(v / total, 4) if total else 0.0 for k, v in counts.items()}


def _median(histogram: dict[int, int]) -> float | None:
    """The median of values given as {value: how many}; None with none.

    Example:
        >>> _median({3: 2, 5: 1}), _median({1: 1, 4: 1}), _median({})
        (3.0, 2.5, None)
    """
    total = sum(histogram.values())
    if not total:
        return None
    low, high = (total - 1) // 2, total // 2  # the middle positions, 0-based
    seen, found = 0, []
    for value in sorted(histogram):
        n = histogram[value]
        for position in (low, high):
            if seen <= position < seen + n:
                found.append(value)
        seen += n
    return sum(found) / len(found)
