"""New plans from what worked: group alike finished runs and propose a plan for each group.

``waygraph library suggest`` reads completed runs that had no library plan
(generated plans in a store, session plans in a workspace, see
:mod:`waygraph.learning.samples`) and, without a model:

1. **groups** runs whose goals and steps are alike: words of the goal and
   of the steps (lower case, stop words dropped, plural ``s`` trimmed),
   compared by Jaccard similarity; a run joins the first group (oldest run
   first) whose members it resembles on average at least ``threshold``;
2. for each group of at least ``min_runs`` runs, **aligns** the steps: a
   step matches a step of another run when both name the same tool, or
   their words are alike; a step the runs share (in at least half of them)
   becomes a task node, in the order the runs took them (median position);
3. **infers a check** for each node from the evidence the runs saw: a line,
   else a word, that every recorded output of the step contains becomes
   ``output_contains`` (each run's last output of the step counts, not its
   failed tries); a step whose outputs share nothing stable gets
   ``any_output``, and a step no run recorded output for (a session plan's
   step: the model's words are not evidence) gets ``manual``; the plan's
   ``meta.suggested.to_review`` lists those;
4. takes **triggers** from the goals: the word pairs at least half of them
   share, else the group's commonest goal;
5. records the **provenance**: ``meta.suggested.runs`` (source and id of
   every run), the steps each node came from and how many runs had it.

Every suggestion passes ``waygraph check`` before it is returned. Same runs
in, same suggestions out.

Example:
    >>> from waygraph.learning.samples import Sample, SampleStep
    >>> runs = [Sample("dag", f"r{i}", "back up the database nightly", (
    ...     SampleStep("dump the database", "pg_dump", ("dump written",)),
    ...     SampleStep("copy the dump offsite", "upload", ("uploaded ok",)))) for i in range(3)]
    >>> [s.plan.id for s in suggest(runs, min_runs=3)]
    ['suggested_database_nightly']
"""

from __future__ import annotations

import itertools
import json
import re
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from waygraph.check import Problem, check_plan
from waygraph.learning.samples import Sample, SampleStep
from waygraph.model import Plan

__all__ = [
    "Suggestion",
    "group_runs",
    "jaccard",
    "signature",
    "suggest",
    "trigger_phrases",
    "words",
]

_WORD = re.compile(r"[a-z][a-z0-9_]+")
_STOP = frozenset(
    "the a an and or of to in on for with from into at by is are be it this that then "
    "please can you your our my me we all any each run use make sure".split()
)
# Output words too common to say a step worked.
_BLAND = frozenset("none null true false error info debug warning".split())


