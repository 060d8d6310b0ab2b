"""Classes are capped by concept, not split over files (issue 38 item 5).

No class of waygraph is 400 lines or more (DEVELOPERS.md: classes under 400),
and none restates another class's attributes: the executor's ``PlanRun`` and
the event mode's ``PlanContext`` used to be over 1,000 lines each across
files, held together by mixins that declared their host's fields under
``if TYPE_CHECKING:`` so they could use them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import waygraph

SRC = Path(waygraph.__file__).parent
MAX_CLASS_LINES = 400


def classes() -> list[tuple[str, ast.ClassDef]]:
    """Every class of the package, nested ones included, with its module's path."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        name = str(path.relative_to(SRC))
        found += [(name, node) for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    return found


def size(node: ast.ClassDef) -> int:
    """Lines from the first decorator (or ``class``) to the class's last line."""
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    assert node.end_lineno is not None
    return node.end_lineno - first + 1


def test_no_class_is_400_lines_or_more():
    long = {f"{module}:{node.name}": size(node) for module, node in classes()}
    long = {name: lines for name, lines in long.items() if lines >= MAX_CLASS_LINES}
    assert long == {}, (
        f"classes of {MAX_CLASS_LINES} lines or more: {long}. Move a concept out into its own "
        "module (functions over the class's public fields, as events/_plan_changes does for "
        "PlanContext), not the class's methods into a mixin."
    )


def test_no_class_declares_another_classs_attributes_for_the_type_checker():
    # A mixin that uses its host's fields has to restate them under TYPE_CHECKING.
    restating = [
        f"{module}:{node.name}"
        for module, node in classes()
        for statement in node.body
        if isinstance(statement, ast.If) and "TYPE_CHECKING" in ast.unparse(statement.test)
    ]
    # The plan checker's parts were the last mixins; they now take the pass's state
    # (waygraph.check._scan.PlanScan) as an argument.
    assert restating == [], "compose around the state instead: " + "; ".join(restating)


@pytest.mark.parametrize(
    ("module", "name", "base"),
    [
        ("waygraph.planning._executor", "PlanRun", "object"),
        ("waygraph.events", "PlanContext", "BaseModel"),
    ],
)
def test_the_run_facades_have_no_mixin(module: str, name: str, base: str):
    import importlib

    cls = getattr(importlib.import_module(module), name)
    assert [b.__name__ for b in cls.__bases__] == [base]


def test_the_guard_sees_a_long_class():
    # The guard measures what it claims: a made-up class of 400 lines is caught.
    body = "\n".join(f"    x{i} = {i}" for i in range(399))
    [node] = ast.parse(f"@decorated\nclass Long:\n{body}\n").body
    assert isinstance(node, ast.ClassDef) and size(node) == 401
