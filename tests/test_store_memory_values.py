"""``memory://`` keeps Python values, yet refuses and reads back what the JSON stores do.

Switching stores must never change behaviour: the same value is refused by
every backend, and what one backend reads back (types included) every
backend reads back.
"""

from __future__ import annotations

import enum
import json
import math
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from waygraph.engine.state import NodeStates, RecentEvents
from waygraph.store import Store, open_store
from waygraph.store.values import encode, held, thawed

BACKENDS = ["memory", "file", "sqlite"]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    url = {
        "memory": "memory://",
        "file": f"file://{tmp_path / 'files'}",
        "sqlite": f"sqlite:///{tmp_path / 'wg.db'}",
    }[request.param]
    opened = open_store(url)
    yield opened
    opened.close()


class Colour(enum.StrEnum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Ratio(float):
    pass


def _circular() -> dict[str, Any]:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    return loop


def _deep(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


REFUSED: list[Any] = [
    {"x": float("nan")},
    {"x": float("-inf")},
    {"x": [1, {"y": float("inf")}]},
    {"s": {1, 2}},
    {"f": frozenset()},
    {"o": object()},
    {"b": b"bytes"},
    {"c": 1j},
    {(1, 2): "tuple key"},
    {float("nan"): "nan key"},
    {"big": 10**5000},  # past the interpreter's digits limit for int -> text
    {"big key": {10**5000: 1}},
    {"m": MappingProxyType({"s": {1}})},
    _circular(),
    {"deep": _deep(100_000)},
]

ACCEPTED: list[Any] = [
    {"t": (1, (2, 3)), "l": [None, True, False]},
    {7: "int key", 2.5: "float key", True: "t", False: "f", None: "n"},
    {1: "first", "1": "second"},  # the same key once encoded: the last value wins
    {"e": Colour.RED, Colour.RED: Level.HIGH, "r": Ratio(0.5)},
    {"p": MappingProxyType({"a": (1,)}), "o": OrderedDict(b=2)},
    {"z": -0.0, "huge": 10**300, "tiny": 5e-324, "f": 1e16},
    {"u": "\ud800 lone surrogate", "nul": "a\x00b", "emoji": "🎉"},
    {"nested": {"events": RecentEvents.of((MappingProxyType({"type": "x"}),)), "after": 1}},
]


def _shape(value: Any) -> Any:
    """The value with each node's exact type, so a tuple and a list never look alike."""
    if isinstance(value, dict):
        return ("dict", [(type(k).__name__, k, _shape(v)) for k, v in value.items()])
    if isinstance(value, list):
        return (type(value).__name__, [_shape(v) for v in value])
    return (type(value).__name__, value)


@pytest.mark.parametrize("bad", REFUSED, ids=range(len(REFUSED)))
def test_every_backend_refuses_the_same_values(store: Store, bad: Any) -> None:
    with pytest.raises(TypeError, match="not JSON-ready"):
        store.commit("k", bad, 0, [])
    with pytest.raises(TypeError, match="not JSON-ready"):
        store.commit("k", {}, 0, [bad])
    assert store.get("k") is None and store.events("k") == []


@pytest.mark.parametrize("value", ACCEPTED, ids=range(len(ACCEPTED)))
def test_every_backend_reads_back_what_json_would(store: Store, value: Any) -> None:
    expected = json.loads(encode(value))
    store.commit("k", value, 0, [value])
    rec = store.get("k")
    assert rec is not None
    assert _shape(rec.data) == _shape(expected)
    assert _shape(store.events("k")[0].data) == _shape(expected)
    assert _shape(store.list()[0].data) == _shape(expected)


def _record(events: tuple[Any, ...], states: dict[str, Any], n: int) -> dict[str, Any]:
    return {
        "visited": NodeStates.of(MappingProxyType(states)),
        "n": n,
        "events": RecentEvents.of(events),
    }


def test_recent_events_and_node_states_are_stored_as_their_sources_say(store: Store) -> None:
    first = MappingProxyType({"type": "plan_activated", "turn": 1})
    second = MappingProxyType({"type": "node_entered", "turn": 2})
    one = MappingProxyType({"attempts": 1, "tried": (MappingProxyType({"call": "x"}),)})
    two = MappingProxyType({"attempts": 2})
    store.commit("k", _record((first,), {"a": one}, 1), 0, [dict(first)])
    store.commit("k", _record((first, second), {"a": one, "b": two}, 2), 1, [dict(second)])
    rec = store.get("k")
    assert rec is not None
    assert rec.data == {
        "visited": {"a": {"attempts": 1, "tried": [{"call": "x"}]}, "b": {"attempts": 2}},
        "n": 2,
        "events": [dict(first), dict(second)],
    }
    assert list(rec.data) == ["visited", "n", "events"]
    rec.data["events"][0]["turn"] = 99  # a reader's copy: the store keeps its own
    rec.data["visited"]["a"]["tried"][0]["call"] = "changed"
    again = store.get("k")
    assert again is not None and again.data["events"][0]["turn"] == 1
    assert again.data["visited"]["a"]["tried"] == [{"call": "x"}]


def test_equal_events_that_are_other_objects_are_stored_as_they_are(store: Store) -> None:
    # 1 == True == 1.0, so only object identity may reuse an event's stored form.
    as_int = MappingProxyType({"v": 1})
    as_bool = MappingProxyType({"v": True})
    as_float = MappingProxyType({"v": 1.0})
    store.commit("k", _record((as_int,), {}, 1), 0, [])
    store.commit("k", _record((as_bool, as_int), {}, 2), 1, [])
    store.commit("k", _record((as_int, as_float), {}, 3), 2, [])
    rec = store.get("k")
    assert rec is not None
    assert _shape(rec.data["events"]) == _shape([{"v": 1}, {"v": 1.0}])
    store.commit("k", _record((as_float, as_bool), {"a": MappingProxyType({"x": 1.0})}, 4), 3, [])
    rec = store.get("k")
    assert rec is not None
    assert _shape(rec.data["events"]) == _shape([{"v": 1.0}, {"v": True}])
    assert _shape(rec.data["visited"]) == _shape({"a": {"x": 1.0}})


def test_a_new_event_that_is_also_a_recent_event_is_stored_once_right(store: Store) -> None:
    old = MappingProxyType({"type": "plan_activated", "turn": 1})
    new = MappingProxyType({"type": "node_entered", "turn": 2, "tags": ("a",)})
    other = MappingProxyType({"type": "node_verified", "turn": 2, "output": "long"})
    store.commit("k", _record((old,), {}, 1), 0, [old])
    store.commit("k", _record((old, new), {}, 2), 1, [new, other])
    rec = store.get("k")
    assert rec is not None
    assert rec.data["events"] == [dict(old), {"type": "node_entered", "turn": 2, "tags": ["a"]}]
    assert [e.data for e in store.events("k")] == [
        dict(old),
        {"type": "node_entered", "turn": 2, "tags": ["a"]},
        dict(other),
    ]
    store.events("k")[1].data["tags"].append(
        "b"
    )  # the row and the record share nothing a reader sees
    again = store.get("k")
    assert again is not None and again.data["events"][1]["tags"] == ["a"]


def test_a_bad_value_in_recent_events_or_node_states_is_refused(store: Store) -> None:
    bad = MappingProxyType({"v": float("nan")})
    with pytest.raises(TypeError, match="not JSON-ready"):
        store.commit("k", _record((bad,), {}, 1), 0, [])
    with pytest.raises(TypeError, match="not JSON-ready"):
        store.commit("k", _record((), {"a": bad}, 1), 0, [])
    assert store.get("k") is None


def test_memory_keeps_no_reference_to_what_the_caller_holds() -> None:
    store = open_store("memory://")
    inner = [1]
    record: dict[str, Any] = {"list": inner, "tuple": (inner,)}
    store.commit("k", record, 0, [{"items": inner}])
    inner.append(2)
    rec = store.get("k")
    assert rec is not None and rec.data == {"list": [1], "tuple": [[1]]}
    assert store.events("k")[0].data == {"items": [1]}


_keys = st.text(max_size=3) | st.integers(-5, 5) | st.booleans() | st.none()
_keys |= st.floats(allow_nan=True, allow_infinity=True)
_leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=5)
    | st.sampled_from([Colour.RED, Level.HIGH, Ratio(1.5)])
)
_values = st.recursive(
    _leaves,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=4).map(tuple)
        | st.dictionaries(_keys, inner, max_size=4)
        | st.sets(st.integers(), max_size=2)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(value=_values)
