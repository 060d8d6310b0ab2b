"""The event-driven mode's classes are split by concept (issue 38 item 5).

No class in ``waygraph.events`` is over 400 lines, and none restates another
class's attributes: ``PlanContext`` used to be 1,006 lines across two files,
held together by a mixin that declared its host's fields under
``if TYPE_CHECKING:`` so it could use them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import waygraph.events

EVENTS = Path(waygraph.events.__file__).parent
#: DEVELOPERS.md: "classes < 400 lines, split by concept".
MAX_CLASS_LINES = 400


def classes() -> list[tuple[str, ast.ClassDef]]:
    """Every class defined in the package, nested ones included, with its module's name."""
    found = []
    for path in sorted(EVENTS.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [(path.name, node) for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    return found


def size(node: ast.ClassDef) -> int:
    """Lines from the first decorator (or ``class``) to the class's last line."""
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    assert node.end_lineno is not None
    return node.end_lineno - first + 1


def test_no_class_in_the_event_mode_is_over_400_lines():
    long = {f"{module}:{node.name}": size(node) for module, node in classes()}
    long = {name: lines for name, lines in long.items() if lines >= MAX_CLASS_LINES}
    assert long == {}, (
        f"classes of {MAX_CLASS_LINES} lines or more: {long}. Move a concept out into its own "
        "module (functions over the class's public fields, as _plan_changes does for "
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
    assert restating == []


def test_plan_context_has_no_base_but_the_pydantic_model():
    from pydantic import BaseModel

    from waygraph.events import PlanContext

    assert PlanContext.__bases__ == (BaseModel,)


def test_the_guard_sees_a_long_class():
    # The guard measures what it claims: a made-up class of 400 lines is caught.
    body = "\n".join(f"    x{i} = {i}" for i in range(399))
    [node] = ast.parse(f"@decorated\nclass Long:\n{body}\n").body
    assert isinstance(node, ast.ClassDef) and size(node) == 401
