"""Reviewable tuning proposals for a plan library, from the runs a store kept.

``waygraph tune`` reads the guided runs of a store (:mod:`waygraph.learning.runs`)
and, with the completed generated runs and session plans that had no library
plan (:mod:`waygraph.learning.samples`), proposes changes to the library, each
with the evidence behind it. Nothing is changed until a proposal is applied
(:mod:`waygraph.learning.tune_apply`), and then only in a copy.

Only runs of the library's current version of a plan count (the content hash
each run records): once a tuned library is in use, the runs of the old plans
stop counting, so a proposal never repeats itself. Graph plans only for node
proposals (a linear plan's steps have no retry budget or edges to tune).

The rules, and the least evidence each needs (``min_runs`` is ``--min-runs``,
default :data:`MIN_RUNS`; the shares are module constants):

- ``raise-max-retries``: a task node with at least one retry, visited at
  least ``min_runs`` times, where at least :data:`LAST_SUCCESS_SHARE` of the
  visits succeed on the last allowed attempt, that last attempt succeeds at
  least :data:`LAST_ATTEMPT_RATE` of the time it is tried, and at least
  :data:`EXHAUSTED_SHARE` of the visits use up their attempts: one more
  attempt would likely have saved some of those. Proposes one retry more.
- ``lower-max-retries``: a task node with retries whose attempts past some
  number never succeeded, although at least half of ``min_runs`` visits
  (:data:`FUTILE_OF_MIN_RUNS`, at least 3) tried the first of them:
  proposes the retries that ever paid off.
- ``add-escalation-edge``: a task node with no failure edge out (in a
  plan with at least ``min_runs`` finished runs) where at least a quarter of ``min_runs`` runs
  (:data:`FEW_OF_MIN_RUNS`, at least 3), and :data:`STALL_SHARE` of
  the runs that entered it, stalled (the engine found no edge to leave by) or
  ended expired there after failing: proposes an ``on_exhaust`` edge
  (``on_fail`` for a node without retries) to a new escalate node that asks
  a person.
- ``raise-trigger-threshold``: a plan activated by messages at least
  ``min_runs`` times, of which at least :data:`FALSE_SHARE` (and a quarter
  of ``min_runs``, at least 3) were false activations (expired or aborted with
  no verdict at all, :attr:`~waygraph.learning.runs.RunFacts.false_activation`),
  when one more trigger hit would have kept out at least half of those and
  at most :data:`MAX_LOST_SHARE` of the good runs.
- ``lower-trigger-threshold`` and ``add-trigger``: see
  :mod:`waygraph.learning.tune_triggers`.
- ``raise-semantic-threshold`` and ``lower-semantic-threshold``: the
  library's threshold for starting plans by meaning (``_meta``); see
  :mod:`waygraph.learning.tune_semantic`.

Example:
    >>> from waygraph.library import load_library
    >>> from waygraph.store import open_store
    >>> tune(open_store("memory://"), load_library())
    []
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

from waygraph.guided.versions import plan_version
from waygraph.learning.runs import RunFacts, Visit, guided_runs
from waygraph.learning.samples import Sample
from waygraph.library import Library
from waygraph.model import Node, Plan
from waygraph.store import Store

__all__ = ["KINDS", "MIN_RUNS", "Proposal", "ProposalEvidence", "ProposalKind", "tune"]

#: Runs of a plan (or visits of a node) before any proposal about it.
MIN_RUNS = 20
#: raise-max-retries: visits that succeed on the last allowed attempt.
LAST_SUCCESS_SHARE = 0.2
#: raise-max-retries: how often the last attempt succeeds when it is made.
LAST_ATTEMPT_RATE = 0.5
#: raise-max-retries: visits that use up their attempts.
EXHAUSTED_SHARE = 0.1
#: lower-max-retries: visits (as a share of ``min_runs``, at least 3) that must have
#: tried an attempt that never paid off.
FUTILE_OF_MIN_RUNS = 0.5
#: add-escalation-edge and raise-trigger-threshold: the least number of stuck runs or
#: false activations, as a share of ``min_runs`` (at least 3).
FEW_OF_MIN_RUNS = 0.25
#: add-escalation-edge: stuck runs' share of the runs that entered the node.
STALL_SHARE = 0.1
#: raise-trigger-threshold: false activations among activations.
FALSE_SHARE = 0.3
#: raise-trigger-threshold: good runs a higher threshold may keep out, at most.
MAX_LOST_SHARE = 0.1
#: Example run ids and messages kept per proposal.
EXAMPLES = 5

ProposalKind = Literal[
    "raise-semantic-threshold",
    "lower-semantic-threshold",
    "raise-trigger-threshold",
    "lower-trigger-threshold",
    "add-trigger",
    "raise-max-retries",
    "lower-max-retries",
    "add-escalation-edge",
]
KINDS: tuple[str, ...] = get_args(ProposalKind)


class ProposalEvidence(BaseModel):
    """What a proposal rests on: counts, shares, and a few example runs and messages."""

    model_config = ConfigDict(extra="forbid")

    counts: dict[str, int] = Field(default_factory=dict)
    shares: dict[str, float] = Field(default_factory=dict)
    runs: list[str] = Field(default_factory=list)
    messages: list[str] = Field(default_factory=list)


class Proposal(BaseModel):
    """One change to one plan (``node`` for node changes), with its evidence and reason.

    ``current`` and ``proposed`` are the values in the plan now and after the
    change (for ``add-escalation-edge`` the edge and the node it leads to).
    ``id`` names it for ``--only``: ``plan[:node]:kind``.
    """

    model_config = ConfigDict(extra="forbid")

    plan: str
    node: str | None = None
    kind: ProposalKind
    current: Any = None
    proposed: Any = None
    evidence: ProposalEvidence = Field(default_factory=ProposalEvidence)
    reason: str

    @model_validator(mode="before")
    @classmethod
    def _drop_id(cls, data: Any) -> Any:
        # ``id`` is derived: a proposal read back from ``--json`` carries it.
        if isinstance(data, dict) and "id" in data:
            data = {k: v for k, v in data.items() if k != "id"}
        return data

    @computed_field  # type: ignore[prop-decorator]
    @property
    def id(self) -> str:
        """``plan:node:kind``, or ``plan:kind`` for a plan-wide change."""
        return ":".join(p for p in (self.plan, self.node, self.kind) if p)


def _share(part: int, whole: int) -> float:
    return round(part / whole, 3) if whole else 0.0


def _least(min_runs: int, share: float) -> int:
    """An absolute minimum of evidence: ``share`` of ``min_runs``, and never under 3."""
    return max(3, int(min_runs * share))


def _limit(node: Node) -> int | None:
    return None if node.max_retries is None else 1 + node.max_retries


def _retry_proposals(
    plan: Plan, node: Node, visits: Sequence[tuple[str, Visit]], min_runs: int
) -> list[Proposal]:
    limit = _limit(node)
    if limit is None or node.max_retries is None or node.max_retries < 1 or len(visits) < min_runs:
        return []
    n = len(visits)
    reached = Counter[int]()
    succeeded = Counter[int]()
    exhausted: list[str] = []
    for run, visit in visits:
        for attempt in {a for a, _ in visit.verdicts}:
            reached[attempt] += 1
        won = visit.success_attempt
        if won is not None:
            succeeded[won] += 1
        elif visit.exhausted or any(o == "fail" and a >= limit for a, o in visit.verdicts):
            exhausted.append(run)
    last_wins = succeeded[limit]
    counts = {
        "visits": n,
        "exhausted": len(exhausted),
        "last_attempt_tried": reached[limit],
        "last_attempt_succeeded": last_wins,
    }
    if (
        last_wins >= LAST_SUCCESS_SHARE * n
        and last_wins >= LAST_ATTEMPT_RATE * reached[limit]
        and len(exhausted) >= EXHAUSTED_SHARE * n
    ):
        examples = [r for r, v in visits if v.success_attempt == limit]
        shares = {
            "last_attempt_success_of_visits": _share(last_wins, n),
            "last_attempt_success_rate": _share(last_wins, reached[limit]),
            "exhausted_of_visits": _share(len(exhausted), n),
        }
        evidence = ProposalEvidence(counts=counts, shares=shares, runs=examples[:3] + exhausted[:2])
        why = (
            f"{last_wins} of {n} visits succeeded only on the last allowed attempt ({limit}) "
            f"and {len(exhausted)} ran out of attempts, so one more attempt would likely "
            "finish some of those."
        )
        return [_retries(plan, node, "raise-max-retries", node.max_retries + 1, evidence, why)]
    best = max(succeeded, default=1)
    futile = reached[best + 1]
    if best >= limit or futile < _least(min_runs, FUTILE_OF_MIN_RUNS):
        return []
    evidence = ProposalEvidence(
        counts={**counts, "tried_past_last_success": futile},
        runs=[r for r, v in visits if v.last_attempt > best][:EXAMPLES],
    )
    why = (
        f"{futile} visits went on to attempt {best + 1} or later and none of them passed "
        f"after attempt {best}, so retries past attempt {best} only delay the failure route."
    )
    return [_retries(plan, node, "lower-max-retries", best - 1, evidence, why)]


def _retries(
    plan: Plan, node: Node, kind: ProposalKind, proposed: int, evidence: ProposalEvidence, why: str
) -> Proposal:
    return Proposal(
        plan=plan.id,
        node=node.id,
        kind=kind,
        current=node.max_retries,
        proposed=proposed,
        evidence=evidence,
        reason=why,
    )


def _failure_exit(plan: Plan, node_id: str) -> bool:
    return any(
        e.condition in ("on_exhaust", "on_fail", "always") for e in plan.graph.out_edges(node_id)
    )


def _escalation_proposal(
    plan: Plan, node: Node, runs: Sequence[RunFacts], min_runs: int
) -> Proposal | None:
    entered = [r for r in runs if any(v.node == node.id for v in r.visits)]
    stuck = []
    for facts in entered:
        mine = [v for v in facts.visits if v.node == node.id]
        failed_last = bool(mine) and any(o == "fail" for _, o in mine[-1].verdicts)
        ended_here = facts.status == "expired" and facts.end_node == node.id and failed_last
        if any(v.stalled for v in mine) or ended_here:
            stuck.append(facts)
    few = _least(min_runs, FEW_OF_MIN_RUNS)
    if len(stuck) < few or len(stuck) < STALL_SHARE * len(entered):
        return None
    if len(runs) < min_runs:
        return None
    condition = "on_fail" if node.max_retries == 0 else "on_exhaust"
    target = f"escalate_{node.id}"
    n = 2
    while target in plan.graph.nodes:
        target, n = f"escalate_{node.id}_{n}", n + 1
    proposed: dict[str, Any] = {
        # With no retries a failure exhausts at once: check asks for on_fail then.
        "edge": {"from": node.id, "to": target, "condition": condition},
        "node": {
            "id": target,
            "type": "escalate",
            "name": f"{node.name or node.id} keeps failing",
            "reason": (
                f"{node.name or node.id} failed and the plan had no way on. Stop; tell the "
                "user what was tried and the last output, and ask how to continue."
            ),
        },
    }
    if node.max_retries is None:
        # Unbounded retries never exhaust: the edge needs a budget to be reached.
        proposed["max_retries"] = 2
    stalled = sum(1 for f in stuck if any(v.stalled for v in f.visits if v.node == node.id))
    return Proposal(
        plan=plan.id,
        node=node.id,
        kind="add-escalation-edge",
        current=None,
        proposed=proposed,
        evidence=ProposalEvidence(
            counts={
                "entered": len(entered),
                "stuck": len(stuck),
                "stalled": stalled,
                "expired_there": len(stuck) - stalled,
            },
            shares={"stuck_of_entered": _share(len(stuck), len(entered))},
            runs=[f.run for f in stuck[:EXAMPLES]],
        ),
        reason=(
            f"{len(stuck)} of {len(entered)} runs that reached {node.id} got stuck there "
            "after failing (no edge led on), so nobody was asked for help."
        ),
    )


def _threshold_proposal(plan: Plan, runs: Sequence[RunFacts], min_runs: int) -> Proposal | None:
    # Runs started by meaning hit no trigger: the semantic threshold answers for them.
    activations = [
        r for r in runs if r.started_by == "message" and r.matched_by == "phrase" and r.finished
    ]
    if len(activations) < min_runs:
        return None
    false = [r for r in activations if r.false_activation]
    good = [r for r in activations if r.completed]
    few = _least(min_runs, FEW_OF_MIN_RUNS)
    if len(false) < few or len(false) < FALSE_SHARE * len(activations):
        return None
    raised = plan.trigger_threshold + 1
    if raised > len(set(plan.triggers)):
        return None
    kept_out = [r for r in false if len(set(r.triggers)) < raised]
    lost = [r for r in good if len(set(r.triggers)) < raised]
    if len(kept_out) * 2 < len(false) or len(lost) > MAX_LOST_SHARE * max(len(good), 1):
        return None
    return Proposal(
        plan=plan.id,
        kind="raise-trigger-threshold",
        current=plan.trigger_threshold,
        proposed=raised,
        evidence=ProposalEvidence(
            counts={
                "activations": len(activations),
                "false_activations": len(false),
                "good_runs": len(good),
                "kept_out": len(kept_out),
                "good_lost": len(lost),
            },
            shares={"false_of_activations": _share(len(false), len(activations))},
            runs=[r.run for r in false[:EXAMPLES]],
            messages=[r.message for r in false if r.message][:EXAMPLES],
        ),
        reason=(
            f"{len(false)} of {len(activations)} activations ended with nothing done; "
            f"needing {raised} trigger hits would have kept out {len(kept_out)} of them "
            f"and {len(lost)} of {len(good)} runs that did work."
        ),
    )


def _current(library: Library, runs: Sequence[RunFacts]) -> dict[str, list[RunFacts]]:
    """The runs of each plan at the library's current version (or that recorded none)."""
    versions = {plan.id: plan_version(plan) for plan in library}
    by_plan: dict[str, list[RunFacts]] = defaultdict(list)
    for facts in runs:
        version = versions.get(facts.plan)
        if version is not None and facts.plan_version in (None, version):
            by_plan[facts.plan].append(facts)
    return by_plan


