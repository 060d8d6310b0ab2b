"""A plan library that learns from its runs (docs/learning.md).

- :func:`waygraph.learning.suggest.suggest`: new plans from groups of alike
  completed runs that had no library plan (``waygraph library suggest``).
- :mod:`waygraph.learning.samples`: those runs read back from a store and a
  workspace.
- :func:`waygraph.learning.stats.plan_stats`: how each plan and node fares
  over the stored guided runs (``waygraph stats``).
- :func:`waygraph.learning.tune.tune`: reviewable changes to the library's
  plans from their guided runs (``waygraph tune``), read as
  :class:`~waygraph.learning.runs.RunFacts` by
  :mod:`waygraph.learning.runs`; :mod:`waygraph.learning.tune_apply` applies
  them to a copy.

Example:
    >>> from waygraph.learning import suggest
    >>> suggest([])
    []
"""

from waygraph.learning.runs import RunFacts, Visit, guided_runs
from waygraph.learning.samples import Sample, SampleStep, session_samples, store_samples
from waygraph.learning.stats import Statistics, plan_stats
from waygraph.learning.suggest import Suggestion, group_runs, suggest, words
from waygraph.learning.tune import Proposal, ProposalEvidence, tune
from waygraph.learning.tune_apply import apply_proposals, write_library

__all__ = [
    "Proposal",
    "ProposalEvidence",
    "RunFacts",
    "Sample",
    "SampleStep",
    "Statistics",
    "Suggestion",
    "Visit",
    "apply_proposals",
    "group_runs",
    "guided_runs",
    "plan_stats",
    "session_samples",
    "store_samples",
    "suggest",
    "tune",
    "words",
    "write_library",
]
