"""A confined command uses the devices it needs, and no other part of ``/dev`` or ``/run``.

``/dev/shm`` holds other programs' shared memory (PostgreSQL's segments on this
machine) and files people keep in RAM; ``/run/secrets`` is where containers mount
secrets. Before, the whole of ``/dev`` and ``/run`` was open to a confined
command: it read both.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import DISK_TEMP
from tests.test_sandbox import run
from waygraph.sandbox import landlock

SECRET = "SHM-SECRET-4410"

pytestmark = pytest.mark.skipif(
    landlock.abi_version() < 1,
    reason="this kernel has no Landlock (Linux 5.13+), so commands cannot be confined here",
)


@pytest.fixture
def workspace() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="waygraph-dev-", dir=DISK_TEMP))
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _planted(folder: Path) -> Iterator[Path]:
    """A secret file in ``folder`` (skipped where the test cannot write there)."""
    if not os.access(folder, os.W_OK):
        pytest.skip(f"{folder} is not writable here")
    path = folder / f"waygraph-test-{uuid.uuid4().hex}"
    path.write_text(SECRET)
    yield path
    path.unlink(missing_ok=True)


@pytest.fixture
def shm_secret() -> Iterator[Path]:
    if not Path("/dev/shm").is_dir():
        pytest.skip("no /dev/shm here")
    yield from _planted(Path("/dev/shm"))


@pytest.fixture
def run_secret() -> Iterator[Path]:
    if not os.access("/run", os.W_OK):
        pytest.skip("/run is not writable here")
    folder = Path("/run") / f"waygraph-secrets-{uuid.uuid4().hex}"
    folder.mkdir()
    try:
        yield from _planted(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_shared_memory_is_neither_readable_nor_writable(workspace: Path, shm_secret: Path):
    assert SECRET not in run(workspace, f"cat {shm_secret}")
    assert SECRET not in run(workspace, f"python3 -c \"print(open('{shm_secret}').read())\"")
    pwned = Path("/dev/shm") / f"waygraph-pwned-{uuid.uuid4().hex}"
    run(workspace, f"echo x > {pwned}")
    assert not pwned.exists()


def test_secrets_under_run_are_not_readable(workspace: Path, run_secret: Path):
    assert SECRET not in run(workspace, f"cat {run_secret}")


def test_the_devices_a_command_needs_still_work(workspace: Path):
    assert run(workspace, "echo x > /dev/null && echo ok") == "ok\n"
    assert run(workspace, "head -c 4 /dev/urandom | wc -c").strip() == "4"
    assert run(workspace, "head -c 3 /dev/zero | wc -c").strip() == "3"
    assert run(workspace, "echo err > /dev/stderr; echo out > /dev/stdout") == "err\nout\n"
    if Path("/etc/resolv.conf").exists():
        # Names still resolve: the file may point into /run (systemd-resolved and others).
        assert run(workspace, "cat /etc/resolv.conf > /dev/null && echo ok") == "ok\n"


def test_the_rules_name_devices_not_the_whole_of_dev():
    assert "/dev" not in landlock.DEVICES and "/dev/shm" not in landlock.DEVICES
    assert "/run" not in landlock.read_only_paths()
    assert "/dev/null" in landlock.DEVICES
