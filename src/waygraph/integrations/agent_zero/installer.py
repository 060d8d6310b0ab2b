"""Install waygraph into an Agent-Zero tree, and take it out again byte for byte.

``install`` works out every file it wants (the extension files, the config,
a copy of the plan library) and checks the library and store before it
touches anything. It then compares that with what is on disk, stages each
new file beside its target and renames it into place, moving anything it
replaces into ``usr/waygraph/backup/`` first. A failure at any step undoes
the steps already taken, so the tree is either fully installed or untouched.
What it added, replaced and created is written to
``usr/waygraph/manifest.json``; running ``install`` again with the same
options finds nothing to change and changes nothing.

``uninstall`` reads the manifest, removes every file and folder install
added, and moves each backup back where it came from, again undoing itself
on failure. The one thing it keeps is what the extensions wrote at run time
(the default SQLite store with the run history), and it says so.

An established plan selector in the tree (document 000's
``_15_htn_plan_selector.py``, or any extension writing ``htn_active_plan``)
is disabled the same way: moved into the backup, and put back by
``uninstall``; without ``--library`` its ``htn_plan_library.json`` becomes
the installed library, with the starter plans whose ids it lacks.

Both clear the ``__pycache__`` of the hook folders they change, so Agent-Zero
cannot run stale bytecode; install keeps the cleared caches in the backup and
uninstall puts them back.

Example:
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "python" / "extensions").mkdir(parents=True)
    >>> report = install(root)
    >>> report.layout, report.changed
    ('0.9', True)
    >>> install(root).changed
    False
    >>> len(uninstall(root).removed)
    5
    >>> sorted(p.name for p in root.rglob("*"))
    ['extensions', 'python']
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from waygraph.errors import ConfigError, WaygraphError
from waygraph.integrations.agent_zero.config import (
    COMPAT_EXTRAS_KEY,
    CONFIG_PATH,
    DATA_DIR,
    DEFAULT_EXTRAS_KEY,
    LIBRARY_DIR,
    AgentZeroConfig,
)
from waygraph.integrations.agent_zero.manifest import (
    MANIFEST_FORMAT,
    MANIFEST_PATH,
    check_hashes,
    read_manifest,
    refuse_linked_parents,
    refuse_symlinks,
)
from waygraph.integrations.agent_zero.neighbours import LIBRARY_NAME, find_selectors
from waygraph.integrations.agent_zero.templates import (
    HOOKS,
    LAYOUTS,
    Layout,
    hook_path,
    render,
)
from waygraph.integrations.agent_zero.transaction import Transaction
from waygraph.match.selector import check_matching

__all__ = [
    "MANIFEST_PATH",
    "InstallReport",
    "UninstallReport",
    "detect_layout",
    "install",
    "uninstall",
]

BACKUP_DIR = f"{DATA_DIR}/backup"
#: The starter plans shipped with waygraph, one file per plan.
SHIPPED_LIBRARY = Path(__file__).resolve().parents[2] / "library"
PYCACHE = "__pycache__"


# ---------------------------------------------------------------- reports


@dataclass
class InstallReport:
    """What :func:`install` did (paths relative to the Agent-Zero folder)."""

    root: Path
    layout: str
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    #: Established plan selectors taken out of the tree (kept in the backup).
    disabled: list[str] = field(default_factory=list)
    #: The established selector's library the installed one was made from.
    library_source: str | None = None
    #: Shipped starter plans added to it (ids it lacked).
    starters_added: list[str] = field(default_factory=list)
    #: How plans start in the installed config (``waygraph install --matching``).
    matching: str = "phrase"

    @property
    def changed(self) -> bool:
        """Whether the install added, updated, replaced, removed or disabled anything."""
        return bool(self.added or self.updated or self.replaced or self.removed or self.disabled)

    def summary(self) -> str:
        """One line for people, e.g. for the CLI."""
        if not self.changed:
            return (
                f"waygraph is already installed in {self.root} (Agent-Zero {self.layout}); "
                "nothing changed"
            )
        parts = [f"{len(self.added)} added"]
        if self.updated:
            parts.append(f"{len(self.updated)} updated")
        if self.replaced:
            parts.append(f"{len(self.replaced)} replaced (backed up in {BACKUP_DIR}/)")
        if self.removed:
            parts.append(f"{len(self.removed)} removed")
        lines = [
            f"installed waygraph into {self.root} (Agent-Zero {self.layout}): "
            f"{', '.join(parts)}; config in {CONFIG_PATH}"
        ]
        for rel in self.disabled:
            lines.append(
                f"disabled the established plan selector {rel} (kept in {BACKUP_DIR}/; "
                "uninstall puts it back)"
            )
        if self.library_source is not None:
            lines.append(f"plans: yours from {self.library_source}, copied to {LIBRARY_DIR}/")
            if self.starters_added:
                lines.append(
                    f"added starter plans your library lacks: {', '.join(self.starters_added)}"
                )
        if self.matching != "phrase":
            lines.append(
                f"plans start by meaning (matching {self.matching!r}): Agent-Zero's Python "
                "needs pip install 'waygraph[semantic]'"
            )
        return "\n".join(lines)


@dataclass
class UninstallReport:
    """What :func:`uninstall` did (paths relative to the Agent-Zero folder)."""

    root: Path
    installed: bool
    removed: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line saying what the uninstall removed, restored and kept."""
        if not self.installed:
            return f"waygraph is not installed in {self.root} (no {MANIFEST_PATH}); nothing to do"
        text = f"removed waygraph from {self.root}: {len(self.removed)} file(s) removed"
        if self.restored:
            text += f", {len(self.restored)} restored"
        if self.kept:
            text += (
                f"; kept {', '.join(self.kept)} (written while the agent ran; "
                "delete them if you no longer need the run history)"
            )
        return text


