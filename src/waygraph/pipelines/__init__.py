"""Attractor pipelines: DOT workflows read, checked, guided and run as the specification says.

StrongDM's Attractor specification describes coding-agent pipelines as
Graphviz DOT files. waygraph reads them into its one plan model
(:func:`waygraph.formats.dot.parse_dot`, :func:`waygraph.load_library`), so a
Navigator guides an agent through one like any plan; this package holds what
is particular to running them: the condition language
(:mod:`~waygraph.pipelines.conditions`), stage outcomes
(:mod:`~waygraph.pipelines.outcome`) and the routing rules
(:mod:`~waygraph.pipelines.routing`). docs/dot.md is the user's guide.

Example:
    >>> from waygraph.pipelines import Outcome, evaluate_condition
    >>> evaluate_condition("outcome=success", outcome=Outcome(status="success").status)
    True
"""

from __future__ import annotations

from waygraph.pipelines.conditions import condition_problem, evaluate_condition
from waygraph.pipelines.outcome import STAGE_STATUSES, Outcome, StageStatus
from waygraph.pipelines.routing import handler_type, select_edge

__all__ = [
    "STAGE_STATUSES",
    "Outcome",
    "StageStatus",
    "condition_problem",
    "evaluate_condition",
    "handler_type",
    "select_edge",
]