def test_held_is_json_round_trip_without_the_text(value: Any) -> None:
    try:
        expected = json.loads(encode(value))
    except TypeError:
        with pytest.raises(TypeError, match="not JSON-ready"):
            held(value)
        return
    kept = held(value)
    assert _shape(kept) == _shape(expected)
    copy = thawed(kept)
    assert _shape(copy) == _shape(expected)
    if isinstance(kept, dict | list) and kept:
        assert copy is not kept


def test_floats_keep_their_exact_value() -> None:
    for number in (0.1, 1 / 3, 2.0**-1074, 1.7976931348623157e308):
        assert held({"x": number})["x"] == number == json.loads(encode({"x": number}))["x"]
    assert math.copysign(1, held([-0.0])[0]) == -1


def test_memory_holds_each_carried_over_event_and_node_state_once_while_the_run_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from waygraph.store import values

    made: list[Any] = []

    def counted(value: Any, what: str = "the value") -> Any:
        made.append(value)
        return held(value, what)

    monkeypatch.setattr(values, "held", counted)
    store = open_store("memory://")
    first = MappingProxyType({"type": "plan_activated", "turn": 1})
    second = MappingProxyType({"type": "node_entered", "turn": 2})
    one, two = MappingProxyType({"attempts": 1}), MappingProxyType({"attempts": 2})
    commit = {"kind": "guided", "status": "running"}
    store.commit("k", _record((first,), {"a": one}, 1), 0, [], **commit)
    made.clear()
    store.commit("k", _record((first, second), {"a": one, "b": two}, 2), 1, [], **commit)
    # The second commit held the new event and node state and the record's
    # other fields, not what the first had held already.
    assert second in made and two in made
    assert first not in made and one not in made
    made.clear()
    store.commit("k", _record((first, second), {"a": one, "b": two}, 3), 2, [], status="done")
    assert first not in made and second not in made
    made.clear()
    # A finished run keeps no sources: written again, it is held whole.
    store.commit("k", _record((first, second), {"a": one, "b": two}, 4), 3, [], status="done")
    assert first in made and second in made and one in made
    rec = store.get("k")
    assert rec is not None and rec.data["events"] == [dict(first), dict(second)]


@pytest.mark.parametrize("value", ACCEPTED, ids=range(len(ACCEPTED)))
def test_encode_writes_what_json_s_python_encoder_writes(
    monkeypatch: pytest.MonkeyPatch, value: Any
) -> None:
    # encode() calls the C encoder it made once; without _json, JSONEncoder.encode.
    from waygraph.store import values

    fast = encode(value)
    monkeypatch.setattr(values, "_C_ENCODER", None)
    assert fast == encode(value)
    assert fast == json.dumps(
        value, separators=(",", ":"), allow_nan=False, default=values._read_only
    )
