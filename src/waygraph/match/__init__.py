"""Trigger matching: which plan a user message activates, and why the others did not.

A plan activates when enough of its triggers hit the message (its
``trigger_threshold``), its domains admit the message's domain, and the
allow-list (when given) lists it. Each plan matches in one of two modes,
``library.match_mode_of(plan)``:

- ``phrase`` (the default): the trigger's words appear in the message in
  order, as whole words, with at most :data:`MAX_GAP` words between
  consecutive trigger words. Both sides go through :func:`phrase_words`, so
  "fixing the login bugs" hits "fix bug".
- ``substring`` (the established semantics): the lowercase trigger is
  contained in the lowercase message, so "debugging" and "prefix bugs" both
  hit "debug" and "fix bug" respectively.

:class:`Matcher` indexes a library once (a word trie for phrase triggers,
substring triggers filed under their rarest 4-character slice), so a match
only examines triggers that can occur in the message: finding the hits does
not grow with the library, and the rest grows only with the plans hit.
:func:`naive_match` is the plain scan over every plan and trigger; it is the
reference the index is tested against, and the baseline of
``bench/match.py``. See ``docs/matching.md``.

Example:
    >>> from waygraph.library import Library
    >>> from waygraph.model import Plan
    >>> plan = Plan.model_validate({"id": "bugfix", "domains": ["bugfix"],
    ...     "triggers": ["fix bug", "debug"], "trigger_threshold": 1,
    ...     "steps": [{"name": "Fix it"}]})
    >>> [m.plan_id for m in match(Library([plan]), "Fixing the login bugs", "bugfix")]
    ['bugfix']
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from waygraph.library import Library
from waygraph.match._words import (
    MAX_GAP,
    normalise_word,
    phrase_in,
    phrase_words,
    substring_key,
)
from waygraph.model import Plan

__all__ = [
    "MAX_GAP",
    "Match",
    "Matcher",
    "admits_plan",
    "distinct_phrases",
    "match",
    "naive_match",
    "normalise_allowed",
    "normalise_word",
    "phrase_words",
    "refusals",
]

# A substring trigger is filed under one of its slices of _GRAM characters
# (shorter triggers of at least _MIN_GRAM under themselves); longer slices
# are rarer, so fewer candidates per message, at the cost of slicing the
# message once per length.
_GRAM = 4
_MIN_GRAM = 3


# ------------------------------------------------------------------ results


@dataclass(frozen=True, slots=True)
class Match:
    """How one plan fared against a message.

    ``hits`` are the triggers that hit, in the plan's order. ``reason`` is
    None when the plan activates, else why not (several reasons joined by
    "; ").

    Example:
        >>> Match("bugfix_workflow", 2, ("fix bug",), True, True, None).to_dict()["score"]
        2
    """

    plan_id: str
    score: int
    hits: tuple[str, ...]
    domain_matched: bool
    activates: bool
    reason: str | None
    #: Cosine similarity to the message when matched by meaning (:mod:`waygraph.match.semantic`).
    similarity: float | None = None
    #: ``"phrase"`` (triggers) or ``"semantic"`` (meaning).
    matched_by: str = "phrase"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with the same keys as the fields (``similarity`` and
        ``matched_by`` only for a match by meaning)."""
        data: dict[str, Any] = {
            "plan_id": self.plan_id,
            "score": self.score,
            "hits": list(self.hits),
            "domain_matched": self.domain_matched,
            "activates": self.activates,
            "reason": self.reason,
        }
        if self.similarity is not None:
            data["similarity"] = self.similarity
            data["matched_by"] = self.matched_by
        return data


@dataclass(frozen=True, slots=True)
class _Entry:
    """What matching needs of one plan, snapshotted when the index is built."""

    plan_id: str
    order: int
    domains: tuple[str, ...]
    # Distinct trigger hits needed to activate: the plan's trigger_threshold,
    # but at least 1 (a lower threshold would activate on any message).
    needed: int
    # Triggers after dropping repeats of the same test (see _distinct_triggers).
    triggers: tuple[str, ...]


