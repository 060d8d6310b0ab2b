"""Where an executed pipeline stands: the specification's checkpoint (§5.3), saved after every node.

A :class:`Checkpoint` is what a run needs to continue after a crash without
redoing a finished node: the node that finished last and the one to run
next, the nodes finished in order, retry counters, the context, the last
outcome of each node, and the run's log. The runner writes it to
``checkpoint.json`` in the run folder and to the store; ``--resume`` reads it
back.

Example:
    >>> cp = Checkpoint(run_id="r1", plan_id="p", current_node="plan", next_node="build",
    ...                 completed_nodes=("start", "plan"), context={"graph.goal": "ship"})
    >>> Checkpoint.model_validate_json(cp.model_dump_json()) == cp
    True
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer

from waygraph.pipelines.outcome import Outcome

__all__ = ["Checkpoint", "PipelineStatus"]

#: The run's status in waygraph's one vocabulary (:class:`waygraph.model.RunStatus`):
#: ``running`` (also a run whose process was killed: ``--resume`` continues it),
#: ``paused`` while a human gate waits for an answer, then ``completed`` or
#: ``failed``; the specification's own SUCCESS/FAIL is ``outcome.status``.
PipelineStatus = Literal["running", "paused", "completed", "failed"]


class Checkpoint(BaseModel):
    """A pipeline run's state after its last finished node."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    run_id: str
    plan_id: str
    #: The pipeline file the run was started from, when it came from one.
    source: str | None = None
    status: PipelineStatus = "running"
    #: ISO 8601 time of the save (set by the runner; the model holds no clock).
    timestamp: str = ""
    current_node: str | None = None
    #: The node the run executes next; None once it has ended.
    next_node: str | None = None
    completed_nodes: tuple[str, ...] = ()
    node_retries: dict[str, int] = Field(default_factory=dict)
    node_outcomes: dict[str, Outcome] = Field(default_factory=dict)
    context: dict[str, Any] = Field(default_factory=dict)
    logs: tuple[str, ...] = ()
    #: The outcome the run ended with, once it has ended.
    outcome: Outcome | None = None
    #: A question a human gate is waiting on (its node id, text and choices).
    waiting: dict[str, Any] | None = None

    @field_serializer("node_outcomes")
    def _compact_outcomes(self, outcomes: dict[str, Outcome]) -> dict[str, Any]:
        # One entry per node the run finished: only what differs from the
        # defaults, so a save of a long run stays small ({"status": "success"}).
        return {node: _compact(outcome) for node, outcome in outcomes.items()}


def _compact(outcome: Outcome) -> dict[str, Any]:
    """``outcome`` as JSON data without its default fields; built by hand because a save
    writes one per finished node and pydantic's per-model dump costs ten times as much."""
    data: dict[str, Any] = {"status": outcome.status}
    if outcome.preferred_label:
        data["preferred_label"] = outcome.preferred_label
    if outcome.suggested_next_ids:
        data["suggested_next_ids"] = list(outcome.suggested_next_ids)
    if outcome.context_updates:
        data["context_updates"] = outcome.context_updates
    if outcome.notes:
        data["notes"] = outcome.notes
    if outcome.failure_reason:
        data["failure_reason"] = outcome.failure_reason
    return data
