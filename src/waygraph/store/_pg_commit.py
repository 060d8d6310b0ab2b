"""PostgreSQL: one record's whole commit as one statement, so a commit is one round trip.

A commit used to be six to eight statements, each waiting for its answer:
begin, the session's lock, the record, the ``latest`` flag, the correlation
rows, the events, the pointer, the notice, commit. Here the record's write
is a data-modifying CTE every other part reads (``FROM w``), so when the
version check fails (``w`` is empty) nothing else is written either, and the
store sends begin, the lock, this statement and commit together
(:meth:`PostgresStore._commit_all`).

What each part does is what the separate statements did:

- the version check: ``INSERT ... ON CONFLICT (key) DO NOTHING`` (create) or
  the row locked ``FOR UPDATE`` only at the expected version (update); an
  empty ``w`` means another writer won;
- the ``latest`` flag (:mod:`waygraph.store.rows`): the record is flagged,
  and when it was not flagged before the session's other record of its kind
  loses the flag (the old flag is read from the row locked, so it is the
  row's current one);
- correlation rows: the ones no longer wanted are deleted and the new ones
  inserted (rows kept are not rewritten);
- events: numbered from the record's new ``last_seq`` backwards, sent as
  one JSON array of the JSON texts the store encoded (``json`` keeps each
  element's text as it is);
- the session pointer, when asked for;
- the ``NOTIFY``, its payload JSON ``{"key": ..., "session": ...}`` (``{}``
  past NOTIFY's 8000 bytes) made by the server and only when it is sent,
  delivered at commit and only if the record was written,
  and only while someone listens (a live row in ``listeners``, see
  :meth:`PostgresStore.listen`) unless the store notifies always: every
  notifying commit takes PostgreSQL's one lock on the notification queue
  at commit, so commits that notify are flushed one after another
  (docs/benchmarks.md measured 354-655 commits/s from 8 threads with the
  notice against 1,457-1,613 without it).

Each connection prepares the two statements once (:data:`PREPARES`, SQL
``PREPARE``), and a commit sends ``BEGIN; <locks>; EXECUTE ...; COMMIT`` as
one query string, its values bound client-side (:func:`commit_call`):
psycopg's pipeline mode measured about twice the client CPU of that string
for the same commands (bench/pg_commits.py, docs/benchmarks.md).

Example:
    >>> from waygraph.store._commits import normalise_commit
    >>> c = normalise_commit("k", {}, 0, [{"e": 1}], kind="guided", session=None,
    ...                      status=None, plan=None, correlation_ids=[], make_current=False)
    >>> call, values = commit_call(c, 1.5, "waygraph", always=False)
    >>> call.startswith("EXECUTE waygraph_create("), '[{"e":1}]' in values
    (True, True)
"""

from __future__ import annotations

import re
from typing import Any

from waygraph.store._commits import Commit

__all__ = ["CREATE", "PREPARES", "UPDATE", "commit_call"]

# Every part after the record's write: each reads w, so none runs when w is empty.
# `latest <> 0` (the flag is 0 or 1), not `= 1`: the generic plan of the
# prepared statement would read the flag's index, every flagged record of
# the kind (measured: 2,000 rows read for a store of 2,000 plans), instead
# of the session's records.
_REST = """, cleared AS (
    UPDATE records SET latest = 0
    WHERE session = %(session)s::text AND kind = %(kind)s::text AND latest <> 0
      AND key <> %(key)s::text AND EXISTS (SELECT 1 FROM w WHERE w.was = 0)
), gone AS (
    DELETE FROM record_correlations
    WHERE key = %(key)s::text AND correlation_id <> ALL (%(ids)s::text[])
      AND %(replace)s::boolean AND EXISTS (SELECT 1 FROM w)
), kept AS (
    INSERT INTO record_correlations (correlation_id, key)
    SELECT c, %(key)s::text FROM w, unnest(%(ids)s::text[]) AS c
    ON CONFLICT DO NOTHING
), appended AS (
    INSERT INTO events (key, seq, data)
    SELECT %(key)s::text, w.last_seq - %(n)s::bigint + e.i, e.d
    FROM w, json_array_elements(%(events)s::json) WITH ORDINALITY AS e(d, i)
), pointed AS (
    INSERT INTO session_pointers (session, key)
    SELECT %(session)s::text, %(key)s::text FROM w WHERE %(current)s::boolean
    ON CONFLICT (session) DO UPDATE SET key = excluded.key
)
SELECT w.version,
    CASE WHEN %(always)s::boolean OR EXISTS (
        SELECT 1 FROM listeners l, pg_stat_get_activity(l.pid) a
        WHERE l.channel = %(channel)s::text
          AND (a.backend_start IS NULL OR a.backend_start = l.started)
    ) THEN pg_notify(%(channel)s::text, (
        SELECT CASE WHEN octet_length(t) < 7900 THEN t ELSE '{}' END FROM format(
            '{"key": %s, "session": %s}', to_json(%(key)s::text),
            COALESCE(to_json(%(session)s::text)::text, 'null')) AS t
    )) END
FROM w"""

