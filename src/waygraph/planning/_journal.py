"""Generated runs in the store: every finished step is committed, so a run survives a crash.

A run is one record of kind ``dag`` and its events. The record is small and
says where the run is (``status``, ``current_node``: the steps running,
``visited``: each step's outcome and status, ``path``: the steps in the order they
finished); the events carry what a resume needs:

- ``plan_started`` / ``run_checkpoint``: the whole run state (plans, results,
  revisions), written when the run starts, after every revision and on resume;
- ``node_finished`` (with the step's result) per step (the record's
  ``current_node`` says which steps run);
- ``plan_resumed``, and ``plan_completed`` or ``plan_failed`` at the end.

Resuming reads the last checkpoint and replays the ``node_finished`` events
after it: a step whose result was committed is never called again; a step
that was running when the process died is marked ``interrupted`` (a
``node_interrupted`` event, and the record's ``interrupted``) and runs again.

The record also holds the run's lease (:mod:`waygraph.planning._lease`):
who runs it and until when, renewed with every commit and every
:data:`~waygraph.planning._lease.RENEW` seconds, and released when the run
ends or is stopped, so a second process is refused before it runs anything.

Commits happen off the event loop (in a thread) and in groups: while one
commit is in flight, the steps finishing meanwhile queue up and go in the
next one. A step's result is therefore committed shortly after it finished,
in the order steps finished, and a crash loses at most the results of the
last moments, whose steps run again on resume.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic_core import PydanticSerializationError, to_jsonable_python

from waygraph import model, tracing
from waygraph.engine.dag import DagRun
from waygraph.errors import PlanningError, RunNotFoundError, WaygraphError
from waygraph.model.record import RunKind, RunRecord
from waygraph.planning._graph import _slug, to_graph_plan
from waygraph.planning._lease import LEASE_SECONDS, RENEW, Lease
from waygraph.planning._models import (
    Plan,
    PlanRevision,
    StepResult,
    StepStatus,
    _now,
)
from waygraph.planning._run_state import RunState
from waygraph.store import MemoryStore, Store, StoredRecord

if TYPE_CHECKING:
    from waygraph.planning._executor import PlanRun

__all__ = ["KIND", "Journal", "SavedRun", "dag_view", "load_run", "new_run_id", "restore"]

log = logging.getLogger("waygraph.planning")

#: The store kind of a generated plan's run.
KIND = RunKind.DAG.value
#: Seconds the writer waits for more steps to finish before a commit: a crash
#: loses at most this much more work, and a burst of quick steps costs one commit.
LINGER = 0.002
#: Run statuses a resume has nothing left to do for.
_ENDED = frozenset({"completed", "failed"})


def new_run_id() -> str:
    """A fresh run id (``dag_`` and 12 hex digits)."""
    return f"dag_{uuid.uuid4().hex[:12]}"


def _result_data(result: StepResult) -> dict[str, Any]:
    """A step result as JSON; ``durable`` is False when its output is not JSON.

    Written field by field (a step's commit is on the scheduler's path); a
    sub-plan's whole result is left out (the step's own output is kept): it
    can be as large as a run of its own.
    """
    durable = True
    try:
        output = to_jsonable_python(result.output)
    except (PydanticSerializationError, ValueError, TypeError):
        # The output cannot be stored as itself, so it is not committed: the
        # step runs again on resume rather than hand its dependents a repr.
        output, durable = repr(result.output), False
    data: dict[str, Any] = {
        "step_id": result.step_id,
        "status": str(result.status),
        "output": output,
        "attempts": result.attempts,
        "duration": result.duration,
    }
    # Fields at their defaults are left out: StepResult's defaults restore them.
    if result.error is not None:
        data["error"] = result.error
    if result.used_fallback:
        data["used_fallback"] = True
    if result.reused:
        data["reused"] = True
    if result.new_information is not None:
        data["new_information"] = result.new_information
    usage = result.token_usage
    if usage.total_tokens or usage.prompt_tokens or usage.completion_tokens:
        data["token_usage"] = {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens,
        }
    if result.started_at is not None:
        data["started_at"] = result.started_at.isoformat()
    if result.finished_at is not None:
        data["finished_at"] = result.finished_at.isoformat()
    if not durable:
        data["durable"] = False
    return data


def _state_data(state: RunState) -> dict[str, Any]:
    """Everything a resume needs to rebuild the run ``state`` is (between step events)."""
    return {
        "goal": state.goal,
        # None: the run still follows the plan it started with (stored once).
        "initial_plan": None
        if state.initial_plan is state.plan
        else state.initial_plan.model_dump(mode="json"),
        "plan": state.plan.model_dump(mode="json"),
        "status": {sid: str(status) for sid, status in state.status.items()},
        "results": {sid: _result_data(r) for sid, r in state.results.items()},
        "replaced": {sid: _result_data(r) for sid, r in state.replaced.items()},
        "by_strategy": sorted(state.waived),
        "revisions": [r.model_dump(mode="json") for r in state.revisions],
        "revision_attempts": state.revision_attempts,
        "applied_revisions": state.applied_revisions,
        "sub_revisions": state.sub_revisions,
        "budget_flagged": state.budget_flagged,
        "stop_reason": state.stop_reason,
        "started_at": state.started_at.isoformat(),
    }


@dataclass(frozen=True)
class SavedRun:
    """A stored run as a resume finds it: the last checkpoint and the steps after it."""

    run_id: str
    version: int
    session: str | None
    plan_id: str
    status: str
    state: dict[str, Any]
    finished: tuple[dict[str, Any], ...]
    #: Who ran (or runs) it, as the record says; None when no one holds it.
    lease: Lease | None = None
    #: The steps the record listed as running at its last commit.
    running: tuple[str, ...] = ()

    @property
    def ended(self) -> bool:
        """True when the run completed or failed: a resume only reports it."""
        return self.status in _ENDED

    def committed(self) -> dict[str, str]:
        """Each step's committed status (what a resume keeps; running steps are not in it)."""
        kept = self.state.get("results", {})
        statuses = {
            sid: status
            for sid, status in self.state["status"].items()
            if status != "running" and kept.get(sid, {}).get("durable") is not False
        }
        for event in self.finished:
            if event["node"] in self.state["status"] and event["result"].get("durable", True):
                statuses[event["node"]] = event["status"]
        return statuses

    def interrupted(self) -> list[str]:
        """The steps that were running when the run stopped and whose result was not saved.

        A resume runs them again; until then they are neither done nor pending.
        """
        if self.ended:
            return []
        committed = self.committed()
        was_running = [sid for sid, s in self.state["status"].items() if s == "running"]
        return [
            sid
            for sid in dict.fromkeys([*was_running, *self.running])
            if sid in self.state["status"] and committed.get(sid, "pending") == "pending"
        ]

    def describe(self) -> str:
        """One line: how far the run got, as a resume will continue it.

        Example:
            >>> saved = SavedRun("dag_1", 3, None, "p", "running",
            ...     {"status": {"a": "completed", "b": "running", "c": "pending"}}, ())
            >>> saved.describe()
            'running, 1 of 3 steps completed; interrupted: b; to run: b, c'
        """
        committed = self.committed()
        done = sum(1 for s in committed.values() if s == "completed")
        todo = [sid for sid in self.state["status"] if committed.get(sid, "pending") == "pending"]
        line = f"{self.status}, {done} of {len(self.state['status'])} steps completed"
        stopped = self.interrupted()
        if stopped:
            line += f"; interrupted: {', '.join(stopped)}"
        return line + (f"; to run: {', '.join(todo)}" if todo and not self.ended else "")


