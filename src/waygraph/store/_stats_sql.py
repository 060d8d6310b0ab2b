"""Run statistics in the SQL stores: counters per plan and minute/hour, kept in the commit.

The commit that finishes a guided run reads the run's events once
(:func:`~waygraph.store.stats.counted_run`), adds them to the counter tables
(per minute and per hour) and keeps them in ``stats_counted`` under the
run's key; a later commit that finishes it again or rewinds it takes them
back out first. A running turn pays nothing, and a statistics query reads
counters, whose number grows with plans and time, not with runs.

Both SQL stores run the same statements through two callables: ``run``
(one statement, its rows) and ``many`` (one statement, many rows).

Example:
    >>> tables("INTEGER", "TEXT", "REAL", " WITHOUT ROWID")[0].split("(")[0].strip()
    'CREATE TABLE IF NOT EXISTS stats_runs'
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from contextlib import closing
from typing import Any

from waygraph.model._status import FINISHED
from waygraph.model.record import RunKind
from waygraph.store._commits import Commit
from waygraph.store.stats import (
    LISTED_ACTIVATIONS,
    NODE_FIELDS,
    CountedRun,
    FalseActivation,
    Tallies,
    counted_run,
    periods,
)

__all__ = ["count_commits", "fill", "needs_count", "query_tallies", "runners", "tables"]

Run = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]
Many = Callable[[str, list[tuple[Any, ...]]], None]

_FINISHED = tuple(sorted(FINISHED))


def runners(conn: Any) -> tuple[Run, Many]:
    """``run`` and ``many`` over a DB-API connection (sqlite3 or psycopg) in a transaction."""

    def run(query: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return list(conn.execute(query, params).fetchall())

    def many(query: str, rows: list[tuple[Any, ...]]) -> None:
        with closing(conn.cursor()) as cur:
            cur.executemany(query, rows)

    return run, many


#: The counter tables: name -> (key columns after span, minute, plan; counter columns).
#: Each run is counted twice, in its minute (span 1) and in its hour (span 60).
_TABLES: dict[str, tuple[tuple[tuple[str, str], ...], tuple[str, ...]]] = {
    "stats_runs": ((("status", "t"),), ("runs", "false_activations")),
    "stats_values": ((("measure", "t"), ("value", "i")), ("runs",)),
    "stats_nodes": ((("node", "t"),), NODE_FIELDS),
    "stats_lines": ((("node", "t"), ("line", "t")), ("failures",)),
}
#: Row kinds of :class:`_Changes` -> their table.
_KINDS = {
    "runs": "stats_runs",
    "values": "stats_values",
    "nodes": "stats_nodes",
    "lines": "stats_lines",
}


def tables(integer: str, text: str, real: str, without_rowid: str) -> list[str]:
    """The counter tables' DDL in a dialect: its integer, text and real types."""
    types = {"i": integer, "t": text}
    ddl = []
    for name, (keys, counters) in _TABLES.items():
        columns = [
            f"span {integer} NOT NULL",
            f"minute {integer} NOT NULL",
            f"plan {text} NOT NULL",
        ]
        columns += [f"{column} {types[kind]} NOT NULL" for column, kind in keys]
        columns += [f"{column} {integer} NOT NULL" for column in counters]
        primary = ", ".join(["span", "minute", "plan", *(column for column, _ in keys)])
        ddl.append(
            f"CREATE TABLE IF NOT EXISTS {name} ({', '.join(columns)},"
            f" PRIMARY KEY ({primary})){without_rowid}"
        )
    return [
        *ddl,
        f"""CREATE TABLE IF NOT EXISTS stats_counted (
            key {text} PRIMARY KEY NOT NULL, plan {text} NOT NULL, minute {integer} NOT NULL,
            finished_at {real} NOT NULL, status {text} NOT NULL,
            false_activation {integer} NOT NULL, message {text}, facts {text} NOT NULL
        ){without_rowid}""",
        "CREATE INDEX IF NOT EXISTS stats_counted_activations"
        " ON stats_counted (false_activation, finished_at)",
    ]


