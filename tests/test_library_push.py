"""git_feature_branch ends with an optional push (issue 36; documents 000 and 003).

Both documents end the plan with a push. waygraph's plan asks first: after
``verify_commit``, a remote listed by ``git remote -v`` leads to the human
node ``ask_push``; yes pushes (verified by the push's own command and
``git status -sb`` showing the branch tracked with nothing ahead), no
finishes at ``done_local``. With no remote listed there is nothing to push
and nobody is asked. The git output here is real git's, from a repository
with a bare "origin" beside it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from waygraph import Navigator, load_library

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

VERIFY = "LC_ALL=C git log --oneline -3 && LC_ALL=C git status && git remote -v"
PUSH = "git push -u origin HEAD && git status -sb"


def sh(cwd: Path, command: str) -> tuple[str, int]:
    done = subprocess.run(
        command,
        shell=True,
        cwd=cwd,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(cwd), "LC_ALL": "C"},
        check=False,
    )
    return done.stdout + done.stderr, done.returncode


def repo(tmp_path: Path, *, remote: bool) -> Path:
    """A repository with one commit on feature/x (and a bare origin when ``remote``)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for command in (
        "git init -q -b main",
        "git config user.name T && git config user.email t@example.invalid",
        "git config commit.gpgsign false",
        "echo a > a.txt && git add a.txt && git commit -q -m init",
        "git switch -q -c feature/x",
        "echo b >> a.txt && git commit -q -am 'feat: b'",
    ):
        assert sh(ws, command)[1] == 0, command
    if remote:
        assert sh(tmp_path, "git init -q --bare origin.git")[1] == 0
        assert sh(ws, f"git remote add origin {tmp_path / 'origin.git'}")[1] == 0
    return ws


def at_verify_commit(nav: Navigator) -> None:
    """Walk git_feature_branch up to verify_commit (the branch already holds a commit)."""
    nav.start("s", "git_feature_branch")
    for output in (
        "On branch main\nnothing to commit, working tree clean",
        "Switched to a new branch 'feature/x'",
        " M a.txt",
        "[feature/x 1a2b3c4] feat: b\n 1 file changed, 1 insertion(+)",
    ):
        g = nav.turn("s", tool_output=output, exit_code=0, tool_args="git ...")
        assert g.error is None and g.run["status"] == "running", g.error
    assert nav.state("s")["current_node"] == "verify_commit"


def report(nav: Navigator, ws: Path, command: str) -> dict:
    output, code = sh(ws, command)
    g = nav.turn("s", tool_output=output, exit_code=code, tool_args=command)
    assert g.error is None, g.error
    return g.run


@pytest.fixture
def nav() -> Navigator:
    return Navigator(load_library(), store="memory://")


def test_without_a_remote_the_plan_finishes_unpushed_and_asks_nobody(nav, tmp_path):
    ws = repo(tmp_path, remote=False)
    at_verify_commit(nav)
    run = report(nav, ws, VERIFY)
    assert run["status"] == "completed" and run["current_node"] == "done_local"
    assert "ask_push" not in run["path"] and run.get("awaiting") is None


def test_with_a_remote_the_user_is_asked_and_no_keeps_it_local(nav, tmp_path):
    ws = repo(tmp_path, remote=True)
    at_verify_commit(nav)
    run = report(nav, ws, VERIFY)
    assert run["current_node"] == "ask_push" and run["awaiting"] == "user"
    text = nav.context("s") or ""
    assert "Push the branch and open a pull request?" in text
    run = nav.answer("s", "n").run
    assert run["status"] == "completed" and run["current_node"] == "done_local"
    assert sh(ws, "git ls-remote origin")[0] == ""  # nothing was pushed


def test_yes_pushes_and_the_push_is_verified_by_git_itself(nav, tmp_path):
    ws = repo(tmp_path, remote=True)
    at_verify_commit(nav)
    report(nav, ws, VERIFY)
    assert nav.answer("s", "y").run["current_node"] == "push"
    # Not the push's own command: no evidence either way.
    assert report(nav, ws, "git status -sb")["current_node"] == "push"
    run = report(nav, ws, PUSH)
    assert run["status"] == "completed" and run["current_node"] == "done"
    assert "feature/x" in sh(ws, "git ls-remote origin")[0]


def test_a_branch_still_ahead_after_the_push_is_not_pushed(nav, tmp_path):
    ws = repo(tmp_path, remote=True)
    at_verify_commit(nav)
    report(nav, ws, VERIFY)
    nav.answer("s", "yes, push it")
    # The push ran, then a new commit: git status -sb says [ahead 1].
    ahead = "git push -u origin HEAD && git commit -q --allow-empty -m more && git status -sb"
    run = report(nav, ws, ahead)
    assert run["current_node"] == "push" and run["status"] == "running"
    # A rejected push (the remote is gone) fails too; the second failure escalates.
    shutil.rmtree(tmp_path / "origin.git")
    run = report(nav, ws, PUSH)
    assert run["status"] == "escalated" and run["current_node"] == "escalate_push"