# ---------------------------------------------------------------- layout


def detect_layout(root: Path) -> Layout:
    """The layout of the Agent-Zero folder ``root``, decided by its hook folders alone.

    ``python/extensions/`` means 0.9, ``extensions/python/`` means 1.x.
    """
    found = [layout for layout in LAYOUTS.values() if (root / layout.hooks_root).is_dir()]
    if len(found) == 1:
        return found[0]
    if not found:
        raise ConfigError(
            f"{root} does not look like Agent-Zero: it has neither python/extensions/ (0.9) "
            "nor extensions/python/ (1.x); give the Agent-Zero folder, or --layout"
        )
    raise ConfigError(
        f"{root} has both python/extensions/ and extensions/python/; "
        "choose one with --layout 0.9 or --layout 1.x"
    )


def _layout(root: Path, layout: str) -> Layout:
    if layout == "auto":
        return detect_layout(root)
    if layout not in LAYOUTS:
        raise ConfigError(f"unknown layout {layout!r}; use auto, 0.9 or 1.x")
    return LAYOUTS[layout]


def _check_root(root: Path) -> Path:
    if not root.exists():
        raise ConfigError(f"{root}: no such folder")
    if not root.is_dir():
        raise ConfigError(f"{root}: not a folder; give the Agent-Zero folder")
    return root.absolute()


# ---------------------------------------------------------------- install