def tune(
    store: Store,
    library: Library,
    *,
    samples: Sequence[Sample] | None = None,
    min_runs: int = MIN_RUNS,
) -> list[Proposal]:
    """Proposals for ``library`` from the runs in ``store`` (see the module docstring).

    ``samples``: the completed runs without a library plan to learn triggers
    from (default: the store's generated runs; add session plans with
    :func:`~waygraph.learning.samples.session_samples`). Same runs in, same
    proposals out, in library order.
    """
    from waygraph.learning.samples import store_samples
    from waygraph.learning.tune_semantic import semantic_proposals
    from waygraph.learning.tune_triggers import trigger_proposals

    if min_runs < 1:
        raise ValueError("min_runs must be at least 1")
    runs = sorted(guided_runs(store, plans=library.ids()), key=lambda r: (r.updated_at, r.run))
    by_plan = _current(library, runs)
    if samples is None:
        samples = store_samples(store)
    found: list[Proposal] = []
    for plan in library:
        mine = by_plan.get(plan.id, [])
        raised = _threshold_proposal(plan, mine, min_runs)
        if raised is not None:
            found.append(raised)
        if plan.linear:
            continue
        for node in plan.task_nodes():
            if node.type != "task":
                continue
            visits = [(r.run, v) for r in mine if r.finished for v in r.visits if v.node == node.id]
            found.extend(_retry_proposals(plan, node, visits, min_runs))
            if not _failure_exit(plan, node.id):
                stuck = _escalation_proposal(plan, node, [r for r in mine if r.finished], min_runs)
                if stuck is not None:
                    found.append(stuck)
    raised_plans = {p.plan for p in found if p.kind == "raise-trigger-threshold"}
    found.extend(trigger_proposals(library, by_plan, samples, skip=raised_plans))
    found.extend(semantic_proposals(library, by_plan, samples, min_runs, store_url=store.url))
    # Library-wide proposals (plan "_meta") first, then each plan's in library order.
    order = {plan_id: i for i, plan_id in enumerate(library.ids())}
    found.sort(key=lambda p: (order.get(p.plan, -1), KINDS.index(p.kind), p.node or ""))
    return found
