"""The install manifest: what ``install`` added, replaced and backed up.

It is data the installer wrote, but the disk is not to be trusted, so every
read re-validates it: each path must stay inside the Agent-Zero folder and
inside waygraph's own folders there (the hook folders of either layout and
``usr/waygraph``), and none of those folders may be a symbolic link. A
manifest that fails makes install and uninstall stop with one line before
changing anything.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> read_manifest(Path(tempfile.mkdtemp())) is None
    True
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path, PurePosixPath
from typing import Any, NoReturn

from waygraph.errors import ConfigError
from waygraph.integrations.agent_zero.config import CONFIG_PATH, DATA_DIR, LIBRARY_DIR
from waygraph.integrations.agent_zero.neighbours import in_extension_folder
from waygraph.integrations.agent_zero.templates import HOOKS, LAYOUTS, hook_path

__all__ = [
    "MANIFEST_FORMAT",
    "MANIFEST_PATH",
    "check_hashes",
    "read_manifest",
    "refuse_linked_parents",
    "refuse_symlinks",
]

MANIFEST_PATH = f"{DATA_DIR}/manifest.json"
MANIFEST_FORMAT = 1
BACKUP_DIR = f"{DATA_DIR}/backup"
#: The extension files install writes (either layout); its other files are
#: the config and the library copy.
_HOOK_FILES = frozenset(hook_path(hook, layout) for hook in HOOKS for layout in LAYOUTS.values())
_HOOK_DIRS = frozenset(PurePosixPath(rel).parent.as_posix() for rel in _HOOK_FILES)


def _written_by_install(rel: str) -> bool:
    return rel in _HOOK_FILES or rel == CONFIG_PATH or rel.startswith(f"{LIBRARY_DIR}/")


def refuse_linked_parents(root: Path, rels: list[str]) -> None:
    """Refuse when a folder on the way to any of ``rels`` is a symbolic link.

    Install would write (and uninstall delete) wherever the link points, maybe
    outside the tree.
    """
    for rel in rels:
        for parent in [*reversed(PurePosixPath(rel).parents)][1:]:
            if (root / parent).is_symlink():
                raise ConfigError(
                    f"{root / parent} is a symbolic link; waygraph writes only into real "
                    "folders of the Agent-Zero tree (replace the link by a folder); "
                    "nothing was changed"
                )


def check_hashes(root: Path, data: dict[str, Any]) -> None:
    """Every installed extension file still on disk must be the one install wrote.

    Files in ``usr/waygraph`` (the config, the library copy) are waygraph's own
    folder and may have been edited; an extension file that differs is someone
    else's, which uninstall must not delete.
    """
    path = root / MANIFEST_PATH
    for rel, info in data["files"].items():
        if rel.startswith(f"{DATA_DIR}/"):
            continue
        try:
            content = (root / rel).read_bytes()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise ConfigError(f"{root / rel}: cannot read: {exc.strerror or exc}") from None
        if hashlib.sha256(content).hexdigest() != info.get("sha256"):
            raise ConfigError(
                f"{root / rel} is not the file waygraph installed (its sha256 differs from "
                f"{path}); nothing was changed: delete or restore it by hand, then uninstall"
            )


def read_manifest(root: Path) -> dict[str, Any] | None:
    """The install manifest, re-validated: it is data install wrote, but the disk is
    not to be trusted (an edited manifest must not make uninstall delete or move
    anything outside waygraph's own folders)."""
    refuse_symlinks(root)
    path = root / MANIFEST_PATH
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: not a readable waygraph manifest ({exc})") from None
    if (
        not isinstance(data, dict)
        or data.get("format") != MANIFEST_FORMAT
        or not isinstance(data.get("files"), dict)
    ):
        raise ConfigError(
            f"{path}: not a waygraph manifest this version understands; "
            "restore the files listed in it by hand, then delete it"
        )
    _check_manifest_paths(root, path, data)
    return data


def _own_roots() -> tuple[str, ...]:
    """The folders install may touch: each layout's hook folders and ``usr/waygraph``."""
    return (*(layout.hooks_root for layout in LAYOUTS.values()), DATA_DIR)


def refuse_symlinks(root: Path) -> None:
    """Refuse a tree whose waygraph folders (or their parents) are symbolic links.

    Install would otherwise write, and uninstall delete, wherever the link points.
    """
    for own in _own_roots():
        path = root
        for part in PurePosixPath(own).parts:
            path = path / part
            if path.is_symlink():
                raise ConfigError(
                    f"{path} is a symbolic link; waygraph installs only into real folders "
                    "of the Agent-Zero tree (replace the link by a folder, or install there)"
                )


def _check_manifest_paths(root: Path, manifest_path: Path, data: dict[str, Any]) -> None:
    """Every path in the manifest must stay inside waygraph's own folders of the tree."""
    files = data["files"]
    pycache = data.get("pycache", {})
    paths: list[tuple[str, Any]] = [("files", rel) for rel in files]
    for rel, info in files.items():
        if not isinstance(info, dict):
            _bad_manifest(manifest_path, f"the entry of {rel!r} is not an object")
        if info.get("backup") is not None:
            paths.append((f"the backup of {rel!r}", info["backup"]))
    if not isinstance(pycache, dict):
        _bad_manifest(manifest_path, "pycache is not an object")
    paths += [("pycache", p) for item in pycache.items() for p in item]
    for name in ("hook_dirs", "created_dirs"):
        value = data.get(name, [])
        if not isinstance(value, list):
            _bad_manifest(manifest_path, f"{name} is not a list")
        paths += [(name, p) for p in value]
    disabled = data.get("disabled", {})
    if not isinstance(disabled, dict):
        _bad_manifest(manifest_path, "disabled is not an object")
    for rel, backup in disabled.items():
        if not isinstance(rel, str) or not in_extension_folder(rel):
            _bad_manifest(manifest_path, f"disabled: {rel!r} is not an extension file")
        paths.append((f"the backup of {rel!r}", backup))
    roots = _own_roots()
    # Parents of the own folders (``usr``, ``python``) may be listed as created.
    ancestors = {
        PurePosixPath(*PurePosixPath(own).parts[:i]).as_posix()
        for own in roots
        for i in range(1, len(PurePosixPath(own).parts))
    }
    for what, rel in paths:
        if not isinstance(rel, str) or not rel:
            _bad_manifest(manifest_path, f"{what}: {rel!r} is not a path")
        pure = PurePosixPath(rel)
        if pure.is_absolute() or any(part in ("..", ".", "") for part in pure.parts):
            _bad_manifest(manifest_path, f"{what}: {rel!r} leaves the Agent-Zero folder")
        inside = any(rel == own or rel.startswith(own + "/") for own in roots)
        if not inside and not (what == "created_dirs" and rel in ancestors):
            _bad_manifest(
                manifest_path,
                f"{what}: {rel!r} is outside waygraph's folders ({', '.join(roots)})",
            )
        target = root / rel
        for parent in [*reversed(target.relative_to(root).parents)][1:]:
            if (root / parent).is_symlink():
                _bad_manifest(manifest_path, f"{what}: {rel!r} passes through a symbolic link")
    _check_own_names(manifest_path, data)


def _check_own_names(manifest_path: Path, data: dict[str, Any]) -> None:
    """Each entry names what install writes there: its own files, backups and caches."""
    for rel, info in data["files"].items():
        if not _written_by_install(rel):
            _bad_manifest(manifest_path, f"files: {rel!r} is not a file waygraph installs")
        if not isinstance(info.get("sha256"), str):
            _bad_manifest(manifest_path, f"the entry of {rel!r} has no sha256")
        if info.get("backup") not in (None, f"{BACKUP_DIR}/{rel}"):
            _bad_manifest(manifest_path, f"the backup of {rel!r} is not where install keeps it")
    for rel, backup in data.get("disabled", {}).items():
        if backup != f"{BACKUP_DIR}/{rel}":
            _bad_manifest(manifest_path, f"the backup of {rel!r} is not where install keeps it")
    for cache, backup in data.get("pycache", {}).items():
        if backup != f"{BACKUP_DIR}/{cache}" or PurePosixPath(cache).name != "__pycache__":
            _bad_manifest(manifest_path, f"pycache: {cache!r} is not a hook folder's cache")
    for rel in data.get("hook_dirs", []):
        if rel not in _HOOK_DIRS:
            _bad_manifest(
                manifest_path, f"hook_dirs: {rel!r} is not a folder waygraph installs into"
            )


def _bad_manifest(path: Path, why: str) -> NoReturn:
    raise ConfigError(
        f"{path}: refusing a manifest that waygraph did not write as it is ({why}); "
        "nothing was changed: check the file, restore the listed files by hand, then delete it"
    )