def load_run(store: Store, run_id: str) -> SavedRun:
    """Read ``run_id`` back from ``store`` (:class:`RunNotFoundError` when it is not there)."""
    record = store.get(run_id)
    if record is None or record.kind != KIND:
        what = "no run" if record is None else f"a {record.kind} record, not a generated run,"
        raise RunNotFoundError(f"{what} {run_id!r} in the store {store.url}")
    state: dict[str, Any] | None = None
    finished: list[dict[str, Any]] = []
    for event in store.events(run_id):
        kind = event.data.get("type")
        if kind in ("plan_started", "run_checkpoint"):
            state, finished = event.data["state"], []
        elif kind == "node_finished":
            finished.append(event.data)
    if state is None:
        raise PlanningError(f"run {run_id!r} has no saved state to resume from")
    data = record.data
    running = data.get("current_node")
    return SavedRun(
        run_id=run_id,
        version=record.version,
        session=record.session,
        plan_id=str(data.get("plan") or record.plan or ""),
        status=str(record.status or data.get("status") or "running"),
        state=state,
        finished=tuple(finished),
        lease=Lease.from_data(data.get("lease")),
        running=tuple(str(s) for s in running) if isinstance(running, list) else (),
    )


def _result(data: Mapping[str, Any]) -> StepResult:
    return StepResult.model_validate({k: v for k, v in data.items() if k != "durable"})


