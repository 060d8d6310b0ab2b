"""A commit's arguments, checked and encoded once, before any store lock is taken.

Every backend's :meth:`~waygraph.store.base.Store.commit` and ``commit_all``
go through :func:`normalise_commit`, so a value one store refuses every store
refuses, with the same words.

Example:
    >>> c = normalise_commit("k", {"a": 1}, 0, [{"type": "x"}], kind="guided", session=None,
    ...                      status="running", plan=None, correlation_ids=[], make_current=False)
    >>> c.data, c.events
    ('{"a":1}', ('{"type":"x"}',))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from waygraph.store.values import TEXTS, HeldSources, encode, encode_record, held, held_record

__all__ = ["Commit", "normalise_commit"]


# Not frozen: built once a commit and read only by the store (a frozen
# dataclass's __init__ costs about 1.3 µs more for these eleven fields).
@dataclass(slots=True)
class Commit:
    """A commit's arguments after checking, shared by every backend.

    ``data`` and ``events`` are JSON text, or for a store that
    ``keeps_values`` the checked copies :func:`waygraph.store.values.held` makes.
    """

    key: str
    data: Any
    expected_version: int
    events: tuple[Any, ...]
    kind: str
    session: str | None
    status: str | None
    plan: str | None
    correlation_ids: tuple[str, ...]
    make_current: bool
    #: With ``keeps_values``: what the record's events and node states were
    #: held from, for the key's next commit to reuse (None otherwise).
    held_sources: HeldSources | None = None


def normalise_commit(
    key: str,
    record: Mapping[str, Any],
    expected_version: int,
    new_events: Sequence[Mapping[str, Any]],
    *,
    kind: str,
    session: str | None,
    status: str | None,
    plan: str | None,
    correlation_ids: Sequence[str],
    make_current: bool,
    as_values: bool = False,
    last: HeldSources | None = None,
) -> Commit:
    """Check a commit's arguments and encode its JSON once, before any lock is taken.

    With ``as_values`` the record and events are checked by the same rules
    and copied instead (``memory://``), taking what ``last`` (the key's
    previous commit's sources) held already. A record's recent events
    (:class:`~waygraph.store.values.RecentEvents`) are encoded or copied once
    per event, not once per commit. Raises TypeError or ValueError for misuse
    (these are caller bugs, not store trouble), so a failed check never
    leaves anything half written.
    """
    if not isinstance(key, str) or not key:
        raise ValueError(f"a store key must be a non-empty string (got {key!r})")
    _check_text("key", key)
    if isinstance(expected_version, bool) or not isinstance(expected_version, int):
        raise TypeError(f"expected_version must be an int (got {expected_version!r})")
    if expected_version < 0:
        raise ValueError(f"expected_version must be 0 (create) or more (got {expected_version})")
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"kind must be a non-empty string (got {kind!r})")
    _check_text("kind", kind)
    for name, value in (("session", session), ("status", status), ("plan", plan)):
        if value is not None:
            if not isinstance(value, str):
                raise TypeError(f"{name} must be a string or None (got {value!r})")
            _check_text(name, value)
    # A bare string is a Sequence[str]; without this check "abc" would index as a, b, c.
    if isinstance(correlation_ids, str | bytes):
        raise TypeError(
            f"correlation_ids must be a sequence of strings, not a string "
            f"(got {correlation_ids!r}); pass ({correlation_ids!r},)"
        )
    ids = tuple(dict.fromkeys(correlation_ids)) if correlation_ids else ()
    for cid in ids:
        if not isinstance(cid, str) or not cid:
            raise TypeError(f"correlation ids must be non-empty strings (got {cid!r})")
        _check_text("a correlation id", cid)
    if type(record) is not dict and not isinstance(record, Mapping):
        raise TypeError(f"record for key {key!r} must be a dict (got {type(record).__name__})")
    events = []
    # The engine's new events are also the newest of the record's recent
    # events: each is encoded (or held) once for both (by object identity).
    fresh: dict[int, Any] = {}
    what = f"an event for key {key!r}"
    for event in new_events:
        kind_of = type(event)
        if (
            kind_of is not dict
            and kind_of is not MappingProxyType
            and not isinstance(event, Mapping)
        ):
            raise TypeError(f"events for key {key!r} must be dicts (got {kind_of.__name__})")
        form = held(event, what) if as_values else encode(event, what=what)
        if kind_of is MappingProxyType:
            fresh[id(event)] = form
        events.append(form)
    what = f"the record for key {key!r}"
    sources = None
    data: dict[str, Any] | str
    if as_values:
        data, sources = held_record(record, what, fresh, last)
    else:
        data = encode_record(record, TEXTS, key, what, fresh)
    return Commit(
        key=key,
        data=data,
        expected_version=expected_version,
        events=tuple(events),
        kind=kind,
        session=session,
        status=status,
        plan=plan,
        correlation_ids=ids,
        make_current=bool(make_current),
        held_sources=sources,
    )


def _check_text(name: str, value: str) -> None:
    # Keys and index values become SQL text and file names in some backend;
    # refusing what one backend cannot hold keeps every backend interchangeable.
    if "\x00" in value:
        raise ValueError(f"{name} must not contain NUL characters (got {value!r})")
    if value.isascii():  # a flag on the string: ASCII is always valid UTF-8
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"{name} must be valid Unicode text (got {value!r}): {exc}") from exc
