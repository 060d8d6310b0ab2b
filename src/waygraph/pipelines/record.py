"""Executed pipelines in the store: every checkpoint a commit, so a run survives a kill and is seen.

A pipeline run is one record of kind ``pipeline`` under its run id, in a
session of the same name (so ``waygraph sessions list`` shows it, and
``waygraph sessions answer RUN_ID ANSWER`` answers its human gate; it is not
the session's current pointer, which names a Navigator's guided run). The
record is in the one run-record schema (``status``, ``current_node``,
``path``, ``visited``; docs/stores.md) and also holds:

- ``checkpoint``: the runner's last :class:`~waygraph.pipelines.Checkpoint`,
  whole, which is what ``--resume`` continues from;
- ``lease``: who runs it and until when (:mod:`waygraph.planning._lease`,
  as ``waygraph plan`` runs hold theirs), so two processes never run it;
- ``waiting`` / ``awaiting``: the question a human gate waits on, and
  ``answer``: a person's answer to it that the runner has not taken yet.

Its events say what happened in the words of the other kinds of run (the
dashboard's timeline reads them): ``plan_started`` (which also carries the
plan, so the dashboard draws the run without the file), ``node_finished``
per finished node, ``human_asked`` / ``human_answered``, ``plan_resumed``,
``run_checkpoint`` (the run continued with a changed plan) and
``plan_completed`` / ``plan_failed``.

Every write reads the record and commits with the version it read, so a
person's answer, a lease renewal and a checkpoint never overwrite each
other: the loser of a race reads again and applies its change again.

Example:
    >>> from waygraph.model import Graph
    >>> from waygraph.pipelines.checkpoint import Checkpoint
    >>> plan = Graph.builder().exit("done").edge("start", "done").plan("hello")
    >>> records = PipelineRecords("memory://")
    >>> records.save(Checkpoint(run_id="r1", plan_id="hello", current_node="start",
    ...              next_node="done", completed_nodes=("start",)), plan)
    >>> cp, stored = records.load("r1")
    >>> cp.next_node, stored == plan, records.list()[0].status
    ('done', True, 'running')
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from waygraph.errors import InputError, NotWaitingError, RunHeldError, RunNotFoundError
from waygraph.model import Plan
from waygraph.model.record import RunKind, RunRecord
from waygraph.pipelines.checkpoint import Checkpoint
from waygraph.pipelines.record_view import ENDED as _ENDED
from waygraph.pipelines.record_view import KIND, not_waiting, stored_plan
from waygraph.planning._lease import LEASE_SECONDS, Lease
from waygraph.store import Store, StoredRecord, open_store
from waygraph.store.retry import retry_conflicts
from waygraph.verify_types.people import choice_of, choices_text

__all__ = ["KIND", "PipelineRecords", "PipelineRun"]

#: A stage's outcome as a run record's node outcome (what the drawing colours).
_NODE_OUTCOMES = {"success": "success", "partial_success": "success", "fail": "fail"}


class PipelineRun(BaseModel):
    """A stored pipeline run as :meth:`PipelineRecords.list` lists it.

    Example:
        >>> PipelineRun(run_id="r1", plan_id="p", status="paused", current_node="ok").status
        'paused'
    """

    model_config = ConfigDict(frozen=True)

    run_id: str
    plan_id: str
    status: str
    current_node: str | None = None
    source: str | None = None
    #: The question its human gate waits on (``node``, ``prompt``, ``choices``), if any.
    waiting: dict[str, Any] | None = None
    #: The store's clock at the last write (epoch seconds).
    updated_at: float = 0.0


@dataclass
class _Change:
    """A write's new record data, events and index status."""

    data: dict[str, Any]
    status: str
    plan_id: str
    events: list[dict[str, Any]] = field(default_factory=list)


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _plan_digest(plan_data: Mapping[str, Any]) -> str:
    text = json.dumps(plan_data, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _where(cp: Checkpoint) -> str | None:
    """The node a run is at: the gate it waits on, else the node it runs next, else its last."""
    if cp.waiting and cp.waiting.get("node"):
        return str(cp.waiting["node"])
    if cp.status not in _ENDED and cp.next_node is not None:
        return cp.next_node
    return cp.current_node


def pipeline_record(cp: Checkpoint, plan: Plan) -> RunRecord:
    """A checkpoint as the one :class:`~waygraph.model.record.RunRecord` of every kind.

    ``total_nodes`` counts the plan's nodes and ``completed_nodes`` those that
    succeeded; the checkpoint's own ``completed_nodes`` (the finished nodes in
    order) is the record's ``path``.
    """
    visited = {
        node: {
            "outcome": _NODE_OUTCOMES.get(outcome.status, "pending"),
            "status": outcome.status,
            "attempts": cp.node_retries.get(node, 0) + 1,
        }
        for node, outcome in cp.node_outcomes.items()
    }
    return RunRecord(
        kind=RunKind.PIPELINE,
        run_id=cp.run_id,
        plan=cp.plan_id,
        status=cp.status,
        current_node=_where(cp),
        visited=visited,
        path=list(cp.completed_nodes),
        total_nodes=len(plan.graph.nodes),
        completed_nodes=sum(1 for v in visited.values() if v["outcome"] == "success"),
        details={
            "plan_id": cp.plan_id,
            "source": cp.source,
            "awaiting": "user" if cp.waiting else None,
            "waiting": cp.waiting,
            "checkpoint": cp.model_dump(mode="json"),
        },
        session=cp.run_id,
    )


def _finished_events(before: Checkpoint | None, cp: Checkpoint) -> list[dict[str, Any]]:
    """``node_finished`` for each node ``cp`` finished since ``before``."""
    done = before.completed_nodes if before is not None else ()
    new = cp.completed_nodes
    # A loop that restarted the run lists its nodes afresh: all of them are news.
    fresh = new[len(done) :] if new[: len(done)] == done else new
    events: list[dict[str, Any]] = []
    for node in fresh:
        outcome = cp.node_outcomes.get(node)
        status = outcome.status if outcome is not None else "success"
        said = _NODE_OUTCOMES.get(status)
        result: dict[str, Any] = {
            "status": {"success": "completed", "fail": "failed"}.get(said or "", status)
        }
        if outcome is not None and outcome.notes:
            result["output"] = outcome.notes
        if outcome is not None and outcome.failure_reason:
            result["error"] = outcome.failure_reason
        events.append(
            {"type": "node_finished", "node": node, "status": result["status"], "result": result}
        )
    return events


def _asked_event(waiting: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "human_asked",
        "node": waiting.get("node"),
        "prompt": waiting.get("prompt"),
        "choices": list(waiting.get("choices") or ()),
    }


def _refusal(run_id: str, lease: Lease) -> str:
    return (
        f"pipeline run {run_id!r} is being run by {lease.describe()}; two processes must "
        "not run its nodes. Wait for it to end (or for its lease to expire if it was "
        "killed), or, if that process is gone, take it over: waygraph run PIPELINE.dot "
        f"--resume {run_id} --takeover (claim(..., takeover=True))"
    )


class PipelineRecords:
    """Saves and loads executed pipelines in a store (see the module docstring).

    ``store`` is a :class:`~waygraph.store.Store` or a store URL. One object
    holds the leases of the runs it saved or claimed; use one per runner
    process. Thread-safe as the store is: every write is version-checked.

    Example:
        >>> from waygraph.model import Graph
        >>> plan = (Graph.builder().human("ok", prompt="Ship?").exit("done")
        ...         .edge("start", "ok").edge("ok", "done", label="[Y] Yes").plan("gate"))
        >>> records = PipelineRecords("memory://")
        >>> asked = {"node": "ok", "prompt": "Ship?", "choices": ["[Y] Yes"]}
        >>> records.save(Checkpoint(run_id="r2", plan_id="gate", status="paused",
        ...              next_node="ok", waiting=asked), plan)
        >>> records.answer("r2", "y", by="ann")["choice"]
        '[Y] Yes'
    """

    def __init__(self, store: Store | str, *, lease_seconds: float = LEASE_SECONDS) -> None:
        self.store = open_store(store) if isinstance(store, str) else store
        self.lease_seconds = lease_seconds
        #: The leases this object holds, by run id.
        self._leases: dict[str, Lease] = {}

    # ------------------------------------------------------------ reading

    def record(self, run_id: str) -> StoredRecord | None:
        """The stored record of pipeline run ``run_id`` (None when there is none)."""
        record = self.store.get(run_id)
        return record if record is not None and record.kind == KIND else None

    def load(self, run_id: str) -> tuple[Checkpoint, Plan] | None:
        """The last checkpoint of ``run_id`` and the plan it runs (None: no such pipeline run).

        Example:
            >>> PipelineRecords("memory://").load("nothing") is None
            True
        """
        record = self.record(run_id)
        if record is None:
            return None
        plan = stored_plan(self.store, record)
        if plan is None:
            return None
        return Checkpoint.model_validate(record.data["checkpoint"]), plan

    def list(self, *, status: str | None = None, limit: int | None = None) -> list[PipelineRun]:
        """The stored pipeline runs, most recently saved first (``status`` keeps one status).

        Example:
            >>> PipelineRecords("memory://").list(status="running")
            []
        """
        runs = []
        for record in self.store.list(kind=KIND, status=status, limit=limit):
            data = record.data
            runs.append(
                PipelineRun(
                    run_id=record.key,
                    plan_id=str(data.get("plan_id") or record.plan or ""),
                    status=str(record.status or data.get("status") or "running"),
                    current_node=data.get("current_node"),
                    source=data.get("source"),
                    waiting=data.get("waiting") if data.get("awaiting") == "user" else None,
                    updated_at=record.updated_at,
                )
            )
        return runs

    def lease(self, run_id: str) -> Lease | None:
        """Who holds ``run_id`` as its record says (None: no one, or no such run)."""
        record = self.record(run_id)
        return Lease.from_data(record.data.get("lease")) if record is not None else None

    # ------------------------------------------------------------ writing

    def _write(self, run_id: str, change: Callable[[StoredRecord | None], _Change | None]) -> None:
        """Read ``run_id``, let ``change`` build the new record, commit; on a race, again.

        :func:`waygraph.store.retry.retry_conflicts` repeats the read and the change
        while another writer commits first (an answer, a renewal); a refusal
        ``change`` raises (:class:`~waygraph.errors.RunHeldError`) is final.
        """

        def attempt() -> None:
            record = self.store.get(run_id)
            new = change(record)
            if new is None:
                return
            self.store.commit(
                run_id,
                new.data,
                record.version if record is not None else 0,
                new.events,
                kind=KIND,
                session=run_id,
                status=new.status,
                plan=new.plan_id,
                # No session pointer: that is the Navigator's guided run of a
                # session, which it would abort over this record on a reset.
            )

        retry_conflicts(attempt, what=f"pipeline run {run_id!r} in {self.store.url}")

    def _holder(self, run_id: str, data: Mapping[str, Any] | None) -> Lease:
        """This object's lease on ``run_id`` renewed; RunHeldError when someone else holds it."""
        held = Lease.from_data(data.get("lease")) if data is not None else None
        mine = self._leases.get(run_id)
        if mine is not None and (held is None or held.token != mine.token):
            # The record names another owner (or none, after theirs released it):
            # the run was taken over while this process was still running it.
            self._leases.pop(run_id, None)
            who = f"by {held.describe()}" if held is not None else "and released"
            raise RunHeldError(
                f"pipeline run {run_id!r} was taken over {who}; this process stops saving it"
            )
        if mine is None:
            if held is not None and held.live():
                raise RunHeldError(_refusal(run_id, held))
            mine = Lease.mine(self.lease_seconds)
        return mine.renewed(self.lease_seconds)

    def save(self, cp: Checkpoint, plan: Plan) -> None:
        """Store ``cp`` (and ``plan``, once, and again when it changed) as the run's last state.

        The first save of a run claims it; a run another live process holds
        (or took over from this one) raises :class:`~waygraph.errors.RunHeldError`
        and writes nothing. A checkpoint with an ended status releases the run.
        """
        plan_data = plan.model_dump(mode="json", by_alias=True)
        digest = _plan_digest(plan_data)
        ended = cp.status in _ENDED
        taken: list[Lease] = []

        def change(record: StoredRecord | None) -> _Change:
            old = record.data if record is not None else None
            if record is not None and record.kind != KIND:
                raise InputError(
                    f"key {cp.run_id!r} of {self.store.url} holds a {record.kind} record, "
                    "not a pipeline run: give the run another id"
                )
            lease = self._holder(cp.run_id, old)
            taken[:] = [lease]
            before = _checkpoint(old)
            events: list[dict[str, Any]] = []
            count = int(old.get("event_count") or 0) if old is not None else 0
            plan_seq = int(old.get("plan_seq") or 0) if old is not None else 0
            if old is None:
                events.append(
                    {
                        "type": "plan_started",
                        "goal": plan.goal or plan.title,
                        "steps": len(plan.graph.nodes),
                        "plan_id": plan.id,
                        "source": cp.source,
                        "plan": plan_data,
                    }
                )
                plan_seq = count + 1
            elif old.get("plan_digest") != digest:
                events.append({"type": "run_checkpoint", "node": _where(cp), "plan": plan_data})
                plan_seq = count + len(events)
            events += _finished_events(before, cp)
            data = pipeline_record(cp, plan).to_dict()
            if cp.waiting:
                asked = {k: v for k, v in cp.waiting.items() if k != "id"}
                if before is not None and _same_question(before.waiting, asked):
                    # The same question still waits: it keeps its id and any answer given.
                    assert before.waiting is not None
                    asked["id"] = before.waiting.get("id")
                    answer = old.get("answer") if old is not None else None
                    if isinstance(answer, dict) and answer.get("id") == asked["id"]:
                        data["answer"] = answer
                        data["awaiting"] = None
                else:
                    asked["id"] = cp.waiting.get("id") or uuid.uuid4().hex[:12]
                    events.append(_asked_event(asked))
                data["waiting"] = asked
                data["checkpoint"]["waiting"] = asked
            if ended and (before is None or before.status not in _ENDED):
                reason = cp.outcome.failure_reason if cp.outcome is not None else ""
                end = "plan_completed" if cp.status == "completed" else "plan_failed"
                events.append({"type": end, "node": cp.current_node, "reason": reason or None})
            data |= {
                "lease": None if ended else lease.data(),
                "plan_digest": digest,
                "plan_seq": plan_seq,
                "event_count": count + len(events),
                "updated": cp.timestamp or _now(),
            }
            status = "running" if data.get("answer") and cp.status == "paused" else cp.status
            data["status"] = status
            return _Change(data, status, cp.plan_id, events)

        self._write(cp.run_id, change)
        if ended:
            self._leases.pop(cp.run_id, None)
        elif taken:
            self._leases[cp.run_id] = taken[0]

    def claim(self, run_id: str, owner: Lease | None = None, *, takeover: bool = False) -> Lease:
        """Become the one process that runs ``run_id`` (before resuming it); return the lease.

        A run another process holds with a live lease is refused
        (:class:`~waygraph.errors.RunHeldError` naming the holder and until when)
        unless ``takeover``: then the holder's next save fails instead. A
        lease whose owner was a process of this machine that is gone (a
        ``kill -9``) is not live: the run is claimed at once.
        :class:`~waygraph.errors.RunNotFoundError` when there is no such run.
        Of two processes claiming at once, one wins; the other is refused.
        """
        mine = owner or Lease.mine(self.lease_seconds)

        def change(record: StoredRecord | None) -> _Change:
            if record is None or record.kind != KIND:
                raise RunNotFoundError(f"no pipeline run {run_id!r} in the store {self.store.url}")
            data = dict(record.data)
            held = Lease.from_data(data.get("lease"))
            live = held is not None and held.live() and held.token != mine.token
            if live and not takeover:
                assert held is not None
                raise RunHeldError(_refusal(run_id, held))
            data["lease"] = mine.data()
            event: dict[str, Any] = {
                "type": "plan_resumed",
                "node": data.get("current_node"),
                "previous": held.describe() if held is not None else None,
                "took_over": live,
            }
            data["event_count"] = int(data.get("event_count") or 0) + 1
            status = str(record.status or data.get("status") or "running")
            return _Change(data, status, str(record.plan or data.get("plan_id") or ""), [event])

        self._write(run_id, change)
        self._leases[run_id] = mine
        return mine

    def resume(self, run_id: str, *, takeover: bool = False) -> tuple[Checkpoint, Plan]:
        """What ``--resume RUN_ID`` continues from: the run claimed, its checkpoint and plan.

        A run that ended is returned as it is, unclaimed (there is nothing
        to run). Raises as :meth:`claim` does: RunNotFoundError, or RunHeldError
        while another live process holds it and ``takeover`` is False.
        """
        found = self.load(run_id)
        if found is None:
            raise RunNotFoundError(f"no pipeline run {run_id!r} in the store {self.store.url}")
        if found[0].status in _ENDED:
            return found
        self.claim(run_id, takeover=takeover)
        # Read again: the run may have moved between the first read and the claim.
        claimed = self.load(run_id)
        assert claimed is not None
        return claimed

    def renew(self, run_id: str) -> None:
        """Renew this object's lease on ``run_id`` (a long node or a wait keeps the run held).

        RunHeldError when the run was taken over meanwhile; nothing when this
        object holds no lease on it.
        """
        if run_id not in self._leases:
            return

        def change(record: StoredRecord | None) -> _Change | None:
            if record is None:
                return None
            data = dict(record.data)
            lease = self._holder(run_id, data)
            self._leases[run_id] = lease
            data["lease"] = lease.data()
            return _Change(data, str(record.status or "running"), str(record.plan or ""))

        self._write(run_id, change)

    def release(self, run_id: str) -> None:
        """Let go of ``run_id`` (a process that stops without ending the run): it resumes at once.

        Only this object's own lease is removed; a run someone else holds is left alone.
        """
        mine = self._leases.pop(run_id, None)
        if mine is None:
            return

        def change(record: StoredRecord | None) -> _Change | None:
            if record is None:
                return None
            held = Lease.from_data(record.data.get("lease"))
            if held is None or held.token != mine.token:
                return None
            data = {**record.data, "lease": None}
            return _Change(data, str(record.status or "running"), str(record.plan or ""))

        self._write(run_id, change)

    # ------------------------------------------------------------ people

    def ask(self, run_id: str, waiting: Mapping[str, Any]) -> dict[str, Any]:
        """Record that the run waits on a human gate (``node``, ``prompt``, ``choices``).

        Returns the question as stored, with its ``id``. Asking the question
        that already waits (a resumed run at the same gate) keeps its id and
        any answer given meanwhile, so a person's answer is never lost to a
        restart.
        """
        found = self.load(run_id)
        if found is None:
            raise RunNotFoundError(f"no pipeline run {run_id!r} in the store {self.store.url}")
        cp, plan = found
        asked = {k: v for k, v in waiting.items() if k != "id"}
        self.save(cp.model_copy(update={"waiting": asked, "status": "paused"}), plan)
        stored = self.load(run_id)
        assert stored is not None and stored[0].waiting is not None
        return dict(stored[0].waiting)

    def answered(self, run_id: str, question_id: str) -> dict[str, Any] | None:
        """The answer given to the question ``question_id`` of ``run_id``, once someone gave it."""
        record = self.record(run_id)
        answer = record.data.get("answer") if record is not None else None
        if isinstance(answer, dict) and answer.get("id") == question_id:
            return answer
        return None

    def answer(self, run_id: str, answer: str, by: str | None = None) -> dict[str, Any]:
        """A person's answer to the human gate ``run_id`` waits on; returns it as stored.

        With choices, ``answer`` must pick one (its label, its words, or its
        accelerator key, as ``waygraph sessions answer`` reads answers):
        :class:`~waygraph.errors.InputError` listing them otherwise. A run
        that waits on nobody raises :class:`~waygraph.errors.NotWaitingError`;
        no pipeline run of that id, :class:`~waygraph.errors.RunNotFoundError`.
        The runner's :class:`~waygraph.pipelines.record_interviewer.StoreInterviewer`
        picks the answer up.
        """
        if not answer.strip():
            raise InputError("an answer must not be blank")
        given: list[dict[str, Any]] = []

        def change(record: StoredRecord | None) -> _Change:
            if record is None or record.kind != KIND:
                raise RunNotFoundError(f"no pipeline run {run_id!r} in the store {self.store.url}")
            data = dict(record.data)
            waiting = data.get("waiting")
            status = str(record.status or data.get("status") or "")
            if not isinstance(waiting, dict) or status in _ENDED:
                raise NotWaitingError(not_waiting(run_id, data))
            if isinstance(data.get("answer"), dict) and data["answer"].get("id") == waiting.get(
                "id"
            ):
                raise NotWaitingError(
                    f"pipeline run {run_id!r} was already answered at {waiting.get('node')!r} "
                    f"({data['answer'].get('answer')!r}); the run takes that answer next"
                )
            labels = [str(c) for c in waiting.get("choices") or ()]
            index = choice_of(labels, answer) if labels else None
            if labels and index is None:
                raise InputError(
                    f"{answer!r} is not one of the choices: answer {choices_text(labels)}"
                )
            choice = labels[index] if index is not None else None
            stored = {
                "id": waiting.get("id"),
                "node": waiting.get("node"),
                "answer": answer,
                "choice": choice,
                "by": by,
                "at": _now(),
            }
            given[:] = [stored]
            data |= {"answer": stored, "awaiting": None, "status": "running"}
            data["event_count"] = int(data.get("event_count") or 0) + 1
            event = {"type": "human_answered", "node": waiting.get("node"), "answer": answer}
            event |= {"choice": choice, "by": by}
            return _Change(data, "running", str(record.plan or ""), [event])

        self._write(run_id, change)
        return given[0]


def _same_question(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """Whether two waits are the one question (their ids aside)."""
    if a is None or b is None:
        return False
    return {k: v for k, v in a.items() if k != "id"} == {k: v for k, v in b.items() if k != "id"}


def _checkpoint(data: Mapping[str, Any] | None) -> Checkpoint | None:
    if data is None:
        return None
    try:
        return Checkpoint.model_validate(data.get("checkpoint"))
    except ValidationError:
        return None  # a record from elsewhere under this key: treated as new
