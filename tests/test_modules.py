"""The package's shape: small modules with one job, and the model free of file formats."""

from __future__ import annotations

import ast
from pathlib import Path

import waygraph

SRC = Path(waygraph.__file__).parent
#: DEVELOPERS.md: "Small modules with one job (none over 600 lines)".
MAX_LINES = 600


#: The test code keeps the same cap (issue 38): the tests, their helpers and conftests.
TEST_FOLDERS = [Path(__file__).parent, Path(__file__).parent.parent / "tests_model"]


def over_the_cap(root: Path) -> dict[str, int]:
    """The Python files below ``root`` longer than MAX_LINES, with their line counts."""
    return {
        str(path.relative_to(root.parent)): lines
        for path in sorted(root.rglob("*.py"))
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }


def test_no_module_is_over_600_lines():
    long = over_the_cap(SRC)
    assert long == {}


def test_no_test_module_is_over_600_lines():
    long = {
        name: n for root in TEST_FOLDERS if root.is_dir() for name, n in over_the_cap(root).items()
    }
    assert long == {}, (
        f"test modules over {MAX_LINES} lines: {long}. Split each by concept into "
        "tests/test_<subject>_<concept>.py (every test keeps its name); put what more than one "
        "of them uses in tests/conftest.py (fixtures) or a tests/<subject>_helpers.py module, "
        "and add new tests in a new module rather than to a long one."
    )


def test_the_engine_imports_no_io():
    # The engine is pure: no files, sockets, clocks, processes or stores.
    forbidden = {"os", "io", "time", "datetime", "socket", "subprocess", "sqlite3", "asyncio"}
    for path in (SRC / "engine").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = {node.module.split(".")[0]}
                if node.module.startswith("waygraph.store"):
                    names.add("waygraph.store")
            else:
                continue
            assert not names & (forbidden | {"waygraph.store"}), (path.name, names)


def test_the_model_imports_no_file_format():
    # One model: loaders (formats) depend on the model, never the other way round.
    for path in (SRC / "model").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "waygraph.formats" not in text, path.name


#: Public names two of the design documents give to different things; both stay.
SHARED_NAMES = {
    # document 004's Plan (waygraph.planning.Plan) and the graph model's Plan
    "Plan",
}


def test_no_public_class_name_means_two_things():
    where: dict[str, list[str]] = {}
    for path in SRC.rglob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                where.setdefault(node.name, []).append(str(path.relative_to(SRC)))
    twice = {name: files for name, files in where.items() if len(files) > 1}
    assert set(twice) <= SHARED_NAMES, twice


def test_every_kind_of_run_speaks_run_status():
    # One status vocabulary: each kind's statuses are RunStatus values.
    from typing import get_args

    from waygraph.engine import session_plan_run
    from waygraph.events.context import PlanStatus
    from waygraph.model import FINISHED, RunStatus
    from waygraph.pipelines.checkpoint import PipelineStatus

    values = {s.value for s in RunStatus}
    assert set(get_args(PlanStatus)) <= values
    assert set(get_args(PipelineStatus)) <= values
    assert set(session_plan_run.PLAN_STATUSES) <= values
    assert session_plan_run.FINISHED is FINISHED


def test_every_name_the_architecture_page_gives_exists():
    import importlib
    import re

    page = (SRC.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    names = set(re.findall(r"`(waygraph(?:\.\w+)+)`", page))
    assert len(names) >= 10
    for name in sorted(names):
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for part in parts[cut:]:
                obj = getattr(obj, part)
            break
        else:
            raise AssertionError(name)
