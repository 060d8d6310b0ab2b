"""waygraph's imports read from its source: who imports whom, when, and the cycles.

Shared by tests/test_layers.py and scripts/import_picture.py (the picture in
docs/architecture.md). Nothing is imported: every module is parsed with ``ast``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "waygraph"


@dataclass(frozen=True)
class Import:
    """One import of a package module by another."""

    source: str
    target: str
    line: int
    #: Runs when ``source`` is imported (module level, not under ``TYPE_CHECKING``).
    at_import: bool


def module_names(root: Path = SRC, package: str = "waygraph") -> dict[str, Path]:
    """Every module of the package, by dotted name (a package by its ``__init__``)."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join([package, *parts])] = path
    return names


def _not_on_import(test: ast.expr) -> bool:
    """``if TYPE_CHECKING:`` and ``if __name__ == "__main__":`` bodies never run on import."""
    text = ast.unparse(test)
    return "TYPE_CHECKING" in text or "__main__" in text


def _walk(body: list[ast.stmt], at_import: bool) -> Iterator[tuple[ast.stmt, bool]]:
    """Import statements in ``body``, and whether they run at import time."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, at_import
        elif isinstance(node, ast.If):
            inner = at_import and not _not_on_import(node.test)
            yield from _walk(node.body, inner)
            yield from _walk(node.orelse, at_import)
        elif isinstance(node, ast.Try):
            for part in (node.body, node.orelse, node.finalbody):
                yield from _walk(part, at_import)
            for handler in node.handlers:
                yield from _walk(handler.body, at_import)
        elif isinstance(node, ast.With):
            yield from _walk(node.body, at_import)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield from _walk(node.body, at_import and isinstance(node, ast.ClassDef))


def _targets(node: ast.stmt, source: str, names: dict[str, Path], package: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == package]
    assert isinstance(node, ast.ImportFrom)
    base = node.module or ""
    if node.level:
        # Relative: resolved against the importing module's package.
        here = source.split(".")
        if names[source].name != "__init__.py":
            here = here[:-1]
        here = here[: len(here) - node.level + 1]
        base = ".".join([*here, base] if base else here)
    if base.split(".")[0] != package:
        return []
    found = []
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        found.append(sub if sub in names else base)
    return found


@cache
def _cached(root: Path, package: str) -> tuple[Import, ...]:
    names = module_names(root, package)
    found = []
    for source, path in names.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node, at_import in _walk(tree.body, True):
            for target in _targets(node, source, names, package):
                if target != source:
                    found.append(Import(source, target, node.lineno, at_import))
    return tuple(found)


def imports(root: Path = SRC, package: str = "waygraph") -> list[Import]:
    """Every import of one package module by another, in or out of functions."""
    return list(_cached(root, package))


def _parents(module: str) -> list[str]:
    """The packages above ``module`` below the top one: ``a.b.c`` -> ``[a.b]``."""
    parts = module.split(".")
    return [".".join(parts[:n]) for n in range(2, len(parts))]


def within(module: str, *packages: str) -> bool:
    """Whether ``module`` is one of ``packages`` or inside one of them."""
    return any(module == p or module.startswith(p + ".") for p in packages)


def top_cycles(root: Path = SRC, package: str = "waygraph") -> list[list[str]]:
    """Groups of modules that import each other at import time (strongly connected)."""
    graph: dict[str, set[str]] = {}
    for i in imports(root, package):
        if i.at_import:
            edges = graph.setdefault(i.source, set())
            edges.add(i.target)
            # Importing a.b.c runs a.b's __init__ first: a package's __init__ is
            # imported too, unless it is one the importer already sits in.
            edges.update(p for p in _parents(i.target) if not within(i.source, p))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        # Tarjan's algorithm, recursive: the package's import chains are short.
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(cycles)
