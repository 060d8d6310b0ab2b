"""Threshold proposals for starting plans by meaning (``_meta.semantic_threshold``).

The threshold is the library's (:func:`waygraph.match.semantic.thresholds_of`), so
these proposals name no plan: their ``plan`` is :data:`LIBRARY_WIDE` and
applying one sets the library's ``_meta``. They are made only when some
stored run was started by meaning (its ``plan_activated`` event says
``matched_by: semantic`` and the similarity).

- ``raise-semantic-threshold``: at least ``min_runs`` finished runs started by
  meaning, of which at least :data:`~waygraph.learning.tune.FALSE_SHARE` (and
  a quarter of ``min_runs``, at least 3) were false activations (expired or
  aborted with no verdict at all). Proposes the lowest threshold, in steps of
  0.01, that would have kept out at least half of those and at most
  :data:`~waygraph.learning.tune.MAX_LOST_SHARE` of the runs that completed.
- ``lower-semantic-threshold``: at least
  :data:`~waygraph.learning.tune_triggers.MIN_SAMPLES` completed runs without
  a library plan (:mod:`waygraph.learning.samples`) whose goal came within
  :data:`LOWER_BY` below the threshold of one plan, clear of the others by the
  margin, and of that plan's kind (most of their words are the plan's:
  :data:`~waygraph.learning.tune_triggers.KIND_SHARE`), while runs started by
  meaning were rarely false (at most
  :data:`~waygraph.learning.tune_triggers.MAX_FALSE_SHARE`). Proposes the
  lowest of their similarities, rounded down to 0.01. Lowering never takes a
  message from the plan it starts now: the closest plan stays the closest.
  It needs the ``semantic`` extra (the goals are embedded); without it, or
  with a model that does not load, it is skipped with a warning.

Example:
    >>> from waygraph.library import load_library
    >>> semantic_proposals(load_library(), {}, [], 20)
    []
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence

from waygraph.errors import WaygraphError
from waygraph.learning.runs import RunFacts
from waygraph.learning.samples import Sample
from waygraph.learning.tune import (
    EXAMPLES,
    FALSE_SHARE,
    FEW_OF_MIN_RUNS,
    MAX_LOST_SHARE,
    Proposal,
    ProposalEvidence,
    _least,
)
from waygraph.learning.tune_triggers import (
    KIND_SHARE,
    MAX_FALSE_SHARE,
    MIN_SAMPLES,
    kind_share,
    plan_words,
    sample_run_id,
)
from waygraph.library import Library

__all__ = ["LIBRARY_WIDE", "LOWER_BY", "semantic_proposals"]

log = logging.getLogger("waygraph.learning")

#: The ``plan`` of a proposal about the library as a whole (its ``_meta``).
LIBRARY_WIDE = "_meta"
#: How far below the threshold a goal may be to count as a near miss.
LOWER_BY = 0.05


def _raise(runs: Sequence[RunFacts], threshold: float, min_runs: int) -> Proposal | None:
    if len(runs) < min_runs:
        return None
    false = [r for r in runs if r.false_activation]
    good = [r for r in runs if r.completed]
    if len(false) < _least(min_runs, FEW_OF_MIN_RUNS) or len(false) < FALSE_SHARE * len(runs):
        return None
    candidates = sorted(
        {math.floor((r.similarity or 0.0) * 100 + 1) / 100 for r in false} - {threshold}
    )
    for raised in (c for c in candidates if c > threshold):
        kept_out = [r for r in false if (r.similarity or 0.0) < raised]
        lost = [r for r in good if (r.similarity or 0.0) < raised]
        if len(kept_out) * 2 >= len(false) and len(lost) <= MAX_LOST_SHARE * max(len(good), 1):
            return Proposal(
                plan=LIBRARY_WIDE,
                kind="raise-semantic-threshold",
                current=threshold,
                proposed=raised,
                evidence=ProposalEvidence(
                    counts={
                        "activations_by_meaning": len(runs),
                        "false_activations": len(false),
                        "kept_out": len(kept_out),
                        "good_runs": len(good),
                        "good_runs_lost": len(lost),
                    },
                    shares={"false_of_activations": round(len(false) / len(runs), 3)},
                    runs=[r.run for r in kept_out[:EXAMPLES]],
                    messages=[r.message for r in kept_out if r.message][:EXAMPLES],
                ),
                reason=(
                    f"{len(false)} of {len(runs)} plans started by meaning ended with nothing "
                    f"done; a threshold of {raised:.2f} would have kept out {len(kept_out)} of "
                    f"them and {len(lost)} of {len(good)} runs that did work."
                ),
            )
    return None


def _lower(
    library: Library,
    runs: Sequence[RunFacts],
    samples: Sequence[Sample],
    threshold: float,
    store_url: str | None,
) -> Proposal | None:
    false = [r for r in runs if r.false_activation]
    if runs and len(false) > MAX_FALSE_SHARE * len(runs):
        return None
    goals = [s for s in samples if s.goal]
    if len(goals) < MIN_SAMPLES:
        return None
    try:
        from waygraph.match._semantic_cache import cache_dir_for
        from waygraph.match.semantic import SemanticMatcher

        matcher = SemanticMatcher(
            library, cache_dir=cache_dir_for(store_url), threshold=threshold - LOWER_BY
        )
        found = matcher.match_many([s.goal for s in goals])
    except (WaygraphError, ImportError, OSError) as exc:
        log.warning("waygraph tune: no semantic threshold proposal to lower it: %s", exc)
        return None
    vocabularies = {plan.id: plan_words(plan) for plan in library}
    near: list[tuple[Sample, float]] = []
    for sample, results in zip(goals, found, strict=True):
        if not results or results[0].similarity is None or results[0].similarity >= threshold:
            continue
        if kind_share(sample, vocabularies[results[0].plan_id]) >= KIND_SHARE:
            near.append((sample, results[0].similarity))
    if len(near) < MIN_SAMPLES:
        return None
    lowered = math.floor(min(s for _, s in near) * 100) / 100
    return Proposal(
        plan=LIBRARY_WIDE,
        kind="lower-semantic-threshold",
        current=threshold,
        proposed=lowered,
        evidence=ProposalEvidence(
            counts={
                "near_misses": len(near),
                "activations_by_meaning": len(runs),
                "false_activations": len(false),
            },
            runs=[sample_run_id(s) for s, _ in near[:EXAMPLES]],
            messages=[s.goal for s, _ in near[:EXAMPLES]],
        ),
        reason=(
            f"{len(near)} runs of a plan's kind went without it, their goals within "
            f"{LOWER_BY:.2f} below the threshold {threshold:.2f} of that plan's meaning, while "
            "plans started by meaning were rarely false."
        ),
    )


def semantic_proposals(
    library: Library,
    runs: Mapping[str, Sequence[RunFacts]],
    samples: Sequence[Sample],
    min_runs: int,
    *,
    store_url: str | None = None,
) -> list[Proposal]:
    """The semantic threshold proposals (see the module docstring), at most one.

    ``runs``: each plan's guided runs; ``samples``: completed runs without a
    library plan; ``store_url``: where the plan embeddings are cached.
    """
    from waygraph.match.semantic import thresholds_of

    meaning = [
        r
        for plan_runs in runs.values()
        for r in plan_runs
        if r.matched_by == "semantic" and r.similarity is not None and r.finished
    ]
    if not meaning:
        return []
    try:
        threshold, _ = thresholds_of(library)
    except WaygraphError as exc:
        log.warning("waygraph tune: %s", exc)
        return []
    raised = _raise(meaning, threshold, min_runs)
    if raised is not None:
        return [raised]
    lowered = _lower(library, meaning, samples, threshold, store_url)
    return [] if lowered is None else [lowered]
