"""Running one stage with its retry policy (§3.5, §3.6), and the handlers that run stages
themselves: parallel fan-out (§4.8), fan-in (§4.9) and the manager loop (§4.11).

:func:`run_stage` is what the runner and every parallel branch call for a
node: the handler from the registry, an exception turned into a FAIL (a
transient one retried while ``max_retries`` allows, with backoff), RETRY
retried then settled by :func:`~waygraph.pipelines.routing.attempt_verdict`,
``auto_status`` applied, and the final outcome written to the stage's
``status.json``. :func:`next_node` is where a node's outcome leads.

Example:
    >>> Backoff(initial_delay=0.2, factor=2.0, jitter=False).delay_for_attempt(3)
    0.8
    >>> is_transient(ConnectionResetError()), is_transient(ValueError("bad prompt"))
    (True, False)
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from waygraph.errors import PermanentError, PlanFormatError, TransientError
from waygraph.formats._dot_values import duration
from waygraph.model import Edge, Node, Plan
from waygraph.pipelines.conditions import evaluate_condition
from waygraph.pipelines.context import (
    Context,
    EventSink,
    ParallelBranchCompleted,
    ParallelBranchStarted,
    ParallelCompleted,
    ParallelStarted,
    StageFailed,
    StageRetrying,
)
from waygraph.pipelines.outcome import Outcome
from waygraph.pipelines.routing import (
    after_failure,
    attempt_verdict,
    fail_routed,
    handler_type,
    is_conditional,
    outgoing,
    select_edge,
)
from waygraph.pipelines.run_folder import stage_dir, stage_name, write_json

if TYPE_CHECKING:
    from waygraph.pipelines.backends import CodergenBackend
    from waygraph.pipelines.handlers import HandlerRegistry

__all__ = [
    "Backoff",
    "FanInHandler",
    "ManagerLoopHandler",
    "ParallelHandler",
    "StagePolicy",
    "chosen_edge",
    "is_transient",
    "next_node",
    "run_stage",
    "walk_branch",
]

#: Node executions a parallel branch may make before it is stopped (an endless loop inside).
BRANCH_STEPS = 1000
_TRANSIENT_NAMES = {
    "APIConnectionError",
    "APITimeoutError",
    "RateLimitError",
    "InternalServerError",
}
_RANK = {"success": 0, "partial_success": 1, "retry": 2, "skipped": 3, "fail": 4}


@dataclass(frozen=True)
class Backoff:
    """Delays between attempts (§3.6): ``initial_delay * factor**(attempt-1)``, capped, with
    jitter (x0.5 to x1.5) when ``jitter``."""

    initial_delay: float = 0.2
    factor: float = 2.0
    max_delay: float = 60.0
    jitter: bool = True

    def delay_for_attempt(self, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        delay = min(self.initial_delay * self.factor ** (attempt - 1), self.max_delay)
        return delay * random.uniform(0.5, 1.5) if self.jitter else round(delay, 9)


def is_transient(exc: BaseException) -> bool:
    """Whether retrying may help (§3.6, Appendix D): network and timeout errors, HTTP 429 and
    5xx, :class:`~waygraph.errors.TransientError`; the error or its cause."""
    for error in (exc, exc.__cause__):
        if error is None or isinstance(error, PermanentError):
            continue
        if isinstance(error, TransientError | ConnectionError | TimeoutError):
            return True
        if type(error).__name__ in _TRANSIENT_NAMES:
            return True
        status = getattr(error, "status_code", None)
        if isinstance(status, int) and (status == 429 or status >= 500):
            return True
    return False


def _ignore(event: object) -> None:
    """Drop ``event`` (no ``on_event`` was given)."""
    return None


@dataclass(frozen=True)
class StagePolicy:
    """How stages are run: backoff, sleep (injectable), events, which errors are retried."""

    backoff: Backoff = field(default_factory=Backoff)
    sleep: Callable[[float], None] = time.sleep
    emit: EventSink = _ignore
    should_retry: Callable[[BaseException], bool] = is_transient


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("true", "1", "yes")


def run_stage(
    registry: HandlerRegistry,
    node: Node,
    context: Context,
    plan: Plan,
    logs_root: Path,
    *,
    policy: StagePolicy,
    retries: dict[str, int],
    index: int = 0,
) -> Outcome:
    """Execute ``node`` with its retry policy; the outcome to route on.

    ``retries`` counts each node's retries (reset when it succeeds).
    """
    handler = registry.resolve(node)
    status_file = logs_root / stage_name(node.id) / "status.json"
    attempt = 0
    returned = False
    while True:
        attempt += 1
        # The previous visit's status is an old record: only one written now counts.
        status_file.unlink(missing_ok=True)
        try:
            outcome = handler.execute(node, context, plan, logs_root)
            if not isinstance(outcome, Outcome):
                outcome = Outcome(
                    status="fail",
                    failure_reason=f"handler returned {type(outcome).__name__}, not an Outcome",
                )
            returned = True
        except Exception as exc:  # a handler's error is the stage's FAIL (§4.12)
            reason = f"{type(exc).__name__}: {exc}"
            limit = node.max_retries
            again = policy.should_retry(exc) and (limit is None or attempt <= limit)
            if again:
                # The final failure is the caller's to report, with the outcome.
                policy.emit(StageFailed(name=node.id, index=index, error=reason, will_retry=True))
                _wait(node, attempt, policy, retries, index)
                continue
            outcome = Outcome(status="fail", failure_reason=reason)
            returned = False
            break
        routed = outcome.status != "fail" or fail_routed(
            plan.graph, node, outcome, {**context.snapshot(), **outcome.context_updates}
        )
        verdict, outcome = attempt_verdict(node, outcome, attempt, routed=routed)
        if verdict == "retry":
            _wait(node, attempt, policy, retries, index)
            continue
        break
    if returned and _truthy((node.attrs or {}).get("auto_status")) and not status_file.exists():
        # Appendix C: a handler that wrote no status is taken to have succeeded.
        outcome = Outcome(
            status="success",
            notes="auto-status: handler completed without writing status",
            context_updates=outcome.context_updates,
        )
    if outcome.succeeded:
        retries.pop(node.id, None)
    write_json(stage_dir(logs_root, node.id) / "status.json", outcome.status_file())
    return outcome


def _wait(
    node: Node, attempt: int, policy: StagePolicy, retries: dict[str, int], index: int
) -> None:
    delay = policy.backoff.delay_for_attempt(attempt)
    retries[node.id] = retries.get(node.id, 0) + 1
    policy.emit(StageRetrying(name=node.id, index=index, attempt=attempt + 1, delay=delay))
    policy.sleep(delay)


def chosen_edge(
    plan: Plan, node: Node, outcome: Outcome, context: Mapping[str, Any]
) -> Edge | None:
    """The edge a non-FAIL ``outcome`` follows out of ``node`` (§3.3).

    When every edge out of the node has a condition and none holds, the best
    of them by weight, then target id, is taken: every public port does so
    (a gate routing on a tool's output it never got still goes on), where
    the specification's pseudocode would end the run at that node.
    """
    edge = select_edge(plan.graph, node.id, outcome, context)
    if edge is not None:
        return edge
    edges = outgoing(plan.graph, node.id)
    if not edges or not all(is_conditional(e) for e in edges):
        return None
    return min(edges, key=lambda e: (-e.weight, e.to))


def next_node(plan: Plan, node: Node, outcome: Outcome, context: Mapping[str, Any]) -> str | None:
    """Where the run goes after ``node`` ended with ``outcome``: a parallel node's fan-in,
    failure routing for a FAIL (§3.7), else :func:`chosen_edge`'s target; None: nowhere."""
    if handler_type(node) == "parallel" and outcome.status != "fail":
        # The branches were the edges: the run goes on at the fan-in, or ends.
        return outcome.suggested_next_ids[0] if outcome.suggested_next_ids else None
    if outcome.status == "fail":
        return after_failure(plan.graph, node, outcome, context)
    edge = chosen_edge(plan, node, outcome, context)
    return edge.to if edge is not None else None


def _apply(context: Context, outcome: Outcome) -> None:
    """§3.2 step 4: the outcome's updates, then ``outcome`` and ``preferred_label``."""
    context.apply_updates(outcome.context_updates)
    context.set("outcome", outcome.status)
    if outcome.preferred_label:
        context.set("preferred_label", outcome.preferred_label)


def walk_branch(
    registry: HandlerRegistry,
    first: str,
    context: Context,
    plan: Plan,
    logs_root: Path,
    *,
    policy: StagePolicy,
    max_steps: int = BRANCH_STEPS,
    join_at: str | None = None,
) -> dict[str, Any]:
    """Run a parallel branch from node ``first`` until it reaches a fan-in node (or
    ``join_at``), an exit or a dead end. Its result: ``id``, ``status``, ``notes``,
    ``failure_reason``, ``score``, ``path`` (node ids run), ``outcomes`` (each node's
    last) and ``join`` (the fan-in it reached)."""
    path: list[str] = []
    outcomes: dict[str, Outcome] = {}
    last = Outcome(status="success")
    join: str | None = None
    current: str | None = first
    entered_by_join = False
    retries: dict[str, int] = {}
    for _ in range(max_steps):
        if current is None:
            break
        node = plan.graph.nodes.get(current)
        if node is None:
            last = Outcome(status="fail", failure_reason=f"no node {current!r}")
            break
        kind = handler_type(node)
        if node.type == "exit":
            break
        if (kind == "parallel.fan_in" and not entered_by_join) or node.id == join_at:
            join = node.id
            break
        outcome = run_stage(
            registry, node, context, plan, logs_root, policy=policy, retries=retries
        )
        path.append(node.id)
        outcomes[node.id] = outcome
        _apply(context, outcome)
        last = outcome
        if kind == "escalate":
            break
        # A nested parallel node's fan-in is this branch's next stage, not its end.
        entered_by_join = kind == "parallel" and outcome.status != "fail"
        current = next_node(plan, node, outcome, context.snapshot())
    else:
        last = Outcome(status="fail", failure_reason=f"the branch ran {max_steps} nodes")
    score = last.context_updates.get("score", 0)
    return {
        "id": first,
        "status": last.status,
        "notes": last.notes,
        "failure_reason": last.failure_reason,
        "score": score if isinstance(score, int | float) else 0,
        "path": path,
        "outcomes": {k: v.model_dump(mode="json") for k, v in outcomes.items()},
        "join": join,
    }


class ParallelHandler:
    """Fan-out (§4.8): every unconditional outgoing edge a branch, run at once on context clones.

    At most ``max_parallel`` (node attribute, default 4) run together. Each
    branch runs until it reaches the fan-in (the nearest ``parallel.fan_in``
    node, else the nearest node every branch reaches), an exit or a dead end;
    the results go to the context's ``parallel.results``, and the run then
    continues once, at that fan-in. ``join_policy``
    ``wait_all`` (default): SUCCESS when no branch failed, else
    PARTIAL_SUCCESS; ``first_success``: SUCCESS when any branch succeeded,
    else FAIL (every branch still runs to its end). Branch context changes
    are not merged back (§3.8). ``on_event`` may be called from several
    threads at once.
    """

    def __init__(
        self,
        registry: HandlerRegistry,
        *,
        on_event: EventSink | None = None,
        sleep: Callable[[float], None] = time.sleep,
        backoff: Backoff | None = None,
    ) -> None:
        self.registry = registry
        self.policy = StagePolicy(
            backoff=backoff or Backoff(), sleep=sleep, emit=on_event or _ignore
        )
        self._graph: tuple[Plan, dict[str, list[str]]] | None = None

    def _successors_of(self, plan: Plan) -> dict[str, list[str]]:
        """The plan's successor lists, built once per plan (a plan is immutable): a
        pipeline with a fan-out per ten nodes would otherwise pay for its edges at each."""
        if self._graph is None or self._graph[0] is not plan:
            self._graph = (plan, _successors(plan))
        return self._graph[1]

    def execute(self, node: Node, context: Context, plan: Plan, logs_root: Path) -> Outcome:
        """Run every branch and report them in ``parallel.results``."""
        # Its unconditional edges are the branches; a conditional one routes its outcome.
        branches = [e.to for e in outgoing(plan.graph, node.id) if not is_conditional(e)]
        if not branches:
            return Outcome(status="fail", failure_reason="parallel node has no branches")
        attrs = node.attrs or {}
        policy_name = attrs.get("join_policy", "wait_all").strip().lower()
        try:
            width = max(1, int(attrs.get("max_parallel", "4")))
        except ValueError:
            width = 4
        emit = self.policy.emit
        meet = _join_node(plan, branches, self._successors_of(plan))
        emit(ParallelStarted(branch_count=len(branches)))
        started = time.monotonic()

        def one(index: int, first: str) -> dict[str, Any]:
            emit(ParallelBranchStarted(branch=first, index=index))
            begun = time.monotonic()
            result = walk_branch(
                self.registry,
                first,
                context.clone(),
                plan,
                logs_root,
                policy=self.policy,
                join_at=meet,
            )
            ok = result["status"] in ("success", "partial_success")
            took = time.monotonic() - begun
            emit(ParallelBranchCompleted(branch=first, index=index, duration=took, success=ok))
            return result

        with ThreadPoolExecutor(max_workers=width, thread_name_prefix="waygraph-branch") as pool:
            results = list(pool.map(one, range(len(branches)), branches))
        wins = sum(r["status"] in ("success", "partial_success") for r in results)
        fails = sum(r["status"] == "fail" for r in results)
        emit(ParallelCompleted(time.monotonic() - started, success_count=wins, failure_count=fails))
        join = next((r["join"] for r in results if r["join"]), None) or meet
        updates = {
            "parallel.results": results,
            "parallel.success_count": wins,
            "parallel.failure_count": fails,
        }
        if policy_name == "first_success":
            status = "success" if wins else "fail"
        else:
            status = "success" if fails == 0 else "partial_success"
        return Outcome(
            status=status,  # type: ignore[arg-type]
            suggested_next_ids=(join,) if join else (),
            context_updates=updates,
            notes=f"{len(branches)} branches: {wins} succeeded, {fails} failed",
            failure_reason="" if status != "fail" else "no branch succeeded",
        )


def _successors(plan: Plan) -> dict[str, list[str]]:
    """Each node's edge targets, in edge order: one pass over the edges, so a walk of the
    graph costs its size once, not once per node visited."""
    out: dict[str, list[str]] = {}
    for edge in plan.graph.edges:
        out.setdefault(edge.from_, []).append(edge.to)
    return out


def _reachable(
    successors: Mapping[str, list[str]],
    firsts: list[str],
    until: Callable[[str], bool] | None = None,
) -> list[str]:
    """Node ids reachable from ``firsts`` (themselves included), in breadth-first order;
    with ``until``, the walk stops at the first node for which it holds (included)."""
    seen, order = set(firsts), list(firsts)
    for current in order:
        if until is not None and until(current):
            break
        for target in successors.get(current, ()):
            if target not in seen:
                seen.add(target)
                order.append(target)
    return order


def _join_node(
    plan: Plan, branches: list[str], successors: Mapping[str, list[str]] | None = None
) -> str | None:
    """Where the branches meet: the nearest fan-in node, else the nearest node every branch
    reaches (branches that converge on a plain node run it once, after the fan-out)."""

    def fan_in(node_id: str) -> bool:
        node = plan.graph.nodes.get(node_id)
        return node is not None and handler_type(node) == "parallel.fan_in"

    successors = _successors(plan) if successors is None else successors
    # Breadth-first order is nearest first: the walk ends at the first fan-in, so a
    # fan-out early in a long pipeline does not walk the rest of it.
    order = _reachable(successors, branches, until=fan_in)
    found = next((n for n in order if fan_in(n)), None)
    if found is not None:
        return found
    if len(branches) < 2:
        return None
    common = set.intersection(*(set(_reachable(successors, [b])) for b in branches))
    return next((n for n in order if n in common), None)


class FanInHandler:
    """Fan-in (§4.9): the best branch of ``parallel.results``.

    A fan-in node with a prompt and a ``backend`` asks the model, giving it
    the candidates as JSON; the first candidate id its answer names wins.
    Otherwise (or when the answer names none) the heuristic: outcome, then
    score, then id. FAIL when there are no results or every branch failed.
    """

    def __init__(self, backend: CodergenBackend | None = None) -> None:
        self.backend = backend

    def execute(self, node: Node, context: Context, plan: Plan, logs_root: Path) -> Outcome:
        """Pick the best branch of ``parallel.results``."""
        results = context.get("parallel.results")
        if not isinstance(results, list) or not results:
            return Outcome(status="fail", failure_reason="No parallel results to evaluate")
        if all(r.get("status") == "fail" for r in results):
            return Outcome(status="fail", failure_reason="every parallel branch failed")
        prompt = node.action or node.prompt
        best = None
        if prompt and self.backend is not None:
            best = self._ask(node, prompt, results, context)
        best = best or min(
            results,
            key=lambda r: (
                _RANK.get(str(r.get("status")), 9),
                -float(r.get("score") or 0),
                r["id"],
            ),
        )
        return Outcome(
            status="success",
            context_updates={
                "parallel.fan_in.best_id": best["id"],
                "parallel.fan_in.best_outcome": best["status"],
            },
            notes=f"Selected best candidate: {best['id']}",
        )

    def _ask(
        self, node: Node, prompt: str, results: list[dict[str, Any]], context: Context
    ) -> dict[str, Any] | None:
        assert self.backend is not None
        shown = [
            {k: r.get(k) for k in ("id", "status", "notes", "failure_reason", "score")}
            for r in results
        ]
        question = (
            f"{prompt}\n\nCandidates (JSON):\n{json.dumps(shown, indent=2)}\n\n"
            "Answer with the id of the best candidate."
        )
        reply = self.backend.run(node, question, context)
        if isinstance(reply, Outcome):
            said = reply.preferred_label or " ".join(reply.suggested_next_ids)
        else:
            said = str(reply)
        words = re.findall(r"[\w.-]+", said)
        return next((r for w in words for r in results if r["id"] == w), None)


class ManagerLoopHandler:
    """The manager loop (§4.11): runs the graph's ``stack.child_dotfile`` as a child run, then
    observes it until it ends, ``manager.stop_condition`` holds or ``manager.max_cycles`` pass.

    The child runs with the same handlers, in the stage folder's ``child``
    folder, to its end (``stack.child_autostart=false`` starts none). The
    context gets ``stack.child.status`` (``completed`` or ``failed``) and
    ``stack.child.outcome``. Between cycles the handler sleeps
    ``manager.poll_interval`` (default 45s) through ``sleep``.
    """

    def __init__(
        self, registry: HandlerRegistry, *, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self.registry = registry
        self.sleep = sleep

    def _child(self, plan: Plan, node: Node, context: Context, logs_root: Path) -> Outcome | None:
        from waygraph.pipelines.runner import run_pipeline

        child = (plan.attrs or {}).get("stack.child_dotfile", "")
        if not child:
            return Outcome(status="fail", failure_reason="the graph names no stack.child_dotfile")
        path = Path(child)
        if not path.is_absolute():
            path = Path(context.get_string("internal.pipeline_dir", ".")) / path
        result = run_pipeline(
            path,
            handlers=self.registry,
            logs=stage_dir(logs_root, node.id) / "child",
            sleep=self.sleep,
        )
        context.set("stack.child.status", "completed" if result.status == "success" else "failed")
        context.set("stack.child.outcome", result.outcome.status)
        context.set("stack.child.run_id", result.run_id)
        return None

    def execute(self, node: Node, context: Context, plan: Plan, logs_root: Path) -> Outcome:
        """Run and observe the child pipeline until it ends or the loop stops."""
        attrs = node.attrs or {}
        try:
            poll = duration(attrs.get("manager.poll_interval", "45s"))
            cycles = int(attrs.get("manager.max_cycles", "1000"))
        except (PlanFormatError, ValueError) as exc:
            return Outcome(status="fail", failure_reason=f"bad manager attribute: {exc}")
        stop = attrs.get("manager.stop_condition", "")
        actions = {a.strip() for a in attrs.get("manager.actions", "observe,wait").split(",")}
        autostart = attrs.get("stack.child_autostart", "true").strip().lower() != "false"
        if autostart:
            refused = self._child(plan, node, context, logs_root)
            if refused is not None:
                return refused
        for _ in range(cycles):
            status = context.get_string("stack.child.status")
            if "observe" in actions and status in ("completed", "failed"):
                if context.get_string("stack.child.outcome") in ("success", "partial_success"):
                    return Outcome(status="success", notes="Child completed")
                if status == "failed":
                    return Outcome(status="fail", failure_reason="Child failed")
            snapshot = context.snapshot()
            if stop and evaluate_condition(stop, outcome="", preferred_label="", context=snapshot):
                return Outcome(status="success", notes="Stop condition satisfied")
            if "wait" in actions:
                self.sleep(poll)
        return Outcome(status="fail", failure_reason="Max cycles exceeded")
