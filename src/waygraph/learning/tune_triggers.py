"""Trigger proposals: goals the library's plans should have caught and did not.

The evidence is the completed runs that had no library plan (generated plans
in the store, session plans in a workspace: :mod:`waygraph.learning.samples`)
whose goal activates no plan. Such a run is **of a plan's kind** when most of
its words (goal and steps, as :func:`~waygraph.learning.suggest.signature`
reads them) are words of the plan: its name, description, goal, triggers,
task nodes' names, actions and tools, and the messages that started its runs
that did work. At least :data:`KIND_SHARE` of them must be, on average.

- ``add-trigger``: a group of at least :data:`MIN_SAMPLES` alike runs
  (grouped as ``library suggest`` groups them) of one plan's kind, none hit
  enough of its triggers. Proposes the phrases their goals share
  (:func:`~waygraph.learning.suggest.trigger_phrases`) when they would have
  activated the plan for at least half of those goals and would not take any
  message that started another plan's working run away from it.
- ``lower-trigger-threshold``: at least :data:`MIN_SAMPLES` runs of a plan's
  kind that hit exactly one trigger too few, while the plan's own
  activations were rarely false (at most :data:`MAX_FALSE_SHARE`), and the
  lower threshold takes no other plan's messages.

Example:
    >>> from waygraph.library import load_library
    >>> trigger_proposals(load_library(), {}, [])
    []
"""

from __future__ import annotations

import statistics
from collections.abc import Collection, Mapping, Sequence

from waygraph.learning.runs import RunFacts
from waygraph.learning.samples import Sample
from waygraph.learning.suggest import group_runs, signature, trigger_phrases, words
from waygraph.learning.tune import EXAMPLES, Proposal, ProposalEvidence
from waygraph.library import Library
from waygraph.match import Matcher
from waygraph.model import Plan

__all__ = [
    "KIND_SHARE",
    "MIN_SAMPLES",
    "kind_share",
    "plan_words",
    "sample_run_id",
    "trigger_proposals",
]

#: Runs (of a plan's kind, without a plan) a trigger proposal needs.
MIN_SAMPLES = 3
#: Mean share of a run's words that must be the plan's words.
KIND_SHARE = 0.5
#: lower-trigger-threshold: false activations the plan may have, at most.
MAX_FALSE_SHARE = 0.1


def plan_words(plan: Plan, messages: Sequence[str] = ()) -> frozenset[str]:
    """The words a plan's kind of goal is told by (see the module docstring).

    Example:
        >>> from waygraph.library import load_library
        >>> {"bug", "reproduce", "tool:code_execution_tool"} <= plan_words(
        ...     load_library()["bugfix_workflow"])
        True
    """
    texts = [plan.name, plan.description or "", plan.goal or "", *plan.triggers, *messages]
    found = set()
    for node in plan.task_nodes():
        texts.extend((node.name, node.action or "", node.description or ""))
        if node.tool:
            found.add("tool:" + node.tool)
    for text in texts:
        found |= words(text)
    return frozenset(found)


def sample_run_id(sample: Sample) -> str:
    """``source:run``, once (a session sample's run id starts with its source already).

    Example:
        >>> sample_run_id(Sample("dag", "r1", "fix the login bug", ()))
        'dag:r1'
    """
    prefix = f"{sample.source}:"
    return sample.run if sample.run.startswith(prefix) else prefix + sample.run


def kind_share(sample: Sample, vocabulary: frozenset[str]) -> float:
    """The share of a run's words (goal and steps) that are in ``vocabulary``.

    Example:
        >>> round(kind_share(Sample("dag", "r1", "fix the login bug", ()),
        ...                  frozenset({"bug", "login"})), 2)
        0.67
    """
    mine = signature(sample)
    return len(mine & vocabulary) / len(mine) if mine else 0.0


def _with(library: Library, plan: Plan) -> Library:
    return Library([plan if p.id == plan.id else p for p in library], meta=library.meta)


def _taken(library: Library, changed: Plan, started: Sequence[tuple[str, str]]) -> list[str]:
    """The messages that started another plan's working run and would start ``changed`` now."""
    matcher = Matcher(_with(library, changed))
    taken = []
    for plan_id, message in started:
        if plan_id == changed.id:
            continue
        best = matcher.best(message)
        if best is not None and best.plan_id == changed.id:
            taken.append(message)
    return taken


