"""The contract every store backend keeps, as a reusable test class.

Run it against a backend by subclassing :class:`StoreContract` and providing a
``store`` fixture that yields a fresh, empty store (and closes it)::

    import pytest
    from tests.store_contract import StoreContract

    class TestMyStore(StoreContract):
        @pytest.fixture
        def store(self, tmp_path):
            with MyStore(tmp_path) as store:
                yield store

``tests/test_store.py`` runs it over every built-in backend.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from waygraph.errors import Conflict, StoreError
from waygraph.store import Store, StoredEvent, StoredRecord, Write

__all__ = ["StoreContract", "bump", "json_records", "json_values"]

_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)

#: Any value ``json.loads`` can return.
json_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)

#: Any JSON object: what a record or an event is.
json_records = st.dictionaries(st.text(), json_values, max_size=6)

_keys = itertools.count()


def bump(store: Store, key: str, times: int) -> int:
    """Add 1 to ``data["count"]`` of ``key`` ``times`` times, retrying lost races.

    Returns how many conflicts it met. Also used by the multi-process tests.
    """
    conflicts = 0
    for _ in range(times):
        while True:
            rec = store.get(key)
            assert rec is not None
            try:
                store.commit(key, {"count": rec.data["count"] + 1}, rec.version, [{"type": "bump"}])
                break
            except Conflict:
                conflicts += 1
    return conflicts


class StoreContract:
    """Behaviour every :class:`~waygraph.store.Store` must show.

    Subclasses provide the ``store`` fixture: a fresh, empty store.
    """

    # ------------------------------------------------------------ records

    def test_a_run_stored_under_an_old_kind_name_reads_as_the_current_kind(
        self, store: Store
    ) -> None:
        # Records written before the one run-record schema (waygraph.model.record).
        guided = {"run_id": "r1", "plan_id": "bugfix", "current_node": "fix", "status": "running"}
        store.commit("r1", guided, 0, [], kind="run", session="s", plan="bugfix")
        event = {"plan_id": "p1", "planner": "editor", "current_state": "draft"}
        store.commit("p1", event, 0, [], kind="plan_context", session="s", plan="editor")
        store.commit("mine", {"n": 1}, 0, [], kind="run")  # not a run record: data untouched
        r1, p1, mine = store.get("r1"), store.get("p1"), store.get("mine")
        assert r1 is not None and p1 is not None and mine is not None
        assert (r1.kind, r1.data["kind"], r1.data["plan"]) == ("guided", "guided", "bugfix")
        assert (p1.kind, p1.plan, p1.data["plan"], p1.data["planner"]) == (
            "event",
            "p1",
            "p1",
            "editor",
        )
        assert p1.data["current_node"] == "draft"
        assert (mine.kind, mine.data) == ("guided", {"n": 1})
        assert sorted(r.key for r in store.list(kind="guided")) == ["mine", "r1"]
        assert [r.key for r in store.list(kind="event")] == ["p1"]
        assert sorted(r.key for r in store.list(kind="run")) == ["mine", "r1"]

    def test_get_of_a_missing_key_is_none(self, store: Store) -> None:
        assert store.get("nope") is None

    def test_create_then_get_round_trips_every_field(self, store: Store) -> None:
        record = {"run_id": "run_1", "status": "running", "visited": {"a": {"attempts": 1}}}
        version = store.commit(
            "run_1",
            record,
            0,
            [{"type": "plan_activated"}],
            kind="guided",
            session="s1",
            status="running",
            plan="bugfix",
            correlation_ids=["c1", "c2"],
        )
        assert version == 1
        rec = store.get("run_1")
        assert isinstance(rec, StoredRecord)
        assert rec.key == "run_1"
        assert rec.kind == "guided"
        assert rec.data == record
        assert rec.version == 1
        assert (rec.session, rec.status, rec.plan) == ("s1", "running", "bugfix")
        assert rec.correlation_ids == ("c1", "c2")
        assert isinstance(rec.updated_at, float) and rec.updated_at > 0

    def test_each_commit_increments_the_version_and_restates_the_index(self, store: Store) -> None:
        assert store.commit("k", {"n": 0}, 0, [], session="s", status="running", plan="p") == 1
        assert store.commit("k", {"n": 1}, 1, [], session="s", status="running", plan="p") == 2
        first = store.get("k")
        assert store.commit("k", {"n": 2}, 2, [], kind="plan", status="completed") == 3
        rec = store.get("k")
        assert first is not None and rec is not None
        assert (rec.version, rec.data) == (3, {"n": 2})
        assert (rec.kind, rec.session, rec.status, rec.plan) == ("plan", None, "completed", None)
        assert rec.updated_at > first.updated_at

    def test_a_stale_version_is_a_conflict_and_writes_nothing(self, store: Store) -> None:
        store.commit("k", {"n": 1}, 0, [{"e": 1}], session="s", make_current=True)
        store.commit("k", {"n": 2}, 1, [{"e": 2}], session="s")
        store.commit("other", {}, 0, [], session="s2", make_current=True)
        with pytest.raises(Conflict) as err:
            store.commit(
                "k",
                {"n": 99},
                1,
                [{"e": 99}],
                session="s2",
                correlation_ids=["c"],
                make_current=True,
            )
        assert isinstance(err.value, StoreError)
        assert "'k'" in str(err.value) and "version 2" in str(err.value)
        rec = store.get("k")
        assert rec is not None and (rec.version, rec.data, rec.session) == (2, {"n": 2}, "s")
        assert [e.data for e in store.events("k")] == [{"e": 1}, {"e": 2}]
        assert store.current("s2") == "other"
        assert store.list(correlation_id="c") == []

    def test_creating_an_existing_key_is_a_conflict(self, store: Store) -> None:
        store.commit("k", {"n": 1}, 0, [{"e": 1}])
        with pytest.raises(Conflict, match="already exists"):
            store.commit("k", {"n": 2}, 0, [{"e": 2}])
        rec = store.get("k")
        assert rec is not None and rec.data == {"n": 1}
        assert len(store.events("k")) == 1

    def test_updating_a_missing_key_is_a_conflict(self, store: Store) -> None:
        with pytest.raises(Conflict, match="does not exist"):
            store.commit("ghost", {}, 3, [{"e": 1}])
        assert store.get("ghost") is None
        assert store.events("ghost") == []

    # ------------------------------------------------------------ events

    def test_events_are_numbered_from_one_per_key(self, store: Store) -> None:
        store.commit("a", {}, 0, [{"i": 1}, {"i": 2}])
        store.commit("b", {}, 0, [{"i": 1}])
        store.commit("a", {}, 1, [])
        store.commit("a", {}, 2, [{"i": 3}])
        store.commit("b", {}, 1, [{"i": 2}, {"i": 3}])
        for key in ("a", "b"):
            events = store.events(key)
            assert all(isinstance(e, StoredEvent) and e.key == key for e in events)
            assert [(e.seq, e.data) for e in events] == [
                (1, {"i": 1}),
                (2, {"i": 2}),
                (3, {"i": 3}),
            ]

    def test_events_after_seq_and_limit(self, store: Store) -> None:
        store.commit("k", {}, 0, [{"i": i} for i in range(1, 11)])
        assert [e.seq for e in store.events("k", after_seq=7)] == [8, 9, 10]
        assert [e.seq for e in store.events("k", after_seq=2, limit=3)] == [3, 4, 5]
        assert [e.seq for e in store.events("k", limit=2)] == [1, 2]
        assert store.events("k", after_seq=10) == []
        assert store.events("k", limit=0) == []
        assert store.events("unknown") == []
        with pytest.raises(ValueError):
            store.events("k", limit=-1)

    # ------------------------------------------------------------ sessions

    def test_make_current_points_the_session_at_the_key(self, store: Store) -> None:
        assert store.current("s1") is None
        store.commit("run_1", {}, 0, [], session="s1", make_current=True)
        assert store.current("s1") == "run_1"
        store.commit("run_2", {}, 0, [], session="s1", make_current=True)
        assert store.current("s1") == "run_2"
        store.commit("run_1", {"later": True}, 1, [], session="s1")
        assert store.current("s1") == "run_2", "a commit without make_current moves nothing"

    # ------------------------------------------------------------ paging

    def test_out_of_range_paging_is_the_same_on_every_backend(self, store: Store) -> None:
        store.commit("k", {}, 0, [{"i": 1}, {"i": 2}])
        huge = 2**64
        assert store.events("k", after_seq=huge) == []
        assert store.events("k", after_seq=2**63 - 1) == []
        assert [e.seq for e in store.events("k", after_seq=-7)] == [1, 2]
        assert [e.seq for e in store.events("k", limit=huge)] == [1, 2]
        assert [e.seq for e in store.events("k", after_seq=1, limit=huge)] == [2]
        assert len(store.list(limit=huge)) == 1
        for bad in (-1, 1.5, "2", True):
            with pytest.raises((ValueError, TypeError)):
                store.events("k", limit=bad)  # type: ignore[arg-type]
            with pytest.raises((ValueError, TypeError)):
                store.list(limit=bad)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            store.events("k", after_seq="1")  # type: ignore[arg-type]

    # ------------------------------------------------------------ commit_all

    def test_commit_all_writes_every_record_event_and_pointer(self, store: Store) -> None:
        store.commit("old", {"status": "running"}, 0, [{"e": 1}], session="s", make_current=True)
        versions = store.commit_all(
            [
                Write("old", {"status": "aborted"}, 1, [{"e": 2}], session="s", status="aborted"),
                Write("new", {"status": "running"}, 0, [{"e": 3}], session="s", make_current=True),
            ]
        )
        assert versions == [2, 1]
        old, new = store.get("old"), store.get("new")
        assert old is not None and old.data == {"status": "aborted"} and old.status == "aborted"
        assert new is not None and new.version == 1
        assert [e.data for e in store.events("old")] == [{"e": 1}, {"e": 2}]
        assert [e.data for e in store.events("new")] == [{"e": 3}]
        assert store.current("s") == "new"

    def test_commit_all_is_all_or_nothing(self, store: Store) -> None:
        store.commit("a", {"n": 1}, 0, [{"e": 1}], session="s", make_current=True)
        store.commit("b", {"n": 1}, 0, [])
        with pytest.raises(Conflict):
            store.commit_all(
                [
                    Write("a", {"n": 2}, 1, [{"e": 2}]),
                    Write("c", {"n": 1}, 0, [{"e": 1}], session="s", make_current=True),
                    Write("b", {"n": 2}, 7, []),  # stale: the whole commit fails
                ]
            )
        a = store.get("a")
        assert a is not None and a.version == 1 and a.data == {"n": 1}
        assert store.get("c") is None and store.events("c") == []
        assert [e.seq for e in store.events("a")] == [1]
        assert store.current("s") == "a"
        # The store still works after the refused commit.
        assert store.commit_all([Write("a", {"n": 2}, 1, [{"e": 2}])]) == [2]
        assert [e.seq for e in store.events("a")] == [1, 2]

    def test_commit_all_refuses_a_key_twice_and_accepts_nothing(self, store: Store) -> None:
        with pytest.raises(ValueError, match="each key once"):
            store.commit_all([Write("k", {}, 0), Write("k", {}, 1)])
        assert store.get("k") is None
        assert store.commit_all([]) == []

    def test_clear_current_drops_the_pointer_and_keeps_records(self, store: Store) -> None:
        store.commit("run_1", {"x": 1}, 0, [{"e": 1}], session="s1", make_current=True)
        store.clear_current("s1")
        store.clear_current("s1")  # twice is harmless
        store.clear_current("never-seen")
        assert store.current("s1") is None
        rec = store.get("run_1")
        assert rec is not None and rec.data == {"x": 1}
        assert len(store.events("run_1")) == 1
        assert store.sessions() == ["s1"]

    def test_make_current_without_a_session_does_nothing(self, store: Store) -> None:
        store.commit("k", {}, 0, [], make_current=True)
        assert store.sessions() == []

    def test_sessions_are_sorted_and_include_those_without_pointer(self, store: Store) -> None:
        store.commit("r3", {}, 0, [], session="zeta", make_current=True)
        store.commit("r1", {}, 0, [], session="alpha")
        store.commit("r2", {}, 0, [], session="mid", make_current=True)
        store.commit("r4", {}, 0, [], session="alpha")
        store.commit("r5", {}, 0, [])
        store.clear_current("zeta")
        assert store.sessions() == ["alpha", "mid", "zeta"]

    # ------------------------------------------------------------ list

    def _populate(self, store: Store) -> None:
        store.commit(
            "r1", {}, 0, [], session="s1", status="completed", plan="p1", correlation_ids=["c1"]
        )
        store.commit(
            "r2", {}, 0, [], session="s1", status="running", plan="p2", correlation_ids=["c1", "c2"]
        )
        store.commit("r3", {}, 0, [], session="s2", status="running", plan="p1")
        store.commit("plan-a", {}, 0, [], kind="plan", plan="p1")

    def test_list_filters_by_each_index_column(self, store: Store) -> None:
        self._populate(store)

        def keys(**filters: Any) -> list[str]:
            return [rec.key for rec in store.list(**filters)]

        assert keys() == ["plan-a", "r3", "r2", "r1"]
        assert keys(kind="guided") == ["r3", "r2", "r1"]
        assert keys(kind="plan") == ["plan-a"]
        assert keys(session="s1") == ["r2", "r1"]
        assert keys(status="running") == ["r3", "r2"]
        assert keys(plan="p1") == ["plan-a", "r3", "r1"]
        assert keys(correlation_id="c1") == ["r2", "r1"]
        assert keys(correlation_id="c2") == ["r2"]
        assert keys(plan="p1", kind="guided", status="running") == ["r3"]
        assert keys(session="nobody") == []
        assert keys(limit=2) == ["plan-a", "r3"]
        assert keys(kind="guided", limit=0) == []
        with pytest.raises(ValueError):
            store.list(limit=-1)

    def test_session_rows_page_count_search_and_status_counts(self, store: Store) -> None:
        """The sessions table: each session's latest record per kind, paged, searched, counted."""
        commits = [
            ("a1", "s-alpha", "guided", "completed", "bugfix"),
            ("a2", "s-alpha", "guided", "running", "bugfix"),  # newer: the alpha run row
            ("a3", "s-alpha", "event", "running", "research"),  # its own row
            ("b1", "s-beta", "guided", "escalated", "deploy"),
            ("c1", "s-Gamma_50%", "guided", "completed", "bugfix"),
            ("n1", None, "guided", "aborted", "deploy"),  # no session: a row of its own
            ("p1", None, "plan", None, "bugfix"),  # a kind the caller hides
        ]
        for key, session, kind, status, plan in commits:
            store.commit(key, {}, 0, [], kind=kind, session=session, status=status, plan=plan)

        def rows(**filters: Any) -> tuple[list[str], int, dict[str | None, int]]:
            page = store.session_rows(exclude_kinds=["plan"], **filters)
            return [r.key for r in page.records], page.total, page.counts

        everything = {"running": 2, "escalated": 1, "completed": 1, "aborted": 1}
        assert rows() == (["n1", "c1", "b1", "a3", "a2"], 5, everything)
        assert rows(limit=2) == (["n1", "c1"], 5, everything)
        assert rows(offset=2, limit=2) == (["b1", "a3"], 5, everything)
        assert rows(offset=4, limit=2)[0] == ["a2"]
        assert rows(offset=9)[:2] == ([], 5)
        # A status filters the page; the counts still say what each status would show.
        assert rows(status="running") == (["a3", "a2"], 2, everything)
        assert rows(status="completed")[:2] == (["c1"], 1)  # a1 is not its session's latest
        assert rows(kind="guided")[:2] == (["n1", "c1", "b1", "a2"], 4)
        assert rows(plan="deploy") == (["n1", "b1"], 2, {"aborted": 1, "escalated": 1})
        # Search: part of the session, plan or status, ignoring case; % and _ are literal.
        assert rows(search="ALPHA")[:2] == (["a3", "a2"], 2)
        assert rows(search="research")[:2] == (["a3"], 1)
        assert rows(search="escal")[:2] == (["b1"], 1)
        assert rows(search="m_a")[:2] == ([], 0)  # as wildcards, _ would match "mma"
        assert rows(search="5%0")[:2] == ([], 0)  # and % would match "50"
        assert rows(search="a_50%")[:2] == (["c1"], 1)
        assert rows(search="nothing like it") == ([], 0, {})
        assert store.session_rows().total == 6  # the hidden kind counts when not hidden
        # Without counting, a page is the same rows and nothing else.
        uncounted = store.session_rows(exclude_kinds=["plan"], offset=1, limit=3, count=False)
        assert [r.key for r in uncounted.records] == ["c1", "b1", "a3"]
        assert (uncounted.total, uncounted.counts) == (None, {})
        assert store.session_rows().records[0].data == {}
        with pytest.raises(ValueError):
            store.session_rows(offset=-1)

    def test_a_record_moved_to_another_session_or_kind_keeps_one_row_per_group(
        self, store: Store
    ) -> None:
        """A record recommitted under another session or kind leaves its old group its next row."""

        def rows() -> tuple[list[str], int | None, dict[str | None, int]]:
            page = store.session_rows()
            return sorted(r.key for r in page.records), page.total, page.counts

        store.commit("a1", {}, 0, [], session="s1", status="completed")
        store.commit("a2", {}, 0, [], session="s1", status="running")  # s1's row
        store.commit("b1", {}, 0, [], session="s2", status="escalated")  # s2's row
        assert rows() == (["a2", "b1"], 2, {"running": 1, "escalated": 1})
        store.commit("a2", {}, 1, [], session="s2", status="running")  # newest in s2 now
        assert rows() == (["a1", "a2"], 2, {"completed": 1, "running": 1})
        store.commit("a2", {}, 2, [], session="s2", kind="event", status="running")
        assert rows() == (["a1", "a2", "b1"], 3, {"completed": 1, "running": 1, "escalated": 1})
        store.commit("a2", {}, 3, [], session=None, kind="event", status="running")
        assert rows() == (["a1", "a2", "b1"], 3, {"completed": 1, "running": 1, "escalated": 1})
        store.commit("a2", {}, 4, [], session="s1", status="running")  # back, newest in s1
        assert rows() == (["a2", "b1"], 2, {"running": 1, "escalated": 1})

    def test_list_puts_the_latest_update_first(self, store: Store) -> None:
        self._populate(store)
        store.commit("r1", {"touched": True}, 1, [], session="s1", status="completed")
        listed = store.list()
        assert [rec.key for rec in listed] == ["r1", "plan-a", "r3", "r2"]
        assert listed[0].data == {"touched": True}
        stamps = [rec.updated_at for rec in listed]
        assert stamps == sorted(stamps, reverse=True)

    def test_list_returns_whole_records(self, store: Store) -> None:
        store.commit("k", {"deep": {"x": [1, 2]}}, 0, [], session="s", correlation_ids=["c"])
        (rec,) = store.list(session="s")
        assert rec == store.get("k")

    # ------------------------------------------------------------ copies

    def test_stored_data_are_copies_of_the_input(self, store: Store) -> None:
        record: dict[str, Any] = {"list": [1], "inner": {"a": 1}}
        event: dict[str, Any] = {"type": "x", "items": [1]}
        store.commit("k", record, 0, [event])
        record["list"].append(2)
        record["inner"]["a"] = 99
        event["items"].append(2)
        rec = store.get("k")
        assert rec is not None and rec.data == {"list": [1], "inner": {"a": 1}}
        assert store.events("k")[0].data == {"type": "x", "items": [1]}

    def test_returned_data_are_copies(self, store: Store) -> None:
        store.commit("k", {"list": [1], "inner": {"a": 1}}, 0, [{"items": [1]}], session="s")
        rec = store.get("k")
        assert rec is not None
        rec.data["list"].append(2)
        rec.data["inner"]["a"] = 99
        store.list()[0].data["new"] = True
        store.events("k")[0].data["items"].append(2)
        again = store.get("k")
        assert again is not None and again.data == {"list": [1], "inner": {"a": 1}}
        assert store.list()[0].data == {"list": [1], "inner": {"a": 1}}
        assert store.events("k")[0].data == {"items": [1]}

    # ------------------------------------------------------------ data

    def test_unicode_keys_and_values(self, store: Store) -> None:
        keys = [
            "ключ/../../etc/passwd",
            "with space and tab\t",
            "Run",
            "run",
            ".",
            "..",
            "🎉-run",
            "a/b",
            "a_b",
            "x" * 300,
        ]
        for i, key in enumerate(keys):
            data = {"text": f"héllo 世界 🎉 \u202e {key}", "nul": "a\x00b", "i": i}
            store.commit(
                key,
                data,
                0,
                [{"emoji": "✅", "key": key}],
                session=f"séance-{i}",
                status="läuft",
                plan="plän",
                correlation_ids=["ид"],
                make_current=True,
            )
        for i, key in enumerate(keys):
            rec = store.get(key)
            assert rec is not None, key
            assert rec.data["i"] == i and rec.data["nul"] == "a\x00b"
            assert rec.data["text"].endswith(key)
            assert store.events(key)[0].data == {"emoji": "✅", "key": key}
            assert store.current(f"séance-{i}") == key
        assert {rec.key for rec in store.list(correlation_id="ид")} == set(keys)
        assert len(store.list(status="läuft", plan="plän")) == len(keys)

    def test_large_records_and_events(self, store: Store) -> None:
        big = {"blob": "ü" * 1_000_000, "numbers": list(range(20_000)), "nested": {"a": [{}] * 500}}
        store.commit("big", big, 0, [{"blob": "e" * 200_000}] * 3)
        rec = store.get("big")
        assert rec is not None and rec.data == big
        assert [len(e.data["blob"]) for e in store.events("big")] == [200_000] * 3

    def test_many_keys(self, store: Store) -> None:
        for i in range(200):
            store.commit(
                f"run_{i:04d}",
                {"i": i},
                0,
                [{"i": i}],
                session=f"s{i % 7}",
                status="running" if i % 2 else "completed",
            )
        assert len(store.list()) == 200
        assert len(store.list(session="s3")) == len(range(3, 200, 7))
        assert len(store.list(status="running", limit=1000)) == 100
        for i in (0, 137, 199):
            rec = store.get(f"run_{i:04d}")
            assert rec is not None and rec.data == {"i": i}
            assert store.events(f"run_{i:04d}")[0].data == {"i": i}
        assert store.sessions() == [f"s{i}" for i in range(7)]

    def test_values_that_are_not_json_are_refused_and_nothing_is_written(
        self, store: Store
    ) -> None:
        for bad in ({"s": {1, 2}}, {"x": float("nan")}, {"x": float("inf")}, {"o": object()}):
            with pytest.raises(TypeError, match="not JSON-ready"):
                store.commit("k", bad, 0, [])
        with pytest.raises(TypeError, match="event"):
            store.commit("k", {}, 0, [{"when": {1}}])
        with pytest.raises(TypeError):
            store.commit("k", {}, 0, ["not a dict"])  # type: ignore[list-item]
        assert store.get("k") is None
        assert store.events("k") == []

    def test_bad_arguments_are_refused(self, store: Store) -> None:
        with pytest.raises(ValueError):
            store.commit("", {}, 0, [])
        with pytest.raises(ValueError):
            store.commit("k", {}, -1, [])
        with pytest.raises(ValueError, match="NUL"):
            store.commit("nul\x00key", {}, 0, [])
        with pytest.raises(ValueError, match="Unicode"):
            store.commit("k", {}, 0, [], session="\ud800")
        with pytest.raises(TypeError, match="not a string"):
            store.commit("k", {}, 0, [], correlation_ids="c1")
        assert store.list() == []

    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(record=json_records, event=json_records)
    def test_any_json_record_round_trips(
        self, store: Store, record: dict[str, Any], event: dict[str, Any]
    ) -> None:
        key = f"prop-{next(_keys)}"  # the store persists across examples
        store.commit(key, record, 0, [event])
        rec = store.get(key)
        assert rec is not None and rec.data == record
        assert [e.data for e in store.events(key)] == [event]

    # ------------------------------------------------------------ concurrency

    def test_two_threads_never_lose_an_increment(self, store: Store) -> None:
        store.commit("counter", {"count": 0}, 0, [])
        per_thread = 60
        start = threading.Barrier(2)
        errors: list[BaseException] = []

        def work() -> None:
            try:
                start.wait()
                bump(store, "counter", per_thread)
            except BaseException as exc:  # reported below: a thread cannot fail the test
                errors.append(exc)

        threads = [threading.Thread(target=work) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not errors
        rec = store.get("counter")
        assert rec is not None
        assert rec.data["count"] == 2 * per_thread
        assert rec.version == 2 * per_thread + 1
        assert [e.seq for e in store.events("counter")] == list(range(1, 2 * per_thread + 1))

    # ------------------------------------------------------------ lifecycle

    def test_a_closed_store_raises_store_error(self, store: Store) -> None:
        store.commit("k", {}, 0, [])
        store.close()
        store.close()  # twice is harmless
        with pytest.raises(StoreError, match="closed"):
            store.get("k")
        with pytest.raises(StoreError, match="closed"):
            store.commit("k", {}, 1, [])