def _upserts(m: str) -> dict[str, str]:
    statements = {}
    for kind, name in _KINDS.items():
        keys, counters = _TABLES[name]
        primary = ["span", "minute", "plan", *(column for column, _ in keys)]
        columns = [*primary, *counters]
        statements[kind] = (
            f"INSERT INTO {name} ({', '.join(columns)}) VALUES ({', '.join([m] * len(columns))})"
            f" ON CONFLICT ({', '.join(primary)}) DO UPDATE SET "
            + ", ".join(f"{c} = {name}.{c} + excluded.{c}" for c in counters)
        )
    return statements


_UPSERTS = {"?": _upserts("?"), "%s": _upserts("%s")}


class _Changes:
    """Counter changes of one transaction, written with one statement per table."""

    def __init__(self) -> None:
        self.rows: dict[str, list[tuple[Any, ...]]] = {
            "runs": [],
            "values": [],
            "nodes": [],
            "lines": [],
        }
        self.counted: list[tuple[Any, ...]] = []

    def add(self, facts: CountedRun, sign: int) -> None:
        """Add (``sign`` 1) or take out (-1) one run's facts; 1 also keeps them."""
        plan, minute = facts.plan, facts.minute
        # What follows the (span, minute, plan) of each row is the same for both spans.
        runs = (facts.status, sign, sign * int(facts.false_activation))
        values = (
            [("turns", facts.turns, sign), ("tools", facts.tools, sign)]
            if facts.status == "completed"
            else []
        )
        nodes = [(node, *(sign * v for v in counts)) for node, counts in facts.nodes.items()]
        lines = [
            (node, line, sign * n)
            for node, counted in facts.lines.items()
            for line, n in counted.items()
        ]
        rows = self.rows
        for span, start in ((1, minute), (60, minute - minute % 60)):
            at = (span, start, plan)
            rows["runs"].append(at + runs)
            rows["values"] += [at + tail for tail in values]
            rows["nodes"] += [at + tail for tail in nodes]
            rows["lines"] += [at + tail for tail in lines]
        if sign > 0:
            self.counted.append(
                (
                    facts.key,
                    plan,
                    minute,
                    facts.finished_at,
                    facts.status,
                    int(facts.false_activation),
                    facts.message,
                    facts.to_json(),
                )
            )

    def write(self, many: Many, mark: str) -> None:
        if self.counted:
            many(
                "INSERT INTO stats_counted (key, plan, minute, finished_at, status,"
                f" false_activation, message, facts) VALUES ({', '.join([mark] * 8)})",
                self.counted,
            )
        upserts = _UPSERTS[mark]
        # Every transaction locks counter rows in one order (table, then key),
        # so two finishing commits in PostgreSQL wait for each other, never
        # deadlock; each key's changes are summed into one row first.
        for kind, rows in self.rows.items():
            if not rows:
                continue
            width = 3 + len(_TABLES[_KINDS[kind]][0])
            if len({row[:width] for row in rows}) == len(rows):
                # One run's facts (the usual commit): no key twice, nothing to sum.
                many(upserts[kind], sorted(rows, key=lambda row: row[:width]))
                continue
            summed: dict[tuple[Any, ...], list[int]] = {}
            for row in rows:
                counters = summed.setdefault(row[:width], [0] * (len(row) - width))
                for i, value in enumerate(row[width:]):
                    counters[i] += value
            many(upserts[kind], [(*key, *summed[key]) for key in sorted(summed)])


#: The events the facts read (:func:`~waygraph.store.stats.counted_run`); the
#: others (edges followed, claims, checkpoints...) are not decoded at all.
_READ = ("plan_activated", "node_entered", "node_verified", "plan_escalated")
# The type in quotes, not `"type":"..."`: text another encoder wrote (with
# spaces) is found too; an event found by mistake is decoded, then skipped.
# One search per event (a loop over four substrings cost twice as much).
_MARKERS = re.compile("|".join(f'"{kind}"' for kind in _READ))


