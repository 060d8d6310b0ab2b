"""Run statistics in the SQL stores: counters per plan and minute, kept in the commit.

The commit that finishes a guided run reads the run's events once
(:func:`~waygraph.store.stats.run_facts`), adds them to the counter tables
and keeps them in ``stats_counted`` under the run's key; any later commit of
that key (a rewind, a re-finish) takes them back out first. So a running
turn pays one primary-key delete that finds nothing, and a statistics query
reads counters, whose number grows with plans and minutes, not with runs.

Both SQL stores run the same statements through two callables: ``run``
(one statement, its rows) and ``many`` (one statement, many rows).

Example:
    >>> tables("INTEGER", "TEXT", "REAL", " WITHOUT ROWID")[0].split("(")[0].strip()
    'CREATE TABLE IF NOT EXISTS stats_runs'
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from contextlib import closing
from typing import Any

from waygraph.model._status import FINISHED
from waygraph.store.base import Commit
from waygraph.store.stats import (
    LISTED_ACTIVATIONS,
    NODE_FIELDS,
    FalseActivation,
    RunFacts,
    Tallies,
    run_facts,
)

__all__ = ["count_commits", "fill", "query_tallies", "runners", "tables"]

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


def tables(integer: str, text: str, real: str, without_rowid: str) -> list[str]:
    """The counter tables' DDL in a dialect: its integer, text and real types."""
    i, t, r, w = integer, text, real, without_rowid
    return [
        f"""CREATE TABLE IF NOT EXISTS stats_runs (
            plan {t} NOT NULL, minute {i} NOT NULL, status {t} NOT NULL,
            runs {i} NOT NULL, false_activations {i} NOT NULL,
            PRIMARY KEY (plan, minute, status)){w}""",
        f"""CREATE TABLE IF NOT EXISTS stats_values (
            plan {t} NOT NULL, minute {i} NOT NULL, measure {t} NOT NULL, value {i} NOT NULL,
            runs {i} NOT NULL, PRIMARY KEY (plan, minute, measure, value)){w}""",
        f"""CREATE TABLE IF NOT EXISTS stats_nodes (
            plan {t} NOT NULL, minute {i} NOT NULL, node {t} NOT NULL,
            {", ".join(f"{name} {i} NOT NULL" for name in NODE_FIELDS)},
            PRIMARY KEY (plan, minute, node)){w}""",
        f"""CREATE TABLE IF NOT EXISTS stats_lines (
            plan {t} NOT NULL, minute {i} NOT NULL, node {t} NOT NULL, line {t} NOT NULL,
            failures {i} NOT NULL, PRIMARY KEY (plan, minute, node, line)){w}""",
        f"""CREATE TABLE IF NOT EXISTS stats_counted (
            key {t} PRIMARY KEY NOT NULL, plan {t} NOT NULL, minute {i} NOT NULL,
            finished_at {r} NOT NULL, status {t} NOT NULL, false_activation {i} NOT NULL,
            message {t}, facts {t} NOT NULL){w}""",
        "CREATE INDEX IF NOT EXISTS stats_counted_activations"
        " ON stats_counted (false_activation, finished_at)",
    ]


def _upserts(m: str) -> dict[str, str]:
    nodes = ", ".join(NODE_FIELDS)
    return {
        "runs": (
            f"INSERT INTO stats_runs (plan, minute, status, runs, false_activations)"
            f" VALUES ({m}, {m}, {m}, {m}, {m}) ON CONFLICT (plan, minute, status) DO UPDATE"
            " SET runs = stats_runs.runs + excluded.runs,"
            " false_activations = stats_runs.false_activations + excluded.false_activations"
        ),
        "values": (
            f"INSERT INTO stats_values (plan, minute, measure, value, runs)"
            f" VALUES ({m}, {m}, {m}, {m}, {m}) ON CONFLICT (plan, minute, measure, value)"
            " DO UPDATE SET runs = stats_values.runs + excluded.runs"
        ),
        "nodes": (
            f"INSERT INTO stats_nodes (plan, minute, node, {nodes})"
            f" VALUES ({', '.join([m] * (3 + len(NODE_FIELDS)))})"
            " ON CONFLICT (plan, minute, node) DO UPDATE SET "
            + ", ".join(f"{n} = stats_nodes.{n} + excluded.{n}" for n in NODE_FIELDS)
        ),
        "lines": (
            f"INSERT INTO stats_lines (plan, minute, node, line, failures)"
            f" VALUES ({m}, {m}, {m}, {m}, {m}) ON CONFLICT (plan, minute, node, line)"
            " DO UPDATE SET failures = stats_lines.failures + excluded.failures"
        ),
    }


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

    def add(self, facts: RunFacts, sign: int) -> None:
        """Add (``sign`` 1) or take out (-1) one run's facts; 1 also keeps them."""
        plan, minute = facts.plan, facts.minute
        self.rows["runs"].append(
            (plan, minute, facts.status, sign, sign * int(facts.false_activation))
        )
        if facts.status == "completed":
            self.rows["values"] += [
                (plan, minute, "turns", facts.turns, sign),
                (plan, minute, "tools", facts.tools, sign),
            ]
        self.rows["nodes"] += [
            (plan, minute, node, *(sign * v for v in values))
            for node, values in facts.nodes.items()
        ]
        self.rows["lines"] += [
            (plan, minute, node, line, sign * n)
            for node, lines in facts.lines.items()
            for line, n in lines.items()
        ]
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
        for table, rows in self.rows.items():
            if rows:
                many(upserts[table], rows)


