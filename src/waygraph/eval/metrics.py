"""Success rates, per-mode summaries, and the guided-minus-baseline difference with its 95% CI.

The interval for a difference of two success rates is Newcombe's hybrid score
interval (Newcombe 1998, "Interval estimation for the difference between
independent proportions", method 10), built from the two Wilson score
intervals. Why this one:

- it stays inside [-1, 1] and keeps a sensible width at 0% and 100% success
  and with few runs, where the textbook Wald interval (and a t interval over
  paired 0/1 differences, whose width collapses to zero when every pair
  agrees) is wrong;
- it needs no pairing: runs of different modes are not matched one to one
  once a run fails with an error or a mode is repeated a different number of
  times. Ignoring the pairing by task makes the interval a little wider
  (more cautious) than a paired one, never narrower.

Example:
    >>> d = difference_ci(56, 70, 48, 80)
    >>> round(d.estimate, 4), round(d.low, 4), round(d.high, 4)
    (0.2, 0.0524, 0.3339)
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from waygraph.eval.runner import Record

if TYPE_CHECKING:
    from waygraph.planning import Plan, PlanStep

__all__ = [
    "Z95",
    "Difference",
    "ModeSummary",
    "Share",
    "difference_ci",
    "mode_difference",
    "plan_criteria",
    "summarize_modes",
    "summary_line",
    "task_rates",
    "task_tokens",
    "wilson_interval",
]

#: The standard normal quantile for a two-sided 95% interval.
Z95 = 1.959963984540054


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for ``successes`` out of ``n`` (``(0, 1)`` when n is 0).

    Example:
        >>> [round(x, 4) for x in wilson_interval(56, 70)]
        [0.6918, 0.877]
    """
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = (z / (1 + z2 / n)) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class Difference:
    """``rate(a) - rate(b)`` with its 95% interval, and the counts behind it."""

    estimate: float
    low: float
    high: float
    successes_a: int
    runs_a: int
    successes_b: int
    runs_b: int


def difference_ci(k1: int, n1: int, k2: int, n2: int, z: float = Z95) -> Difference:
    """Newcombe's hybrid score interval for ``k1/n1 - k2/n2``.

    Example:
        >>> d = difference_ci(9, 10, 3, 10)
        >>> round(d.estimate, 2), round(d.low, 4), round(d.high, 4)
        (0.6, 0.1705, 0.809)
    """
    if n1 <= 0 or n2 <= 0:
        raise ValueError("both groups need at least one run")
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = wilson_interval(k1, n1, z)
    l2, u2 = wilson_interval(k2, n2, z)
    d = p1 - p2
    low = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    high = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return Difference(d, max(-1.0, low), min(1.0, high), k1, n1, k2, n2)


@dataclass(frozen=True)
class Share:
    """``hits`` of ``total``: one of document 004's success criteria over a mode's runs.

    Example:
        >>> str(Share(2, 3)), Share(2, 3).rate
        ('67% (2/3)', 0.6666666666666666)
    """

    hits: int
    total: int

    @property
    def rate(self) -> float:
        """``hits / total`` (0.0 when ``total`` is 0)."""
        return self.hits / self.total if self.total else 0.0

    def __str__(self) -> str:
        return f"{self.rate:.0%} ({self.hits}/{self.total})"


@dataclass(frozen=True)
class ModeSummary:
    """One mode's runs: success rate (with its Wilson interval) and mean costs."""

    mode: str
    runs: int
    successes: int
    rate: float
    low: float
    high: float
    mean_tool_calls: float
    mean_tokens: float
    mean_wall_time: float
    mean_verification_failures: float | None
    escalations: int
    errors: int
    #: Runs the mode declared done while the checker says they are not.
    false_completions: int = 0
    #: Tokens per model call, over the runs that made calls and reported tokens
    #: (their tokens over their calls); None when no run did (planned mode makes none).
    mean_tokens_per_call: float | None = None
    #: The same for the prompt part; None for results written before it was recorded.
    mean_prompt_tokens_per_call: float | None = None
    #: Document 004's success criteria (docs/eval.md); None where not measured
    #: (modes other than planned, or no run the criterion applies to).
    #: Plan validity: runs whose first plan passed validation, of runs that got a plan reply.
    plan_validity: Share | None = None
    #: Step atomicity: atomic steps, of the steps of the generated plans.
    step_atomicity: Share | None = None
    #: Revision effectiveness: successful runs, of the runs that revised their plan.
    revision_effectiveness: Share | None = None
    #: Completion: runs whose plan ran to completion, of the runs measured.
    plan_completion: Share | None = None
    #: Dependency accuracy: plans whose every step's dependencies are sufficient.
    dependency_accuracy: Share | None = None


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _per_call(runs: Sequence[Record], tokens: Callable[[Record], int]) -> float | None:
    """``tokens`` per model call over the runs that made calls and reported such tokens."""
    counted = [r for r in runs if r.model_calls > 0 and tokens(r) > 0]
    calls = sum(r.model_calls for r in counted)
    return sum(tokens(r) for r in counted) / calls if calls else None


