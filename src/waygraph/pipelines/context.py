"""A pipeline run's shared state (§5.1) and the events it reports (§9.6).

:class:`Context` is the thread-safe key-value store every stage reads and
the runner writes ``context_updates`` into; parallel branches each get a
:meth:`~Context.clone`. The events are small frozen dataclasses the runner
and handlers hand to the ``on_event`` callback of
:func:`~waygraph.pipelines.runner.run_pipeline`, named as §9.6 names them.

Example:
    >>> ctx = Context({"graph.goal": "ship"})
    >>> branch = ctx.clone()
    >>> branch.set("x", 1)
    >>> ctx.get("x") is None, branch.get_string("x"), ctx.get_string("graph.goal")
    (True, '1', 'ship')
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CheckpointSaved",
    "Context",
    "EventSink",
    "InterviewCompleted",
    "InterviewStarted",
    "InterviewTimeout",
    "ParallelBranchCompleted",
    "ParallelBranchStarted",
    "ParallelCompleted",
    "ParallelStarted",
    "PipelineCompleted",
    "PipelineEvent",
    "PipelineFailed",
    "PipelineStarted",
    "StageCompleted",
    "StageFailed",
    "StageRetrying",
    "StageStarted",
]


class Context:
    """The run's key-value store and append-only log, safe to share between threads.

    Example:
        >>> ctx = Context()
        >>> ctx.apply_updates({"a": [1]}); ctx.append_log("started")
        >>> snap = ctx.snapshot(); snap["a"].append(2)
        >>> ctx.get("a"), ctx.logs
        ([1], ('started',))
    """

    def __init__(self, values: Mapping[str, Any] | None = None, logs: Iterable[str] = ()) -> None:
        # One lock for values and log: handlers of parallel branches write at once.
        self._lock = threading.RLock()
        self._values: dict[str, Any] = dict(values or {})
        self._logs: list[str] = list(logs)

    def set(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key``."""
        with self._lock:
            self._values[key] = value

    def get(self, key: str, default: Any = None) -> Any:
        """The value under ``key``, else ``default``."""
        with self._lock:
            return self._values.get(key, default)

    def get_string(self, key: str, default: str = "") -> str:
        """The value under ``key`` as text, else ``default``."""
        value = self.get(key)
        return default if value is None else str(value)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._values

    def append_log(self, entry: str) -> None:
        """Add ``entry`` to the run's log."""
        with self._lock:
            self._logs.append(entry)

    @property
    def logs(self) -> tuple[str, ...]:
        """The run's log so far."""
        with self._lock:
            return tuple(self._logs)

    def snapshot(self) -> dict[str, Any]:
        """A deep copy of every value (what a checkpoint saves)."""
        with self._lock:
            return _copied(self._values)

    def clone(self) -> Context:
        """An independent copy, values and log, for a parallel branch."""
        with self._lock:
            return Context(_copied(self._values), self._logs)

    def apply_updates(self, updates: Mapping[str, Any]) -> None:
        """Merge ``updates`` into the values."""
        with self._lock:
            self._values.update(updates)


_IMMUTABLE = (str, int, float, bool, type(None))


def _copied(values: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of ``values`` that copies only what can change.

    A run snapshots its context after every node, and the context holds a
    key per node run (``internal.retry_count.<id>``), nearly all text and
    numbers: one ``deepcopy`` of the whole dict made a 1,000-node run's cost
    per node grow with the run (bench/pipelines.py).
    """
    return {
        key: value if type(value) in _IMMUTABLE else copy.deepcopy(value)
        for key, value in values.items()
    }


# ---------------------------------------------------------------- events (§9.6)


@dataclass(frozen=True)
class PipelineStarted:
    """The run began (``id`` is the run id)."""

    name: str
    id: str


@dataclass(frozen=True)
class PipelineCompleted:
    """The run ended with SUCCESS; ``artifact_count``: stage folders written."""

    duration: float
    artifact_count: int


@dataclass(frozen=True)
class PipelineFailed:
    """The run ended with FAIL."""

    error: str
    duration: float


@dataclass(frozen=True)
class StageStarted:
    """Node ``name`` starts; ``index`` counts node executions from 0."""

    name: str
    index: int


@dataclass(frozen=True)
class StageCompleted:
    """Node ``name`` finished with an outcome other than FAIL."""

    name: str
    index: int
    duration: float


@dataclass(frozen=True)
class StageFailed:
    """Node ``name`` failed (an exception or a FAIL); ``will_retry`` when it runs again."""

    name: str
    index: int
    error: str
    will_retry: bool


@dataclass(frozen=True)
class StageRetrying:
    """Node ``name`` runs again as attempt ``attempt`` after ``delay`` seconds."""

    name: str
    index: int
    attempt: int
    delay: float


@dataclass(frozen=True)
class ParallelStarted:
    """A parallel node fans out to ``branch_count`` branches."""

    branch_count: int


@dataclass(frozen=True)
class ParallelBranchStarted:
    """Branch ``branch`` (its first node) starts."""

    branch: str
    index: int


@dataclass(frozen=True)
class ParallelBranchCompleted:
    """Branch ``branch`` reached the fan-in or a dead end."""

    branch: str
    index: int
    duration: float
    success: bool


@dataclass(frozen=True)
class ParallelCompleted:
    """Every branch of a parallel node has ended."""

    duration: float
    success_count: int
    failure_count: int


@dataclass(frozen=True)
class InterviewStarted:
    """A human gate asked ``question``."""

    question: str
    stage: str


@dataclass(frozen=True)
class InterviewCompleted:
    """A human gate got ``answer``."""

    question: str
    answer: str
    duration: float


@dataclass(frozen=True)
class InterviewTimeout:
    """Nobody answered a human gate in time."""

    question: str
    stage: str
    duration: float


@dataclass(frozen=True)
class CheckpointSaved:
    """The checkpoint after node ``node_id`` was saved."""

    node_id: str


PipelineEvent = (
    PipelineStarted
    | PipelineCompleted
    | PipelineFailed
    | StageStarted
    | StageCompleted
    | StageFailed
    | StageRetrying
    | ParallelStarted
    | ParallelBranchStarted
    | ParallelBranchCompleted
    | ParallelCompleted
    | InterviewStarted
    | InterviewCompleted
    | InterviewTimeout
    | CheckpointSaved
)
#: What receives events: ``on_event`` of :func:`~waygraph.pipelines.runner.run_pipeline`.
EventSink = Callable[[PipelineEvent], None]
