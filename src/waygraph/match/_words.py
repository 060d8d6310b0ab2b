"""Words as trigger matching compares them: tokens, a light stemmer, phrase hits.

Both sides of a ``phrase`` trigger (the trigger and the message) go through
:func:`phrase_words`; :func:`phrase_in` says whether a trigger's words occur
in order in a message. :mod:`waygraph.match` builds its index on these.

Example:
    >>> phrase_in(phrase_words("fix bug"), phrase_words("Fixing the login bugs"))
    True
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["MAX_GAP", "normalise_word", "phrase_in", "phrase_words", "substring_key"]

#: Words allowed between two consecutive trigger words in ``phrase`` mode.
MAX_GAP = 2

# Quote marks are dropped rather than split on, so "what's" is one word
# ("whats" -> "what") and "user's" compares like "users" and "user".
_APOSTROPHES = re.compile("['\u2018\u2019\u02bc`]")
# Letters and digits of any script; everything else (punctuation, "_",
# hyphens) separates words, so "log-in" is "log in" on both sides.
_WORD = re.compile(r"[^\W_]+")
_VOWELS = frozenset("aeiouy")
# Doubled consonants that belong to the word ("install", "pass", "buzz",
# "stuff") rather than to an added suffix ("stopped", "debugging").
_KEEP_DOUBLE = frozenset("aeiouylsfz")


@lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    """The comparison key of one lowercase token (see :func:`normalise_word`)."""
    # Short words ("bus", "was", "fix") and words outside ASCII letters
    # ("v2", "über") are compared whole: English suffix rules would mangle them.
    if len(word) <= 3 or not (word.isascii() and word.isalpha()):
        return word
    # 1. plurals and the third person
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"  # dependencies -> dependency
    elif word.endswith(("sses", "xes", "zes", "ches", "shes")):
        word = word[:-2]  # passes -> pass, fixes -> fix, branches -> branch
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]  # bugs -> bug; "class", "status", "analysis" keep theirs
    # 2. past and progressive
    if word.endswith("ied") and len(word) > 4:
        word = word[:-3] + "y"  # copied -> copy
    elif word.endswith(("ing", "ed")) and not word.endswith("eed"):
        # "need", "speed", "succeed": the "ed" is part of the word.
        stem = word[:-3] if word.endswith("ing") else word[:-2]
        # The stem must still look like a word: "bring", "string", "red" stay.
        if len(stem) >= 3 and not _VOWELS.isdisjoint(stem):
            word = stem
            if len(stem) >= 4 and stem[-1] == stem[-2] and stem[-1] not in _KEEP_DOUBLE:
                word = stem[:-1]  # stopped -> stop, debugging -> debug ("added" keeps "add")
    # 3. a final silent e, so merge, merged, merges and merging share "merg"
    while len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def _tokens(text: str) -> list[str]:
    return _WORD.findall(_APOSTROPHES.sub("", text.lower()))


def normalise_word(word: str) -> str:
    """The key a word is compared by in ``phrase`` mode.

    Lowercase, quote marks dropped, then a light English suffix stemmer:
    -s, -es (after s, x, z, ch, sh), -ies -> y, -ied -> y, -ed, -ing, a
    doubled final consonant after -ed/-ing, and a final silent e. The key is
    not always a dictionary word; what matters is that inflections of one
    word share it. Irregular forms (break/broken, run/ran) are not unified:
    list them as separate triggers. Text that splits into several words
    (``"log-in"``) gives their keys joined by a space; see :func:`phrase_words`.

    Example:
        >>> {normalise_word(w) for w in ["fix", "fixes", "fixed", "fixing"]}
        {'fix'}
        >>> normalise_word("debugging") == normalise_word("debug")
        True
        >>> normalise_word("merged") == normalise_word("merge") == normalise_word("merging")
        True
    """
    return " ".join(phrase_words(word))


def phrase_words(text: str) -> tuple[str, ...]:
    """Split text into words and normalise each (:func:`normalise_word`).

    Any character that is not a letter or digit separates words, except
    quote marks, which are dropped.

    Example:
        >>> phrase_words("What's broken? Fixing the users' bugs!")
        ('what', 'broken', 'fix', 'the', 'user', 'bug')
    """
    return tuple(_stem(t) for t in _tokens(text))


def phrase_in(trigger: tuple[str, ...], message: tuple[str, ...]) -> bool:
    """True when ``trigger`` occurs in order in ``message`` with gaps of at most MAX_GAP."""
    if not trigger:
        return False
    reach = [i for i, w in enumerate(message) if w == trigger[0]]
    for word in trigger[1:]:
        reach = [
            p
            for p, w in enumerate(message)
            if w == word and any(q < p <= q + MAX_GAP + 1 for q in reach)
        ]
        if not reach:
            return False
    return bool(reach)


def substring_key(trigger: str) -> str:
    """A substring trigger's key; blank triggers say nothing, so they never hit."""
    return trigger.lower() if trigger.strip() else ""