def _distinct_triggers(triggers: Iterable[str], key_of: Any) -> list[tuple[str, Any]]:
    """``(trigger, key)`` per distinct key, first spelling wins; empty keys dropped.

    Two triggers with one key ("Fix bug" and "fix bugs" in phrase mode) are
    the same test, so they count once toward the threshold.
    """
    seen: dict[Any, str] = {}
    for trigger in triggers:
        key = key_of(trigger)
        if key and key not in seen:
            seen[key] = trigger
    return [(trigger, key) for key, trigger in seen.items()]


def distinct_phrases(triggers: Iterable[str]) -> list[str]:
    """The triggers that count apart toward a plan's threshold in phrase mode (the first
    spelling of each).

    Example:
        >>> distinct_phrases(["Fix bug", "fix bugs", "debug"])
        ['Fix bug', 'debug']
    """
    return [trigger for trigger, _ in _distinct_triggers(triggers, phrase_words)]


def _entry_for(plan: Plan, order: int, phrase: bool) -> tuple[_Entry, list[tuple[str, Any]]]:
    """A plan's snapshot and its ``(trigger, key)`` pairs, in trigger order."""
    pairs = _distinct_triggers(plan.triggers, phrase_words if phrase else substring_key)
    entry = _Entry(
        plan_id=plan.id,
        order=order,
        domains=tuple(plan.domains),
        needed=max(plan.trigger_threshold, 1),
        triggers=tuple(trigger for trigger, _ in pairs),
    )
    return entry, pairs


def normalise_allowed(allowed_plans: Collection[str] | None) -> frozenset[str] | None:
    """The allow-list as a set (a bare string is one id), or None for no allow-list.

    Example:
        >>> sorted(normalise_allowed("bugfix"))
        ['bugfix']
    """
    if allowed_plans is None:
        return None
    if isinstance(allowed_plans, str):  # one id passed bare
        return frozenset((allowed_plans,))
    return frozenset(allowed_plans)


def admits_plan(
    plan_id: str, domains: tuple[str, ...], domain: str | None, allowed: frozenset[str] | None
) -> tuple[bool, bool]:
    """``(admitted, domain_matched)``: the domain and allow-list rules, whatever matched.

    Phrase and meaning matching both apply them; :func:`refusals` explains a refusal.

    Example:
        >>> admits_plan("ship", ("ops",), "git", None)
        (False, False)
    """
    domain_matched = bool(domain) and domain in domains
    admitted = (allowed is None or plan_id in allowed) and (
        domain_matched or not domain or not domains
    )
    return admitted, domain_matched


def refusals(
    plan_id: str, domains: tuple[str, ...], domain: str | None, allowed: frozenset[str] | None
) -> str:
    """Why :func:`admits_plan` keeps a plan out, every failed rule joined by "; " ("" if none).

    Example:
        >>> refusals("ship", ("ops",), "git", frozenset())
        "not in the allowed plans; domain 'git' not in ['ops']"
    """
    reasons = []
    if allowed is not None and plan_id not in allowed:
        reasons.append("not in the allowed plans")
    if domain and domains and domain not in domains:
        reasons.append(f"domain {domain!r} not in {list(domains)!r}")
    return "; ".join(reasons)


def _admits(
    entry: _Entry, count: int, domain: str | None, allowed: frozenset[str] | None
) -> tuple[bool, bool]:
    """``(activates, domain_matched)`` for a plan with ``count`` distinct trigger hits.

    The activation rule lives here and in :func:`admits_plan`; :func:`_reasons`
    explains a refusal.
    """
    admitted, domain_matched = admits_plan(entry.plan_id, entry.domains, domain, allowed)
    return admitted and count >= entry.needed, domain_matched


def _reasons(entry: _Entry, count: int, domain: str | None, allowed: frozenset[str] | None) -> str:
    """Why a plan did not activate: every failed rule of :func:`_admits`, joined by "; "."""
    reasons = refusals(entry.plan_id, entry.domains, domain, allowed)
    if count >= entry.needed:
        return reasons
    return (
        f"{reasons}; {_too_few(count, entry.needed)}" if reasons else _too_few(count, entry.needed)
    )


