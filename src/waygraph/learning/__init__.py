"""A plan library that learns from its runs (docs/learning.md).

- :func:`waygraph.learning.suggest.suggest`: new plans from groups of alike
  completed runs that had no library plan (``waygraph library suggest``).
- :mod:`waygraph.learning.samples`: those runs read back from a store and a
  workspace.
- :func:`waygraph.learning.stats.plan_stats`: how each plan and node fares
  over the stored guided runs (``waygraph stats``).

Example:
    >>> from waygraph.learning import suggest
    >>> suggest([])
    []
"""

from waygraph.learning.samples import Sample, SampleStep, session_samples, store_samples
from waygraph.learning.stats import Statistics, plan_stats
from waygraph.learning.suggest import Suggestion, group_runs, suggest, words

__all__ = [
    "Sample",
    "SampleStep",
    "Statistics",
    "Suggestion",
    "group_runs",
    "plan_stats",
    "session_samples",
    "store_samples",
    "suggest",
    "words",
]
