"""`waygraph --version`, run as a user runs it."""

from __future__ import annotations

import subprocess
import sys

import waygraph


def test_version_prints_the_package_version_and_exits_0():
    done = subprocess.run(
        [sys.executable, "-m", "waygraph", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"waygraph {waygraph.__version__}"
