"""memory://'s indexes by session and correlation id answer as a scan of every record would.

``MemoryStore.list`` reads the keys of one session or one correlation id
instead of every record (an event planner lists by correlation id several
times a plan). These tests hold the indexes to the records as they are after
any sequence of commits: new records, records moved to another session,
correlation ids gained and dropped, failed commits that change nothing.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from waygraph.errors import Conflict
from waygraph.store import Write
from waygraph.store.memory import MemoryStore

KEYS = ("a", "b", "c", "d")
SESSIONS = (None, "s1", "s2")
IDS = ("x", "y", "z")

commits = st.lists(
    st.tuples(
        st.sampled_from(KEYS),
        st.sampled_from(SESSIONS),
        st.lists(st.sampled_from(IDS), max_size=3, unique=True),
        st.booleans(),  # a stale expected version: the commit must change nothing
    ),
    max_size=25,
)


def scanned(store: MemoryStore, *, session: str | None = None, cid: str | None = None) -> list:
    """What ``list`` must return: every stored record, filtered one by one, newest first."""
    records = [store.get(key) for key in KEYS]
    kept = [
        r
        for r in records
        if r is not None
        and (session is None or r.session == session)
        and (cid is None or cid in r.correlation_ids)
    ]
    kept.sort(key=lambda r: r.key)
    kept.sort(key=lambda r: r.updated_at, reverse=True)
    return [(r.key, r.version) for r in kept]


@settings(max_examples=150, deadline=None)
@given(commits)
def test_filtered_lists_match_a_scan_after_any_commits(steps) -> None:
    ticks = iter(range(1, 10_000))
    store = MemoryStore(clock=lambda: float(next(ticks)))
    versions = dict.fromkeys(KEYS, 0)
    for key, session, ids, stale in steps:
        expected = versions[key] + 1 if stale else versions[key]
        try:
            store.commit_all(
                [Write(key, {"n": 1}, expected, [], session=session, correlation_ids=ids)]
            )
        except Conflict:
            assert stale
            continue
        versions[key] += 1
    for session in SESSIONS[1:]:
        listed = [(r.key, r.version) for r in store.list(session=session)]
        assert listed == scanned(store, session=session)
    for cid in IDS:
        listed = [(r.key, r.version) for r in store.list(correlation_id=cid)]
        assert listed == scanned(store, cid=cid)
        both = [(r.key, r.version) for r in store.list(correlation_id=cid, session="s1")]
        assert both == [
            pair for pair in scanned(store, cid=cid) if store.get(pair[0]).session == "s1"
        ]
    assert [(r.key, r.version) for r in store.list()] == scanned(store)
    stored_sessions = {store.get(k).session for k in KEYS if store.get(k) is not None}
    assert store.sessions() == sorted(s for s in stored_sessions if s is not None)


def test_a_record_moved_to_another_session_and_ids_is_listed_only_under_the_new_ones() -> None:
    store = MemoryStore()
    store.commit("r", {}, 0, [], session="old", correlation_ids=("x", "y"))
    store.commit("r", {}, 1, [], session="new", correlation_ids=("y", "z"))
    assert store.list(session="old") == []
    assert [r.key for r in store.list(session="new")] == ["r"]
    assert store.list(correlation_id="x") == []
    assert [r.key for r in store.list(correlation_id="y")] == ["r"]
    assert [r.key for r in store.list(correlation_id="z")] == ["r"]
    assert store.sessions() == ["new"]
