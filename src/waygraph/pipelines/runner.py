"""Running an Attractor pipeline: the specification's execution loop (§3.2).

:func:`run_pipeline` takes a plan (or a DOT, JSON or YAML file) and runs it
from its start node: each node's handler (:mod:`~waygraph.pipelines.handlers`)
with its retry policy, the context updated with the outcome, a checkpoint
saved, then the next node chosen by :mod:`~waygraph.pipelines.routing`. The
run ends at the exit node (SUCCESS, whatever the last stage's outcome, once
every goal gate succeeded), at a FAIL with nowhere to go (§3.7), at a node
with no edge to follow, at an escalation, or at the step bound.

Rules where the specification leaves room:

- A FAIL follows a matching condition edge, else the node's ``retry_target``,
  else its ``fallback_retry_target``, else the run ends failed (§3.7).
- Any other outcome out of a node whose edges all have conditions, none of
  which holds, takes the best of them by weight, then target id (as every
  public port does), instead of ending the run there.
- Parallel fan-out runs every branch, then continues once, at the fan-in.
- An unsatisfied goal gate at the exit sends the run to its retry target at
  most ``max_goal_gate_redirects`` times (graph attribute, default
  :data:`GOAL_GATE_REDIRECTS`), then the run fails.
- A run executes at most ``max_steps`` nodes (default :data:`MAX_STEPS`); a
  run that loops forever ends failed there, its ``path`` showing the loop.
- ``loop_restart=true`` on the edge taken starts the run over at its target
  with a fresh context and no finished nodes (the path keeps growing).
- The context's ``graph.goal`` holds the goal, ``graph.<name>`` every graph attribute.

A checkpoint is saved after every node (``checkpoint.json`` in the run
folder, and the store with ``store``); ``resume`` continues a run from one
without running a finished node again.

Example:
    >>> import tempfile
    >>> from waygraph.formats.dot import parse_dot
    >>> plan = parse_dot('''digraph hello { goal="Say hi"
    ...   start [shape=Mdiamond]; done [shape=Msquare]
    ...   greet [prompt="Greet for: $goal"]
    ...   start -> greet -> done }''')
    >>> result = run_pipeline(plan, logs=tempfile.mkdtemp())
    >>> result.status, result.path, result.context["last_response"]
    ('success', ('start', 'greet', 'done'), '[Simulated] Response for stage: greet')
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from waygraph.errors import ConfigError
from waygraph.model import Plan
from waygraph.pipelines.backends import CodergenBackend
from waygraph.pipelines.checkpoint import Checkpoint, PipelineStatus
from waygraph.pipelines.context import (
    CheckpointSaved,
    Context,
    EventSink,
    PipelineCompleted,
    PipelineFailed,
    PipelineStarted,
    StageCompleted,
    StageFailed,
    StageStarted,
)
from waygraph.pipelines.handlers import Handler, HandlerRegistry, default_handlers
from waygraph.pipelines.interviewers import ConsoleInterviewer, Interviewer
from waygraph.pipelines.lint import validate_or_raise
from waygraph.pipelines.outcome import Outcome
from waygraph.pipelines.routing import gate_target, handler_type, unsatisfied_gate
from waygraph.pipelines.run_folder import (
    CHECKPOINT_FILE,
    load_checkpoint,
    write_checkpoint,
    write_manifest,
)
from waygraph.pipelines.stages import Backoff, StagePolicy, chosen_edge, next_node, run_stage
from waygraph.pipelines.transforms import Transform, prepare_pipeline

__all__ = [
    "DEFAULT_LOGS",
    "GOAL_GATE_REDIRECTS",
    "MAX_STEPS",
    "PipelineResult",
    "arun_pipeline",
    "load_pipeline",
    "run_pipeline",
]

#: Node executions a run may make before it stops failed (an endless loop).
MAX_STEPS = 1000
#: Times an unsatisfied goal gate may send the run back before it fails.
GOAL_GATE_REDIRECTS = 10
#: Where a run's folder goes when ``logs`` is not given: ``<cwd>/.waygraph-runs/<run_id>``.
DEFAULT_LOGS = Path(".waygraph-runs")


@dataclass(frozen=True)
class PipelineResult:
    """How a run ended.

    ``status``: ``success`` or ``fail``; ``outcome``: the run's outcome;
    ``path``: node ids in the order they ran (parallel branches after their
    fan-out node, branch by branch); ``completed_nodes``: each node that
    finished, once, in first-finish order; ``context``: the final context.
    """

    run_id: str
    status: str
    outcome: Outcome
    path: tuple[str, ...]
    completed_nodes: tuple[str, ...]
    context: dict[str, Any]
    logs_root: Path

    def as_json(self) -> dict[str, Any]:
        """The object ``waygraph run --json`` prints."""
        return {
            "run_id": self.run_id,
            "status": self.status,
            "outcome": self.outcome.model_dump(mode="json"),
            "path": list(self.path),
            "completed_nodes": list(self.completed_nodes),
            "context": self.context,
            "logs_root": str(self.logs_root),
        }


def load_pipeline(source: Plan | str | Path) -> tuple[Plan, Path | None]:
    """The plan ``source`` is (a plan, DOT text, or a DOT/JSON/YAML file) and its file.

    Example:
        >>> load_pipeline("digraph p { start [shape=Mdiamond]; start -> done; "
        ...               "done [shape=Msquare] }")[0].id
        'p'
    """
    from waygraph.formats.dot import parse_dot

    if isinstance(source, Plan):
        return source, None
    if isinstance(source, str) and source.lstrip().startswith(("digraph", "strict")):
        return parse_dot(source), None
    path = Path(source)
    if path.suffix.lower() in (".dot", ".gv"):
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
        return parse_dot(text, file=str(path)), path
    from waygraph.library import load_library

    plans = list(load_library(path).plans.values())
    if len(plans) != 1:
        raise ConfigError(f"{path} holds {len(plans)} plans; a pipeline file holds one")
    return plans[0], path


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _first_seen(order: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(order))


def _registry(
    handlers: HandlerRegistry | Mapping[str, Handler] | None,
    **settings: Any,
) -> HandlerRegistry:
    if isinstance(handlers, HandlerRegistry):
        return handlers
    registry = default_handlers(**settings)
    for name, handler in (handlers or {}).items():
        registry.register(name, handler)
    return registry


def _start_context(plan: Plan, source: Path | None, given: Mapping[str, Any] | None) -> Context:
    """The context a run starts with: graph attributes mirrored (§3.1), then ``given``."""
    values: dict[str, Any] = {f"graph.{k}": v for k, v in (plan.attrs or {}).items()}
    values["graph.goal"] = plan.goal or ""
    if source is not None:
        values["internal.pipeline_dir"] = str(source.resolve().parent)
    values.update(given or {})
    return Context(values)


def run_pipeline(
    plan_or_path: Plan | str | Path,
    *,
    backend: CodergenBackend | None = None,
    interviewer: Interviewer | None = None,
    handlers: HandlerRegistry | Mapping[str, Handler] | None = None,
    logs: str | Path | None = None,
    context: Mapping[str, Any] | None = None,
    allow_commands: bool = False,
    workspace: Path | None = None,
    unconfined: bool = False,
    store: Any = None,
    resume: Checkpoint | str | None = None,
    run_id: str | None = None,
    on_event: EventSink | None = None,
    save_checkpoint: Callable[[Checkpoint], None] | None = None,
    max_steps: int = MAX_STEPS,
    sleep: Callable[[float], None] = time.sleep,
    backoff: Backoff | None = None,
    validate: bool = True,
    transforms: Iterable[Transform] = (),
    takeover: bool = False,
) -> PipelineResult:
    """Run a pipeline to its end and return how it ended (see the module docstring).

    ``backend`` runs codergen stages (None: simulated, §4.5).
    ``interviewer`` answers human gates; by default the store's answer
    channel with ``store``, else the console with a ``backend``, else
    (simulating) the first choice. ``handlers`` is a registry to use as it
    is, or custom handlers by type name added to the built-in ones. Tool
    nodes run commands in ``workspace`` (default: the current folder) only
    with ``allow_commands``, under the kernel's confinement (refused where
    there is none) unless ``unconfined``. ``logs`` is the run folder (§5.6; default
    ``./.waygraph-runs/<run_id>``); ``context`` adds initial context values.
    ``store`` (a :class:`~waygraph.store.Store` or URL) records the run so
    ``waygraph sessions list`` and the dashboard show it. ``resume`` is a
    checkpoint, or the id of a run to continue (from ``store``, else, or
    when the store does not hold it, from ``logs``' ``checkpoint.json``).
    ``save_checkpoint`` replaces the writing of ``checkpoint.json``.
    ``sleep`` and ``backoff`` are the waits between retries and polls (tests
    pass a no-op). The plan goes through the built-in transforms, then
    ``transforms`` (§9.1); ``validate`` refuses it with lint errors
    (:class:`~waygraph.errors.PipelineValidationError`). A stored run has one
    owner at a time: resuming one another live process holds raises
    :class:`~waygraph.errors.RunHeldError` unless ``takeover``; the lease is
    renewed while the run goes on, and let go if it stops before its end.
    """
    plan, source = load_pipeline(plan_or_path)
    records = None
    if store is not None:
        from waygraph.pipelines.record import PipelineRecords

        records = PipelineRecords(store)
    checkpoint = _resumed(resume, plan, records, logs, takeover=takeover)
    run_id = checkpoint.run_id if checkpoint else (run_id or uuid.uuid4().hex[:12])
    logs_root = Path(logs) if logs is not None else DEFAULT_LOGS / run_id
    if interviewer is None and not isinstance(handlers, HandlerRegistry):
        interviewer = _default_interviewer(records, run_id, backend)
    registry = _registry(
        handlers,
        backend=backend,
        interviewer=interviewer,
        allow_commands=allow_commands,
        workspace=workspace,
        unconfined=unconfined,
        on_event=on_event,
        sleep=sleep,
    )
    # §3.1: the built-in transforms ($goal, the model stylesheet; a DOT file has had
    # them, and they change nothing the second time), then yours, then lint.
    plan = prepare_pipeline(plan, transforms, known_types=registry.types())[0]
    if validate:
        validate_or_raise(plan, known_types=registry.types())
    # Only a pipeline that may run gets a run folder.
    logs_root.mkdir(parents=True, exist_ok=True)
    savers: list[Callable[[Checkpoint], None]] = [
        save_checkpoint or (lambda cp: write_checkpoint(logs_root, cp))
    ]
    if records is not None:
        if isinstance(resume, Checkpoint) and records.record(run_id) is not None:
            records.claim(run_id, takeover=takeover)
        savers.append(lambda cp: records.save(cp, plan))
    run = _Run(
        plan=plan,
        source=source,
        registry=registry,
        logs_root=logs_root,
        run_id=run_id,
        policy=StagePolicy(backoff=backoff or Backoff(), sleep=sleep, emit=on_event or _ignore),
        savers=savers,
        max_steps=max_steps,
    )
    if records is None:
        return run.execute(checkpoint, context)
    from waygraph.pipelines.record_lease import LeaseKeeper

    try:
        # A long stage must not let another process think the run is abandoned.
        with LeaseKeeper(records, run_id):
            return run.execute(checkpoint, context)
    finally:
        # An ended run released its lease when it saved its end; one that stops
        # early (Ctrl-C, an error) lets go so a resume need not wait for expiry.
        records.release(run_id)


def _settled(outcome: Outcome) -> Outcome:
    """What the run keeps of a finished node's outcome: its status and why (goal gates and
    the timeline read them); its context updates are in the context, its notes in its
    status.json, so the checkpoint does not grow by them with every node."""
    if not outcome.context_updates and not outcome.notes and not outcome.suggested_next_ids:
        return outcome
    return Outcome(
        status=outcome.status,
        preferred_label=outcome.preferred_label,
        failure_reason=outcome.failure_reason,
    )


def _ignore(event: object) -> None:
    """Drop ``event`` (no ``on_event`` was given)."""
    return None


def _default_interviewer(
    records: Any, run_id: str, backend: CodergenBackend | None
) -> Interviewer | None:
    """Who answers human gates when nobody was named (None: the first choice)."""
    if records is not None:
        from waygraph.pipelines.record_interviewer import StoreInterviewer

        return StoreInterviewer(records, run_id)  # type: ignore[return-value]
    if backend is not None:
        return ConsoleInterviewer()
    return None


def _resumed(
    resume: Checkpoint | str | None,
    plan: Plan,
    records: Any,
    logs: str | Path | None,
    *,
    takeover: bool = False,
) -> Checkpoint | None:
    """The checkpoint ``resume`` names, checked to belong to ``plan``; a stored run is
    claimed before it is read, so two processes never continue the same run."""
    if resume is None or isinstance(resume, Checkpoint):
        checkpoint = resume
    else:
        found = None
        if records is not None and records.record(resume) is not None:
            found = records.resume(resume, takeover=takeover)
        folder = Path(logs) if logs is not None else DEFAULT_LOGS / resume
        if found is None and records is not None and not (folder / CHECKPOINT_FILE).is_file():
            from waygraph.errors import RunNotFoundError

            raise RunNotFoundError(
                f"no pipeline run {resume!r} in the store, nor a checkpoint in {folder}"
            )
        # The store's record, else (a run started without it) the run folder's checkpoint.
        checkpoint = found[0] if found is not None else load_checkpoint(folder)
        if checkpoint.run_id != resume:
            raise ConfigError(
                f"the checkpoint there is of run {checkpoint.run_id!r}, not {resume!r}"
            )
    if checkpoint is not None and checkpoint.plan_id != plan.id:
        raise ConfigError(
            f"run {checkpoint.run_id!r} ran pipeline {checkpoint.plan_id!r}, not {plan.id!r}"
        )
    return checkpoint


@dataclass(frozen=True)
class _Run:
    """One execution of the loop; its fields are the run's settings."""

    plan: Plan
    source: Path | None
    registry: HandlerRegistry
    logs_root: Path
    run_id: str
    policy: StagePolicy
    savers: list[Callable[[Checkpoint], None]]
    max_steps: int

    def execute(
        self, checkpoint: Checkpoint | None, given: Mapping[str, Any] | None
    ) -> PipelineResult:
        plan, emit = self.plan, self.policy.emit
        started = time.monotonic()
        if checkpoint is not None and checkpoint.next_node is None and checkpoint.outcome:
            # The run had ended: nothing is run again.
            order = list(checkpoint.completed_nodes)
            return self._result(checkpoint.outcome, order, Context(checkpoint.context))
        if checkpoint is not None:
            context = Context(checkpoint.context, checkpoint.logs)
            order = list(checkpoint.completed_nodes)
            outcomes = dict(checkpoint.node_outcomes)
            retries = dict(checkpoint.node_retries)
            current: str | None = checkpoint.next_node
        else:
            context = _start_context(plan, self.source, given)
            order, outcomes, retries = [], {}, {}
            current = plan.graph.start
            write_manifest(
                self.logs_root,
                run_id=self.run_id,
                name=plan.name or plan.id,
                goal=plan.goal or "",
                started=_now(),
            )
        emit(PipelineStarted(name=plan.name or plan.id, id=self.run_id))
        limit = int((plan.attrs or {}).get("max_goal_gate_redirects", GOAL_GATE_REDIRECTS))
        redirects = steps = 0
        final: Outcome | None = None
        while final is None:
            node = plan.graph.nodes.get(current or "")
            if node is None:
                final = Outcome(status="fail", failure_reason=f"no node {current!r} in the plan")
                break
            if node.type == "exit":
                gate = unsatisfied_gate(plan, outcomes)
                if gate is not None:
                    target = gate_target(plan, gate)
                    redirects += 1
                    if target is not None and redirects <= limit:
                        context.append_log(f"goal gate {gate.id} unsatisfied: back to {target}")
                        current = target
                        continue
                    why = "no retry target" if target is None else f"{limit} redirects"
                    final = Outcome(
                        status="fail",
                        failure_reason=f"Goal gate {gate.id} unsatisfied ({why})",
                    )
                    break
            if steps >= self.max_steps:
                final = Outcome(
                    status="fail",
                    failure_reason=f"step bound reached: {self.max_steps} node executions "
                    f"(path so far: {' -> '.join(order[-20:])})",
                )
                break
            context.set("current_node", node.id)
            emit(StageStarted(name=node.id, index=steps))
            began = time.monotonic()
            outcome = run_stage(
                self.registry,
                node,
                context,
                plan,
                self.logs_root,
                policy=self.policy,
                retries=retries,
                index=steps,
            )
            steps += 1
            order.append(node.id)
            outcomes[node.id] = _settled(outcome)
            kind = handler_type(node)
            if kind == "parallel":
                for branch in outcome.context_updates.get("parallel.results", []):
                    order.extend(branch["path"])
                    for key, value in branch["outcomes"].items():
                        outcomes[key] = _settled(Outcome.model_validate(value))
            context.apply_updates(outcome.context_updates)
            context.set("outcome", outcome.status)
            if outcome.preferred_label:
                context.set("preferred_label", outcome.preferred_label)
            # Set once a node has retried (and kept current after): a key for every
            # node run would make each snapshot of a long run grow with it.
            count, key = retries.get(node.id, 0), f"internal.retry_count.{node.id}"
            if count or context.get(key) is not None:
                context.set(key, count)
            if outcome.status == "fail":
                emit(StageFailed(node.id, steps - 1, outcome.failure_reason, will_retry=False))
            else:
                emit(StageCompleted(node.id, steps - 1, time.monotonic() - began))
            if node.type == "exit":
                final = Outcome(status="success", notes="Pipeline completed")
                break
            if kind == "escalate":
                final = Outcome(status="fail", failure_reason=outcome.failure_reason)
                break
            snapshot = context.snapshot()
            target = next_node(plan, node, outcome, snapshot)
            if target is None:
                final = (
                    outcome
                    if outcome.status == "fail"
                    else Outcome(status="success", notes="Pipeline completed")
                )
                break
            edge = chosen_edge(plan, node, outcome, snapshot) if outcome.status != "fail" else None
            if edge is not None and edge.to == target and _restarts(edge.attrs):
                # §3.2 step 7: a fresh run from the edge's target.
                context = _start_context(plan, self.source, given)
                outcomes, retries = {}, {}
                context.append_log(f"loop restart at {target}")
                snapshot = context.snapshot()
            # The routing snapshot is the checkpoint's: the context has not changed since,
            # and a second copy of a context that grows with the run doubled its cost.
            self._save(node.id, target, order, retries, outcomes, context, snapshot=snapshot)
            current = target
        self._save(
            current, None, order, retries, outcomes, context, final=final or Outcome(status="fail")
        )
        assert final is not None
        took = time.monotonic() - started
        if final.succeeded:
            artifacts = sum(1 for p in self.logs_root.iterdir() if p.is_dir())
            emit(PipelineCompleted(duration=took, artifact_count=artifacts))
        else:
            emit(PipelineFailed(error=final.failure_reason, duration=took))
        return self._result(final, order, context)

    def _save(
        self,
        current: str | None,
        target: str | None,
        order: list[str],
        retries: dict[str, int],
        outcomes: dict[str, Outcome],
        context: Context,
        *,
        final: Outcome | None = None,
        snapshot: dict[str, Any] | None = None,
    ) -> None:
        status: PipelineStatus = "running"
        if final is not None:
            status = "completed" if final.succeeded else "failed"
        # Built from values the run made and checked itself: validating every
        # node's outcome again on each save would make a save cost grow with the run.
        checkpoint = Checkpoint.model_construct(
            run_id=self.run_id,
            plan_id=self.plan.id,
            source=str(self.source) if self.source else None,
            status=status,
            timestamp=_now(),
            current_node=current,
            next_node=target,
            completed_nodes=tuple(order),
            node_retries=dict(retries),
            node_outcomes=dict(outcomes),
            context=context.snapshot() if snapshot is None else snapshot,
            logs=context.logs,
            outcome=final,
        )
        for save in self.savers:
            save(checkpoint)
        self.policy.emit(CheckpointSaved(node_id=current or ""))

    def _result(self, final: Outcome, order: list[str], context: Context) -> PipelineResult:
        return PipelineResult(
            run_id=self.run_id,
            status="success" if final.succeeded else "fail",
            outcome=final,
            path=tuple(order),
            completed_nodes=_first_seen(order),
            context=context.snapshot(),
            logs_root=self.logs_root,
        )


def _restarts(attrs: Mapping[str, str] | None) -> bool:
    return (attrs or {}).get("loop_restart", "").strip().lower() in ("true", "1", "yes")


async def arun_pipeline(plan_or_path: Plan | str | Path, **options: Any) -> PipelineResult:
    """:func:`run_pipeline` without blocking the event loop (it runs in a worker thread).

    Takes the same keyword arguments.

    Example:
        >>> import asyncio, tempfile
        >>> dot = "digraph p { start [shape=Mdiamond]; start -> done; done [shape=Msquare] }"
        >>> asyncio.run(arun_pipeline(dot, logs=tempfile.mkdtemp())).status
        'success'
    """
    return await asyncio.to_thread(run_pipeline, plan_or_path, **options)
