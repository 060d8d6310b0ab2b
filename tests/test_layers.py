"""The package's shape: a root a reader can scan, no import cycles, and DESIGN.md's layers.

Read from the source (``ast``), so a new module, a moved one or a new import is
judged the moment it is written, without importing anything. docs/architecture.md
draws the same picture (``scripts/import_picture.py`` prints it from this code).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._imports import SRC, Import, imports, module_names, top_cycles, within

#: Modules allowed at the package root, ``__init__`` and ``__main__`` among them.
ROOT_LIMIT = 12


def test_the_package_root_holds_at_most_twelve_modules():
    root = sorted(p.name for p in SRC.glob("*.py"))
    assert len(root) <= ROOT_LIMIT, (
        f"{len(root)} modules at src/waygraph/: {root}. Put the new one in the subpackage of "
        "its concept (docs/architecture.md, 'Where do I change X')."
    )


def test_no_import_cycle_at_import_time():
    cycles = top_cycles()
    assert cycles == [], (
        "modules that import each other when imported (import one of them where it is used, "
        "or move what both need into a module of its own): "
        + "; ".join(" -> ".join(c) for c in cycles)
    )


def test_errors_imports_nothing_of_the_package():
    found = [i for i in imports() if i.source == "waygraph.errors"]
    assert found == [], f"waygraph.errors is the bottom of the package, yet imports {found}"


def _targets(source_prefix: str) -> list[Import]:
    return [
        i
        for i in imports()
        if i.source == source_prefix or i.source.startswith(source_prefix + ".")
    ]


#: What the model layer is made of: the graph model and the vocabulary its fields are
#: checked against (verify types, conditions, plan-file patterns), and the package's base.
MODEL_LAYER = (
    "waygraph.errors",
    "waygraph.ids",
    "waygraph.suggest",
    "waygraph.model",
    "waygraph.verify_types",
    "waygraph.predicates",
    "waygraph.sandbox.patterns",
)


def test_the_engine_imports_nothing_above_the_model():
    above = [
        f"{i.source} imports {i.target} (line {i.line})"
        for i in _targets("waygraph.engine")
        if not within(i.target, "waygraph.engine", *MODEL_LAYER)
    ]
    assert above == [], "the engine is pure and sits on the model alone: " + "; ".join(above)


def test_the_model_imports_neither_the_engine_nor_a_driver():
    above = [
        f"{i.source} imports {i.target} (line {i.line})"
        for i in imports()
        if within(i.source, *MODEL_LAYER) and not within(i.target, *MODEL_LAYER)
    ]
    assert above == [], "the model layer imports only itself: " + "; ".join(above)


def test_the_store_never_imports_the_engine_or_a_driver():
    drivers = (
        "waygraph.engine",
        "waygraph.navigator",
        "waygraph.async_navigator",
        "waygraph.hooks",
        "waygraph.guided",
        "waygraph.planning",
        "waygraph.events",
        "waygraph.sessions",
        "waygraph.pipelines",
    )
    bad = [
        f"{i.source} imports {i.target} (line {i.line})"
        for i in _targets("waygraph.store")
        if within(i.target, *drivers)
    ]
    assert bad == [], "a store keeps records; it knows no driver: " + "; ".join(bad)


#: Private modules an adapter may still use, each for a stated reason.
ADAPTER_PRIVATE_ALLOWED = {
    # The one way waygraph imports an optional package: an adapter's framework is one.
    "waygraph._extras",
}


def test_adapters_use_only_the_public_api():
    bad = []
    for i in _targets("waygraph.integrations"):
        if i.target.startswith("waygraph.integrations"):
            continue  # an adapter's own package, private parts included
        private = any(part.startswith("_") for part in i.target.split(".")[1:])
        if private and i.target not in ADAPTER_PRIVATE_ALLOWED:
            bad.append(f"{i.source} imports {i.target} (line {i.line})")
    assert bad == [], "adapters build on public modules only: " + "; ".join(bad)


@pytest.mark.parametrize("old", ["waygraph.svg", "waygraph.runner", "waygraph.people"])
def test_a_moved_module_still_imports_by_its_old_path_as_the_same_module(old):
    import importlib

    import waygraph

    new = waygraph.MOVED_MODULES[old]
    assert importlib.import_module(old) is importlib.import_module(new)


def test_every_moved_path_points_at_a_module_that_exists():
    import waygraph

    names = set(module_names())
    missing = {old: new for old, new in waygraph.MOVED_MODULES.items() if new not in names}
    assert missing == {}
    still_there = [old for old in waygraph.MOVED_MODULES if old in names]
    assert still_there == [], "an old path is a module again; drop it from MOVED_MODULES"


def test_the_cycle_finder_finds_a_cycle(tmp_path: Path):
    # The guard above is only as good as the finder: two modules importing each other.
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("from pkg.b import x\n")
    (tmp_path / "pkg" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import c\n"
        "def f():\n    from pkg import c\nfrom pkg import a\nx = 1\n"
    )
    (tmp_path / "pkg" / "c.py").write_text("import pkg.a\n")
    assert top_cycles(tmp_path / "pkg", "pkg") == [["pkg.a", "pkg.b"]]


def test_the_import_picture_in_architecture_md_is_current():
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "scripts" / "import_picture.py"
    spec = importlib.util.spec_from_file_location("import_picture", path)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    page = script.PAGE.read_text(encoding="utf-8")
    assert script.page_with_table(page) == page, (
        "docs/architecture.md's import picture is stale: "
        "run python scripts/import_picture.py --write"
    )


# Each package imported first, in a process of its own: an import cycle that the
# reading above misses (through a package's __init__) fails here as an ImportError.
_IMPORT_EACH = """
import os, sys
failed = []
for name in sys.argv[1:]:
    pid = os.fork()
    if pid == 0:
        try:
            __import__(name)
        except BaseException as exc:
            print(f"{name}: {type(exc).__name__}: {exc}", flush=True)
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if status:
        failed.append(name)
sys.exit(1 if failed else 0)
"""


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_every_package_imports_first_in_a_fresh_process():
    import subprocess
    import sys

    packages = sorted(
        name
        for name, path in module_names().items()
        if path.name == "__init__.py" and name != "waygraph"
    )
    proc = subprocess.run(
        [sys.executable, "-c", _IMPORT_EACH, *packages], capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
