"""Where session plans live on disk and how they are read and written.

Layout: ``<workspace>/.sessions/<folder>/plan.json``. The folder is the
session id made safe (every character outside ``[A-Za-z0-9_-]`` becomes
``_``); when that folder's plan belongs to another session id, the folder is
``<safe>-<first 8 hex of sha256(session_id)>``. Beside ``plan.json`` lie
finished plans archived as ``plan-<id>.json`` and corrupt files moved aside as
``plan.json.corrupt-<timestamp>``.

A plan file without ``session_id`` (document 001 writes none: the folder is
the session) belongs to the session named as its folder is; waygraph writes
the id on its next save. A file whose ``session_id`` names another session
than its folder's belongs to the session it names: waygraph's own folders
differ from the id when two ids share a safe name, so the id in the file wins,
and a session that finds another's plan in its folder uses the hashed one.

Reads tell four cases apart: no file, a corrupt file (not JSON, or not a
plan as :meth:`~waygraph.engine.session_plan_run.SessionPlanRun.from_dict`
checks it), a refused file (not a regular file, or over the JSON budget: a model
can leave a FIFO or a link there), and an I/O failure (raised as
:class:`OSError`, so the caller can degrade instead of overwriting a file it
merely could not read). Every read goes through
:func:`waygraph.sandbox.safe_files.read_regular_file`, and a session folder (or
``.sessions``) that is a symbolic link is refused, since reads and writes
through it would land outside the workspace.

Example:
    >>> safe_name("telegram:42"), safe_name("../etc")
    ('telegram_42', '___etc')
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from waygraph.engine.session_plan_run import SessionPlanRun
from waygraph.errors import CorruptPlan, StoreError
from waygraph.sandbox.safe_files import RefusedFile, read_regular_file

__all__ = [
    "PLAN_FILE",
    "SESSIONS_DIR",
    "Slot",
    "list_session_plans",
    "load_session_plan",
    "locate",
    "read_plan_file",
    "safe_name",
    "save",
    "sessions_root",
]

log = logging.getLogger("waygraph.sessions")

SESSIONS_DIR = ".sessions"
PLAN_FILE = "plan.json"
#: Longer safe names are cut and suffixed with a hash, so folder names stay
#: well under the usual 255-byte file name limit.
MAX_FOLDER_CHARS = 100
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_MISSING = "missing"
_CORRUPT = "corrupt"
_REFUSED = "refused"
_UNUSABLE = (_CORRUPT, _REFUSED)
_OK = "ok"


@dataclass(frozen=True, slots=True)
class Slot:
    """A session's folder and what its plan.json holds right now.

    ``plan`` is None when there is no usable plan; ``corrupt`` says a file is
    there but unreadable as a plan (it is moved aside when a new plan is saved);
    ``refused`` says that file was not even read (not a regular file, or too
    large), and ``problem`` says why in one line.
    """

    session_id: str
    folder: Path
    plan: SessionPlanRun | None
    corrupt: bool = False
    problem: str = ""
    refused: bool = False

    @property
    def path(self) -> Path:
        return self.folder / PLAN_FILE


def sessions_root(workspace: str | os.PathLike[str]) -> Path:
    """``<workspace>/.sessions``."""
    return Path(workspace) / SESSIONS_DIR


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()


def safe_name(session_id: str) -> str:
    """The session id as a folder name that cannot leave the sessions folder."""
    safe = _UNSAFE.sub("_", session_id) or "_"
    if len(safe) > MAX_FOLDER_CHARS:
        safe = f"{safe[:MAX_FOLDER_CHARS]}-{_digest(session_id)[:8]}"
    return safe


def _peek(path: Path) -> tuple[str, SessionPlanRun | None, str]:
    """(state, plan, why) for one plan file; I/O errors other than absence raise."""
    try:
        raw = read_regular_file(path)
    except FileNotFoundError:
        return _MISSING, None, ""
    except RefusedFile as exc:
        return _REFUSED, None, str(exc)
    try:
        data = json.loads(raw.decode("utf-8"))
        if isinstance(data, dict) and "session_id" not in data:
            # Document 001's plan.json names no session: its folder is the session.
            data["session_id"] = path.parent.name
        return _OK, SessionPlanRun.from_dict(data), ""
    except (UnicodeDecodeError, json.JSONDecodeError, CorruptPlan) as exc:
        return _CORRUPT, None, str(exc)
    except RecursionError:
        # JSON nested deeper than Python's stack: no plan is shaped like that.
        return _CORRUPT, None, "nested too deeply to be a plan"


def _refuse_linked(*folders: Path) -> None:
    """Raise :class:`RefusedFile` when one of ``folders`` is a symbolic link (missing is fine)."""
    for folder in folders:
        try:
            mode = os.lstat(folder).st_mode
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(mode):
            raise RefusedFile(folder, "a symbolic link", expected="a folder")


def _slot(session_id: str, folder: Path, state: str, why: str) -> Slot:
    """A slot without a usable plan: empty, corrupt or refused."""
    unusable = state in _UNUSABLE
    return Slot(session_id, folder, None, unusable, why, refused=state == _REFUSED)


def locate(workspace: str | os.PathLike[str], session_id: str) -> Slot:
    """Find the folder and plan of ``session_id``.

    It changes nothing but temporary files a killed writer left behind in
    the session's folders (:func:`clean_stale_temps`). A plan file that is
    not a regular file or is too large is not read: the slot is corrupt and
    refused. Raises :class:`OSError` when a plan file exists but cannot be
    read, and :class:`~waygraph.sandbox.safe_files.RefusedFile` when ``.sessions`` or
    the session's folder is a symbolic link.
    """
    root = sessions_root(workspace)
    base = safe_name(session_id)
    own = root / base
    hashed = root / f"{base}-{_digest(session_id)[:8]}"
    _refuse_linked(root, own, hashed)
    for folder in (own, hashed):
        if folder.is_dir():
            clean_stale_temps(folder)
    own_state, own_plan, own_why = _peek(own / PLAN_FILE)
    if own_plan is not None and own_plan.session_id == session_id:
        return Slot(session_id, own, own_plan)
    # Look at the hashed folder before trusting a corrupt file in the safe
    # folder: a session displaced there earlier must keep finding its plan.
    hashed_state, hashed_plan, hashed_why = _peek(hashed / PLAN_FILE)
    if hashed_plan is not None and hashed_plan.session_id == session_id:
        return Slot(session_id, hashed, hashed_plan)
    if hashed_state in _UNUSABLE:
        return _slot(session_id, hashed, hashed_state, hashed_why)
    if own_state == _MISSING:
        return Slot(session_id, own, None)
    if own_state in _UNUSABLE:
        # An unreadable plan in the session's own folder counts as its own.
        return _slot(session_id, own, own_state, own_why)
    if hashed_state == _MISSING:
        return Slot(session_id, hashed, None)
    # Both taken by other sessions (someone's id literally is "<safe>-<hash8>"):
    # the full digest cannot clash.
    full = root / f"{base}-{_digest(session_id)}"
    _refuse_linked(full)
    state, plan, why = _peek(full / PLAN_FILE)
    if plan is not None:
        return Slot(session_id, full, plan)
    return _slot(session_id, full, state, why)


def _free_name(path: Path) -> Path:
    candidate, n = path, 1
    # lexists: a dangling link is a name taken too.
    while os.path.lexists(candidate):
        n += 1
        candidate = path.with_name(f"{path.name}-{n}")
    return candidate


def save(
    slot: Slot,
    plan: SessionPlanRun,
    *,
    stamp: str,
    archive: SessionPlanRun | None = None,
) -> None:
    """Write ``plan`` as the slot's plan.json atomically.

    A corrupt or refused file there is first renamed aside as
    ``plan.json.corrupt-<stamp>``: the name moves, whatever it is (a link
    stays a link, a FIFO is never opened), so nothing is read through it or
    copied. ``archive`` (the finished plan being replaced) is kept as
    ``plan-<id>.json``, a copy read as a regular file only. Then the new
    content is written to a temporary file in the same folder, fsynced, and
    renamed over plan.json in one step, and the folder is fsynced: a crash
    at any point leaves the old plan.json or the new one, never half of
    either (after a corrupt one was moved aside, possibly none, which loads
    as no plan just as the corrupt one did). Raises :class:`OSError` on
    failure, :class:`~waygraph.sandbox.safe_files.RefusedFile` when ``.sessions`` or
    the folder is a symbolic link.
    """
    _refuse_linked(slot.folder.parent, slot.folder)
    slot.folder.mkdir(parents=True, exist_ok=True)
    if slot.corrupt and os.path.lexists(slot.path):
        aside = _free_name(slot.folder / f"{PLAN_FILE}.corrupt-{stamp}")
        os.rename(slot.path, aside)
        log.warning("moved corrupt session plan %s aside to %s", slot.path, aside.name)
    elif archive is not None and slot.path.exists():
        keep = _free_name(slot.folder / f"plan-{archive.id}.json")
        _write_atomically(keep, read_regular_file(slot.path))
    text = json.dumps(plan.to_dict(), ensure_ascii=False, indent=2) + "\n"
    _write_atomically(slot.path, text.encode("utf-8"))


def _write_atomically(path: Path, data: bytes) -> None:
    """Temp file, fsync, one rename, fsync the folder."""
    fd, tmp = tempfile.mkstemp(prefix=".plan-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


#: A temporary file older than this is what a killed writer left behind.
STALE_TEMP_SECONDS = 60.0


def clean_stale_temps(folder: Path) -> int:
    """Remove ``.plan-*.tmp`` files a killed writer left in ``folder``; how many.

    A live writer renames its temporary file within milliseconds, so only
    files older than :data:`STALE_TEMP_SECONDS` are touched.
    """
    removed = 0
    now = time.time()
    for leftover in folder.glob(".plan-*.tmp"):
        with contextlib.suppress(OSError):
            if now - leftover.stat().st_mtime > STALE_TEMP_SECONDS:
                leftover.unlink()
                removed += 1
    return removed


# ---------------------------------------------------------------- for the CLI


def _summary(plan: SessionPlanRun, path: Path, *, archived: bool) -> dict[str, Any]:
    steps = plan.steps
    index = plan.current_step_index
    # The step it points at, running or not (a paused or failed plan's too).
    current = steps[index] if 0 <= index < len(steps) else None
    return {
        "session_id": plan.session_id,
        "folder": path.parent.name,
        "plan_id": plan.id,
        "goal": plan.goal,
        "status": plan.status,
        "steps_done": plan.steps_done,
        "steps_total": len(steps),
        "current_step": current.description if current else None,
        "iteration_count": plan.iteration_count,
        "awaiting": plan.awaiting,
        "updated_at": plan.updated_at,
        "path": str(path),
        "archived": archived,
    }


def list_session_plans(
    workspace: str | os.PathLike[str], *, include_archived: bool = False
) -> list[dict[str, Any]]:
    """One summary dict per plan file under ``<workspace>/.sessions``, newest first.

    Keys: session_id, folder, plan_id, goal, status, steps_done, steps_total,
    current_step, iteration_count, awaiting (``"user"`` while the model's
    question waits for an answer, else None), updated_at, path, archived. Archived plans
    (``plan-<id>.json``) are listed only with ``include_archived``. Corrupt or
    unreadable files are skipped with a warning.

    Example:
        >>> list_session_plans("/nonexistent/workspace")
        []
    """
    root = sessions_root(workspace)
    try:
        _refuse_linked(root)
        entries = sorted(root.iterdir())
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StoreError(f"cannot list session plans in {root}: {exc}") from exc
    folders = []
    for entry in entries:
        if entry.is_symlink():
            # Following it would read (and show) plans from outside the workspace.
            log.warning("skipping %s: a symbolic link, not a session folder", entry)
        elif entry.is_dir():
            folders.append(entry)
    rows = []
    for folder in folders:
        files = [(folder / PLAN_FILE, False)]
        if include_archived:
            files += [(p, True) for p in sorted(folder.glob("plan-*.json"))]
        for path, archived in files:
            try:
                state, plan, why = _peek(path)
            except OSError as exc:
                log.warning("cannot read session plan %s: %s", path, exc)
                continue
            if state == _CORRUPT:
                log.warning("skipping corrupt session plan %s (%s)", path, why)
            elif state == _REFUSED:
                log.warning("skipping session plan: %s", why)
            if plan is not None:
                rows.append(_summary(plan, path, archived=archived))
    rows.sort(key=lambda r: (r["updated_at"] or "", r["folder"]), reverse=True)
    return rows


def read_plan_file(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The session plan in ``path`` (``plan.json`` or an archived ``plan-<id>.json``), checked.

    None when the file is missing or is not a session plan; a file that
    exists but cannot be read raises :class:`OSError`.

    Example:
        >>> read_plan_file("/nonexistent/plan.json") is None
        True
    """
    _, plan, _ = _peek(Path(path))
    return None if plan is None else plan.to_dict()