def _events(keys: Sequence[str], run: Run, mark: str) -> dict[str, list[dict[str, Any]]]:
    """The events of each key the facts read, in order."""
    found: dict[str, list[dict[str, Any]]] = {key: [] for key in keys}
    for start in range(0, len(keys), _CHUNK):
        chunk = keys[start : start + _CHUNK]
        rows = run(
            f"SELECT key, data FROM events WHERE key IN ({', '.join([mark] * len(chunk))})"
            " ORDER BY key, seq",
            chunk,
        )
        texts: list[str] = []
        owners: list[str] = []
        for key, data in rows:
            if isinstance(data, dict):  # psycopg parses a json column itself
                if data.get("type") in _READ:
                    found[key].append(data)
            elif _MARKERS.search(data):
                texts.append(data)
                owners.append(key)
        # One parse of one JSON array: far cheaper than one json.loads per event.
        for key, event in zip(owners, json.loads("[" + ",".join(texts) + "]"), strict=True):
            found[key].append(event)
    return found


_REWOUND = '"rewound"'

#: Keys per IN (...) list: well under SQLite's 32,766 parameters.
_CHUNK = 500


def _finished(c: Commit) -> bool:
    return c.kind == RunKind.GUIDED and c.status in FINISHED


def _rewinds(c: Commit) -> bool:
    return any(_REWOUND in e for e in c.events if isinstance(e, str))


def needs_count(commits: Sequence[Commit]) -> bool:
    """Whether :func:`count_commits` has anything to do for these commits.

    Only a finished guided run is counted, and the engine changes one only
    by finishing it again or by a rewind: those commits take the old count
    out. Any other commit (every running turn) costs nothing, so a store
    can skip the statistics' round trips for it.

    Example:
        >>> from waygraph.store._commits import normalise_commit
        >>> c = normalise_commit("k", {}, 0, [], kind="guided", session=None,
        ...                      status="completed", plan=None, correlation_ids=[],
        ...                      make_current=False)
        >>> needs_count([c]), needs_count([])
        (True, False)
    """
    return any(_finished(c) or _rewinds(c) for c in commits)


def count_commits(
    commits: Sequence[Commit], times: Sequence[float], run: Run, many: Many, mark: str
) -> None:
    """Keep the counters right after a transaction's writes, inside it.

    ``times``: each commit's store time. A commit of a key counted before
    takes its facts out; a commit that leaves a guided run finished reads its
    events and counts it. A running turn pays nothing.
    """
    finished = [_finished(c) for c in commits]
    check = [c.key for c, done in zip(commits, finished, strict=True) if done or _rewinds(c)]
    if not check:
        return
    changes = _Changes()
    for start in range(0, len(check), _CHUNK):
        chunk = check[start : start + _CHUNK]
        marks = ", ".join([mark] * len(chunk))
        for (old,) in run(
            f"DELETE FROM stats_counted WHERE key IN ({marks}) RETURNING facts", chunk
        ):
            changes.add(CountedRun.from_json(old), -1)
    done = [(c, t) for c, t, f in zip(commits, times, finished, strict=True) if f]
    if done:
        events = _events([c.key for c, _ in done], run, mark)
        for c, now in done:
            facts = counted_run(c.key, c.plan, c.status, events[c.key], now)
            if facts is not None:
                changes.add(facts, 1)
    changes.write(many, mark)


def fill(run: Run, many: Many, mark: str) -> int:
    """Count every finished guided run not counted yet (a store opened after an upgrade).

    Returns how many runs were counted.
    """
    marks = ", ".join([mark] * len(_FINISHED))
    rows = run(
        f"SELECT key, plan, status, updated_at FROM records WHERE kind = '{RunKind.GUIDED.value}'"
        f" AND status IN ({marks}) AND key NOT IN (SELECT key FROM stats_counted)",
        _FINISHED,
    )
    for start in range(0, len(rows), _CHUNK):
        chunk = rows[start : start + _CHUNK]
        events = _events([key for key, _, _, _ in chunk], run, mark)
        changes = _Changes()
        for key, plan, status, updated_at in chunk:
            facts = counted_run(key, plan, status, events[key], float(updated_at))
            if facts is not None:
                changes.add(facts, 1)
        changes.write(many, mark)
    return len(rows)


