"""The run record every driver writes, and the reading of records from before it.

Every run of every driver is stored as one record schema (docs/stores.md,
"The run record"):

- ``kind``: :class:`RunKind`: ``guided`` (a Navigator run), ``dag`` (a
  generated plan run by the planning executor), ``event`` (a state machine run
  by an event planner) or ``session`` (a plan the model declares itself);
- ``plan``: the id of the plan the run follows (an event run's plan is its own
  state machine, so its id is the run's ``plan_id``); ``planner``: the event
  planner that owns an event run;
- ``current_node``: the node the run is at, a string (or null) in the kinds
  where one node is active at a time, a list in ``dag`` runs where several
  are (:func:`current_nodes` reads both);
- ``visited``: ``{node: {"outcome": ..., ...}}`` with a
  :class:`~waygraph.model.NodeOutcome` per node entered;
- ``path``: the nodes in the order they were entered;
- ``status``: a :class:`~waygraph.model.RunStatus`;
- ``events``: the run's events live in the store's event list (a guided
  record also keeps the last 50 in the record, for supervisors).

A step, a state and a node are the same thing here: the record says node.

Records written before this schema load through :func:`migrate` (the stores
call it on every read), so nothing stored earlier needs rewriting: guided runs
were kind ``run`` without ``kind``/``plan`` in the data, event runs were kind
``plan_context`` with the planner in the ``plan`` column, and dag runs kept a
bare status per node in ``visited``.

Example:
    >>> kind, data = migrate("run", {"run_id": "r1", "plan_id": "bugfix", "current_node": "fix"})
    >>> kind, data["kind"], data["plan"], current_nodes(data)
    ('guided', 'guided', 'bugfix', ['fix'])
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from waygraph.errors import InputError
from waygraph.model._status import node_outcome

__all__ = [
    "BEFORE",
    "CORE_FIELDS",
    "LEGACY_KINDS",
    "NodeStates",
    "RecentEvents",
    "RunKind",
    "RunRecord",
    "current_nodes",
    "kind_names",
    "migrate",
    "record_kind",
    "thawed_node",
]


class RunKind(StrEnum):
    """Which driver wrote a run record (the record's and the store's ``kind``)."""

    GUIDED = "guided"
    DAG = "dag"
    EVENT = "event"
    SESSION = "session"
    #: An Attractor pipeline run by ``waygraph run`` (``waygraph.pipelines.record``).
    PIPELINE = "pipeline"


#: Store kinds written before the one record schema -> the kind they are now.
LEGACY_KINDS: Mapping[str, str] = {"run": RunKind.GUIDED.value, "plan_context": RunKind.EVENT.value}
#: Each kind that had another name before the one record schema -> that name.
BEFORE: Mapping[str, str] = {new: old for old, new in LEGACY_KINDS.items()}
_OLD_NAMES: dict[str, tuple[str, ...]] = {}
for _old, _new in LEGACY_KINDS.items():
    _OLD_NAMES[_new] = (*_OLD_NAMES.get(_new, ()), _old)


def record_kind(kind: str) -> str:
    """The kind a stored kind is now (``run`` -> ``guided``); other kinds unchanged.

    Example:
        >>> record_kind("run"), record_kind("plan_context"), record_kind("plan")
        ('guided', 'event', 'plan')
    """
    return LEGACY_KINDS.get(kind, kind)


def kind_names(kind: str) -> tuple[str, ...]:
    """Every stored kind that reads as ``kind``: itself and the names it had before.

    Stores filter on these, so ``list(kind="guided")`` finds runs stored as ``run``.

    Example:
        >>> kind_names("guided"), kind_names("dag")
        (('guided', 'run'), ('dag',))
    """
    kind = record_kind(kind)
    return (kind, *_OLD_NAMES.get(kind, ()))


def current_nodes(record: Mapping[str, Any]) -> list[str]:
    """The nodes a record is at, as a list whatever the kind.

    Example:
        >>> current_nodes({"current_node": None}), current_nodes({"current_node": ["a", "b"]})
        ([], ['a', 'b'])
    """
    current = record.get("current_node")
    if current is None:
        return []
    if isinstance(current, list):
        return [str(n) for n in current]
    return [str(current)]


def migrate(kind: str, data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A stored record as the current schema reads it: ``(kind, data)``.

    ``data`` is changed in place (stores hand out a fresh copy per read) and
    returned. Records already in the current schema come back unchanged, so
    calling it twice is harmless. Records of kinds that are not runs (a stored
    library's ``plan`` record, say) are returned as they are.

    Example:
        >>> migrate("dag", {"visited": {"a": "completed"}})[1]["visited"]
        {'a': {'outcome': 'success', 'status': 'completed'}}
    """
    kind = record_kind(kind)
    # Only data that is a run record of an earlier layout is completed: a
    # store also holds other data (and its users' own) under these kinds.
    if "kind" in data:
        pass
    elif kind == RunKind.GUIDED:
        if "run_id" in data and "plan_id" in data:
            data["kind"] = kind
            data.setdefault("plan", data["plan_id"])
    elif kind == RunKind.EVENT and "current_state" in data and "plan_id" in data:
        data["kind"] = kind
        data["plan"] = data["plan_id"]
        data.setdefault("current_node", data["current_state"])
        data.setdefault("path", [])
        data.setdefault("visited", {})
    if kind == RunKind.DAG:
        visited = data.get("visited")
        if isinstance(visited, dict) and any(isinstance(v, str) for v in visited.values()):
            data["visited"] = {
                node: ({"outcome": node_outcome(v), "status": v} if isinstance(v, str) else v)
                for node, v in visited.items()
            }
    return kind, data


