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

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from waygraph.model._status import node_outcome

__all__ = ["LEGACY_KINDS", "RunKind", "current_nodes", "kind_names", "migrate", "record_kind"]


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