def install(
    root: str | os.PathLike[str],
    *,
    layout: str = "auto",
    library: str | os.PathLike[str] | None = None,
    link_library: bool = False,
    store: str | None = None,
    compat: bool = False,
    matching: str = "phrase",
) -> InstallReport:
    """Install (or update) waygraph's extensions in the Agent-Zero folder ``root``.

    ``layout``: ``auto`` (from the hook folders), ``0.9`` or ``1.x``.
    ``library``: a plan file or folder to copy into ``usr/waygraph/library/``
    (or to reference where it is, with ``link_library``); None for the plans
    shipped with waygraph, or, when the tree has an established HTN plan
    selector, its ``htn_plan_library.json`` plus the starter plans whose ids
    it lacks. ``store``: a store URL; None for SQLite at
    ``usr/waygraph/waygraph.db``. ``compat``: write the guidance under the
    HTN selector's extras key ``htn_active_plan``. ``matching``: how a message
    starts a plan there (``phrase``, ``semantic`` or ``both``, docs/matching.md);
    a mode other than ``phrase`` needs the ``semantic`` extra in Agent-Zero's
    Python, which the summary says.

    An established plan selector (``*_htn_plan_selector*.py``, or any
    extension writing ``htn_active_plan``) is disabled: moved into the
    install backup, and put back by :func:`uninstall`.

    All or nothing, and idempotent. Raises :class:`~waygraph.errors.ConfigError`
    (or another :class:`~waygraph.errors.WaygraphError`) with a one-line
    message for a bad folder, library or store, and leaves the tree untouched.
    """
    base = _check_root(Path(root))
    chosen = _layout(base, layout)
    refuse_symlinks(base)
    old = read_manifest(base)
    old_disabled: dict[str, str] = dict(old.get("disabled", {})) if old else {}
    ours = set(old.get("files", {})) if old else set()
    selectors = find_selectors(base, skip=ours)
    carried = None if library is not None else _carried_library(base, [*old_disabled, *selectors])
    library_setting: str | None
    source: str | None
    if carried is not None:
        library_files, library_setting, source, starters = carried
    else:
        library_files, library_setting = _library_plan(library, link_library)
        source, starters = None, []
    if store is not None:
        _check_store(store)
    check_matching(matching)

    config = AgentZeroConfig(
        layout=chosen.name,
        library=library_setting,
        store=store,
        compat=compat,
        extras_key=COMPAT_EXTRAS_KEY if compat else DEFAULT_EXTRAS_KEY,
        matching=matching,
    )
    wanted: dict[str, bytes] = {}
    for hook in HOOKS:
        wanted[hook_path(hook, chosen)] = render(hook, chosen).encode("utf-8")
    wanted[CONFIG_PATH] = config.to_json().encode("utf-8")
    wanted.update(library_files)
    # A hook folder linked elsewhere would take the files out of the tree.
    refuse_linked_parents(base, [*wanted, *_recorded(old), *selectors])

    old_files: dict[str, dict[str, Any]] = old.get("files", {}) if old else {}
    report = InstallReport(root=base, layout=chosen.name, library_source=source, matching=matching)
    report.disabled = [rel for rel in selectors if rel not in wanted]
    if carried is not None and (old is None or old.get("carried") != source):
        report.starters_added = starters
    for rel, content in wanted.items():
        current = _read_bytes(base / rel)
        if rel in old_files:
            if current != content:
                report.updated.append(rel)
        elif current is not None:
            # Even identical bytes put there by someone else are backed up:
            # uninstall must give back exactly what was there.
            report.replaced.append(rel)
        else:
            report.added.append(rel)
    report.removed = [rel for rel in old_files if rel not in wanted]
    if not report.changed:
        return report

    with Transaction(base) as tx:
        files: dict[str, dict[str, Any]] = {
            rel: dict(info) for rel, info in old_files.items() if rel in wanted
        }
        created: list[str] = list(old.get("created_dirs", [])) if old else []
        pycache: dict[str, str] = dict(old.get("pycache", {})) if old else {}
        hook_dirs = {str(Path(rel).parent.as_posix()) for rel in wanted if rel.endswith(".py")}
        hook_dirs |= set(old.get("hook_dirs", [])) if old else set()

        disabled = dict(old_disabled)
        for rel in report.removed:
            info = old_files[rel]
            tx.discard(rel)
            if info.get("backup"):
                tx.move(info["backup"], rel)
        for rel in report.disabled:
            backup = f"{BACKUP_DIR}/{rel}"
            created += tx.makedirs(Path(backup).parent.as_posix())
            tx.move(rel, backup)
            disabled[rel] = backup
        for rel in sorted(hook_dirs):
            cache = f"{rel}/{PYCACHE}"
            if not (base / cache).exists():
                continue
            if cache in pycache:
                # The original cache is already in the backup; this one was
                # written by Agent-Zero since, and is only a cache.
                tx.discard(cache)
            else:
                backup = f"{BACKUP_DIR}/{cache}"
                created += tx.makedirs(Path(backup).parent.as_posix())
                tx.move(cache, backup)
                pycache[cache] = backup
        for rel in (*report.added, *report.updated, *report.replaced):
            created += tx.makedirs(Path(rel).parent.as_posix())
            if rel in report.replaced:
                backup = f"{BACKUP_DIR}/{rel}"
                created += tx.makedirs(Path(backup).parent.as_posix())
                tx.move(rel, backup)
                files[rel] = {"backup": backup}
            else:
                files.setdefault(rel, {"backup": None})
                if (base / rel).exists():
                    tx.discard(rel)
            tx.write(rel, wanted[rel])
        for rel, info in files.items():
            info["sha256"] = hashlib.sha256(wanted[rel]).hexdigest()
        created += tx.makedirs(DATA_DIR)
        manifest = {
            "format": MANIFEST_FORMAT,
            "layout": chosen.name,
            "files": files,
            "pycache": pycache,
            "hook_dirs": sorted(hook_dirs),
            "created_dirs": created,
            "disabled": disabled,
            "carried": source,
        }
        if (base / MANIFEST_PATH).exists():
            tx.discard(MANIFEST_PATH)
        tx.write(MANIFEST_PATH, (json.dumps(manifest, indent=2) + "\n").encode("utf-8"))
    return report


