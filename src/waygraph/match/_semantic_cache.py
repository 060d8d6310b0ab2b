"""Plan embeddings kept between matchers and processes (matching by meaning).

In memory, per model, one vector per distinct text for the life of the
process, so rebuilding a matcher after a library reload embeds only the
texts that changed. On disk, one file per model and library version (the
texts a library is embedded from, hashed) in a folder next to the store
(:func:`cache_dir_for`): ``embeddings-MODEL-KEY.npz`` holding the texts and
their vectors. A new library version reuses the vectors of the newest file of
the same model for the texts it shares with it. The folder keeps the
:data:`KEEP_FILES` newest files per model. A cache that cannot be read or
written is skipped with a warning: matching never fails for it.

Example:
    >>> cache_dir_for("sqlite:////var/lib/agent/waygraph.db").as_posix()
    '/var/lib/agent/waygraph-embeddings'
    >>> cache_dir_for("memory://") is None
    True
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar
from urllib.parse import unquote

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]

__all__ = ["CACHE_FOLDER", "KEEP_FILES", "EmbeddingCache", "cache_dir_for"]

log = logging.getLogger("waygraph.match")

#: The folder, beside the store, that holds the embedding files.
CACHE_FOLDER = "waygraph-embeddings"
#: Library versions kept on disk per model (the newest).
KEEP_FILES = 4


def cache_dir_for(store_url: str | None) -> Path | None:
    """Where a store's plan embeddings are kept on disk, or None (in memory only).

    ``sqlite:///PATH``: beside the database file; ``file://DIR``: inside the
    folder; PostgreSQL (no local folder): the user data folder
    (``$XDG_DATA_HOME/waygraph``); ``memory://``: nowhere.
    """
    if not store_url:
        return None
    scheme, sep, rest = store_url.partition("://")
    scheme = scheme.lower()
    if not sep:  # a bare path is a SQLite file
        scheme, rest = "sqlite", "/" + store_url
    location = unquote(rest.partition("?")[0])
    if scheme == "sqlite":
        # What follows the third slash is the path (SQLAlchemy's convention).
        path = location[1:] if location.startswith("/") else location
        if not path or path == ":memory:":
            return None
        return Path(path).expanduser().parent / CACHE_FOLDER
    if scheme == "file":
        return Path(location).expanduser() / CACHE_FOLDER
    if scheme.startswith("postgres"):
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
        return base / "waygraph" / CACHE_FOLDER
    return None


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "_", name)[-60:] + "-" + _digest(name)[:8]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class EmbeddingCache:
    """One model's text vectors: the process-wide memory, and a folder on disk (or none)."""

    _memory: ClassVar[dict[str, dict[str, Vectors]]] = {}
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, model: str, folder: Path | None) -> None:
        self.model = model
        self.folder = folder
        with self._lock:
            self.known = self._memory.setdefault(model, {})

    @classmethod
    def of(cls, model: str, folder: str | os.PathLike[str] | None) -> EmbeddingCache:
        """The cache of ``model``'s vectors, kept on disk in ``folder`` (None: memory only)."""
        return cls(model, None if folder is None else Path(folder))

    def vectors(self, texts: Sequence[str], encode: Callable[[Sequence[str]], Vectors]) -> Vectors:
        """One row per text (in order): from memory, else the disk, else ``encode``."""
        import numpy as np

        missing = [t for t in texts if t not in self.known]
        if missing and self.folder is not None:
            self._read(self._file(texts))
            missing = [t for t in texts if t not in self.known]
            if missing:
                self._read(self._newest())
                missing = [t for t in texts if t not in self.known]
        if missing:
            fresh = encode(missing)
            with self._lock:
                self.known.update(zip(missing, fresh, strict=True))
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        stacked = np.vstack([self.known[t] for t in texts]).astype(np.float32)
        if self.folder is not None and not self._file(texts).exists():
            self._write(texts, stacked)
        return stacked

    # ------------------------------------------------------------ disk

    def _file(self, texts: Sequence[str]) -> Path:
        assert self.folder is not None
        key = _digest("\n".join([self.model, *texts]))[:24]
        return self.folder / f"embeddings-{_slug(self.model)}-{key}.npz"

    def _files(self) -> list[Path]:
        assert self.folder is not None
        try:
            found = list(self.folder.glob(f"embeddings-{_slug(self.model)}-*.npz"))
            return sorted(found, key=lambda p: p.stat().st_mtime_ns, reverse=True)
        except OSError:
            return []

    def _newest(self) -> Path | None:
        files = self._files()
        return files[0] if files else None

    def _read(self, path: Path | None) -> None:
        import numpy as np

        if path is None or not path.is_file():
            return
        try:
            with np.load(path, allow_pickle=False) as data:
                texts, vectors = data["texts"], data["vectors"]
                if len(texts) != len(vectors):
                    raise ValueError("texts and vectors differ in number")
                with self._lock:
                    for text, vector in zip(texts.tolist(), vectors, strict=True):
                        self.known.setdefault(str(text), vector.astype(np.float32))
        except Exception as exc:  # a torn or foreign file is only a cache miss
            log.warning("waygraph: ignoring the embedding cache file %s: %s", path, exc)

    def _write(self, texts: Sequence[str], vectors: Vectors) -> None:
        import numpy as np

        assert self.folder is not None
        target = self._file(texts)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
            try:
                with os.fdopen(handle, "wb") as out:
                    np.savez(out, texts=np.array(list(texts), dtype=str), vectors=vectors)
                os.replace(temporary, target)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
            for old in self._files()[KEEP_FILES:]:
                old.unlink(missing_ok=True)
        except OSError as exc:
            log.warning("waygraph: cannot keep plan embeddings in %s: %s", self.folder, exc)