def restore(saved: SavedRun) -> tuple[RunState, list[str]]:
    """The run ``saved`` holds, as a frozen state; and the failed steps whose handling was lost.

    Steps that were running are pending again; a failure committed after the
    last checkpoint is handed back so the caller can decide about it as the
    crashed run would have.
    """
    state = saved.state
    plan = Plan.model_validate(state["plan"])
    initial = state.get("initial_plan")
    statuses = {sid: StepStatus(s) for sid, s in state["status"].items()}
    results = {sid: _result(r) for sid, r in state["results"].items()}
    for sid, data in state["results"].items():
        if data.get("durable") is False:  # its output was not stored: the step runs again
            statuses[sid] = StepStatus.PENDING
            del results[sid]
    failed: list[str] = []
    for event in saved.finished:
        data = event["result"]
        sid = event["node"]
        if sid not in statuses or not data.get("durable", True):
            continue
        result = _result(data)
        statuses[sid] = result.status
        results[sid] = result
        if result.status == StepStatus.FAILED:
            failed.append(sid)
    outputs: dict[str, Any] = {}
    for sid, status in statuses.items():
        if status == StepStatus.RUNNING:
            statuses[sid] = StepStatus.PENDING
            results.pop(sid, None)
        elif status == StepStatus.COMPLETED and sid in results:
            outputs[sid] = results[sid].output
    restored = RunState(
        goal=state["goal"],
        initial_plan=plan if initial is None else Plan.model_validate(initial),
        plan=plan,
        dag=DagRun(
            statuses, waived=frozenset(state["by_strategy"]), stop_reason=state["stop_reason"]
        ),
        started_at=datetime.fromisoformat(state["started_at"]),
        results=results,
        outputs=outputs,
        replaced={sid: _result(r) for sid, r in state["replaced"].items()},
        revisions=tuple(PlanRevision.model_validate(r) for r in state["revisions"]),
        revision_attempts=state["revision_attempts"],
        applied_revisions=state["applied_revisions"],
        sub_revisions=state["sub_revisions"],
        budget_flagged=state["budget_flagged"],
    )
    return restored, failed


