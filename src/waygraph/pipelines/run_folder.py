"""The run folder of §5.6: what a pipeline run leaves on disk.

::

    {logs_root}/
        checkpoint.json     the last checkpoint (rewritten after every node)
        manifest.json       the pipeline's name, goal, run id and start time
        {node}/prompt.md    the prompt a codergen stage sent
        {node}/response.md  the response it got
        {node}/status.json  the stage's outcome (Appendix C)

A node's folder is its id when that is a safe file name; any other id (a
plan from JSON may use any text) gets a folder of its safe characters and a
short digest, so two ids never share one and none leaves the run folder.
Files are written whole through a temporary file, so a kill leaves the old
checkpoint or the new one, never half of one.

Example:
    >>> stage_name("review"), stage_name("../x")
    ('review', '.._x-d6b96a97')
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from waygraph.errors import ConfigError
from waygraph.pipelines.checkpoint import Checkpoint
from waygraph.pipelines.outcome import Outcome

__all__ = [
    "CHECKPOINT_FILE",
    "MANIFEST_FILE",
    "load_checkpoint",
    "read_status",
    "stage_dir",
    "stage_name",
    "write_checkpoint",
    "write_json",
    "write_manifest",
    "write_text",
]

CHECKPOINT_FILE = "checkpoint.json"
MANIFEST_FILE = "manifest.json"
_SAFE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")
# Names a folder may not have whatever its characters (the run folder's own files).
_RESERVED = {CHECKPOINT_FILE, MANIFEST_FILE, "artifacts"}


def stage_name(node_id: str) -> str:
    """The folder name of ``node_id``'s stage inside the run folder.

    Example:
        >>> stage_name("a b") == stage_name("a_b")
        False
    """
    if _SAFE.fullmatch(node_id) and node_id not in _RESERVED:
        return node_id
    digest = hashlib.sha256(node_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", node_id)[:60] or "node"
    return f"{safe}-{digest}"


def stage_dir(logs_root: Path, node_id: str) -> Path:
    """``node_id``'s stage folder, created."""
    folder = logs_root / stage_name(node_id)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole (a temporary file, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # Unique per writer: parallel branches may write the same stage's files at once.
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    tmp.write_text(text, encoding="utf-8", errors="backslashreplace")
    os.replace(tmp, path)


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as indented JSON to ``path`` whole."""
    write_text(path, json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def read_status(folder: Path) -> Outcome | None:
    """The outcome in ``folder/status.json``, or None when there is none or it is unreadable."""
    path = folder / "status.json"
    try:
        return Outcome.from_status_file(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError):
        return None


def write_manifest(logs_root: Path, *, run_id: str, name: str, goal: str, started: str) -> None:
    """``manifest.json``: the pipeline's name, goal, run id and start time."""
    write_json(
        logs_root / MANIFEST_FILE,
        {"run_id": run_id, "name": name, "goal": goal, "started": started},
    )


def write_checkpoint(logs_root: Path, checkpoint: Checkpoint) -> None:
    """``checkpoint.json``: the run's last checkpoint."""
    # One line: it is rewritten after every node, and indenting a long run's
    # checkpoint costs as much as writing it.
    write_text(logs_root / CHECKPOINT_FILE, checkpoint.model_dump_json() + "\n")


def load_checkpoint(logs_root: Path) -> Checkpoint:
    """The checkpoint in ``logs_root/checkpoint.json``.

    Raises :class:`~waygraph.errors.ConfigError` naming the file when it is
    missing or not a checkpoint.

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp())
        >>> write_checkpoint(root, Checkpoint(run_id="r", plan_id="p", next_node="b"))
        >>> load_checkpoint(root).next_node
        'b'
    """
    path = logs_root / CHECKPOINT_FILE
    try:
        return Checkpoint.model_validate_json(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"no checkpoint to resume at {path}: {exc.strerror or exc}") from None
    except ValidationError as exc:
        raise ConfigError(
            f"{path} is not a pipeline checkpoint: {exc.errors()[0]['msg']}"
        ) from None