@lru_cache(maxsize=256)
def _too_few(count: int, needed: int) -> str:
    # Most near misses in a large library fail only this rule: format it once.
    return f"{count} of {needed} trigger hits needed"


def _results(
    hits: Iterable[tuple[_Entry, list[int]]],
    domain: str | None,
    allowed: frozenset[str] | None,
    include_misses: bool,
) -> list[Match]:
    """Score each plan that had hits (its entry and hit trigger indexes), and rank them.

    Activating plans come first, best first, then near misses (only with
    ``include_misses``); ties go by library order. One loop for the index and
    the plain scan alike; it runs once per plan hit, so it stays inline.
    """
    keyed = []
    for entry, indexes in hits:
        count = len(indexes)
        activates, domain_matched = _admits(entry, count, domain, allowed)
        if not (activates or include_misses):
            continue
        triggers = entry.triggers
        if count == 1:
            hit_triggers: tuple[str, ...] = (triggers[indexes[0]],)
        else:
            hit_triggers = tuple([triggers[i] for i in sorted(indexes)])
        score = count + domain_matched
        reason = None if activates else _reasons(entry, count, domain, allowed)
        result = Match(entry.plan_id, score, hit_triggers, domain_matched, activates, reason)
        # Library order is unique, so the sort never compares two Match objects.
        keyed.append((not activates, -score, entry.order, result))
    keyed.sort()
    return [m for *_, m in keyed]


# ------------------------------------------------------------------ index


