"""Every waygraph name docs/from-the-designs.md gives exists.

The page's tables map each interface of the design documents to waygraph's
name for it (second column). Each name written as code there, a dotted path
(``waygraph.events.GoalContext``) or a class member (``Planner.create_plan``),
must resolve; a rename that forgets the page fails here.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "from-the-designs.md"
#: Where a bare class name (``Planner.create_plan``) is looked up.
NAMESPACES = (
    "waygraph",
    "waygraph.events",
    "waygraph.planning",
    "waygraph.sessions",
    "waygraph.library",
    "waygraph.navigator",
)
_CODE = re.compile(r"`([^`]+)`")
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+")


_CLASSY = re.compile(r"[A-Z][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_MODULE = re.compile(r"`(waygraph(?:\.[a-z_]+)*)`")


def _names() -> list[str]:
    """waygraph's names on the page: the second column, and the first where it says "the same"."""
    names: list[str] = []
    module = "waygraph"
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            found = _MODULE.search(line)
            module = found.group(1) if found else "waygraph"
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or set(cells[1]) <= {"-", " "} or cells[1] == "waygraph":
            continue
        for code in _CODE.findall(cells[1]):
            if _DOTTED.fullmatch(code) and (code.startswith("waygraph.") or code[0].isupper()):
                names.append(code)
        if cells[1].startswith("the same"):
            for code in _CODE.findall(cells[0]):
                code = code.split("(")[0]
                if _CLASSY.fullmatch(code):
                    names.append(f"{module}.{code}")
    return sorted(set(names))


def _member(obj: Any, name: str) -> Any:
    # A pydantic model's or dataclass's fields are not class attributes.
    fields = getattr(obj, "model_fields", None) or getattr(obj, "__dataclass_fields__", {})
    if isinstance(obj, type) and name in fields:
        return fields[name]
    return getattr(obj, name)


def _resolve(name: str) -> Any:
    parts = name.split(".")
    if parts[0] == "waygraph":
        for cut in range(len(parts), 0, -1):
            try:
                obj: Any = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for part in parts[cut:]:
                obj = _member(obj, part)
            return obj
        raise ImportError(name)
    for namespace in NAMESPACES:
        module = importlib.import_module(namespace)
        if hasattr(module, parts[0]):
            obj = getattr(module, parts[0])
            for part in parts[1:]:
                obj = _member(obj, part)
            return obj
    raise AttributeError(f"{parts[0]} is in none of {', '.join(NAMESPACES)}")


def test_the_page_names_waygraph_interfaces() -> None:
    assert len(_names()) >= 15


@pytest.mark.parametrize("name", _names())
def test_each_name_on_the_page_exists(name: str) -> None:
    assert _resolve(name) is not None
