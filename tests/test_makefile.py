"""The README's two commands: `make demo` installs only waygraph, `make test` the test tools."""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def plan_of(target: str, venv: Path, *settings: str) -> str:
    """What `make TARGET` would run for a fresh virtual environment (make -n)."""
    # Run under `make test` itself, so the outer make's flags are not passed on.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", target, f"VENV={venv}", *settings],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


def test_make_demo_installs_the_base_package_only(tmp_path: Path):
    commands = plan_of("demo", tmp_path / "venv")
    assert "pip install -q -e .\n" in commands
    assert "[dev]" not in commands and "chromium" not in commands
    assert commands.rstrip().endswith("waygraph demo")


def test_make_test_installs_the_test_tools(tmp_path: Path):
    commands = plan_of("test", tmp_path / "venv")
    # One resolver call for the test tools and the semantic extra (its torch pinned).
    installs = [c for c in commands.splitlines() if "pip install" in c and "-e '." in c]
    assert installs == [
        f"{tmp_path / 'venv'}/bin/python -m pip install -q --no-compile"
        " -e '.[dev,semantic]' 'torch==2.13.0'"
    ]
    assert "pytest -q" in commands


def test_make_test_runs_the_suite_on_three_workers_unless_told_otherwise(tmp_path: Path):
    suite = [c for c in plan_of("test", tmp_path / "venv").splitlines() if "pytest -q" in c]
    assert suite == [
        f"PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX={tmp_path / 'venv'}/pycache"
        f" {tmp_path / 'venv'}/bin/python -m pytest -q -n 3 --dist loadfile --no-loadscope-reorder"
    ]
    serial = plan_of("test", tmp_path / "venv", "TEST_WORKERS=0")
    assert "pytest -q -n 0 --dist loadfile" in serial
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(d.startswith("pytest-xdist") for d in dev["dev"])


def test_make_test_lints_and_type_checks(tmp_path: Path):
    # `make test` runs lint first: ruff, then mypy (strict, settings in pyproject.toml).
    commands = plan_of("test", tmp_path / "venv").splitlines()
    venv_bin = f"{tmp_path / 'venv'}/bin"
    ruff = commands.index(f"{venv_bin}/ruff check src tests bench examples")
    mypy = commands.index(f"{venv_bin}/mypy src/waygraph")
    tests = next(i for i, c in enumerate(commands) if "pytest -q" in c)
    assert ruff < mypy < tests


def test_mypy_settings_are_strict_over_the_package():
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())
    mypy = settings["tool"]["mypy"]
    assert mypy["strict"] is True
    assert mypy["files"] == ["src/waygraph"]
    dev = settings["project"]["optional-dependencies"]["dev"]
    assert any(d.startswith("mypy") for d in dev)
