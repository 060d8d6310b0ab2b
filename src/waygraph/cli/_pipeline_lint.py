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

__all__ = ["SUPERSEDES", "lint_problems", "without_superseded"]

#: waygraph's own check codes that say the same as a specification rule: on a DOT
#: file, where the rule is reported, the code is left out for the same node or
#: edge, so a finding is listed once (at the specification's severity).
SUPERSEDES: dict[str, frozenset[str]] = {
    "reachability": frozenset({"unreachable"}),
    "start_node": frozenset({"no-start", "unknown-start", "multiple-starts"}),
    "start_no_incoming": frozenset({"start-has-incoming"}),
    "exit_no_outgoing": frozenset({"end-node-has-edges"}),
    "edge_target_exists": frozenset({"unknown-node"}),
}


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


def without_superseded(problems: list[Problem]) -> list[Problem]:
    """``problems`` without waygraph's findings that a specification rule already reports
    for the same file, plan and node (see :data:`SUPERSEDES`).

    Example:
        >>> spec = Problem("reachability", "error", "lost", file="p.dot", plan="p", node="x")
        >>> own = Problem("unreachable", "warning", "lost", file="p.dot", plan="p", node="x")
        >>> [p.code for p in without_superseded([spec, own])]
        ['reachability']
    """
    said = {(code, p.file, p.plan, p.node) for p in problems for code in SUPERSEDES.get(p.code, ())}
    return [p for p in problems if (p.code, p.file, p.plan, p.node) not in said]