def load_session_plan(workspace: str | os.PathLike[str], session_id: str) -> dict[str, Any] | None:
    """The current plan of ``session_id`` (plan.json as a dict), or None.

    ``session_id`` may also be a folder name as listed by
    :func:`list_session_plans` (``telegram_42`` for ``telegram:42``). A corrupt
    file gives None; a file that exists but cannot be read, or is refused
    unread (a FIFO, a link, a device, a folder, over the JSON budget), raises
    :class:`~waygraph.errors.StoreError` naming it in one line.

    Example:
        >>> load_session_plan("/nonexistent/workspace", "telegram:42") is None
        True
    """
    try:
        slot = locate(workspace, session_id)
        if slot.plan is None and not slot.corrupt:
            folder = sessions_root(workspace) / session_id
            if _UNSAFE.search(session_id) or folder.name != session_id:
                return None
            _refuse_linked(folder)
            state, plan, why = _peek(folder / PLAN_FILE)
            if plan is not None:
                return plan.to_dict()
            slot = _slot(session_id, folder, state, why)
    except OSError as exc:
        raise StoreError(f"cannot read the session plan of {session_id!r}: {exc}") from exc
    if slot.refused:
        raise StoreError(f"cannot read the session plan of {session_id!r}: {slot.problem}")
    return None if slot.plan is None else slot.plan.to_dict()