# The record data is our own JSON text stored as `json` (not `jsonb`), so
# every value round-trips exactly. A new record carries the flag at once.
CREATE = (
    "WITH w AS (INSERT INTO records (key, kind, data, version, session, status, plan,"
    " correlation_ids, last_seq, updated_at, latest)"
    " VALUES (%(key)s::text, %(kind)s::text, %(data)s::json, 1, %(session)s::text,"
    " %(status)s::text, %(plan)s::text, %(ids)s::text[], %(n)s::bigint,"
    " %(now)s::double precision, 1)"
    " ON CONFLICT (key) DO NOTHING RETURNING version, last_seq, 0 AS was)" + _REST
)

# FOR UPDATE: a concurrent writer of the key makes this wait, then find
# another version (empty: Conflict); the flag read is the row's current one.
# A record moved to another session or kind: its flag was its old group's
# row, so `was` is 0 (the new group's row moves to it) and the old group's
# newest other record gets the flag (`refilled`; the statement's snapshot
# still shows the record in its old group, hence `key <>`). The commit holds
# the new group's lock, not the old one's (it learns the old group only
# here): a move racing another commit in its old group may leave that group
# two rows until its next new record. waygraph itself never moves a record.
UPDATE = (
    "WITH old AS (SELECT latest, session, kind FROM records"
    " WHERE key = %(key)s::text AND version = %(expected)s::bigint FOR UPDATE),"
    " w AS (UPDATE records SET kind = %(kind)s::text, data = %(data)s::json,"
    " version = records.version + 1, session = %(session)s::text, status = %(status)s::text,"
    " plan = %(plan)s::text, correlation_ids = %(ids)s::text[],"
    " last_seq = records.last_seq + %(n)s::bigint, updated_at = %(now)s::double precision,"
    " latest = 1 FROM old WHERE records.key = %(key)s::text"
    " RETURNING records.version, records.last_seq,"
    " CASE WHEN old.session IS NOT DISTINCT FROM %(session)s::text"
    " AND old.kind = %(kind)s::text THEN old.latest ELSE 0 END AS was,"
    " old.latest AS old_latest, old.session AS old_session, old.kind AS old_kind),"
    " refilled AS (UPDATE records SET latest = 1 WHERE key = ("
    "SELECT r.key FROM records r, w WHERE w.was = 0 AND w.old_latest <> 0"
    " AND r.session = w.old_session AND r.kind = w.old_kind AND r.key <> %(key)s::text"
    ' ORDER BY r.updated_at DESC, r.key COLLATE "C" ASC LIMIT 1))' + _REST
)


_NAMED = re.compile(r"%\((\w+)\)s")


def _numbered(statement: str) -> tuple[str, tuple[str, ...]]:
    """``statement`` with ``$1, $2, ...`` for its named marks, and the names in that order."""
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        if match[1] not in names:
            names.append(match[1])
        return f"${names.index(match[1]) + 1}"

    return _NAMED.sub(number, statement), tuple(names)


_STATEMENTS = {"waygraph_create": _numbered(CREATE), "waygraph_update": _numbered(UPDATE)}

#: The statements a connection prepares once (SQL ``PREPARE``), by name.
PREPARES = {name: f"PREPARE {name} AS {text}" for name, (text, _) in _STATEMENTS.items()}


def commit_call(c: Commit, now: float, channel: str, *, always: bool) -> tuple[str, list[Any]]:
    """``EXECUTE`` of the prepared statement writing ``c`` at store time ``now``, and its values.

    ``always``: notify on ``channel`` even when no listener is registered.

    The values are bound client-side (the call joins BEGIN, the locks and
    COMMIT in one query string). The statement returns one row (the new
    version) when the record was written, none when the version check failed.

    Example:
        >>> from waygraph.store._commits import normalise_commit
        >>> c = normalise_commit("k", {}, 2, [], kind="guided", session=None, status=None,
        ...                      plan=None, correlation_ids=[], make_current=False)
        >>> call, values = commit_call(c, 1.5, "waygraph", always=True)
        >>> call.split("(")[0], values[0], len(values) == call.count("%s")
        ('EXECUTE waygraph_update', 'k', True)
    """
    values: dict[str, Any] = {
        "key": c.key,
        "kind": c.kind,
        "data": c.data,
        "session": c.session,
        "status": c.status,
        "plan": c.plan,
        "ids": list(c.correlation_ids),
        "n": len(c.events),
        "now": now,
        # The events are JSON text already: one JSON array of them, not a
        # text[] whose every element psycopg would escape again.
        "events": f"[{','.join(c.events)}]",
        # A new record has no correlation rows to replace.
        "replace": c.expected_version != 0,
        "current": c.make_current and c.session is not None,
        "channel": channel,
        "always": always,
        "expected": c.expected_version,
    }
    name = "waygraph_create" if c.expected_version == 0 else "waygraph_update"
    names = _STATEMENTS[name][1]
    return f"EXECUTE {name}({', '.join(['%s'] * len(names))})", [values[n] for n in names]
