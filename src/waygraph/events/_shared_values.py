"""A plan's stored record keeps each large value once.

A plan held its goal's data twice (``goal`` on the wire and ``goal_data``)
and its result three times (``result``, ``results["final"]``, and the default
result's copy of ``results``): an 800 KB goal made an 8 MB record. The stored
form drops those copies and says where each one comes from, under
``shared`` (``{"goal.data": "goal_data", "results.final": "result",
"result.<key>": "results"}``); :func:`unpack` puts them back when the plan is
loaded, so a :class:`~waygraph.events.PlanContext` sees every field as
before. Values are only dropped when they equal their source at this commit;
records stored without ``shared`` load as they are.

Example:
    >>> stored = pack({"goal": {"id": "g", "data": {"n": 1}}, "goal_data": {"n": 1},
    ...                "results": {"a": 1, "final": {"results": {"a": 1}}},
    ...                "result": {"results": {"a": 1}}})
    >>> stored["goal"], stored["results"], stored["result"], stored["shared"]["result.results"]
    ({'id': 'g'}, {'a': 1}, {}, 'results')
    >>> unpack(stored)["results"]["final"]
    {'results': {'a': 1}}
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["pack", "unpack"]

#: The record key that says which values were dropped and where they come from.
SHARED = "shared"


def pack(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` (a plan's ``model_dump``) with its copies dropped; changed in place."""
    shared: dict[str, str] = {}
    goal = record.get("goal")
    if isinstance(goal, dict) and "data" in goal and goal["data"] == record.get("goal_data"):
        record["goal"] = {k: v for k, v in goal.items() if k != "data"}
        shared["goal.data"] = "goal_data"
    results = record.get("results")
    result = record.get("result")
    if isinstance(results, dict):
        if result is not None and "final" in results and results["final"] == result:
            results = {k: v for k, v in results.items() if k != "final"}
            record["results"] = results
            shared["results.final"] = "result"
        body = {k: v for k, v in results.items() if k != "final"}
        if body and isinstance(result, dict):
            # Comparing a value with a dict of another length costs nothing.
            keys = [k for k, v in result.items() if v == body]
            if keys:
                record["result"] = {k: v for k, v in result.items() if k not in keys}
                shared.update({f"result.{k}": "results" for k in keys})
    if shared:
        record[SHARED] = shared
    else:
        record.pop(SHARED, None)
    return record


def unpack(data: dict[str, Any]) -> dict[str, Any]:
    """The plan's fields from a stored record (a new dict; ``data`` is not changed)."""
    shared = data.get(SHARED)
    if not isinstance(shared, dict) or not shared:
        return data
    data = {k: v for k, v in data.items() if k != SHARED}
    results = data.get("results")
    body = {k: v for k, v in results.items() if k != "final"} if isinstance(results, dict) else {}
    result = data.get("result")
    if isinstance(result, dict):
        keys = [path.partition(".")[2] for path in shared if path.startswith("result.")]
        if keys:
            # Copies: the loaded plan's fields stay independent, as they were when stored.
            result = {**result, **{k: copy.deepcopy(body) for k in keys}}
            data["result"] = result
    if "results.final" in shared and isinstance(results, dict):
        data["results"] = {**results, "final": copy.deepcopy(result)}
    goal = data.get("goal")
    if "goal.data" in shared and isinstance(goal, dict):
        data["goal"] = {**goal, "data": data.get("goal_data")}
    return data
