"""Run kinds are written once, in ``RunKind`` (issue 38 item 2).

An AST scan of ``src/waygraph`` finds a run kind's name written as a string
where code decides by kind: compared (``kind == "dag"``, ``kind in (...)``),
passed as ``kind=``, given to a name or parameter called ``kind``, used as
keys of a table by kind, or inside SQL that filters on the ``kind`` column.
Docstrings and comments are not code and may name kinds; so may the
``RunKind`` definition itself (and ``LEGACY_KINDS``, the names before it).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from waygraph.model.record import LEGACY_KINDS, RunKind

SRC = Path(__file__).resolve().parent.parent / "src" / "waygraph"
DEFINITION = SRC / "model" / "record.py"
KINDS = frozenset(k.value for k in RunKind)
#: With the names kinds had before (``run``, ``plan_context``), which are also
#: common words: those are looked for only where code names a kind.
NAMES = KINDS | frozenset(LEGACY_KINDS)
#: SQL naming a kind: ``kind = 'guided'``, ``kind || '' = 'guided'``, ``kind IN ('dag')``.
SQL = re.compile(
    r"kind\s*(?:\|\|\s*''\s*)?(?:=|<>|!=|IN\s*\()\s*'(" + "|".join(sorted(NAMES)) + r")'",
    re.IGNORECASE,
)


def _kind_constants(node: ast.AST | None) -> Iterator[ast.Constant]:
    """``node`` and the items of a tuple, list or set it is, when they are kind names."""
    items = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    for item in items:
        if isinstance(item, ast.Constant) and item.value in NAMES:
            yield item


def _named_kind(target: ast.AST) -> bool:
    name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", "")
    return "kind" in name.lower()


def _names_kind(node: ast.keyword | ast.Assign | ast.AnnAssign) -> bool:
    """``kind=...``, ``KIND = ...`` or ``kind: str = ...``: a value given to a kind."""
    if isinstance(node, ast.keyword):
        return node.arg is not None and "kind" in node.arg
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return any(_named_kind(t) for t in targets)


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def kind_literals(tree: ast.AST) -> Iterator[ast.Constant]:
    """Every place in ``tree`` that writes a run kind's name as a string."""
    docs = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                yield from _kind_constants(side)
        elif isinstance(node, ast.keyword | ast.Assign | ast.AnnAssign) and _names_kind(node):
            yield from _kind_constants(node.value)
        elif isinstance(node, ast.arguments):
            named = [*node.posonlyargs, *node.args][-len(node.defaults) :] if node.defaults else []
            for arg, default in zip(named, node.defaults, strict=True):
                if "kind" in arg.arg:
                    yield from _kind_constants(default)
            for arg, default in zip(node.kwonlyargs, node.kw_defaults, strict=True):
                if "kind" in arg.arg:
                    yield from _kind_constants(default)
        elif isinstance(node, ast.Dict):
            keys = [k for k in node.keys if isinstance(k, ast.Constant) and k.value in KINDS]
            if len(keys) >= 2:  # a table by kind
                yield from keys  # type: ignore[misc]
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Sample":
            yield from _kind_constants(node.args[0] if node.args else None)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docs
            and SQL.search(node.value)
        ):
            yield node


def test_no_run_kind_name_is_written_outside_its_definition():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if path == DEFINITION:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for const in kind_literals(tree):
            found.append(f"{path.relative_to(SRC)}:{const.lineno}: {const.value!r}")
    assert found == [], "write RunKind.<KIND> instead:\n" + "\n".join(sorted(set(found)))


def test_the_scan_finds_each_way_of_writing_a_kind():
    code = """
if record.kind == "guided": pass
if kind in ("dag", "pipeline"): pass
store.list(kind="session")
KIND = "event"
def f(kind: str = "guided"): pass
facts = {"event": 1, "dag": 2}
Sample("dag", "r1", "goal", ())
SQL = "SELECT key FROM records WHERE kind = 'guided'"
"""
    values = [c.value for c in kind_literals(ast.parse(code))]
    assert sorted(values) == sorted(
        [
            "guided",
            "dag",
            "pipeline",
            "session",
            "event",
            "guided",
            "event",
            "dag",
            "dag",
            "SELECT key FROM records WHERE kind = 'guided'",
        ]
    )


def test_a_kind_named_in_a_docstring_or_as_another_key_is_not_a_kind_literal():
    code = '''
def f():
    """Runs of kind "guided" and SQL like kind = 'guided' in prose."""
    return {"session": s, "run": r}, event.get("type", "event")
'''
    assert list(kind_literals(ast.parse(code))) == []
