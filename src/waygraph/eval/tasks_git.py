"""Git tasks: a feature branch from a dirty tree, a branch off a release, a conflicting merge."""

from __future__ import annotations

import configparser
from collections.abc import Iterator
from pathlib import Path

from waygraph.eval.suite import EvalTask, TaskVerdict, register, sh, write
from waygraph.eval.workspace import (
    GITIGNORE,
    commit_all,
    git,
    git_ok,
    init_repo,
    run_python,
    write_files,
)


def _branch_exists(ws: Path, branch: str) -> bool:
    return git_ok(ws, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}")


def _show(ws: Path, ref: str, path: str) -> str | None:
    if not git_ok(ws, "cat-file", "-e", f"{ref}:{path}"):
        return None
    return git(ws, "show", f"{ref}:{path}")


def _count(ws: Path, ref: str) -> int:
    return int(git(ws, "rev-list", "--count", ref))


# ------------------------------------------------------------------ feature-branch-dirty-tree

APP_BEFORE = '''\
"""The app."""


def version() -> str:
    return "1.4.0"
'''
APP_WITH_GREET = (
    APP_BEFORE
    + """

def greet(name: str) -> str:
    return f"Hello, {name}!"
"""
)
NOTES_BEFORE = "# Notes\n\n- ship 1.4\n"
NOTES_DIRTY = NOTES_BEFORE + "- ask Sam about the release date\n"


def _setup_dirty(root: Path) -> Path:
    init_repo(root, {".gitignore": GITIGNORE, "app.py": APP_BEFORE, "notes.txt": NOTES_BEFORE})
    write_files(root, {"notes.txt": NOTES_DIRTY})
    return root


def _notes_kept(ws: Path) -> bool:
    path = ws / "notes.txt"
    if path.is_file() and path.read_text() == NOTES_DIRTY:
        return True
    stashes = git(ws, "stash", "list", "--format=%gd").split()
    return any(_show(ws, s, "notes.txt") == NOTES_DIRTY.rstrip("\n") for s in stashes)


def _check_dirty(ws: Path) -> Iterator[str]:
    if not _branch_exists(ws, "feature/greeting"):
        yield "there is no branch feature/greeting"
        return
    if _count(ws, "main") != 1:
        yield "main has new commits; the work belongs on feature/greeting only"
    if _count(ws, "feature/greeting") < 2:
        yield "nothing is committed on feature/greeting"
    app = _show(ws, "feature/greeting", "app.py")
    if app is None:
        yield "app.py is missing on feature/greeting"
    else:
        ok, output = run_python(
            ws, "-c", app + "\nassert greet('Ada') == 'Hello, Ada!', greet('Ada')\n"
        )
        if not ok:
            yield f"greet() on feature/greeting is wrong: {output.strip()[-120:]}"
    committed_notes = {_show(ws, ref, "notes.txt") for ref in ("main", "feature/greeting")}
    if NOTES_DIRTY.rstrip("\n") in committed_notes:
        yield "the uncommitted notes were committed; they had to stay uncommitted"
    if not _notes_kept(ws):
        yield "the uncommitted edits to notes.txt are lost (not in the tree, not stashed)"


register(
    EvalTask(
        id="feature-branch-dirty-tree",
        plan="git_feature_branch",
        request=(
            "Please create a new feature branch feature/greeting and commit a change there: add "
            "a function greet(name) to app.py that returns 'Hello, <name>!'. I have uncommitted "
            "edits in notes.txt: don't lose them and don't commit them."
        ),
        setup=_setup_dirty,
        check=lambda ws: TaskVerdict.of(_check_dirty(ws)),
        solution=(
            sh("LC_ALL=C git status && git branch --show-current", "check_status"),
            sh(
                "git stash push --include-untracked -m 'waygraph: before feature/greeting'",
                "save_work",
            ),
            sh("LC_ALL=C git status && git branch --show-current", "check_status"),
            sh("git switch -c feature/greeting", "create_branch"),
            write("app.py", APP_WITH_GREET, "make_changes"),
            sh("git status --short", "make_changes"),
            sh("git add app.py && git commit -m 'feat: add greet(name)'", "commit"),
            sh("LC_ALL=C git log --oneline -3 && LC_ALL=C git status", "verify_commit"),
        ),
        wrong_solution=(
            sh(
                "git add -A && git commit -q -m wip && git switch -c feature/greeting && "
                "printf '\\ndef greet(name):\\n    return f\"Hello, {name}!\"\\n' >> app.py && "
                "git commit -q -am 'add greet'"
            ),
        ),
        wrong_because="commits the user's notes on main before branching",
        max_steps=14,
        tags=("git",),
    )
)