class Journal:
    """Commits one generated run to a store while it runs (see the module docstring).

    Every method but :meth:`flush` and :meth:`close` is called on the event
    loop and costs a list append: the record and the commit happen in
    :meth:`_write`, one commit at a time.
    """

    def __init__(
        self,
        store: Store,
        run_id: str,
        *,
        session: str | None = None,
        version: int = 0,
        lease_seconds: float = LEASE_SECONDS,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.session = session or run_id
        self.version = version
        #: This process's hold on the run (None once released at the end).
        self.lease: Lease | None = Lease.mine(lease_seconds)
        self.lease_seconds = lease_seconds
        # Renewed well before it lapses, however short a caller makes it.
        self._renew = min(RENEW, lease_seconds / 3)
        self._interrupted: list[str] = []
        # The record changed without an event (a step started, a renewal):
        # the next pass commits the record alone.
        self._dirty = False
        self.error: BaseException | None = None
        self._run: PlanRun | None = None
        self._plan_id = ""
        self._pending: list[dict[str, Any]] = []
        self._path: list[str] = []
        self._status = "running"
        self._final: dict[str, Any] = {}
        self._writer: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._closed = asyncio.Event()
        self._closing = False

    # ------------------------------------------------------------ what happened

    async def begin(
        self,
        run: PlanRun,
        *,
        resumed: bool = False,
        rerun: list[str] | None = None,
        interrupted: list[str] | None = None,
        previous: Lease | None = None,
    ) -> None:
        """Commit the run's start (``plan_started``, or ``plan_resumed`` and a checkpoint)
        with this process's lease.

        Awaited before any step starts, so a store that cannot be written,
        or a run another process resumed first (:class:`~waygraph.errors.Conflict`),
        stops the run before it calls anything. On resume, each of
        ``interrupted`` (steps that were running when ``previous``'s owner
        stopped) gets a ``node_interrupted`` event before it runs again.
        """
        self._interrupted = list(interrupted or [])
        self._run = run
        self._plan_id = _slug(run.state.initial_plan.goal or run.goal)
        self._path = [
            sid
            for sid, status in run.status.items()
            if status in (StepStatus.COMPLETED, StepStatus.FAILED)
        ]
        events: list[dict[str, Any]]
        if resumed:
            owner = previous.describe() if previous is not None else None
            events = [
                {"type": "node_interrupted", "node": sid, "owner": owner}
                for sid in self._interrupted
            ]
            events += [
                {"type": "plan_resumed", "rerun": rerun or [], "interrupted": self._interrupted},
                {"type": "run_checkpoint", "state": _state_data(run.state)},
            ]
        else:
            events = [
                {
                    "type": "plan_started",
                    "goal": run.goal,
                    "steps": len(run.plan.steps),
                    "state": _state_data(run.state),
                }
            ]
        self.version = await asyncio.to_thread(self._commit, self.dag_record().to_dict(), events)
        self._writer = asyncio.get_running_loop().create_task(
            self._write(), name=f"waygraph-journal-{self.run_id}"
        )

    def started(self, step_id: str) -> None:
        """A step was started: the next commit's record lists it in ``current_node``.

        No event of its own: a step's start is in its ``node_finished``
        result (``started_at``), and the record says what runs now, so a
        resume after a kill knows which steps were interrupted.
        """
        self._dirty = True
        self._wake.set()

    def finished(self, result: StepResult) -> None:
        """A step finished (completed, failed): its result is committed next."""
        self._path.append(result.step_id)
        event = {
            "type": "node_finished",
            "node": result.step_id,
            "status": str(result.status),
            "result": _result_data(result),
        }
        if result.error:
            event["error"] = result.error
        # A step finishes inside the run's span: it carries the trace (waygraph serve links it).
        self._pending.append(dict(tracing.stamp([event])[0]))
        self._wake.set()

    def checkpoint(self) -> None:
        """The run changed beyond one step (a revision): save its whole state."""
        assert self._run is not None
        self._pending.append({"type": "run_checkpoint", "state": _state_data(self._run.state)})
        self._wake.set()

    # ------------------------------------------------------------ writing

    def dag_record(self) -> RunRecord:
        """The run as the one :class:`~waygraph.model.record.RunRecord` of every kind."""
        assert self._run is not None
        run = self._run.state
        # The one run-record schema: each node's outcome, as guided runs say it,
        # beside its status (this runs once per commit, over every step).
        visited = {
            sid: {"outcome": model.node_outcome(s), "status": s} for sid, s in run.status.items()
        }
        if self.lease is not None:
            # Every commit renews the lease: a run that commits is alive.
            self.lease = self.lease.renewed(self.lease_seconds)
        extra: dict[str, Any] = {"interrupted": self._interrupted} if self._interrupted else {}
        return RunRecord(
            kind=RunKind.DAG,
            run_id=self.run_id,
            plan=self._plan_id,
            status=self._status,
            current_node=list(self._run.running),
            visited=visited,
            path=list(self._path),
            total_nodes=len(visited),
            completed_nodes=list(run.status.values()).count(StepStatus.COMPLETED),
            details={
                "plan_id": self._plan_id,
                "goal": run.goal,
                "revisions": run.revision_count,
                "lease": self.lease.data() if self.lease is not None else None,
                **extra,
                **self._final,
            },
            session=self.session,
        )

    def _commit(self, record: dict[str, Any], events: list[dict[str, Any]]) -> int:
        return self.store.commit(
            self.run_id,
            record,
            self.version,
            events,
            kind=KIND,
            session=self.session,
            status=self._status,
            plan=self._plan_id,
            make_current=True,
        )

    async def _write(self) -> None:
        # A store that does not block (memory://) is written on the loop; any
        # other in a thread, so a disk's fsync never holds up running steps.
        blocking = not isinstance(self.store, MemoryStore)
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), self._renew)
            except TimeoutError:
                # Nothing to commit for a while: commit the record alone to
                # renew the lease (and find out early if someone took it over).
                self._dirty = True
            if not self._closing:
                # Steps finishing close together go in one commit (group commit);
                # the end of the run does not wait for the pause.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._closed.wait(), LINGER)
            self._wake.clear()
            while (self._pending or self._dirty) and self.error is None:
                events, self._pending, self._dirty = self._pending, [], False
                record = self.dag_record().to_dict()
                try:
                    if blocking:
                        self.version = await asyncio.to_thread(self._commit, record, events)
                    else:
                        self.version = self._commit(record, events)
                except Exception as exc:
                    # Nothing more of this run can be saved (another process
                    # resumed it, the store is gone): stop it rather than run
                    # steps whose results would be lost.
                    log.error("run %s could not be saved: %s", self.run_id, exc)
                    self.error = exc
                    if self._run is not None:
                        self._run.stop(f"the run could not be saved to {self.store.url}: {exc}")
                        self._run._wake.set()
            if self._closing:
                return

    async def close(self, *, success: bool, final_output: Any, reason: str | None) -> None:
        """Commit the end of the run (``plan_completed`` or ``plan_failed``) and stop writing."""
        self._status = "completed" if success else "failed"
        text = final_output if isinstance(final_output, str) else None
        self._final = {"finished_at": _now().isoformat(), "reason": reason}
        end: dict[str, Any] = {"type": "plan_completed" if success else "plan_failed"}
        if not success:
            end["reason"] = reason or text
        self._pending.append(end)
        await self._stop_writer()

    async def flush(self) -> None:
        """Commit what is queued and stop writing; the run stays resumable (``running``).

        The lease is released with that commit: the process is stopping, so a
        resume need not wait for the lease to expire.
        """
        await self._stop_writer()

    async def _stop_writer(self) -> None:
        self.lease = None
        self._dirty = True
        self._closing = True
        self._closed.set()
        self._wake.set()
        if self._writer is not None:
            # The writer must finish its commit even when the run is being cancelled.
            await asyncio.shield(self._writer)


def dag_view(store: Store, record: StoredRecord) -> tuple[model.Plan | None, dict[str, Any]]:
    """A stored generated run as a graph and a run-like state, to draw it.

    The plan is the run's latest (after revisions), compiled by
    :func:`~waygraph.planning.to_graph_plan`; the state colours each step
    by its status: completed steps are done, failed ones failed, running
    ones current (several at once), the rest pending. ``(None, data)`` when
    the record holds no plan to draw.
    """
    data = dict(record.data)
    plan_data = None
    for event in store.events(record.key):
        if event.data.get("type") in ("plan_started", "run_checkpoint"):
            plan_data = event.data.get("state", {}).get("plan")
    try:
        plan = to_graph_plan(Plan.model_validate(plan_data), str(data.get("plan") or record.key))
    except (WaygraphError, ValueError, TypeError):
        return None, data
    visited = data.get("visited") or {}
    status = str(data.get("status") or "running")
    path = [plan.graph.start, *(data.get("path") or ())]
    if status == "completed":
        path += [n for n, node in plan.graph.nodes.items() if node.type == "exit"]
    state = {
        "kind": KIND,
        "status": status,
        "current_node": list(data.get("current_node") or ()),
        "path": path,
        "visited": visited,
    }
    return plan, state