def _library_plan(
    library: str | os.PathLike[str] | None, link: bool
) -> tuple[dict[str, bytes], str | None]:
    """The library files to copy (relative path -> bytes) and the config's ``library``."""
    if library is None:
        if link:
            raise ConfigError("--link needs --library PATH")
        return {}, None
    from waygraph.library import load_library

    source = Path(library).absolute()
    load_library(source)  # a broken library stops the install before anything is written
    if link:
        return {}, source.as_posix()
    if source.is_dir():
        from waygraph.formats import format_of

        picked = sorted(
            f
            for f in source.rglob("*")
            if f.is_file()
            and format_of(f)
            and not any(part.startswith(".") for part in f.relative_to(source).parts)
        )
        files = {
            f"{LIBRARY_DIR}/{f.relative_to(source).as_posix()}": f.read_bytes() for f in picked
        }
    else:
        files = {f"{LIBRARY_DIR}/{source.name}": source.read_bytes()}
    return files, LIBRARY_DIR


def _carried_library(
    base: Path, selectors: list[str]
) -> tuple[dict[str, bytes], str, str, list[str]] | None:
    """The established selector's ``htn_plan_library.json`` as the installed library.

    Returns (files to write, the config's ``library``, the source, starter
    plan ids added), or None when no selector has a library beside it.
    """
    from waygraph.library import load_library

    for rel in selectors:
        source = base / Path(rel).parent / LIBRARY_NAME
        if not source.is_file():
            continue
        try:
            theirs = load_library(source)
        except WaygraphError as exc:
            raise ConfigError(
                f"{source}: the established selector's plans do not load ({exc}); fix the "
                "file, or install with --library PATH to use other plans"
            ) from None
        files = {f"{LIBRARY_DIR}/{LIBRARY_NAME}": source.read_bytes()}
        added = []
        for path in sorted(SHIPPED_LIBRARY.glob("*.yaml")):
            starter = load_library(path)
            ids = [plan.id for plan in starter]
            if ids and not any(plan_id in theirs for plan_id in ids):
                files[f"{LIBRARY_DIR}/{path.name}"] = path.read_bytes()
                added += ids
        return files, LIBRARY_DIR, source.relative_to(base).as_posix(), added
    return None


def _check_store(url: str) -> None:
    from waygraph.store import open_store

    store = open_store(url)
    store.close()


# ---------------------------------------------------------------- uninstall


def uninstall(root: str | os.PathLike[str]) -> UninstallReport:
    """Remove everything :func:`install` added to ``root`` and restore what it replaced.

    Files the extensions wrote at run time (the default store) are kept and
    reported. All or nothing, like install.
    """
    base = _check_root(Path(root))
    manifest = read_manifest(base)
    report = UninstallReport(root=base, installed=manifest is not None)
    if manifest is None:
        return report
    check_hashes(base, manifest)
    files: dict[str, dict[str, Any]] = manifest.get("files", {})
    with Transaction(base) as tx:
        backups: list[tuple[str, str]] = []
        for rel, info in files.items():
            if (base / rel).exists():
                tx.discard(rel)
                report.removed.append(rel)
            if info.get("backup"):
                backups.append((rel, info["backup"]))
        # Files install replaced, then plan selectors it disabled.
        backups += manifest.get("disabled", {}).items()
        for rel, backup in backups:
            if not (base / backup).exists():
                raise ConfigError(
                    f"{base / backup}: the backup of {rel} is missing; restore it by hand "
                    f"or delete {MANIFEST_PATH} to forget the install"
                )
            tx.move(backup, rel)
            report.restored.append(rel)
        pycache: dict[str, str] = manifest.get("pycache", {})
        for hook_dir in manifest.get("hook_dirs", []):
            cache = f"{hook_dir}/{PYCACHE}"
            if (base / cache).exists():
                tx.discard(cache)
            if cache in pycache and (base / pycache[cache]).exists():
                tx.move(pycache[cache], cache)
        tx.discard(MANIFEST_PATH)
    # Folders install created go once they hold nothing (after the transaction,
    # whose set-aside files live beside what they replace until it ends).
    created = manifest.get("created_dirs", [])
    for rel in reversed(created):
        path = base / rel
        if path.is_dir() and _only_empty_dirs(path):
            shutil.rmtree(path, ignore_errors=True)
    report.kept = sorted(
        p.relative_to(base).as_posix()
        for rel in created
        if (base / rel).is_dir()
        for p in (base / rel).iterdir()
        if p.is_file()
    )
    return report


def _recorded(manifest: dict[str, Any] | None) -> list[str]:
    """The files an earlier install recorded (its hook files, config and library)."""
    return list(manifest.get("files", {})) if manifest else []


def _only_empty_dirs(path: Path) -> bool:
    return all(p.is_dir() for p in path.rglob("*"))


# ---------------------------------------------------------------- manifest


def _read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