# ------------------------------------------------------------------ branch-from-release

README_V1 = "# Widget\n\n## Instalation\n\n    pip install widget\n"
README_MAIN = README_V1 + "\n## Development\n\nRun the tests with `python3 -m unittest`.\n"
README_FIXED = README_V1.replace("Instalation", "Installation")


def _setup_release(root: Path) -> Path:
    init_repo(root, {".gitignore": GITIGNORE, "README.md": README_V1, "VERSION": "1.0.0\n"})
    git(root, "branch", "release-1.0")
    write_files(root, {"README.md": README_MAIN, "VERSION": "1.1.0.dev0\n"})
    commit_all(root, "start 1.1 development")
    git(root, "switch", "-q", "release-1.0")
    write_files(root, {"VERSION": "1.0.1\n"})
    commit_all(root, "release 1.0.1")
    git(root, "switch", "-q", "main")
    return root


def _check_release(ws: Path) -> Iterator[str]:
    branch = "feature/readme-typo"
    if not _branch_exists(ws, branch):
        yield f"there is no branch {branch}"
        return
    if _count(ws, "main") != 2 or _count(ws, "release-1.0") != 2:
        yield "main or release-1.0 changed; only the new branch may get commits"
    if not git_ok(ws, "merge-base", "--is-ancestor", "release-1.0", branch):
        yield f"{branch} does not start from release-1.0"
    if git_ok(ws, "merge-base", "--is-ancestor", "main", branch):
        yield f"{branch} contains main's development commits: it was branched off main"
    readme = _show(ws, branch, "README.md") or ""
    if "Installation" not in readme or "Instalation" in readme:
        yield f"README.md on {branch} still has the typo"
    if _show(ws, branch, "VERSION") != "1.0.1":
        yield f"VERSION on {branch} is not the release's 1.0.1"


register(
    EvalTask(
        id="branch-from-release",
        plan="git_feature_branch",
        request=(
            "Create a new branch feature/readme-typo off the release-1.0 branch (not off main) "
            "and commit a fix for the 'Instalation' typo in README.md there."
        ),
        setup=_setup_release,
        check=lambda ws: TaskVerdict.of(_check_release(ws)),
        solution=(
            sh("LC_ALL=C git status && git branch --show-current", "check_status"),
            sh("git switch -c feature/readme-typo release-1.0", "create_branch"),
            sh(
                "sed -i 's/Instalation/Installation/' README.md && git status --short",
                "make_changes",
            ),
            sh("git add README.md && git commit -m 'docs: fix the Installation typo'", "commit"),
            sh("LC_ALL=C git log --oneline -3 && LC_ALL=C git status", "verify_commit"),
        ),
        wrong_solution=(
            sh(
                "git switch -c feature/readme-typo && sed -i 's/Instalation/Installation/' "
                "README.md && git commit -q -am 'fix typo'"
            ),
        ),
        wrong_because="branches off main instead of release-1.0",
        max_steps=10,
        tags=("git",),
    )
)

# ------------------------------------------------------------------ merge-with-conflict

