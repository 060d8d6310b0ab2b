"""Issue 13, defect 5: the ``waygraph plan`` shell tool is confined by the kernel.

Each escape below read or wrote outside ``--workspace`` when confinement was
a string check. Under Landlock none reaches the secret or leaves a file
behind, while ordinary work (files, folders, Python, git, temporary files)
still runs.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import DISK_TEMP
from waygraph.cli.plan_tools import NO_CONFINEMENT, CommandFailed, workspace_tools
from waygraph.sandbox import landlock

SECRET = "TOP-SECRET-7731"

pytestmark = pytest.mark.skipif(
    landlock.abi_version() < 1,
    reason="this kernel has no Landlock (Linux 5.13+), so commands cannot be confined here",
)


@pytest.fixture(params=["disk", "tmp_path"])
def box(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A workspace with a secret beside it and a link pointing at the secret, on
    disk (where a workspace and its neighbours normally are) and in tmp_path, which
    the suite keeps in /dev/shm when it can (tests/conftest.py): a confined
    command reached all of /dev before only the devices it needs were opened."""
    if request.param == "disk":
        root = Path(tempfile.mkdtemp(prefix="waygraph-box-", dir=DISK_TEMP))
    else:
        root = tmp_path
    workspace = root / "ws"
    workspace.mkdir()
    secret = root / "secret.txt"
    secret.write_text(SECRET)
    (workspace / "link_to_secret").symlink_to(secret)
    (workspace / "link_to_parent").symlink_to(root, target_is_directory=True)
    yield workspace, root
    if request.param == "disk":
        shutil.rmtree(root, ignore_errors=True)


def run(workspace: Path, command: str) -> str:
    shell = workspace_tools(workspace, timeout=20)[0]
    try:
        return shell(command)
    except CommandFailed as exc:
        return f"FAILED {exc}"


ESCAPES = [
    "cat link_to_secret",
    'cat "$PWD"/../secret.txt',
    "cat ../s*.txt",
    "cat $(dirname $PWD)/secret.txt",
    "cat link_to_parent/secret.txt",
    f"{sys.executable} -c \"print(open('{{outside}}/secret.txt').read())\"",
    "python3 -c \"import os; print(open(os.path.dirname(os.getcwd()) + '/secret.txt').read())\"",
    "cd .. && cat secret.txt",
    "cp ../secret.txt copied.txt; cat copied.txt",
    "ln ../secret.txt hard.txt; cat hard.txt",
    "grep -r TOP ..",
    "tar cf - -C .. secret.txt | tar xOf -",
    "find / -name secret.txt -exec cat {} + 2>/dev/null",
    "cat ~/../secret.txt; cat /root/.bashrc | head -c 0; cat $HOME/../secret.txt",
]

WRITES = [
    "echo x > $(dirname $PWD)/pwned.txt",
    "echo x > ../pwned.txt",
    "echo x > link_to_parent/pwned.txt",
    "touch /tmp/pwned.txt",
    "python3 -c \"open('{outside}/pwned.txt', 'w').write('x')\"",
    "mkdir ../pwned.txt",
    "cp /etc/hostname ../pwned.txt",
]


@pytest.mark.parametrize("command", ESCAPES)
def test_reading_outside_the_workspace_fails(box: tuple[Path, Path], command: str):
    workspace, outside = box
    output = run(workspace, command.replace("{outside}", str(outside)))
    assert SECRET not in output


@pytest.mark.parametrize("command", WRITES)
def test_writing_outside_the_workspace_fails(box: tuple[Path, Path], command: str):
    workspace, outside = box
    run(workspace, command.replace("{outside}", str(outside)))
    assert not (outside / "pwned.txt").exists()
    assert not Path("/tmp/pwned.txt").exists()


def test_ordinary_work_still_runs(box: tuple[Path, Path]):
    workspace, _ = box
    assert (
        run(workspace, "mkdir -p src && echo 'print(6 * 7)' > src/app.py && python3 src/app.py")
        == "42\n"
    )
    assert run(workspace, "echo t > $TMPDIR/x && cat $TMPDIR/x") == "t\n"
    assert run(workspace, "ls /usr/bin > /dev/null; echo ok") == "ok\n"
    git = "git -c user.name=a -c user.email=a@b"
    out = run(
        workspace,
        f"git init -q . && git add src && {git} commit -qm one && git log --oneline | wc -l",
    )
    assert out.strip() == "1"
    assert run(workspace, "rm -r src && ls src").startswith("FAILED")


def test_the_private_temporary_folder_is_gone_afterwards(box: tuple[Path, Path]):
    workspace, _ = box
    tmp = run(workspace, "echo $TMPDIR").strip()
    assert tmp and not Path(tmp).exists()


def test_without_landlock_the_shell_refuses_unless_unconfined(
    box: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
):
    workspace, _ = box
    monkeypatch.setattr(landlock, "abi_version", lambda: 0)
    shell = workspace_tools(workspace)[0]
    with pytest.raises(CommandFailed, match="--unconfined"):
        shell("echo hi")
    assert "Landlock" in NO_CONFINEMENT
    unconfined = workspace_tools(workspace, unconfined=True)[0]
    assert unconfined("echo hi") == "hi\n"


def test_the_launcher_refuses_bad_arguments():
    proc = subprocess.run(
        [sys.executable, "-I", "-S", landlock.__file__, "only-one"], capture_output=True, text=True
    )
    assert proc.returncode == 2 and "usage" in proc.stderr
