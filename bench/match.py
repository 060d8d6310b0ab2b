"""Cost of one trigger match: the index (``Matcher``) vs the plain scan (``naive_match``).

Run: ``python bench/match.py [--json]``. Everything is measured in this one process and
the target is a ratio between figures from the same run, so a slower or
faster machine moves both sides alike. Exits 1 when the index is less than
100x faster than the scan at 10,000 plans (in either mode), or when the two
disagree on any benchmark message.

Workload: synthetic libraries of 10, 100, 1,000 and 10,000 plans, five
triggers each (1-3 words drawn with a Zipf-like skew from a vocabulary of
3,000 words, so some words are in many triggers), with the ten real plans of
the public Agent-Zero v2 library mixed in; messages of about fifteen words,
filler plus vocabulary words, a third of them containing a whole trigger
(inflected in phrase mode) so plans really activate. Both modes are
measured: ``phrase`` (the default) and ``substring`` (``_meta.match_mode``).

Columns, per message in CPU µs (the best of five interleaved rounds, so other work on
a shared machine does not tilt a ratio): how many plans the message hits
(each one becomes a result); the index lookup alone (finding the triggers
that hit, which stays flat as the library grows); ``Matcher.match`` (lookup
plus a result per plan hit, so it grows with that count); ``Matcher.best``
(what the Navigator calls: no result built for misses); ``naive_match``;
their ratio (the target); and, for context, a plain scan whose triggers were
normalised in advance, to show how much of the gain is the index itself
rather than not re-normalising triggers.

Matching by meaning (``waygraph[semantic]``, issue 40) is measured after
that by ``bench/_match_semantic.py``: recall and false activations on the
paraphrase development and test sets for phrase, semantic and both (the
targets are judged on the test set), and the cost per message at
10 and 1,000 plans. ``--semantic-only`` runs that part alone,
``--no-semantic`` skips it.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from _report import Report, add_json_flag  # noqa: E402

from waygraph.library import Library, load_library  # noqa: E402
from waygraph.match import Matcher, naive_match, phrase_in, phrase_words  # noqa: E402
from waygraph.model import Graph, Plan  # noqa: E402

COMPAT_GRAPH = ROOT / "tests" / "fixtures" / "compat" / "agent-zero-graph-library-v2.json"
SIZES = (10, 100, 1_000, 10_000)
VOCABULARY = 3_000
TRIGGERS_PER_PLAN = 5
MESSAGES = 200
NAIVE_MESSAGES = 6  # the scan is slow at 10,000 plans; fewer messages keep the run short
ROUNDS = 5
TARGET = 100

FILLER = (
    "i need to the a in on for with my our it this that please can you help me "
    "and then so we is are be of from into when after before some all now again"
).split()
SYLLABLES = (
    "ba be bi bo bu ca ce co da de di do fa fe fi ga ge go ha he hi ka ke ki ko "
    "la le li lo lu ma me mi mo mu na ne ni no nu pa pe pi po ra re ri ro ru sa "
    "se si so ta te ti to tu va ve vi vo za ze zo bran chek dep fix log mer sta "
    "tra pro con sync port load test run build pack"
).split()
ENDINGS = ("", "", "", "r", "n", "t", "s", "l", "x", "nd", "st", "ck")
INFLECT = ("s", "ed", "ing")


def vocabulary(rng: random.Random) -> list[str]:
    """Distinct pseudo-words of 2-3 syllables, each its own normalised key."""
    words: dict[str, None] = {}  # an ordered set: the run must be repeatable
    while len(words) < VOCABULARY:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3)))
        word += rng.choice(ENDINGS)
        # Keep words the normaliser leaves whole, so inflecting one in a
        # message ("banors", "banored") leads back to it.
        if phrase_words(word) == (word,) and word not in FILLER:
            words[word] = None
    return list(words)


def build_plans(size: int, words: list[str], weights: list[float]) -> list[Plan]:
    """``size`` plans: the compat plans spread through synthetic ones, library order kept."""
    rng = random.Random(size)
    graph = Graph.builder().task("work", action="Do the work").exit("done")
    graph = graph.chain("start", "work", "done").build()
    real = list(load_library(COMPAT_GRAPH, validate=False))
    slots = {round(i * size / len(real)): p for i, p in enumerate(real[: min(size, len(real))])}
    plans = []
    for i in range(size):
        if i in slots:
            plans.append(slots[i])
            continue
        triggers = {
            " ".join(rng.choices(words, weights, k=rng.choice((1, 2, 2, 3))))
            for _ in range(TRIGGERS_PER_PLAN)
        }
        plans.append(
            Plan(
                id=f"plan_{i:05d}",
                domains=(f"domain_{rng.randrange(40)}",),
                triggers=tuple(sorted(triggers)),
                trigger_threshold=rng.choice((1, 2)),
                graph=graph,
            )
        )
    return plans


def messages(
    lib: Library, words: list[str], weights: list[float], rng: random.Random, mode: str
) -> list[str]:
    """About fifteen words each; a third embed one plan's whole trigger."""
    plans = list(lib)
    out = [
        "I need to fix a bug in the login module",
        "What's the weather like?",
    ]
    while len(out) < MESSAGES:
        parts = rng.choices(FILLER, k=10) + rng.choices(words, weights, k=4)
        rng.shuffle(parts)
        if rng.random() < 1 / 3:
            trigger = rng.choice(rng.choice(plans).triggers).split()
            if mode == "phrase":  # inflect a word and let a filler word in
                i = rng.randrange(len(trigger))
                trigger[i] += rng.choice(INFLECT)
                if len(trigger) > 1:
                    trigger.insert(1, rng.choice(FILLER))
            parts.insert(rng.randrange(len(parts) + 1), " ".join(trigger))
        out.append(" ".join(parts).capitalize() + rng.choice((".", "?", "!", "")))
    return out