def words(text: str) -> frozenset[str]:
    """The words of ``text`` that carry meaning: lower case, no stop words, plural ``s`` trimmed.

    Example:
        >>> sorted(words("Run the tests and fix the failing builds"))
        ['build', 'failing', 'fix', 'test']
    """
    found = set()
    for word in _WORD.findall(text.lower()):
        if word in _STOP or len(word) < 3:
            continue
        if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
            word = word[:-1]
        found.add(word)
    return frozenset(found)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Shared words over all words of ``a`` and ``b`` (1.0 for two empty sets).

    Example:
        >>> jaccard(frozenset({"fix", "bug"}), frozenset({"fix", "test"}))
        0.3333333333333333
    """
    return len(a & b) / len(a | b) if a or b else 1.0


def signature(sample: Sample) -> frozenset[str]:
    """The words a run is compared by: its goal's, its steps' and ``tool:NAME`` per tool used.

    Example:
        >>> sorted(signature(Sample("dag", "r", "back up db", (SampleStep("dump", "pg_dump"),))))
        ['back', 'dump', 'tool:pg_dump']
    """
    steps: set[str] = set()
    for step in sample.steps:
        steps |= words(step.text)
        if step.tool:
            steps.add("tool:" + step.tool)
    return words(sample.goal) | steps


def group_runs(samples: Sequence[Sample], *, threshold: float = 0.4) -> list[list[Sample]]:
    """Runs grouped by likeness (see the module docstring), oldest run first in each group.

    Example:
        >>> from waygraph.learning.samples import Sample, SampleStep
        >>> build = (SampleStep("build image", "docker"),)
        >>> a = Sample("dag", "a", "deploy the web app", build)
        >>> b = Sample("dag", "b", "deploy the web app again", build)
        >>> c = Sample("dag", "c", "summarise the news", (SampleStep("fetch feeds", "http"),))
        >>> [[s.run for s in g] for g in group_runs([a, b, c])]
        [['a', 'b'], ['c']]
    """
    ordered = sorted(samples, key=lambda s: (s.updated_at, s.source, s.run))
    groups: list[tuple[list[Sample], list[frozenset[str]]]] = []
    for sample in ordered:
        mine = signature(sample)
        for members, signatures in groups:
            mean = sum(jaccard(mine, other) for other in signatures) / len(signatures)
            if mean >= threshold:
                members.append(sample)
                signatures.append(mine)
                break
        else:
            groups.append(([sample], [mine]))
    return [members for members, _ in groups]


@dataclass(frozen=True)
class Suggestion:
    """A proposed plan, the runs it was learned from, and what ``check`` says of it."""

    plan: Plan
    runs: tuple[str, ...]
    problems: tuple[Problem, ...] = ()


@dataclass
class _Slot:
    """A step the runs share: every run's version of it, and where each run took it."""

    tool: str | None
    words: frozenset[str]
    steps: list[tuple[str, int, SampleStep]]


def _align(group: Sequence[Sample]) -> list[_Slot]:
    slots: list[_Slot] = []
    for sample in group:
        taken: set[int] = set()
        for position, step in enumerate(sample.steps):
            mine = words(step.text)
            best, best_score = None, 0.0
            for index, slot in enumerate(slots):
                if index in taken:
                    continue
                score = 1.0 if step.tool and step.tool == slot.tool else jaccard(mine, slot.words)
                if score > best_score:
                    best, best_score = index, score
            if best is not None and best_score >= 0.5:
                slots[best].steps.append((sample.run, position, step))
                taken.add(best)
            else:
                slots.append(_Slot(step.tool, mine, [(sample.run, position, step)]))
                taken.add(len(slots) - 1)
    return slots


def _json_strings(output: str) -> list[str]:
    """The text values of a JSON output (a tool that returned data): each can be a marker."""
    if not output.startswith(("{", "[")):
        return []
    try:
        data = json.loads(output)
    except ValueError:
        return []
    found: list[str] = []
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            found.extend(line.strip() for line in item.splitlines())
    return found


def _common_marker(outputs: Sequence[str]) -> str | None:
    """A line (or a JSON text value) without digits, else a word, that every output contains.

    The longest wins; equal lengths go by alphabet, so the choice is stable.
    """
    lines = [
        {
            part
            for part in (*(line.strip() for line in out.splitlines()), *_json_strings(out))
            if 3 <= len(part) <= 60
        }
        for out in outputs
    ]
    shared = set.intersection(*lines) if lines else set()
    stable = sorted((s for s in shared if not re.search(r"\d", s)), key=lambda s: (-len(s), s))
    if stable:
        return stable[0]
    # output_contains ignores case, so words are compared in lower case.
    tokens = [
        {w for w in re.findall(r"[a-z][a-z_]{2,}", out.lower()) if w not in _BLAND}
        for out in outputs
    ]
    common = set.intersection(*tokens) if tokens else set()
    return sorted(common, key=lambda w: (-len(w), w))[0] if common else None


def _verify(slot: _Slot) -> tuple[dict[str, Any], str | None]:
    """The check a node gets from its evidence, and why it needs review (None: it does not)."""
    # Each run's last output of the step: what it ended with, not its failed tries.
    outputs = [step.outputs[-1] for _, _, step in slot.steps if step.outputs]
    if not outputs:
        return {"type": "manual"}, "no run recorded what this step's tool returned"
    marker = _common_marker(outputs)
    if marker is None:
        return {"type": "any_output"}, "the outputs of this step share nothing stable"
    return {"type": "output_contains", "value": marker}, None


