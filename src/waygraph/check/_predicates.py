"""The predicate checks of ``waygraph check``: a verify or ``when`` tree the engine can evaluate.

Each check's spec (:mod:`waygraph.verify_types`) says what its fields need:
the value its type needs, children for groups, a command for a gate. Every
regular expression (a ``regex`` check's ``value``, any check's
``command_matches``) compiles the way verification compiles it
(:func:`waygraph.sandbox.patterns.compile_pattern`) and cannot backtrack for long.
Run by the plan checker (:mod:`waygraph.check._plan`) on every tree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from waygraph.verify_types import VERIFY_TYPES
from waygraph.verify_types._lint import check_regex

if TYPE_CHECKING:
    from waygraph.check._scan import PlanScan
    from waygraph.model import Edge, Verify


def check_predicate(
    scan: PlanScan, root: Verify, path: str, *, node: str | None = None, edge: Edge | None = None
) -> None:
    """Check ``root`` and every nested check (iteratively: nesting depth is the user's).

    Each check's own fields are its spec's to judge (``VerifySpec.validate``);
    ``command_matches``, which any check may carry, is checked here.
    """
    stack: list[tuple[Verify, str]] = [(root, path)]
    while stack:
        v, at = stack.pop()

        def report(code: str, message: str, field: str, at: str = at) -> None:
            scan.add(code, message, node=node, edge=edge, field=f"{at}.{field}")

        spec = VERIFY_TYPES.get(v.type)
        if spec is not None and spec.validate is not None:
            spec.validate(v, report)
        # Reversed so nested checks are reported in file order.
        for name in reversed(spec.nested if spec is not None else ()):
            children = getattr(v, name)
            if isinstance(children, tuple):
                for i in range(len(children) - 1, -1, -1):
                    stack.append((children[i], f"{at}.{name}.{i}"))
            elif children is not None:
                stack.append((children, f"{at}.{name}"))
        if v.command_matches is not None:
            # Searched in the command the host reports, with no flags, like any
            # plan pattern: a bad one would leave every piece of evidence unknown.
            check_regex(
                v.command_matches, None, report, field="command_matches", what="command_matches"
            )