def prepared_scan(lib: Library) -> Callable[[str], int]:
    """A plain scan whose triggers were normalised beforehand; returns the hit count.

    It builds no results, so comparing it with ``Matcher.match`` flatters the scan.
    """
    phrase = [
        words
        for p in lib
        if lib.match_mode_of(p) == "phrase"
        for t in p.triggers
        if (words := phrase_words(t))
    ]
    substring = [
        t.lower() for p in lib if lib.match_mode_of(p) != "phrase" for t in p.triggers if t.strip()
    ]

    def scan(message: str) -> int:
        words = phrase_words(message)
        text = message.lower()
        hits = sum(1 for t in phrase if phrase_in(t, words))
        return hits + sum(1 for t in substring if t in text)

    return scan


def one_pass(fn: Callable[[str], object], batch: list[str]) -> tuple[float, list[object]]:
    """CPU µs per message for one pass over ``batch``, and the results."""
    gc.collect()
    gc.disable()  # a collection landing in one pass and not another is noise
    try:
        start = time.process_time()
        results = [fn(message) for message in batch]
        return (time.process_time() - start) / len(batch) * 1e6, results
    finally:
        gc.enable()


def measure(
    size: int, mode: str, plans: list[Plan], words: list[str], weights: list[float]
) -> tuple[dict[str, str], float, list[str], dict[str, float]]:
    """One table row, the ratio, any message on which the index and the scan
    disagree, and the row's figures as numbers.

    Every workload runs once per round and the rounds interleave, so a spell
    of load on a shared machine hits all of them alike; each figure is its
    best round, in CPU time of this process.
    """
    lib = Library(plans, meta={"match_mode": mode})
    batch = messages(lib, words, weights, random.Random(f"{size} {mode}"), mode)
    few = batch[:NAIVE_MESSAGES]
    builds = []
    for _ in range(3 if size < 10_000 else 1):
        start = time.process_time()
        matcher = Matcher(lib)
        builds.append(time.process_time() - start)
    scan = prepared_scan(lib)
    workloads: dict[str, tuple[Callable[[str], object], list[str]]] = {
        "lookup": (matcher._slots, batch),
        "match": (matcher.match, batch),
        "best": (matcher.best, batch),
        "naive": (lambda m: naive_match(lib, m), few),
        "prepared": (scan, few),
    }
    times: dict[str, float] = {}
    results: dict[str, list[object]] = {}
    for _ in range(ROUNDS):
        for name, (fn, messages_) in workloads.items():
            us, results[name] = one_pass(fn, messages_)
            times[name] = min(us, times.get(name, us))
    problems = [
        f"{mode}, {size} plans: index and scan disagree on {message!r}"
        for message, got, want in zip(few, results["match"], results["naive"], strict=False)
        if got != want
    ]
    ratio = times["naive"] / times["match"]
    row = {
        "plans": f"{size:,}",
        "triggers": f"{sum(len(p.triggers) for p in lib):,}",
        "index build (ms)": f"{min(builds) * 1e3:,.1f}",
        "plans hit per message": f"{statistics.mean(len(matcher.match(m)) for m in batch):,.1f}",
        "index lookup only (µs)": f"{times['lookup']:,.1f}",
        "Matcher.match (µs)": f"{times['match']:,.1f}",
        "Matcher.best (µs)": f"{times['best']:,.1f}",
        "naive_match (µs)": f"{times['naive']:,.0f}",
        "naive / match": f"**{ratio:,.0f}x**",
        "pre-normalised scan (µs)": f"{times['prepared']:,.0f}",
        "scan / match": f"{times['prepared'] / times['match']:,.0f}x",
    }
    figures = {
        "index build ms": min(builds) * 1e3,
        "plans hit per message": statistics.mean(len(matcher.match(m)) for m in batch),
        **{f"{name} µs": us for name, us in times.items()},
        "naive / match": ratio,
    }
    return row, ratio, problems, figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_json_flag(parser)
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--semantic-only", action="store_true", help="only matching by meaning")
    which.add_argument("--no-semantic", action="store_true", help="skip matching by meaning")
    args = parser.parse_args(argv)
    report = Report("match", json_out=args.json)
    if not args.semantic_only:
        phrase_bench(report)
    if not args.no_semantic:
        import _match_semantic

        _match_semantic.run(report)
    return report.finish()


