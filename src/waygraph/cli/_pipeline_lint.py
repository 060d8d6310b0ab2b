"""``waygraph check`` on a DOT file also runs the Attractor lint (specification §7).

Each :class:`~waygraph.pipelines.lint.Diagnostic` becomes a check
:class:`~waygraph.check.Problem` whose code is the specification's rule id
(``start_node``, ``reachability``, ...; waygraph's own codes use hyphens, so
the two never collide) and whose level is the diagnostic's severity (an
``info`` note is shown as a warning: the check table has two levels). The
line of the node or edge, when the reader knows it, leads the message, as it
does for the reader's own problems, and the suggested fix ends it.

Example:
    >>> from pathlib import Path
    >>> from waygraph.formats.dot import read_dot
    >>> report = read_dot("digraph p { start [shape=Mdiamond]; work [prompt=x];\\n"
    ...                   "lost [prompt=y]; start -> work }")
    >>> [(p.code, p.level, p.node) for p in lint_problems(report, Path("p.dot"))]
    [('terminal_node', 'error', None), ('reachability', 'error', 'lost')]
"""

from __future__ import annotations

from pathlib import Path

from waygraph.check import Problem
from waygraph.formats.dot import DotReport
from waygraph.pipelines.lint import validate, with_lines

__all__ = ["lint_problems"]


def lint_problems(report: DotReport, file: Path) -> list[Problem]:
    """The Attractor lint findings of a DOT file that read without errors.

    Example: see the module docstring.
    """
    plan = report.plan
    if plan is None:
        return []  # the reader's errors already say why there is no plan to lint
    diagnostics = with_lines(validate(plan), plan, report.node_lines, report.edge_lines)
    problems = []
    for d in diagnostics:
        message = d.message if d.line is None else f"line {d.line}: {d.message}"
        if d.fix:
            message += f"; fix: {d.fix}"
        problems.append(
            Problem(
                d.rule,
                "error" if d.severity == "error" else "warning",
                message,
                file=str(file),
                plan=plan.id,
                node=d.node_id,
                edge=f"{d.edge[0]} -> {d.edge[1]}" if d.edge is not None else None,
                field=d.field,
            )
        )
    return problems
