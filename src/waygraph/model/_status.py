"""Where a run stands and how a node came out: one vocabulary for every kind of run.

A guided run, a generated plan's run, an event-driven plan and a session plan
each use a subset of :class:`RunStatus`; :data:`FINISHED` says which statuses a
run never leaves, for all of them. Where a node is in a run is a
:class:`NodeStatus`; how the evidence judged it so far, the ``outcome`` every
run record keeps in ``visited``, a :class:`NodeOutcome`. All are string
enums, so records keep plain strings.

Example:
    >>> RunStatus.EXPIRED in FINISHED, RunStatus.PAUSED in FINISHED
    (True, False)
    >>> RunStatus("completed") == "completed"
    True
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["FINISHED", "NodeOutcome", "NodeStatus", "RunStatus"]


class RunStatus(StrEnum):
    """The status of a run of any kind."""

    #: Created, waiting to start (an event plan whose dependencies are unfinished).
    PENDING = "pending"
    RUNNING = "running"
    #: Stopped until someone resumes it (the iteration limit, an approval).
    PAUSED = "paused"
    COMPLETED = "completed"
    FAILED = "failed"
    #: Handed to a person: an escalate node, a bound, or the same failing call again.
    ESCALATED = "escalated"
    #: Too many turns without progress (``stale_after_turns``).
    EXPIRED = "expired"
    #: Ended on purpose: an aborting exit, a reset, another plan started over it.
    ABORTED = "aborted"


#: Statuses a run never leaves (a paused run resumes, a pending one starts).
FINISHED: frozenset[str] = frozenset(
    {
        RunStatus.COMPLETED,
        RunStatus.FAILED,
        RunStatus.ESCALATED,
        RunStatus.EXPIRED,
        RunStatus.ABORTED,
    }
)


class NodeStatus(StrEnum):
    """Where a node of a run is (a generated plan's step is a node: ``StepStatus`` is this).

    ``skipped``: deliberately not run (a dependency failed, or the
    ``skip_and_continue`` strategy chose to skip it); ``blocked``: never run
    because the run stopped first; ``revised``: replaced by a plan revision.
    A record's ``visited[node]`` holds the node's :class:`NodeOutcome` beside it.
    """

    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    SKIPPED = "skipped"
    BLOCKED = "blocked"
    REVISED = "revised"


class NodeOutcome(StrEnum):
    """How a node of a run came out so far (``visited[node]["outcome"]`` in a record)."""

    PENDING = "pending"
    SUCCESS = "success"
    FAIL = "fail"


_OUTCOMES = {NodeStatus.COMPLETED.value: "success", NodeStatus.FAILED.value: "fail"}


def node_outcome(status: str) -> str:
    """The outcome a record keeps beside a node's status (``pending`` unless it finished).

    Plain text, as records hold it; the kinds that track a status per node
    (generated plans, session plans) all say their outcome this way.

    Example:
        >>> node_outcome("completed"), node_outcome(NodeStatus.FAILED), node_outcome("skipped")
        ('success', 'fail', 'pending')
    """
    return _OUTCOMES.get(status, "pending")