#: The keys every kind of run record carries, in the order :meth:`RunRecord.to_dict` writes them.
CORE_FIELDS: tuple[str, ...] = (
    "kind",
    "run_id",
    "plan",
    "status",
    "current_node",
    "visited",
    "path",
    "total_nodes",
    "completed_nodes",
)


def stored_dict(
    kind: RunKind,
    run_id: str,
    plan: str,
    status: str,
    current_node: str | list[str] | None,
    visited: Mapping[str, Any],
    path: Sequence[str],
    total_nodes: int,
    completed_nodes: int,
    details: Mapping[str, Any],
) -> dict[str, Any]:
    """:meth:`RunRecord.to_dict` of these fields, without making the record first.

    A guided turn stores one record a turn, and a frozen record's fields
    cost a microsecond or two to set: ``engine.to_record`` builds the dict
    straight from its parts through here, so the order of the keys has one home.

    Example:
        >>> stored_dict(RunKind.DAG, "d", "p", "running", None, {}, [], 0, 0, {"goal": "g"})["goal"]
        'g'
    """
    data: dict[str, Any] = {
        "kind": kind.value,
        "run_id": run_id,
        "plan": plan,
        "status": status,
        "current_node": current_node,
        "visited": visited,
        "path": path,
        "total_nodes": total_nodes,
        "completed_nodes": completed_nodes,
    }
    data.update(details)
    return data