def _share(pairs: Iterable[tuple[int, int]]) -> Share | None:
    hits = total = 0
    for hit, of in pairs:
        hits, total = hits + hit, total + of
    return Share(hits, total) if total else None


def _criteria(runs: Sequence[Record]) -> dict[str, Share | None]:
    """Document 004's criteria over ``runs`` (only runs that recorded them count)."""
    planned = [r for r in runs if r.plan_valid is not None]
    steps = [r for r in planned if r.plan_steps]
    return {
        "plan_validity": _share((r.plan_valid is True, 1) for r in planned),
        "step_atomicity": _share((r.atomic_steps or 0, r.plan_steps or 0) for r in steps),
        "revision_effectiveness": _share((r.success, 1) for r in planned if r.revisions),
        "plan_completion": _share((r.completed, 1) for r in planned),
        "dependency_accuracy": _share(
            (r.dependency_sufficient_steps == r.plan_steps, 1) for r in steps
        ),
    }


def summarize_modes(records: Iterable[Record]) -> list[ModeSummary]:
    """One summary per mode, in the order modes first appear."""
    by_mode: dict[str, list[Record]] = {}
    for record in records:
        by_mode.setdefault(record.mode, []).append(record)
    summaries = []
    for mode, runs in by_mode.items():
        wins = sum(r.success for r in runs)
        low, high = wilson_interval(wins, len(runs))
        failures = [r.verification_failures for r in runs if r.verification_failures is not None]
        summaries.append(
            ModeSummary(
                mode=mode,
                runs=len(runs),
                successes=wins,
                rate=wins / len(runs),
                low=low,
                high=high,
                mean_tool_calls=_mean([r.tool_calls for r in runs]),
                mean_tokens=_mean([r.tokens for r in runs]),
                mean_wall_time=_mean([r.wall_time for r in runs]),
                mean_verification_failures=_mean(failures) if failures else None,
                escalations=sum(r.escalated for r in runs),
                errors=sum(r.error is not None for r in runs),
                false_completions=sum(r.false_completion for r in runs),
                mean_tokens_per_call=_per_call(runs, lambda r: r.tokens),
                mean_prompt_tokens_per_call=_per_call(runs, lambda r: r.prompt_tokens),
                **_criteria(runs),
            )
        )
    return summaries


def task_rates(records: Iterable[Record]) -> dict[str, dict[str, tuple[int, int]]]:
    """``{task: {mode: (successes, runs)}}`` in the order tasks and modes first appear."""
    table: dict[str, dict[str, tuple[int, int]]] = {}
    for record in records:
        wins, runs = table.setdefault(record.task, {}).get(record.mode, (0, 0))
        table[record.task][record.mode] = (wins + record.success, runs + 1)
    return table


def task_tokens(records: Iterable[Record]) -> dict[str, dict[str, float | None]]:
    """``{task: {mode: mean tokens per run}}``; None where no run reported tokens.

    Example:
        >>> from waygraph.eval.runner import Record
        >>> runs = [Record(task="t", mode="guided", repeat=n, success=True, tokens=k)
        ...         for n, k in [(1, 300), (2, 500)]]
        >>> task_tokens([*runs, Record(task="t", mode="planned", repeat=1, success=False)])
        {'t': {'guided': 400.0, 'planned': None}}
    """
    tokens: dict[str, dict[str, list[int]]] = {}
    for record in records:
        tokens.setdefault(record.task, {}).setdefault(record.mode, []).append(record.tokens)
    return {
        task: {mode: _mean(counts) if any(counts) else None for mode, counts in by_mode.items()}
        for task, by_mode in tokens.items()
    }


def mode_difference(records: Iterable[Record], a: str, b: str) -> Difference | None:
    """``rate(a) - rate(b)`` over all runs of the two modes; None when one has no runs."""
    runs = list(records)
    ka = sum(r.success for r in runs if r.mode == a)
    na = sum(1 for r in runs if r.mode == a)
    kb = sum(r.success for r in runs if r.mode == b)
    nb = sum(1 for r in runs if r.mode == b)
    if na == 0 or nb == 0:
        return None
    return difference_ci(ka, na, kb, nb)


