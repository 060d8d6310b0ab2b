"""The predicate checks of ``waygraph check``: a verify or ``when`` tree the engine can evaluate.

Each leaf has the value its type needs, groups have their children, a
command gate has its command, and every regular expression (a ``regex``
check's ``value``, any check's ``command_matches``) compiles the way
verification compiles it (:func:`waygraph.patterns.compile_pattern`) and
cannot backtrack for long. A mixin of :class:`waygraph.check._PlanChecker`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import regex

from waygraph._check_codes import Reports
from waygraph.patterns import FLAGS, MATCH_TIMEOUT, compile_pattern, nested_quantifier

if TYPE_CHECKING:
    from waygraph.model import Edge, Verify

Report = Callable[[str, str, str], None]

_TEXT_VALUE_TYPES = {
    "output_contains": "the text the output must contain",
    "output_not_contains": "the text the output must not contain",
    "regex": "the pattern to search the output for",
    "file_exists": "the path, relative to the workspace",
}


class PredicateChecks(Reports):
    """Checks of verify and ``when`` trees (a mixin of the plan checker)."""

    def check_predicate(
        self, root: Verify, path: str, *, node: str | None = None, edge: Edge | None = None
    ) -> None:
        """Check ``root`` and every nested check (iteratively: nesting depth is the user's)."""
        stack: list[tuple[Verify, str]] = [(root, path)]

        def report(code: str, message: str, field: str) -> None:
            self.add(code, message, node=node, edge=edge, field=field)

        while stack:
            v, at = stack.pop()
            kind, value = v.type, v.value
            if kind in _TEXT_VALUE_TYPES:
                # file_exists strips its path; the text checks take the value as written.
                text = value.strip() if kind == "file_exists" and isinstance(value, str) else value
                if not isinstance(value, str) or not text:
                    got = "is missing" if value is None else f"is {value!r}"
                    report(
                        "verify-needs-value",
                        f"{kind} needs a non-empty string `value` ({_TEXT_VALUE_TYPES[kind]}); "
                        f"it {got}",
                        f"{at}.value",
                    )
                elif kind == "regex":
                    check_regex(value, v.flags, report, at=at, field="value", what="the regex")
            elif kind == "exit_code":
                if isinstance(value, bool) or not isinstance(value, int):
                    got = "is missing" if value is None else f"is {value!r}"
                    report(
                        "verify-needs-value",
                        "exit_code needs an integer `value` (the expected exit code, written "
                        f"without quotes); it {got}",
                        f"{at}.value",
                    )
            elif kind in ("all", "any", "not"):
                children = v.checks or ()
                if kind == "not" and len(children) != 1:
                    report(
                        "verify-needs-checks",
                        f"not needs exactly one check in `checks`; it has {len(children)} "
                        "(wrap several in all or any)",
                        f"{at}.checks",
                    )
                elif kind != "not" and not children:
                    result = "passes" if kind == "all" else "fails"
                    report(
                        "verify-needs-checks",
                        f"{kind} needs at least one check in `checks`; empty, it always {result}",
                        f"{at}.checks",
                    )
                # Reversed so children are reported in file order.
                for i in range(len(children) - 1, -1, -1):
                    stack.append((children[i], f"{at}.checks.{i}"))
            elif kind == "compare":
                missing = [name for name in ("field", "op") if not getattr(v, name)]
                if missing:
                    report(
                        "verify-needs-field",
                        "compare needs `field` (a path in the event data, e.g. data.count) "
                        "and `op` (==, !=, >, >=, <, <=, in, not in, contains); "
                        f"{' and '.join(missing)} missing",
                        f"{at}.{missing[0]}",
                    )
            elif kind == "command":
                run = v.run.strip() if isinstance(v.run, str) else ""
                if not run:
                    report(
                        "verify-needs-run",
                        "a command gate needs `run`, the command waygraph runs in the "
                        "workspace (for example `pytest -q`)",
                        f"{at}.run",
                    )
                else:
                    report(
                        "command-gate",
                        f"this plan runs `{run}` on the user's machine when the check is "
                        "reached; it runs only where the user allowed commands "
                        "(allow_commands=True, --allow-commands), elsewhere the check is "
                        "unknown and the run waits",
                        f"{at}.run",
                    )
                if v.expect is not None:
                    stack.append((v.expect, f"{at}.expect"))
            elif kind == "truthy" and not v.field:
                report(
                    "verify-needs-field",
                    "truthy needs `field`, the path in the event data that must be set "
                    "(e.g. data.approved)",
                    f"{at}.field",
                )
            if v.command_matches is not None:
                # Searched in the command the host reports, with no flags, like any
                # plan pattern: a bad one would leave every piece of evidence unknown.
                check_regex(
                    v.command_matches,
                    None,
                    report,
                    at=at,
                    field="command_matches",
                    what="command_matches",
                )


def check_regex(
    pattern: str, flags: str | None, report: Report, *, at: str, field: str, what: str
) -> None:
    """Report ``pattern`` (at ``at.field``) when it does not compile or can backtrack
    for long, and ``flags`` (at ``at.flags``) when it has a letter not in imsx.

    ``what`` names the pattern in messages (``the regex``, ``command_matches``).
    """
    bad = sorted({letter for letter in flags or "" if letter not in FLAGS})
    if bad:
        report(
            "bad-regex-flags",
            f"unknown regex flag(s) {''.join(bad)!r} in {flags!r}; use only i (ignore "
            "case), m (multiline), s (dot matches newline), x (verbose)",
            f"{at}.flags",
        )
        return
    try:
        compile_pattern(pattern, flags)
    except regex.error as exc:
        # types-regex leaves out the pos and msg that regex.error sets (like re.error).
        pos: int | None = exc.pos  # type: ignore[attr-defined]
        msg: str = exc.msg  # type: ignore[attr-defined]
        where = f" at position {pos}" if pos is not None else ""
        report("bad-regex", f"{what} does not compile: {msg}{where}", f"{at}.{field}")
        return
    if nested_quantifier(pattern):
        report(
            "regex-backtracking",
            f"{what} repeats a group that itself repeats (like (a+)+), which can take "
            "exponential time on text that almost matches; waygraph stops such a match "
            f"after {MATCH_TIMEOUT:g}s and the check is then unknown. Make the inner part "
            "match one way only (for example (a+)+ -> a+)",
            f"{at}.{field}",
        )