def _events(keys: Sequence[str], run: Run, mark: str) -> dict[str, list[dict[str, Any]]]:
    """The events of each key, in order."""
    found: dict[str, list[dict[str, Any]]] = {key: [] for key in keys}
    for start in range(0, len(keys), _CHUNK):
        chunk = keys[start : start + _CHUNK]
        rows = run(
            f"SELECT key, data FROM events WHERE key IN ({', '.join([mark] * len(chunk))})"
            " ORDER BY key, seq",
            chunk,
        )
        for key, data in rows:
            # SQLite hands back JSON text, psycopg the parsed value of a json column.
            found[key].append(json.loads(data) if isinstance(data, str | bytes) else data)
    return found


#: Keys per IN (...) list: well under SQLite's 32,766 parameters.
_CHUNK = 500


def count_commits(
    commits: Sequence[Commit], times: Sequence[float], run: Run, many: Many, mark: str
) -> None:
    """Keep the counters right after a transaction's writes, inside it.

    ``times``: each commit's store time. A commit of a key counted before
    takes its facts out; a commit that leaves a guided run finished reads its
    events and counts it. A running turn pays one primary-key delete.
    """
    finished = [c.kind == "guided" and c.status in FINISHED for c in commits]
    # A new key has nothing counted, unless the other tables were emptied by
    # hand: a create that counts checks anyway, so a count is never doubled.
    check = [
        c.key for c, done in zip(commits, finished, strict=True) if c.expected_version != 0 or done
    ]
    changes = _Changes()
    for start in range(0, len(check), _CHUNK):
        chunk = check[start : start + _CHUNK]
        marks = ", ".join([mark] * len(chunk))
        for (old,) in run(
            f"DELETE FROM stats_counted WHERE key IN ({marks}) RETURNING facts", chunk
        ):
            changes.add(RunFacts.from_json(old), -1)
    done = [(c, t) for c, t, f in zip(commits, times, finished, strict=True) if f]
    if done:
        events = _events([c.key for c, _ in done], run, mark)
        for c, now in done:
            facts = run_facts(c.key, c.plan, c.status, events[c.key], now)
            if facts is not None:
                changes.add(facts, 1)
    changes.write(many, mark)


def fill(run: Run, many: Many, mark: str) -> int:
    """Count every finished guided run not counted yet (a store opened after an upgrade).

    Returns how many runs were counted.
    """
    marks = ", ".join([mark] * len(_FINISHED))
    rows = run(
        "SELECT key, plan, status, updated_at FROM records WHERE kind = 'guided'"
        f" AND status IN ({marks}) AND key NOT IN (SELECT key FROM stats_counted)",
        _FINISHED,
    )
    for start in range(0, len(rows), _CHUNK):
        chunk = rows[start : start + _CHUNK]
        events = _events([key for key, _, _, _ in chunk], run, mark)
        changes = _Changes()
        for key, plan, status, updated_at in chunk:
            facts = run_facts(key, plan, status, events[key], float(updated_at))
            if facts is not None:
                changes.add(facts, 1)
        changes.write(many, mark)
    return len(rows)


def query_tallies(run: Run, mark: str, *, plan: str | None, since_minute: int | None) -> Tallies:
    """The tallies of the runs finished from ``since_minute`` on, summed in SQL.

    ``run`` should read one snapshot (the caller's transaction), so the
    parts agree.
    """
    where, params = _where(mark, plan, since_minute)
    tallies = Tallies()
    for name, minute, status, runs, false in run(
        "SELECT plan, minute, status, SUM(runs), SUM(false_activations) FROM stats_runs"
        f"{where} GROUP BY plan, minute, status HAVING SUM(runs) > 0",
        params,
    ):
        tallies.runs[(name, int(minute), status)] = [int(runs), int(false)]
    for name, measure, value, runs in run(
        f"SELECT plan, measure, value, SUM(runs) FROM stats_values{where}"
        " GROUP BY plan, measure, value HAVING SUM(runs) > 0",
        params,
    ):
        table = tallies.turns if measure == "turns" else tallies.tools
        table.setdefault(name, {})[int(value)] = int(runs)
    sums = ", ".join(f"SUM({n})" for n in NODE_FIELDS)
    for name, node, *values in run(
        f"SELECT plan, node, {sums} FROM stats_nodes{where} GROUP BY plan, node"
        f" HAVING SUM({NODE_FIELDS[0]}) > 0 OR SUM(escalations) > 0",
        params,
    ):
        tallies.nodes[(name, node)] = [int(v) for v in values]
    for name, node, line, failures in run(
        f"SELECT plan, node, line, SUM(failures) FROM stats_lines{where}"
        " GROUP BY plan, node, line HAVING SUM(failures) > 0",
        params,
    ):
        tallies.lines.setdefault((name, node), {})[line] = int(failures)
    running_where = " WHERE kind = 'guided' AND status = 'running'"
    running_params: list[Any] = []
    if plan is not None:
        running_where += f" AND plan = {mark}"
        running_params.append(plan)
    if since_minute is not None:
        running_where += f" AND updated_at >= {mark}"
        running_params.append(since_minute * 60.0)
    for name, runs in run(
        f"SELECT plan, COUNT(*) FROM records{running_where} GROUP BY plan", running_params
    ):
        tallies.running[name or ""] = int(runs)
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


def _where(mark: str, plan: str | None, since_minute: int | None) -> tuple[str, list[Any]]:
    where: list[str] = []
    params: list[Any] = []
    if plan is not None:
        where.append(f"plan = {mark}")
        params.append(plan)
    if since_minute is not None:
        where.append(f"minute >= {mark}")
        params.append(since_minute)
    return (" WHERE " + " AND ".join(where) if where else ""), params