class _Stored(Protocol):
    """What :meth:`RunRecord.from_stored` reads of a store's record (``StoredRecord``)."""

    @property
    def key(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def data(self) -> dict[str, Any]: ...
    @property
    def session(self) -> str | None: ...
    @property
    def updated_at(self) -> float: ...


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One run of any kind, as the store keeps it: the core every kind has, and its own part.

    Each driver builds it with its kind's builder (``engine.state.guided_record``,
    the planning journal's ``dag_record``, ``events._run_record.event_record``,
    ``sessions._records.session_record``, ``pipelines.record.pipeline_record``);
    readers (the dashboard, ``waygraph sessions``, stats, learning) read the
    core fields whatever the kind. :meth:`to_dict` is the stored JSON: the core
    keys, then ``details`` (the kind's own keys, in the order it wrote them),
    so a record keeps every key it had before this type existed. ``session``,
    ``created_at`` and ``updated_at`` are the store's (its columns, or the
    kind's own keys where it keeps them) and are not written by :meth:`to_dict`.

    Example:
        >>> rec = RunRecord(RunKind.DAG, "dag_1", "backup", "running", ["dump"],
        ...                 {"dump": {"outcome": "pending"}}, ["dump"], 2, 0, {"goal": "Back up"})
        >>> data = rec.to_dict()
        >>> data["kind"], data["total_nodes"], data["goal"]
        ('dag', 2, 'Back up')
        >>> RunRecord.from_dict(data) == rec
        True
    """

    kind: RunKind
    run_id: str
    plan: str
    status: str
    current_node: str | list[str] | None
    visited: Mapping[str, Any]
    path: Sequence[str]
    total_nodes: int
    completed_nodes: int
    details: Mapping[str, Any] = field(default_factory=dict)
    session: str | None = None
    created_at: float | None = None
    updated_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The record as stored: plain JSON-ready data, core keys first.

        The values are passed on as they are (a guided run's ``visited`` and
        ``events`` are the store's copy-once forms), and ``details`` come
        last in their own order, so a guided record's ``events`` stays the
        last key, where a JSON store splices it in.
        """
        return stored_dict(
            self.kind,
            self.run_id,
            self.plan,
            self.status,
            self.current_node,
            self.visited,
            self.path,
            self.total_nodes,
            self.completed_nodes,
            self.details,
        )

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        *,
        kind: str | None = None,
        session: str | None = None,
        updated_at: float | None = None,
    ) -> RunRecord:
        """A stored record's data as a :class:`RunRecord`, whichever code wrote it.

        Records written before a core key existed get it from what they keep
        (an event record's ``run_id`` is its ``plan_id``, its counts come from
        ``visited``), through :func:`migrate` first. ``kind`` is the store's
        kind when the data does not say. A record that is not a run, or a core
        field of the wrong type, raises :class:`~waygraph.errors.InputError`
        naming the run and the field.

        Example:
            >>> rec = RunRecord.from_dict({"plan_id": "p1", "current_state": "work"}, kind="event")
            >>> rec.kind, rec.run_id, rec.current_node, rec.total_nodes
            (<RunKind.EVENT: 'event'>, 'p1', 'work', 0)
        """
        found, fresh = migrate(str(data.get("kind") or kind or ""), dict(data))
        name = fresh.get("run_id") or fresh.get("plan_id") or fresh.get("id") or "?"
        try:
            run_kind = RunKind(found)
        except ValueError:
            raise InputError(f"run record {name!r}: kind {found!r} is not a run kind") from None
        visited = fresh.pop("visited", None) or {}
        if not isinstance(visited, Mapping):
            raise InputError(f"run record {name!r}: field 'visited' must be an object")
        current = fresh.pop("current_node", None)
        if current is not None and not isinstance(current, str | list):
            raise InputError(f"run record {name!r}: field 'current_node' must be text or a list")
        done = sum(
            1 for v in visited.values() if isinstance(v, Mapping) and v.get("outcome") == "success"
        )
        plan = str(fresh.pop("plan", None) or fresh.get("plan_id") or fresh.get("id") or "")
        status = str(fresh.pop("status", None) or "running")
        path = list(fresh.pop("path", None) or ())
        total = _count(fresh.pop("total_nodes", len(visited)), name, "total_nodes")
        completed = _count(fresh.pop("completed_nodes", done), name, "completed_nodes")
        for key in ("kind", "run_id"):
            fresh.pop(key, None)
        created = fresh.get("created_at")
        return cls(
            kind=run_kind,
            run_id=str(name),
            plan=plan,
            status=status,
            current_node=current,
            visited=visited,
            details=fresh,
            session=session if session is not None else _text(fresh.get("session_id")),
            created_at=float(created) if isinstance(created, int | float) else None,
            updated_at=updated_at if updated_at is not None else _time(fresh.get("updated_at")),
            path=path,
            total_nodes=total,
            completed_nodes=completed,
        )

    @classmethod
    def from_stored(cls, stored: _Stored) -> RunRecord:
        """A store's record (``StoredRecord``) as a :class:`RunRecord`, with the store's columns.

        Example:
            >>> from waygraph.store import StoredRecord
            >>> data = {"run_id": "run_1", "plan_id": "bugfix", "current_node": "fix"}
            >>> rec = StoredRecord(key="run_1", kind="run", data=data, version=1, session="s",
            ...                    updated_at=5.0)
            >>> r = RunRecord.from_stored(rec)
            >>> r.kind, r.plan, r.session, r.updated_at
            (<RunKind.GUIDED: 'guided'>, 'bugfix', 's', 5.0)
        """
        data = stored.data if "run_id" in stored.data else {**stored.data, "run_id": stored.key}
        return cls.from_dict(
            data, kind=stored.kind, session=stored.session, updated_at=stored.updated_at or None
        )


