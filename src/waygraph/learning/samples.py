"""What finished runs did, read back as samples to learn plans from.

A :class:`Sample` is one completed run that had no library plan behind it: a
generated plan run by the planning executor (a ``dag`` record in a store) or
a session plan the model declared itself (``plan.json`` in a workspace). It
keeps the goal, the steps in the order they were planned and, per step, the
evidence the run saw: the tool's outputs (generated plans only; a session
step's text is the model's own words, never evidence).

Example:
    >>> from waygraph.store import open_store
    >>> store_samples(open_store("memory://"))
    []
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from waygraph.errors import WaygraphError
from waygraph.model.record import RunKind
from waygraph.sessions import list_session_plans, read_plan_file
from waygraph.store import Store

__all__ = ["Sample", "SampleStep", "session_samples", "store_samples"]

log = logging.getLogger("waygraph.learning")

#: Characters of a step's output kept as evidence.
OUTPUT_CHARS = 2000


@dataclass(frozen=True, slots=True)
class SampleStep:
    """One step of a finished run: what it said to do, and what its tool returned."""

    text: str
    tool: str | None = None
    outputs: tuple[str, ...] = ()
    parameters: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Sample:
    """One completed run to learn from; ``source`` is ``dag`` or ``session``, ``run`` its id."""

    source: str
    run: str
    goal: str
    steps: tuple[SampleStep, ...]
    updated_at: float = 0.0


def _output_text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text[:OUTPUT_CHARS]


def store_samples(store: Store, *, limit: int | None = None) -> list[Sample]:
    """The completed generated-plan runs in ``store``, newest first.

    A run whose saved state cannot be read is skipped with a warning line.
    """
    from waygraph.planning._journal import load_run

    samples: list[Sample] = []
    for record in store.list(kind=RunKind.DAG, status="completed", limit=limit):
        try:
            saved = load_run(store, record.key)
        except (WaygraphError, KeyError, TypeError, ValueError) as exc:
            log.warning("skipping generated run %s: %s", record.key, exc)
            continue
        plan = saved.state.get("plan") or {}
        outputs: dict[str, list[str]] = {}
        for event in saved.finished:
            result = event.get("result") or {}
            if event.get("status") == "completed" and "output" in result:
                outputs.setdefault(str(event.get("node")), []).append(
                    _output_text(result["output"])
                )
        steps = []
        for step in plan.get("steps") or ():
            if not isinstance(step, Mapping):
                continue
            sid = str(step.get("id", ""))
            action = str(step.get("action") or "")
            text = str(step.get("description") or "").strip() or action or sid
            steps.append(
                SampleStep(
                    text=text,
                    tool=action or None,
                    outputs=tuple(outputs.get(sid, ())),
                    parameters=dict(step.get("parameters") or {}),
                )
            )
        goal = str(plan.get("goal") or saved.state.get("goal") or "")
        if goal and steps:
            samples.append(Sample(RunKind.DAG, record.key, goal, tuple(steps), record.updated_at))
    return samples


def session_samples(workspace: str | os.PathLike[str]) -> list[Sample]:
    """The completed session plans under ``workspace`` (archived ones included), newest first."""
    samples: list[Sample] = []
    for summary in list_session_plans(workspace, include_archived=True):
        if summary.get("status") != "completed":
            continue
        try:
            data = read_plan_file(summary["path"])
        except OSError as exc:
            log.warning("skipping session plan %s: %s", summary["path"], exc)
            continue
        if data is None:
            continue
        steps = tuple(
            SampleStep(text=str(step["description"]).strip())
            for step in data.get("steps", ())
            if step.get("status") == "completed" and str(step.get("description", "")).strip()
        )
        if steps:
            run = f"session:{summary['session_id']}:{summary.get('plan_id') or ''}"
            samples.append(Sample(RunKind.SESSION, run, str(data["goal"]), steps, 0.0))
    return samples