def _lower(
    library: Library,
    matcher: Matcher,
    plan: Plan,
    runs: Sequence[RunFacts],
    unmatched: Sequence[Sample],
    vocabulary: frozenset[str],
    started: Sequence[tuple[str, str]],
) -> Proposal | None:
    if plan.trigger_threshold < 2:
        return None
    near = []
    for sample in unmatched:
        hit = next((m for m in matcher.match(sample.goal) if m.plan_id == plan.id), None)
        if hit is None or len(set(hit.hits)) != plan.trigger_threshold - 1:
            continue
        if kind_share(sample, vocabulary) >= KIND_SHARE:
            near.append(sample)
    if len(near) < MIN_SAMPLES:
        return None
    activations = [
        r for r in runs if r.started_by == "message" and r.matched_by == "phrase" and r.finished
    ]
    false = [r for r in activations if r.false_activation]
    if activations and len(false) > MAX_FALSE_SHARE * len(activations):
        return None
    lowered = plan.model_copy(update={"trigger_threshold": plan.trigger_threshold - 1})
    if _taken(library, lowered, started):
        return None
    return Proposal(
        plan=plan.id,
        kind="lower-trigger-threshold",
        current=plan.trigger_threshold,
        proposed=plan.trigger_threshold - 1,
        evidence=ProposalEvidence(
            counts={
                "near_misses": len(near),
                "activations": len(activations),
                "false_activations": len(false),
                "taken_from_other_plans": 0,
            },
            runs=[sample_run_id(s) for s in near[:EXAMPLES]],
            messages=[s.goal for s in near[:EXAMPLES]],
        ),
        reason=(
            f"{len(near)} runs of this plan's kind went without it, each one trigger hit "
            f"short of {plan.trigger_threshold}, while its own activations were rarely false."
        ),
    )


def _add(
    library: Library,
    group: Sequence[Sample],
    vocabularies: Mapping[str, frozenset[str]],
    started: Sequence[tuple[str, str]],
) -> Proposal | None:
    scored = [
        (statistics.fmean(kind_share(s, vocabularies[p.id]) for s in group), -i, p)
        for i, p in enumerate(library)
    ]
    share, _, plan = max(scored, key=lambda item: item[:2])
    if share < KIND_SHARE:
        return None
    goals = [s.goal for s in group]
    have = {t.lower() for t in plan.triggers}
    new = [t for t in trigger_phrases(goals) if t.lower() not in have]
    if not new:
        return None
    added = plan.model_copy(update={"triggers": (*plan.triggers, *new)})
    matcher = Matcher(_with(library, added))
    caught = [g for g in goals if (m := matcher.best(g)) is not None and m.plan_id == plan.id]
    if len(caught) * 2 < len(goals) or _taken(library, added, started):
        return None
    return Proposal(
        plan=plan.id,
        kind="add-trigger",
        current=list(plan.triggers),
        proposed=[*plan.triggers, *new],
        evidence=ProposalEvidence(
            counts={
                "runs_without_plan": len(group),
                "would_activate": len(caught),
                "taken_from_other_plans": 0,
            },
            shares={"words_of_plan": round(share, 3)},
            runs=[sample_run_id(s) for s in group[:EXAMPLES]],
            messages=goals[:EXAMPLES],
        ),
        reason=(
            f"{len(group)} alike runs of this plan's kind ran without it because no trigger "
            f"caught their goals; {', '.join(repr(t) for t in new)} would have caught "
            f"{len(caught)} of them."
        ),
    )


def trigger_proposals(
    library: Library,
    runs: Mapping[str, Sequence[RunFacts]],
    samples: Sequence[Sample],
    *,
    skip: Collection[str] = (),
) -> list[Proposal]:
    """``add-trigger`` and ``lower-trigger-threshold`` proposals (see the module docstring).

    ``runs``: each plan's guided runs; ``samples``: completed runs without a
    library plan; ``skip``: plans whose threshold is proposed to go up.
    """
    matcher = Matcher(library)
    unmatched = [s for s in samples if s.goal and matcher.best(s.goal) is None]
    if len(unmatched) < MIN_SAMPLES:
        return []
    worked = {
        plan_id: [r.message for r in plan_runs if r.message and r.completed]
        for plan_id, plan_runs in runs.items()
    }
    started = [(plan_id, m) for plan_id, messages in worked.items() for m in messages]
    vocabularies = {p.id: plan_words(p, worked.get(p.id, ())) for p in library}
    found = []
    for plan in library:
        if plan.id in skip:
            continue
        lowered = _lower(
            library, matcher, plan, runs.get(plan.id, ()), unmatched, vocabularies[plan.id], started
        )
        if lowered is not None:
            found.append(lowered)
    lowered_plans = {p.plan for p in found}
    for group in sorted(group_runs(unmatched), key=len, reverse=True):
        if len(group) < MIN_SAMPLES:
            continue
        proposal = _add(library, group, vocabularies, started)
        if proposal is not None and proposal.plan not in lowered_plans:
            # One add-trigger per plan: the biggest group of its kind goes first.
            lowered_plans.add(proposal.plan)
            found.append(proposal)
    return found
