"""All-or-nothing changes to a folder tree, with an undo journal (used by the installer).

Example:
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> with Transaction(root) as tx:
    ...     tx.write("a.txt", b"hi")
    >>> (root / "a.txt").read_bytes()
    b'hi'
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from waygraph.errors import ConfigError

__all__ = ["Transaction"]


class Transaction:
    """Changes to one tree with an undo journal: all of them happen, or none.

    New content is written to a hidden file beside its target and renamed
    into place; files leaving the tree are first renamed aside in their own
    folder and deleted only when the transaction succeeds. Both stay on one
    file system even when ``usr/`` is a separate volume (as in Agent-Zero's
    Docker image); moves between folders that cross file systems (backups)
    copy and then delete.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._undo: list[Callable[[], None]] = []
        self._aside: list[Path] = []
        self._count = 0

    def __enter__(self) -> Transaction:
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is None:
            for path in self._aside:
                _remove(path)
            return
        for undo in reversed(self._undo):
            try:
                undo()
            except OSError:
                continue  # keep undoing the rest; the error below says what failed
        if isinstance(exc, OSError):
            name = exc.filename or self.root
            raise ConfigError(f"{name}: {exc.strerror or exc}; nothing was changed") from None

    def _beside(self, path: Path, kind: str) -> Path:
        self._count += 1
        return path.parent / f".{path.name}.waygraph-{os.getpid()}-{self._count}.{kind}"

    def makedirs(self, rel: str) -> list[str]:
        """Create ``rel`` and its missing parents; return the ones created, outermost first."""
        missing: list[Path] = []
        path = self.root / rel
        while not path.exists():
            missing.append(path)
            path = path.parent
        created = []
        for path in reversed(missing):
            path.mkdir()
            self._undo.append(path.rmdir)
            created.append(path.relative_to(self.root).as_posix())
        return created

    def move(self, src: str, dst: str) -> None:
        """Move ``src`` to ``dst`` (which must not exist); moved back on rollback."""
        source, target = self.root / src, self.root / dst
        if target.exists():
            raise ConfigError(f"{target}: already exists; cannot move {src} there")
        _relocate(source, target)
        self._undo.append(lambda: _relocate(target, source))

    def write(self, rel: str, content: bytes) -> None:
        """Create ``rel`` with ``content`` (it must not exist); removed on rollback."""
        target = self.root / rel
        if target.exists():
            raise ConfigError(f"{target}: already exists")
        staged = self._beside(target, "new")
        try:
            staged.write_bytes(content)
            os.rename(staged, target)
        except OSError:
            staged.unlink(missing_ok=True)
            raise
        self._undo.append(target.unlink)

    def discard(self, rel: str) -> None:
        """Take ``rel`` (file or folder) out of the tree; deleted when the transaction ends."""
        source = self.root / rel
        aside = self._beside(source, "old")
        os.rename(source, aside)
        self._aside.append(aside)

        def undo() -> None:
            os.rename(aside, source)
            self._aside.remove(aside)

        self._undo.append(undo)


def _relocate(source: Path, target: Path) -> None:
    """Rename ``source`` to ``target``, copying across file systems when it must."""
    try:
        os.rename(source, target)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        if source.is_dir():
            shutil.copytree(source, target, symlinks=True)
        else:
            shutil.copy2(source, target)
        _remove(source)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