def phrase_bench(report: Report) -> None:
    """The index against the plain scan, in both trigger modes (the module docstring)."""
    words = vocabulary(random.Random(20240611))
    # Zipf-like: the commonest word is in ~1 trigger in 60, most words in a handful.
    weights = [1 / (rank + 10) ** 0.9 for rank in range(len(words))]
    tables: dict[str, list[dict[str, str]]] = {"phrase": [], "substring": []}
    ratios: dict[str, float] = {}
    problems: list[str] = []
    for size in SIZES:
        plans = build_plans(size, words, weights)
        for mode, rows in tables.items():
            row, ratios[mode], wrong, numbers = measure(size, mode, plans, words, weights)
            rows.append(row)
            report.figure(f"{mode}, {size} plans", numbers, "CPU µs per message (ms to build)")
            problems += wrong
    for mode in tables:
        report.target(
            f"{mode}: Matcher.match >= {TARGET}x cheaper than naive_match at {SIZES[-1]:,} plans",
            ratios[mode],
            TARGET,
            compare=">=",
        )
    report.target("index and scan agree on every message", len(problems), 0, compare="<=")
    report.extra["problems"] = problems
    with report.tables():
        for mode, rows in tables.items():
            print(f"\n### {mode} mode (CPU µs per message)\n")
            print("| " + " | ".join(rows[0]) + " |")
            print("| " + " | ".join(["---:"] * len(rows[0])) + " |")
            for row in rows:
                print("| " + " | ".join(row.values()) + " |")
            ok = ratios[mode] >= TARGET
            print(
                f"\nMatcher.match vs naive_match at {SIZES[-1]:,} plans: {ratios[mode]:,.0f}x "
                f"(needed {TARGET}x): {'met' if ok else 'NOT MET'}"
            )
        for problem in problems:
            print(problem)


if __name__ == "__main__":
    sys.exit(main())