def _points(x: float) -> str:
    return f"{x * 100:+.1f}".replace("+0.0", "0.0").replace("-0.0", "0.0")


def summary_line(records: Iterable[Record], a: str = "guided", b: str = "baseline") -> str:
    """The headline: ``a`` minus ``b`` success rate in percentage points, with its 95% CI,
    and beside it each mode's false completions (work declared done that the checker
    rejects), which guidance can change while the success rate stays.

    Example:
        >>> from waygraph.eval.runner import Record
        >>> runs = [Record(task="t", mode=m, repeat=1, success=s)
        ...         for m, s in [("guided", True), ("baseline", False)]]
        >>> summary_line(runs)  # doctest: +NORMALIZE_WHITESPACE
        'guided - baseline: +100.0 points success rate (95% CI -12.2 to +100.0; 1/1 vs 0/1
        runs); false completions 0 vs 0'
    """
    records = list(records)
    d = mode_difference(records, a, b)
    if d is None:
        return f"{a} - {b}: not measured (run both modes: --mode {b},{a})"
    false_a = sum(r.false_completion for r in records if r.mode == a)
    false_b = sum(r.false_completion for r in records if r.mode == b)
    return (
        f"{a} - {b}: {_points(d.estimate)} points success rate "
        f"(95% CI {_points(d.low)} to {_points(d.high)}; "
        f"{d.successes_a}/{d.runs_a} vs {d.successes_b}/{d.runs_b} runs); "
        f"false completions {false_a} vs {false_b}"
    )


# ------------------------------------------------------------------ a generated plan

#: Shell operators that join two commands into one (a pipe is one command: a pipeline).
_JOINS = frozenset({";", "&&", "||", "&", ";;"})


def _one_command(command: str) -> bool:
    """True when ``command`` is one command (a pipeline counts as one)."""
    if len([line for line in command.strip().splitlines() if line.strip()]) > 1:
        return False
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        return not any(token in _JOINS for token in lexer)
    except ValueError:  # unbalanced quotes: judged on the text
        return not any(join in command for join in ("&&", "||", ";"))


def _atomic(step: PlanStep) -> bool:
    if step.subplan is not None:
        return False
    if step.action == "shell":
        return _one_command(str(step.parameters.get("command", "")))
    return True


def _must_follow(earlier: PlanStep, later: PlanStep) -> bool:
    """Whether ``later`` must run after ``earlier``: one writes what the other may use."""
    kinds = {earlier.action, later.action}
    if kinds == {"write_file", "shell"}:
        return True  # a command may read (or change) any file in the project
    if kinds == {"write_file"}:
        return earlier.parameters.get("path") == later.parameters.get("path")
    return False


def plan_criteria(plan: Plan | None) -> dict[str, Any]:
    """Step atomicity and dependency sufficiency of a generated plan, as Record fields.

    A step is atomic when its one tool call does one thing: a ``shell``
    step whose command is one command (no ``;``, ``&&``, ``||``, ``&`` or
    second line joining commands; a pipe is one command), or any other tool's
    step. A step's dependencies are sufficient when every step it must
    follow is among its dependencies or theirs: each step whose result it
    references (``$id``), each earlier ``write_file`` step when it runs a
    ``shell`` command (which may read any file) and each earlier ``shell``
    step when it writes a file (the command may read it), and each earlier
    ``write_file`` of the same path. Two ``shell`` steps are never required
    to be ordered: what a command reads and writes is not known.

    Example:
        >>> from waygraph.planning import Plan
        >>> plan = Plan(goal="g", steps=[
        ...     {"id": "w", "action": "write_file", "parameters": {"path": "a", "content": ""}},
        ...     {"id": "t", "action": "shell", "parameters": {"command": "make && pytest"}}])
        >>> plan_criteria(plan)
        {'plan_steps': 2, 'atomic_steps': 1, 'dependency_sufficient_steps': 1}
    """
    if plan is None:
        return {}
    from waygraph.planning._references import find_references

    ids = set(plan.step_ids)
    before: dict[str, set[str]] = {}  # each step's dependencies, transitively
    sufficient = 0
    for i, step in enumerate(plan.steps):
        closure: set[str] = set()
        for dep in step.dependencies:
            closure |= {dep, *before.get(dep, set())}
        before[step.id] = closure
        needed = find_references(step.parameters, ids) & ids
        needed |= {e.id for e in plan.steps[:i] if _must_follow(e, step)}
        sufficient += needed <= closure
    return {
        "plan_steps": len(plan.steps),
        "atomic_steps": sum(_atomic(step) for step in plan.steps),
        "dependency_sufficient_steps": sufficient,
    }
