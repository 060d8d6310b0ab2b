"""A plan library that learns from its runs (docs/learning.md).

- :func:`waygraph.learning.suggest.suggest`: new plans from groups of alike
  completed runs that had no library plan (``waygraph library suggest``).
- :mod:`waygraph.learning.samples`: those runs read back from a store and a
  workspace.

Example:
    >>> from waygraph.learning import suggest
    >>> suggest([])
    []
"""

from waygraph.learning.samples import Sample, SampleStep, session_samples, store_samples
from waygraph.learning.suggest import Suggestion, group_runs, suggest, words

__all__ = [
    "Sample",
    "SampleStep",
    "Suggestion",
    "group_runs",
    "session_samples",
    "store_samples",
    "suggest",
    "words",
]
