"""What a store accepts as data, and the two forms it keeps it in: JSON text or Python values.

The durable stores keep JSON text (:func:`encode`); ``memory://`` keeps
Python values (:func:`held`), checked by the very rules the JSON encoder
applies, so a value one store refuses every store refuses, and what a store
gives back is the same whichever kept it: dicts with string keys, lists,
strings, ints, finite floats, booleans and None.

A run record's recent events (:class:`RecentEvents`) are copies of the
engine's read-only events; a store encodes (or checks) each such event once
and reuses the work while the same event object comes again (a JSON store
through :class:`SourceMemo`, ``memory://`` through the :class:`HeldSources`
it keeps with each record), so a turn pays for its new events, not for the
last fifty.

Example:
    >>> held({"a": (1, 2.5), 3: None}, "the record")
    {'a': [1, 2.5], '3': None}
    >>> held({"x": float("nan")}, "the record")
    Traceback (most recent call last):
    ...
    TypeError: the record is not JSON-ready: Out of range float values are not JSON compliant: nan
"""

from __future__ import annotations

import json
import math
import operator
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from waygraph.model.record import NodeStates, RecentEvents

__all__ = [
    "TEXTS",
    "HeldSources",
    "RecentEvents",
    "SourceMemo",
    "encode",
    "encode_record",
    "held",
    "held_record",
    "reused_forms",
    "thawed",
]

T = TypeVar("T")


def _read_only(value: Any) -> Any:
    # The engine's runs and events are read-only mappings; as JSON they are objects.
    if type(value) is MappingProxyType:
        return value.copy()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# One encoder for every call: json.dumps with options builds a new one each time.
_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False, default=_read_only)
# The C encoder JSONEncoder.encode builds on every call, made once: that wrapper
# cost about 1 µs of a 2.7 µs event. Without circular-reference markers, a value
# containing itself ends in RecursionError instead, refused all the same.
_MAKE_C_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)  # None without _json
_C_ENCODER = (
    None
    if _MAKE_C_ENCODER is None
    else _MAKE_C_ENCODER(
        None, _read_only, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, False
    )
)


def encode(value: Any, *, what: str = "the value") -> str:
    """Compact JSON text of a JSON-ready value, or TypeError naming ``what``.

    NaN and infinities are refused: they are not JSON, and PostgreSQL and
    other readers reject them. ASCII escapes keep lone surrogates and every
    other string representable in any backend. Nesting past the interpreter's
    recursion limit (or a value containing itself) is refused too.

    Example:
        >>> encode({"a": [1, None]})
        '{"a":[1,null]}'
    """
    try:
        if _C_ENCODER is None:
            return _ENCODER.encode(value)
        return "".join(_C_ENCODER(value, 0))
    except (TypeError, ValueError, RecursionError) as exc:
        raise TypeError(f"{what} is not JSON-ready: {exc}") from exc