def _name(slot: _Slot) -> str:
    texts = Counter(step.text for _, _, step in slot.steps)
    return sorted(texts.items(), key=lambda item: (-item[1], len(item[0]), item[0]))[0][0]


def trigger_phrases(goals: Sequence[str]) -> list[str]:
    """Triggers for goals: word pairs at least half of them share (up to 3), else the commonest.

    Example:
        >>> trigger_phrases(["app crashes on login", "the app crashes at startup"])
        ['app crashes']
    """
    pairs: Counter[str] = Counter()
    for goal in goals:
        # Neighbours in the goal itself: dropping stop words first would pair
        # words the goal never put together ("back up the shop" -> "up shop").
        tokens = _WORD.findall(goal.lower())
        pairs.update(
            {f"{a} {b}" for a, b in itertools.pairwise(tokens) if a not in _STOP and b not in _STOP}
        )
    shared = [p for p, n in pairs.items() if n * 2 >= len(goals)]
    shared.sort(key=lambda p: (-pairs[p], -len(p), p))
    if shared:
        return shared[:3]
    commonest = Counter(goals).most_common(1)[0][0]
    return [commonest.strip()[:80]]


def _plan_id(triggers: Sequence[str], taken: set[str]) -> str:
    base = "suggested_" + "_".join(_WORD.findall(triggers[0].lower()))[:40].strip("_")
    plan_id, n = base, 2
    while plan_id in taken:
        plan_id, n = f"{base}_{n}", n + 1
    taken.add(plan_id)
    return plan_id


def _suggestion(group: Sequence[Sample], taken: set[str]) -> Suggestion | None:
    need = (len(group) + 1) // 2
    slots = [s for s in _align(group) if len({run for run, _, _ in s.steps}) >= need]
    if not slots:
        return None
    slots.sort(key=lambda s: (statistics.median(pos for _, pos, _ in s.steps), _name(s)))
    goals = [s.goal for s in group]
    triggers = trigger_phrases(goals)
    steps: list[dict[str, Any]] = []
    review: list[str] = []
    nodes: list[dict[str, Any]] = []
    for slot in slots:
        name = _name(slot)
        verify, why = _verify(slot)
        step: dict[str, Any] = {"name": name, "action": name, "verify": verify}
        if slot.tool:
            step["tool"] = slot.tool
        steps.append(step)
        if why is not None:
            review.append(f"{name}: {why}")
        nodes.append({"step": name, "runs": len({run for run, _, _ in slot.steps})})
    meta = {
        "suggested": {
            "runs": [f"{s.source}:{s.run}" for s in group],
            "steps": nodes,
            "to_review": review,
        }
    }
    plan = Plan.model_validate(
        {
            "id": _plan_id(triggers, taken),
            "name": Counter(goals).most_common(1)[0][0].strip()[:80],
            "description": f"Learned from {len(group)} completed runs with alike goals and steps.",
            "goal": goals[0],
            "triggers": triggers,
            "trigger_threshold": 1,
            "steps": steps,
            "meta": meta,
        }
    )
    problems = tuple(check_plan(plan))
    return Suggestion(plan, tuple(s.run for s in group), problems)


def suggest(
    samples: Sequence[Sample], *, min_runs: int = 3, threshold: float = 0.4
) -> list[Suggestion]:
    """A plan for each group of at least ``min_runs`` alike runs (see the module docstring).

    Suggestions whose plan ``check`` finds errors in are left out (none are
    expected: the plans are linear and built from known parts).
    """
    if min_runs < 1:
        raise ValueError("min_runs must be at least 1")
    taken: set[str] = set()
    found = []
    for group in group_runs(samples, threshold=threshold):
        if len(group) < min_runs:
            continue
        suggestion = _suggestion(group, taken)
        if suggestion is not None and not any(p.level == "error" for p in suggestion.problems):
            found.append(suggestion)
    return found