def query_tallies(
    run: Run, mark: str, *, plan: str | None, since_minute: int | None, step: int
) -> Tallies:
    """The tallies of the runs finished from ``since_minute`` on, summed in SQL.

    ``step`` 60 reads hour counters (and minute counters for the hour the
    period starts in), 1 minute counters: the rows read grow with the
    period and the plans, not with the runs. ``run`` should read one
    snapshot (the caller's transaction), so the parts agree.
    """
    tallies = Tallies()
    for span, low, high in periods(since_minute, step):
        where = f" WHERE span = {mark}"
        params: list[Any] = [span]
        if low is not None:
            where += f" AND minute >= {mark}"
            params.append(low)
        if high is not None:
            where += f" AND minute < {mark}"
            params.append(high)
        if plan is not None:
            where += f" AND plan = {mark}"
            params.append(plan)
        _read_counters(run, where, params, tallies)
    _read_running(run, mark, plan, since_minute, tallies)
    act_where = " WHERE false_activation = 1"
    act_params: list[Any] = []
    if since_minute is not None:
        act_where += f" AND finished_at >= {mark}"
        act_params.append(since_minute * 60.0)
    if plan is not None:
        act_where += f" AND plan = {mark}"
        act_params.append(plan)
    for key, name, status, finished_at, message in run(
        f"SELECT key, plan, status, finished_at, message FROM stats_counted{act_where}"
        f" ORDER BY finished_at DESC, key LIMIT {LISTED_ACTIVATIONS}",
        act_params,
    ):
        tallies.activations.append(FalseActivation(key, name, status, float(finished_at), message))
    return tallies


def _read_counters(run: Run, where: str, params: list[Any], tallies: Tallies) -> None:
    """Add one part of the period's counters to ``tallies``."""
    for name, minute, status, runs, false in run(
        "SELECT plan, minute, status, SUM(runs), SUM(false_activations) FROM stats_runs"
        f"{where} GROUP BY plan, minute, status HAVING SUM(runs) > 0",
        params,
    ):
        tallies.add_runs(name, int(minute), status, int(runs), int(false))
    for name, measure, value, runs in run(
        f"SELECT plan, measure, value, SUM(runs) FROM stats_values{where}"
        " GROUP BY plan, measure, value HAVING SUM(runs) > 0",
        params,
    ):
        table = tallies.turns if measure == "turns" else tallies.tools
        histogram = table.setdefault(name, {})
        histogram[int(value)] = histogram.get(int(value), 0) + int(runs)
    sums = ", ".join(f"SUM({n})" for n in NODE_FIELDS)
    for name, node, *values in run(
        f"SELECT plan, node, {sums} FROM stats_nodes{where} GROUP BY plan, node"
        f" HAVING SUM({NODE_FIELDS[0]}) > 0 OR SUM(escalations) > 0",
        params,
    ):
        tallies.add_node(name, node, [int(v) for v in values])
    for name, node, line, failures in run(
        f"SELECT plan, node, line, SUM(failures) FROM stats_lines{where}"
        " GROUP BY plan, node, line HAVING SUM(failures) > 0",
        params,
    ):
        lines = tallies.lines.setdefault((name, node), {})
        lines[line] = lines.get(line, 0) + int(failures)


def _read_running(
    run: Run, mark: str, plan: str | None, since_minute: int | None, tallies: Tallies
) -> None:
    # `kind || ''`: SQLite would walk every guided run through the kind
    # index; the status index finds the running ones, which are few.
    where = f" WHERE status = 'running' AND kind || '' = '{RunKind.GUIDED.value}'"
    params: list[Any] = []
    if plan is not None:
        where += f" AND plan = {mark}"
        params.append(plan)
    if since_minute is not None:
        where += f" AND updated_at >= {mark}"
        params.append(since_minute * 60.0)
    for name, runs in run(f"SELECT plan, COUNT(*) FROM records{where} GROUP BY plan", params):
        tallies.running[name or ""] = int(runs)