def _key(key: Any) -> str:
    # The JSON encoder's rule for object keys (json.encoder's c_make_encoder).
    if isinstance(key, str):
        return str.__str__(key)
    if isinstance(key, float):
        return float.__repr__(_finite(key))
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return int.__repr__(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def _finite(value: float) -> float:
    if math.isfinite(value):
        return value
    raise ValueError(f"Out of range float values are not JSON compliant: {value!r}")


#: Ints this far from 0 may pass the interpreter's limit on digits in int <-> str
#: conversion (4,300 by default), which the JSON encoder enforces: check them.
_BIG = 10**4000
_NEG_BIG = -_BIG  # made once: negating it allocates 1.7 KB each time


#: Values kept as they are without a look inside (ints and floats need one).
_PLAIN = frozenset({str, bool, type(None)})


def _value(value: Any) -> Any:
    # What json.loads(encode(value)) gives, without the text: the same order of
    # tests as the C encoder, so the same values pass and the same fail.
    kind = type(value)
    if kind is str or value is None or value is True or value is False:
        return value
    if kind is int:
        if _NEG_BIG < value < _BIG:
            return value
        int.__repr__(value)  # raises past the interpreter's digit limit, as encoding does
        return value
    # A read-only mapping (the engine's events and node states) is an object
    # to the encoder (through default=), read here without copying it first.
    if kind is dict or kind is MappingProxyType or kind is NodeStates:
        return {
            k if type(k) is str else _key(k): v
            if type(v) in _PLAIN or (type(v) is int and _NEG_BIG < v < _BIG)
            else _value(v)
            for k, v in value.items()
        }
    if kind is list or kind is tuple or kind is RecentEvents:
        return [
            v if type(v) in _PLAIN or (type(v) is int and _NEG_BIG < v < _BIG) else _value(v)
            for v in value
        ]
    if kind is float:
        return _finite(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int(int.__repr__(value))
    if isinstance(value, float):
        return float.__float__(_finite(value))
    if isinstance(value, list | tuple):
        return [_value(v) for v in value]
    if isinstance(value, dict):
        return {_key(k): _value(v) for k, v in value.items()}
    return _value(_read_only(value))


def held(value: Any, what: str = "the value") -> Any:
    """``value`` as ``memory://`` keeps it: a fresh copy of what its JSON would read back as.

    Refuses (TypeError naming ``what``) exactly what :func:`encode` refuses:
    NaN, infinities, sets, objects, keys that are not str/int/float/bool/None,
    and nesting past the recursion limit. Tuples become lists and non-string
    keys strings, as through JSON.

    Example:
        >>> held({"t": ("a",), "n": 1.5}, "an event")
        {'t': ['a'], 'n': 1.5}
    """
    try:
        return _value(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise TypeError(f"{what} is not JSON-ready: {exc}") from exc


def thawed(value: Any) -> Any:
    """A deep copy of a held value (dicts, lists and scalars only), for a reader to change.

    Example:
        >>> kept = {"a": [1, {"b": 2}]}
        >>> copy = thawed(kept)
        >>> copy == kept, copy["a"] is kept["a"]
        (True, False)
    """
    kind = type(value)
    if kind is dict or kind is NodeStates:
        return {k: (v if type(v) in _SCALARS else thawed(v)) for k, v in value.items()}
    if kind is list:
        return [v if type(v) in _SCALARS else thawed(v) for v in value]
    return value


_SCALARS = frozenset({str, int, float, bool, type(None)})


class SourceMemo(Generic[T]):
    """Per key, the form (JSON text or held value) of each recent event source last seen.

    ``form(source, what)`` makes the form of a source seen for the first time;
    a key's memo keeps only the sources of its latest record, and at most
    ``keys`` keys are remembered (least recently used go), so memory stays
    bounded. Thread-safe.

    Example:
        >>> from types import MappingProxyType
        >>> memo = SourceMemo(lambda s, what: encode(s), keys=2)
        >>> e = MappingProxyType({"type": "x"})
        >>> memo.forms("k", (e,), "an event")
        ['{"type":"x"}']
    """

    def __init__(self, form: Callable[[Mapping[str, Any], str], T], *, keys: int = 1024) -> None:
        self._form = form
        self._keys = keys
        self._lock = threading.Lock()
        self._memo: OrderedDict[str, tuple[tuple[Mapping[str, Any], ...], list[T]]] = OrderedDict()

    def forms(
        self,
        key: str,
        sources: Sequence[Mapping[str, Any]],
        what: str,
        fresh: Mapping[int, T] | None = None,
    ) -> list[T]:
        """The form of each source, in order; only sources not seen last time are made.

        ``fresh``: forms made already, by ``id`` of a source the caller holds.
        """
        sources = tuple(sources)
        with self._lock:
            old, old_forms = self._memo.pop(key, ((), []))
        forms = reused_forms(old, old_forms, sources, what, self._form, fresh)
        with self._lock:
            # The memo keeps the sources alive, so an identity seen here is
            # never another object's.
            self._memo[key] = (sources, forms)
            while len(self._memo) > self._keys:
                self._memo.popitem(last=False)
        return forms


def reused_forms(
    old: tuple[Mapping[str, Any], ...],
    old_forms: Sequence[T],
    sources: tuple[Mapping[str, Any], ...],
    what: str,
    make: Callable[[Mapping[str, Any], str], T],
    fresh: Mapping[int, T] | None = None,
) -> list[T]:
    """The form of each of ``sources``: ``old_forms``' form for a source of ``old``, else made.

    A source not in ``old`` takes its form from ``fresh`` (forms the caller
    made already, by ``id`` of a source it holds), else from ``make``.
    Sources are matched by object identity, never equality: ``{"a": 1}``
    equals ``{"a": True}`` and ``{"a": 1.0}``, whose JSON differs. The caller
    keeps ``old`` alive, so an identity matched is never another object's.

    Example:
        >>> from types import MappingProxyType
        >>> a, b = MappingProxyType({"n": 1}), MappingProxyType({"n": 2})
        >>> reused_forms((a,), ["A"], (a, b), "an event", lambda s, what: str(s["n"]))
        ['A', '2']
    """
    if not sources:
        return []
    if fresh:
        found, make_new = fresh, make

        def make(source: Mapping[str, Any], what: str) -> T:
            form = found.get(id(source))
            return make_new(source, what) if form is None else form

    # The usual case: the last list with its oldest few dropped and new
    # events appended.
    first = sources[0]
    if old and old[0] is first:
        drop = 0  # no event dropped off the front yet (a run's first 50)
    else:
        drop = next((i for i, source in enumerate(old) if source is first), -1)
    if drop >= 0:
        kept = min(len(old) - drop, len(sources))
        if all(map(operator.is_, old[drop : drop + kept], sources[:kept])):
            return [*old_forms[drop : drop + kept], *(make(s, what) for s in sources[kept:])]
    by_id = {id(s): f for s, f in zip(old, old_forms, strict=True)}
    return [by_id[id(s)] if id(s) in by_id else make(s, what) for s in sources]


def encode_record(
    record: Mapping[str, Any],
    memo: SourceMemo[str],
    key: str,
    what: str,
    fresh: Mapping[int, str] | None = None,
) -> str:
    """:func:`encode` of a record whose last key, ``events``, may be :class:`RecentEvents`.

    Those events are spliced in from ``memo`` (each encoded once, when first
    seen) and the rest of the record encoded as usual: the same text as
    encoding the whole record.

    Example:
        >>> from types import MappingProxyType
        >>> memo = SourceMemo(lambda s, what: encode(s))
        >>> events = RecentEvents.of((MappingProxyType({"type": "x"}),))
        >>> encode_record({"n": 1, "events": events}, memo, "k", "the record")
        '{"n":1,"events":[{"type":"x"}]}'
    """
    events = record.get("events")
    if type(events) is not RecentEvents or type(record) is not dict:
        return encode(record, what=what)
    rest = record.copy()
    rest["events"] = None
    head = encode(rest, what=what)
    # Only the top level's last key can end the text so (a nested one adds a
    # brace, a string's quotes are escaped); elsewhere, encode it all.
    if not head.endswith(_EVENTS_LAST):
        return encode(record, what=what)
    spliced = ",".join(memo.forms(key, events.sources, f"an event of {what}", fresh))
    return f"{head[: -len('null}')]}[{spliced}]}}"


_EVENTS_LAST = '"events":null}'


#: Every JSON store's memo of event texts. One per process is enough: an
#: event's text depends on the event alone, whichever store writes it.
TEXTS: SourceMemo[str] = SourceMemo(lambda source, what: encode(source, what=what))


@dataclass(frozen=True, slots=True)
class HeldSources:
    """What ``memory://`` made a held record's events and node states from, by object.

    A store keeps it with the record; the next commit of the key passes it
    back (:func:`held_record`'s ``last``), so each event and node state the
    engine carries over is checked and copied once, however many records
    carry it. Keeping the sources alive keeps their identities unique.
    """

    events: tuple[Mapping[str, Any], ...]
    event_forms: list[Any]
    states: Mapping[str, Mapping[str, Any]]
    state_forms: dict[str, Any]


_NO_SOURCES = HeldSources((), [], {}, {})


def held_record(
    record: Mapping[str, Any],
    what: str,
    fresh: Mapping[int, Any] | None = None,
    last: HeldSources | None = None,
) -> tuple[dict[str, Any], HeldSources | None]:
    """:func:`held` of a record, and what its :class:`RecentEvents` and :class:`NodeStates` were.

    An event or node state that ``last`` (the key's previous record) held
    already is taken as held then; ``fresh`` holds new events made already,
    by ``id``. The result equals what the JSON stores read back. The sources
    are None for a record without recent events or node states.

    Example:
        >>> from types import MappingProxyType
        >>> events = RecentEvents.of((MappingProxyType({"type": "x"}),))
        >>> kept, sources = held_record({"n": (1,), "events": events}, "the record")
        >>> kept
        {'n': [1], 'events': [{'type': 'x'}]}
        >>> held_record({"events": events}, "the record", last=sources)[0]["events"][0] is (
        ...     kept["events"][0])
        True
    """
    events = record.get("events")
    states = record.get("visited")
    if type(record) is not dict or (
        type(events) is not RecentEvents and type(states) is not NodeStates
    ):
        kept = held(record, what)
        if type(kept) is not dict:
            raise TypeError(f"{what} must be a dict (got {type(record).__name__})")
        return kept, None
    last = last or _NO_SOURCES
    rest = record.copy()
    # Placeholders keep each key where it was, as in the JSON stores' text.
    if type(events) is RecentEvents:
        rest["events"] = None
    if type(states) is NodeStates:
        rest["visited"] = None
    kept = held(rest, what)
    event_sources: tuple[Mapping[str, Any], ...] = ()
    event_forms: list[Any] = []
    if type(events) is RecentEvents:
        event_sources = events.sources
        event_forms = reused_forms(
            last.events, last.event_forms, event_sources, f"an event of {what}", held, fresh
        )
        kept["events"] = event_forms
    state_sources: Mapping[str, Mapping[str, Any]] = {}
    state_forms: dict[str, Any] = {}
    if type(states) is NodeStates:
        state_sources = states.sources
        state_forms = kept["visited"] = _held_states(state_sources, last, f"a node state of {what}")
    return kept, HeldSources(event_sources, event_forms, state_sources, state_forms)


def _held_states(
    sources: Mapping[Any, Mapping[str, Any]], last: HeldSources, what: str
) -> dict[str, Any]:
    """Node name -> held state, in order; a state ``last`` held already is taken as it was."""
    last_sources, last_forms = last.states, last.state_forms
    kept: dict[str, Any] = {}
    for name, source in sources.items():
        if type(name) is not str:
            # Names a JSON object key would turn into text, as JSON reads them.
            named = {held({n: None}, what).popitem()[0]: s for n, s in sources.items()}
            return _held_states(named, last, what)
        # A node state unchanged since the last record is the same object.
        kept[name] = last_forms[name] if last_sources.get(name) is source else held(source, what)
    return kept
