"""store.commit_then_list (issue 41): a commit and the lists that follow it, one call on
every backend (one round trip on PostgreSQL), the lists seeing the commit."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.store_backends import BACKENDS, open_backend
from waygraph.errors import Conflict
from waygraph.store import Store, Write, commit_then_list


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    return open_backend(request.param, tmp_path, request)


def test_the_lists_see_the_commit_and_match_list(store: Store) -> None:
    store.commit_all([Write("older", {"n": 0}, 0, kind="event", correlation_ids=["c1"])])
    versions, found = commit_then_list(
        store,
        [Write("new", {"n": 1}, 0, kind="event", correlation_ids=["c1", "waygraph:after:x"])],
        ["c1", "waygraph:after:x", "nobody"],
    )
    assert versions == [1]
    for cid in ("c1", "waygraph:after:x", "nobody"):
        assert found[cid] == store.list(correlation_id=cid), cid
    assert [r.key for r in found["c1"]] == ["new", "older"]
    assert found["waygraph:after:x"][0].data == {"n": 1}
    assert found["nobody"] == []
    # An update too (the version-checked statement), and several records at once.
    versions, found = commit_then_list(
        store,
        [
            Write("new", {"n": 2}, 1, kind="event", correlation_ids=["c2"]),
            Write("third", {"n": 3}, 0, kind="event", correlation_ids=["c2"]),
        ],
        ["c1", "c2"],
    )
    assert versions == [2, 1]
    assert [r.key for r in found["c1"]] == ["older"]
    assert sorted((r.key, r.version) for r in found["c2"]) == [("new", 2), ("third", 1)]
    store.close()


def test_a_conflict_raises_and_writes_nothing(store: Store) -> None:
    store.commit_all([Write("k", {"n": 1}, 0, correlation_ids=["c"])])
    with pytest.raises(Conflict):
        commit_then_list(store, [Write("k", {"n": 2}, 0, correlation_ids=["c"])], ["c"])
    record = store.get("k")
    assert record is not None and record.data == {"n": 1} and record.version == 1
    store.close()