SETTINGS_BASE = "[server]\nhost = 0.0.0.0\ntimeout = 30\nretries = 3\n"
SETTINGS_MAIN = "[server]\nhost = 0.0.0.0\ntimeout = 30\nretries = 5\n"
SETTINGS_BRANCH = "[server]\nhost = 0.0.0.0\ntimeout = 60\nretries = 3\n"
SETTINGS_MERGED = "[server]\nhost = 0.0.0.0\ntimeout = 60\nretries = 5\n"
CHECK_SETTINGS = '''\
"""Checks settings.ini parses and holds sane values."""

import configparser
import sys

config = configparser.ConfigParser()
try:
    config.read("settings.ini")
    timeout = config.getint("server", "timeout")
    retries = config.getint("server", "retries")
except (configparser.Error, ValueError) as exc:
    print(f"settings check FAILED: {exc}")
    sys.exit(1)
if not (1 <= timeout <= 300 and 0 <= retries <= 10):
    print(f"settings check FAILED: timeout={timeout} retries={retries}")
    sys.exit(1)
print(f"settings ok: timeout={timeout} retries={retries}")
'''


def _setup_merge(root: Path) -> Path:
    remote, ws = root / "origin.git", root / "project"
    init_repo(
        ws,
        {
            ".gitignore": GITIGNORE,
            "settings.ini": SETTINGS_BASE,
            "check_settings.py": CHECK_SETTINGS,
        },
    )
    git(ws, "switch", "-q", "-c", "feature/timeout")
    write_files(ws, {"settings.ini": SETTINGS_BRANCH})
    commit_all(ws, "raise the timeout to 60s")
    git(ws, "switch", "-q", "main")
    write_files(ws, {"settings.ini": SETTINGS_MAIN})
    commit_all(ws, "retry 5 times")
    git(root, "init", "-q", "--bare", "-b", "main", str(remote))
    git(ws, "remote", "add", "origin", str(remote))
    git(ws, "push", "-q", "-u", "origin", "main", "feature/timeout")
    return ws


def _check_merge(ws: Path) -> Iterator[str]:
    if (ws / ".git" / "MERGE_HEAD").exists():
        yield "the merge is still in progress (MERGE_HEAD exists)"
    if git(ws, "branch", "--show-current") != "main":
        yield "main is not checked out"
    feature = git(ws, "rev-parse", "feature/timeout")
    parents = git(ws, "rev-list", "--parents", "-n", "1", "main").split()[1:]
    if len(parents) != 2 or feature not in parents:
        yield "main's last commit is not a merge of feature/timeout"
    text = _show(ws, "main", "settings.ini") or ""
    if any(marker in text for marker in ("<<<<<<<", "=======", ">>>>>>>")):
        yield "settings.ini on main still has conflict markers"
    config = configparser.ConfigParser()
    try:
        config.read_string(text)
        values = (config.get("server", "timeout"), config.get("server", "retries"))
    except (configparser.Error, ValueError):
        values = None
    if values != ("60", "5"):
        yield f"settings.ini on main has (timeout, retries) = {values}, want ('60', '5')"
    if git(ws, "status", "--porcelain", "--untracked-files=no"):
        yield "there are uncommitted changes to tracked files"
    remote = ws.parent / "origin.git"
    if git(remote, "rev-parse", "main") != git(ws, "rev-parse", "main"):
        yield "main is not pushed to origin"


register(
    EvalTask(
        id="merge-with-conflict",
        plan="git_merge_pr",
        request=(
            "Please merge the branch feature/timeout into main and push main. settings.ini "
            "will conflict: keep timeout = 60 from the branch and retries = 5 from main."
        ),
        setup=_setup_merge,
        check=lambda ws: TaskVerdict.of(_check_merge(ws)),
        solution=(
            sh("LC_ALL=C git status", "check_status"),
            sh("git fetch --prune && git switch main && git pull --ff-only", "update_target"),
            sh("git merge --no-edit feature/timeout", "merge", expect_failure=True),
            write("settings.ini", SETTINGS_MERGED, "resolve_conflicts"),
            sh(
                "git grep -n -e '^<<<<<<< ' -e '^>>>>>>> ' || echo 'no conflict markers left'",
                "resolve_conflicts",
            ),
            sh("git add settings.ini && git commit --no-edit", "conclude_merge"),
            sh("python3 check_settings.py", "test_merge"),
            sh("git push origin main", "push"),
        ),
        wrong_solution=(sh("git merge -q -X theirs --no-edit feature/timeout && git push -q"),),
        wrong_because="resolves the conflict wholesale with -X theirs, losing main's retries",
        max_steps=14,
        tags=("git",),
    )
)
