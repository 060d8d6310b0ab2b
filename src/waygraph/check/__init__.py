"""Graph validation: problems with a code, a level and a location.

:func:`check_plan` reads a plan the way the engine will run it and reports
every :class:`Problem` it finds. Errors are plans the engine cannot run as
written (a missing start, an edge to nowhere, a verify with nothing to check);
:func:`waygraph.load_library` refuses them. Warnings are plans that run but
probably not as meant (a trap, an edge that is never followed); they never
stop loading. :data:`CODES` lists every code with its level and meaning, so
docs and the CLI can show the table.

The edge analysis follows the engine's rules (DESIGN.md, "Engine
semantics"): which edge wins for each outcome, and which therefore can never
be followed. Edges with ``on_event`` are left out of it (event-driven runs
pick them by event type), and so are plans with ``join: all`` nodes (DAG
runs fan out over every successor).

Every check is linear in the size of the graph.

Example:
    >>> from waygraph.check import check_plan
    >>> from waygraph.model import Plan
    >>> plan = Plan.model_validate({"id": "deploy", "triggers": ["deploy app"],
    ...     "trigger_threshold": 1, "graph": {"start": "start", "nodes": {
    ...         "start": {"type": "start"},
    ...         "ship": {"type": "task", "verify": {"type": "exit_code"}},
    ...         "done": {"type": "exit"}},
    ...     "edges": [{"from": "start", "to": "ship"}, {"from": "ship", "to": "dnoe"}]}})
    >>> for p in check_plan(plan):
    ...     print(p.level, p.code, p.node or p.edge)
    error verify-needs-value ship
    error unknown-node ship -> dnoe (always)
    warning unreachable done
    warning trap start
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from waygraph._extras import lazy_names

if TYPE_CHECKING:
    from waygraph.check._codes import CODES, Level
    from waygraph.check._kinds import check_generated_plan, check_state_machine
    from waygraph.check._plan import check_library, check_plan
    from waygraph.check._problem import Problem

# Loaded on first use (PEP 562): `waygraph check --help` and the light parts of
# the package (the codes, a problem, reading a plan file) need no graph model.
_LAZY = {
    "CODES": "waygraph.check._codes",
    "Level": "waygraph.check._codes",
    "Problem": "waygraph.check._problem",
    "check_generated_plan": "waygraph.check._kinds",
    "check_library": "waygraph.check._plan",
    "check_plan": "waygraph.check._plan",
    "check_state_machine": "waygraph.check._kinds",
}

__all__ = [
    "CODES",
    "Level",
    "Problem",
    "check_generated_plan",
    "check_library",
    "check_plan",
    "check_state_machine",
]


__getattr__, __dir__ = lazy_names(globals(), _LAZY)