class Matcher:
    """A library's triggers indexed once, for matching many messages fast.

    Phrase triggers live in a trie over normalised words: from each message
    word the trie is walked forward, allowing up to MAX_GAP skipped words
    per step, so only triggers starting with a message word are ever
    touched. Substring triggers are filed under their rarest 4-character
    slice; a message looks up its own slices and confirms each candidate
    with ``in``. Either way the lookup depends on the
    message, not on the library's size; what remains is proportional to the
    number of plans the message actually hits.

    The matcher is a snapshot holding no reference to the library (so the
    cache behind :func:`match` never keeps one alive): after changing the
    library, build a new one.

    Example:
        >>> from waygraph.model import Plan
        >>> plan = Plan.model_validate({"id": "bugfix", "triggers": ["fix bug", "debug"],
        ...     "trigger_threshold": 1, "steps": [{"name": "Fix it"}]})
        >>> m = Matcher(Library([plan]))
        >>> m.best("I need to fix a bug in the login module").plan_id
        'bugfix'
    """

    def __init__(self, library: Library) -> None:
        self._entries: list[_Entry] = []
        # Trie: node 0 is the root; children[node] maps a word to a node
        # (None for leaves, which are most nodes); ends[node] lists the
        # (plan order, trigger index) slots whose trigger ends there.
        self._children: list[dict[str, int] | None] = [None]
        self._ends: list[tuple[tuple[int, int], ...]] = [()]
        substring_slots: dict[str, list[tuple[int, int]]] = {}
        for order, plan in enumerate(library):
            phrase = library.match_mode_of(plan) == "phrase"
            entry, pairs = _entry_for(plan, order, phrase)
            self._entries.append(entry)
            for index, (_, key) in enumerate(pairs):
                if phrase:
                    self._add_phrase(key, (order, index))
                else:
                    substring_slots.setdefault(key, []).append((order, index))
        self._substring_slots = {k: tuple(v) for k, v in substring_slots.items()}
        self._short_keys, self._gram_index = _gram_index(self._substring_slots)
        self._gram_lengths = tuple(sorted({len(gram) for gram in self._gram_index}))

    def _add_phrase(self, words: tuple[str, ...], slot: tuple[int, int]) -> None:
        node = 0
        for word in words:
            children = self._children[node]
            if children is None:
                children = self._children[node] = {}
            child = children.get(word)
            if child is None:
                child = children[word] = len(self._children)
                self._children.append(None)
                self._ends.append(())
            node = child
        self._ends[node] = (*self._ends[node], slot)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"<Matcher {len(self)} plans>"

    # -------------------------------------------------------------- lookups

    def _slots(self, message: str) -> list[tuple[int, int]]:
        """``(plan order, trigger index)`` of every trigger that hits ``message``.

        No slot appears twice: a trie node is reported once, a substring key
        is filed under one slice, and a plan's triggers are all of one mode.
        """
        return self._phrase_slots(message) + self._substring_slots_hit(message)

    def _hits(self, message: str) -> dict[int, list[int]]:
        """Plan order -> indexes of its triggers that hit ``message``."""
        hits: dict[int, list[int]] = {}
        for order, index in self._slots(message):
            if order in hits:
                hits[order].append(index)
            else:
                hits[order] = [index]
        return hits

    def _phrase_slots(self, message: str) -> list[tuple[int, int]]:
        """Slots of the phrase triggers that hit ``message``."""
        root = self._children[0]
        if not root:
            return []
        words = phrase_words(message)
        n = len(words)
        children_of = self._children
        stack = [(node, i) for i, w in enumerate(words) if (node := root.get(w)) is not None]
        # (node, position) fully determines what lies ahead, so each pair is
        # expanded once even when several paths reach it ("a a b" for "a b").
        seen: set[tuple[int, int]] = set(stack)
        found: set[int] = set()
        while stack:
            node, i = stack.pop()
            found.add(node)
            children = children_of[node]
            if children:
                for j in range(i + 1, min(i + MAX_GAP + 2, n)):
                    child = children.get(words[j])
                    if child is not None and (child, j) not in seen:
                        seen.add((child, j))
                        stack.append((child, j))
        ends = self._ends
        return [slot for node in found for slot in ends[node]]

    def _substring_slots_hit(self, message: str) -> list[tuple[int, int]]:
        """Slots of the substring triggers that hit ``message``."""
        if not self._substring_slots:
            return []
        text = message.lower()
        keys = [k for k in self._short_keys if k in text]
        index = self._gram_index
        for size in self._gram_lengths:
            for gram in {text[i : i + size] for i in range(len(text) - size + 1)}:
                candidates = index.get(gram)
                if candidates:
                    keys += [k for k in candidates if k in text]
        slots = self._substring_slots
        return [slot for key in keys for slot in slots[key]]

    # -------------------------------------------------------------- public

    def match(
        self,
        message: str,
        domain: str | None = None,
        allowed_plans: Collection[str] | None = None,
        *,
        include_misses: bool = True,
    ) -> list[Match]:
        """Plans whose triggers hit ``message``: activating ones best first, then near misses.

        ``domain`` None or "" skips the domain filter. ``allowed_plans``, when
        not None, lists the plan ids that may activate. Plans with no hit are
        left out; with ``include_misses=False`` so are plans that hit but do
        not activate.

        Example:
            >>> from waygraph.model import Plan
            >>> plan = Plan.model_validate({"id": "bugfix", "domains": ["bugfix"],
            ...     "triggers": ["fix bug", "debug"], "steps": [{"name": "Fix it"}]})
            >>> [(r.plan_id, r.reason) for r in Matcher(Library([plan])).match("fix a bug", "git")]
            [('bugfix', "domain 'git' not in ['bugfix']; 1 of 2 trigger hits needed")]
        """
        if not message:
            return []
        entries = self._entries
        hits = ((entries[order], indexes) for order, indexes in self._hits(message).items())
        return _results(hits, domain, normalise_allowed(allowed_plans), include_misses)

    def best(
        self,
        message: str,
        domain: str | None = None,
        allowed_plans: Collection[str] | None = None,
    ) -> Match | None:
        """The plan ``message`` activates (highest score, then library order), or None.

        Example:
            >>> from waygraph.model import Plan
            >>> plan = Plan.model_validate({"id": "bugfix", "triggers": ["fix bug"],
            ...     "trigger_threshold": 1, "steps": [{"name": "Fix it"}]})
            >>> Matcher(Library([plan])).best("What's the weather like?") is None
            True
        """
        if not message:
            return None
        allowed = normalise_allowed(allowed_plans)
        entries = self._entries
        slots = self._slots(message)
        counts = Counter(order for order, _ in slots)
        winner: tuple[int, int] | None = None  # (-score, order): the smallest wins
        for order, count in counts.items():
            entry = entries[order]
            # Most plans that hit fall short of their threshold; skip them cheaply.
            if count < entry.needed:
                continue
            activates, domain_matched = _admits(entry, count, domain, allowed)
            if activates:
                rank = (-(count + domain_matched), order)
                if winner is None or rank < winner:
                    winner = rank
        if winner is None:
            return None
        order = winner[1]
        indexes = [index for o, index in slots if o == order]
        return _results([(entries[order], indexes)], domain, allowed, False)[0]


