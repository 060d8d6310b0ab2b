"""Helpers that build task workspaces and inspect them, deterministically and offline.

Workspaces are plain folders made by Python code; git repositories are made
with the ``git`` command under a fixed author, committer and date, so the same
task always yields the same commit ids.

Example:
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> write_files(root, {"a.txt": "hi\\n"})
    >>> sha256_file(root / "a.txt")[:12]
    '98ea6e4f216f'
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from waygraph.sandbox import runner

__all__ = [
    "GITIGNORE",
    "GIT_ENV",
    "commit_all",
    "git",
    "git_ok",
    "hidden_check",
    "init_repo",
    "run_python",
    "sha256_file",
    "sha256_text",
    "tests_pass",
    "unchanged_files",
    "write_files",
]

#: The .gitignore every code task's repository starts with.
GITIGNORE = "__pycache__/\n*.pyc\n"

#: Identity and clock for commits made while building workspaces.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Eval Setup",
    "GIT_AUTHOR_EMAIL": "setup@waygraph.invalid",
    "GIT_AUTHOR_DATE": "2024-05-01T12:00:00+00:00",
    "GIT_COMMITTER_NAME": "Eval Setup",
    "GIT_COMMITTER_EMAIL": "setup@waygraph.invalid",
    "GIT_COMMITTER_DATE": "2024-05-01T12:00:00+00:00",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "LC_ALL": "C",
}


def _env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.devnull, **GIT_ENV}


def write_files(root: Path, files: Mapping[str, str | bytes]) -> None:
    """Write ``files`` (relative path -> text or bytes) under ``root``."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def git(root: Path, *args: str, check: bool = True) -> str:
    """Run ``git args`` in ``root`` with the fixed identity; return stdout (stripped)."""
    done = subprocess.run(
        ["git", *args], cwd=root, env=_env(), capture_output=True, text=True, check=False
    )
    if check and done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {root}: {done.stderr.strip()}")
    return done.stdout.strip()


def git_ok(root: Path, *args: str) -> bool:
    """True when ``git args`` exits 0 in ``root``."""
    done = subprocess.run(["git", *args], cwd=root, env=_env(), capture_output=True, check=False)
    return done.returncode == 0


def init_repo(root: Path, files: Mapping[str, str | bytes] | None = None) -> None:
    """A git repository on ``main`` with a local identity (so the agent can commit)."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Eval Agent")
    git(root, "config", "user.email", "agent@waygraph.invalid")
    git(root, "config", "commit.gpgsign", "false")
    if files:
        write_files(root, files)
        commit_all(root, "initial commit")


def commit_all(root: Path, message: str) -> None:
    """Stage everything in the repository at ``root`` and commit it."""
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def sha256_file(path: Path) -> str:
    """The SHA-256 hex digest of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sha256_text(text: str | bytes) -> str:
    """The SHA-256 hex digest of text (UTF-8) or bytes."""
    data = text.encode() if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def run_python(root: Path, *args: str, timeout: float = 60.0) -> tuple[bool, str]:
    """Run this interpreter with ``args`` in ``root``; (exit code 0?, combined output)."""
    env = {**_env(), "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(root)}
    # The agent's code runs here: through the one runner, so it cannot print
    # without end or leave processes behind.
    result = runner.run([sys.executable, *args], cwd=root, env=env, timeout=timeout, keep=100_000)
    if result.timed_out:
        return False, f"timed out after {timeout:g}s"
    return result.exit_code == 0, result.output


# ------------------------------------------------------------------ checks the tasks share


def tests_pass(ws: Path, *names: str) -> Iterator[str]:
    """The workspace's unittest suite (or ``names`` of it) passes; else why not."""
    ok, output = run_python(ws, "-m", "unittest", *names)
    if not ok:
        tail = output.strip().splitlines()[-1:] or ["no output"]
        yield f"the tests fail ({tail[0]})"


def unchanged_files(ws: Path, originals: dict[str, str]) -> Iterator[str]:
    """Each of ``originals`` (name -> text) is still there, byte for byte."""
    for name, text in originals.items():
        path = ws / name
        if not path.is_file():
            yield f"{name} was deleted"
        elif sha256_file(path) != sha256_text(text):
            yield f"{name} was edited (it must stay as it was)"


def hidden_check(ws: Path, code: str, what: str) -> Iterator[str]:
    """Python ``code`` the model never saw runs cleanly in the workspace; else ``what`` failed."""
    ok, output = run_python(ws, "-c", code)
    if not ok:
        last = output.strip().splitlines()[-1:] or ["no output"]
        yield f"{what}: {last[0]}"
