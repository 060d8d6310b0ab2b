"""A commit and the reads that follow it, in one call (one round trip on PostgreSQL).

A planner that finishes a plan next asks which plans are indexed under the
ids its answer carries and under ``waygraph:after:<plan>`` (the plans that
wait for it): two reads of their own, each a round trip to PostgreSQL.
:func:`commit_then_list` makes them part of the commit's call: PostgreSQL
runs them in the commit's query string right after its ``COMMIT``, so they
see the commit, as reads made after it do; every other store commits and
then lists.

Example:
    >>> from waygraph.store import Write, open_store
    >>> store = open_store("memory://")
    >>> versions, found = commit_then_list(
    ...     store, [Write("a", {}, 0, correlation_ids=["c1"])], ["c1", "c2"])
    >>> versions, [r.key for r in found["c1"]], found["c2"]
    ([1], ['a'], [])
"""

from __future__ import annotations

from collections.abc import Sequence

from waygraph.store.base import Store, StoredRecord, Write

__all__ = ["commit_then_list"]


def commit_then_list(
    store: Store, writes: Sequence[Write], correlation_ids: Sequence[str]
) -> tuple[list[int], dict[str, list[StoredRecord]]]:
    """``store.commit_all(writes)``, then ``store.list(correlation_id=c)`` for each id,
    read after the commit; the new versions and the records by id.

    A Conflict raises as from ``commit_all`` (nothing is read then).
    """
    together = getattr(store, "commit_and_list", None)
    if together is not None:
        result: tuple[list[int], dict[str, list[StoredRecord]]] = together(writes, correlation_ids)
        return result
    versions = store.commit_all(writes)
    return versions, {c: store.list(correlation_id=c) for c in dict.fromkeys(correlation_ids)}