def _gram_index(
    keys: Iterable[str],
) -> tuple[tuple[str, ...], dict[str, tuple[str, ...]]]:
    """File each substring key under one slice that any message containing it has.

    Keys of at least :data:`_GRAM` characters go under their rarest slice of
    that length (the rarest keeps candidate lists short); shorter keys of
    :data:`_MIN_GRAM` or more go under themselves; the rest (one or two
    characters) are checked on every message.
    """
    short: list[str] = []
    index: dict[str, list[str]] = {}
    grams_of: dict[str, set[str]] = {}
    for key in keys:
        if len(key) < _MIN_GRAM:
            short.append(key)
        elif len(key) < _GRAM:
            index.setdefault(key, []).append(key)
        else:
            grams_of[key] = {key[i : i + _GRAM] for i in range(len(key) - _GRAM + 1)}
    frequency = Counter(gram for grams in grams_of.values() for gram in grams)
    for key, grams in grams_of.items():
        rarest = min(grams, key=lambda g: (frequency[g], g))
        index.setdefault(rarest, []).append(key)
    return tuple(short), {gram: tuple(ks) for gram, ks in index.items()}


# ------------------------------------------------------------------ functions

_matchers: weakref.WeakKeyDictionary[Library, Matcher] = weakref.WeakKeyDictionary()


def match(
    library: Library,
    message: str,
    domain: str | None = None,
    allowed_plans: Collection[str] | None = None,
) -> list[Match]:
    """:meth:`Matcher.match` with the library's matcher built on first use and kept.

    The matcher lives as long as the library object; a changed library needs
    a new :class:`Library` (or an explicit :class:`Matcher`).

    Example:
        >>> from waygraph.model import Plan
        >>> plan = Plan.model_validate({"id": "bugfix", "triggers": ["fix bug"],
        ...     "trigger_threshold": 1, "steps": [{"name": "Fix it"}]})
        >>> match(Library([plan]), "What's the weather like?")
        []
    """
    matcher = _matchers.get(library)
    if matcher is None:
        matcher = _matchers[library] = Matcher(library)
    return matcher.match(message, domain, allowed_plans)


def naive_match(
    library: Library,
    message: str,
    domain: str | None = None,
    allowed_plans: Collection[str] | None = None,
) -> list[Match]:
    """The plain scan over every plan and trigger: the reference for :class:`Matcher`.

    Same rules and same result as :func:`match`, with no index; it costs
    time in proportion to the number of triggers.

    Example:
        >>> from waygraph.model import Plan
        >>> lib = Library([Plan.model_validate({"id": "bugfix", "triggers": ["fix bug"],
        ...     "trigger_threshold": 1, "steps": [{"name": "Fix it"}]})])
        >>> naive_match(lib, "fix the login bug") == match(lib, "fix the login bug")
        True
    """
    if not message:
        return []
    text = message.lower()
    words = phrase_words(message)
    allowed = normalise_allowed(allowed_plans)
    hits: list[tuple[_Entry, list[int]]] = []
    for order, plan in enumerate(library):
        phrase = library.match_mode_of(plan) == "phrase"
        entry, pairs = _entry_for(plan, order, phrase)
        hit_indexes = [
            i
            for i, (_, key) in enumerate(pairs)
            if (phrase_in(key, words) if phrase else key in text)
        ]
        if hit_indexes:
            hits.append((entry, hit_indexes))
    return _results(hits, domain, allowed, include_misses=True)
