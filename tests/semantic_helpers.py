"""A stand-in sentence-embedding model for tests of matching by meaning.

Each word (stemmed as phrase matching stems it) is a fixed direction, so texts
that share words are close and texts that share none are orthogonal: the
similarities are known without loading a real model.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from waygraph.match._words import phrase_words

DIMS = 256
#: Words the stand-in model ignores, as a real one gives them little weight.
STOPWORDS = frozenset("a an the to into of or and please".split())


class WordModel:
    """Each word is a fixed direction; ``calls`` lists every batch it embedded."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def encode(self, texts: Sequence[str], **_: Any) -> Any:
        self.calls.append(list(texts))
        out = np.zeros((len(texts), DIMS), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in set(phrase_words(text)) - STOPWORDS:
                out[row, int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIMS] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)