def _count(value: Any, name: str, field_name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, list):
            # A pipeline checkpoint's own ``completed_nodes`` is the list of them.
            return len(value)
        raise InputError(f"run record {name!r}: field {field_name!r} must be a whole number")
    return value


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _time(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


# ---------------------------------------------------------------- record values
# What a record's events and node states are, so that a store can keep what it
# has seen before by object (waygraph.store.values) without importing the engine.


def thawed_node(state: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a read-only node state, its ``tried`` events copied too."""
    thawed: dict[str, Any] = state.copy()  # type: ignore[attr-defined]
    tried = thawed.get("tried")
    if tried is not None:
        thawed["tried"] = list(map(_COPY, tried))
    return thawed


#: ``m.copy()`` as a function map() calls in C.
_COPY = operator.methodcaller("copy")


class RecentEvents(list[dict[str, Any]]):
    """A record's list of recent events: copies of read-only event mappings (``sources``).

    The sources are the engine's events, which never change; a store may keep
    or encode a source once and reuse that for every later record carrying
    the same object (:mod:`waygraph.store.values`). The copies are what a
    reader of the record sees; a store keeps what the sources say.

    Example:
        >>> from types import MappingProxyType
        >>> source = MappingProxyType({"type": "plan_activated"})
        >>> events = RecentEvents.of((source,))
        >>> events, events.sources[0] is source
        ([{'type': 'plan_activated'}], True)
    """

    __slots__ = ("sources",)

    sources: tuple[Mapping[str, Any], ...]

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        # Copies and pickles are plain lists: the sources are this object's
        # promise alone, and read-only mappings neither copy nor pickle.
        return (list, (list(self),))

    @classmethod
    def of(cls, sources: tuple[Mapping[str, Any], ...]) -> RecentEvents:
        """Copies of ``sources`` (read-only mappings), remembering them."""
        # .copy() of a read-only mapping copies its dict at C speed, and map()
        # calls it without a Python frame per event.
        events = cls(map(_COPY, sources))
        events.sources = sources
        return events


class NodeStates(dict[str, dict[str, Any]]):
    """A record's node states: copies of a run's read-only node states (``sources``).

    Like :class:`RecentEvents`: a store may keep a node state it has seen
    before, by object, instead of checking or copying it again.

    Example:
        >>> from types import MappingProxyType
        >>> source = MappingProxyType({"a": MappingProxyType({"attempts": 1})})
        >>> NodeStates.of(source)
        {'a': {'attempts': 1}}
    """

    __slots__ = ("sources",)

    sources: Mapping[str, Mapping[str, Any]]

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        # Copies and pickles are plain dicts, as for RecentEvents.
        return (dict, (dict(self),))

    @classmethod
    def of(cls, sources: Mapping[str, Mapping[str, Any]]) -> NodeStates:
        """Copies of ``sources`` (node name -> read-only node state), remembering them."""
        states = cls({k: thawed_node(v) for k, v in sources.items()})
        states.sources = sources
        return states
