"""Where each key and list item of a JSON or YAML plan file is: its line and column.

Built only when a problem needs a line (never while loading a good file), from
the text itself: a small position-tracking pass over JSON, PyYAML's node
marks for YAML. A path is the keys and list indexes from the top of the file
(``("plans", "fix", "graph", "edges", 3, "condition")``); :meth:`Positions.find`
answers for the deepest part of a path the file has, so a missing field is
placed at the object it is missing from.

Example:
    >>> text = '{"plans": {"p": {\\n  "trigers": ["x"]}}}'
    >>> Positions(text, "json").find(("plans", "p", "trigers"))
    (2, 3)
    >>> Positions("plans:\\n  p:\\n    steps: []\\n", "yaml").find(("plans", "p", "nme"))
    (2, 3)
"""

from __future__ import annotations

import json.decoder
import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["Positions"]

Path = tuple[Any, ...]

_SPACE = re.compile(r"[ \t\n\r]*")
_SCALAR = re.compile(r"-?(?:\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|Infinity)|true|false|null|NaN")
#: JSON's own string scanner (in C when available): ``(text, index after '"')``.
_scan_string: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
#: Nodes visited at most (YAML aliases can make a small file huge).
_BUDGET = 2_000_000


class Positions:
    """Line and column (both from 1) of every key and list item of a plan file's text.

    ``fmt`` is ``json`` or ``yaml``; None guesses from the first character.

    Example:
        >>> Positions('{"a": [1, {"b": 2}]}', "json").find(("a", 1, "b"))
        (1, 12)
    """

    def __init__(self, text: str, fmt: str | None = None) -> None:
        self.text = text
        self.fmt = fmt or ("json" if text.lstrip().startswith(("{", "[")) else "yaml")
        self._where: dict[Path, int | tuple[int, int]] | None = None
        self._newlines: list[int] = []

    def find(self, path: Sequence[Any]) -> tuple[int, int] | None:
        """``(line, column)`` of the deepest part of ``path`` in the text; None if none is."""
        where = self._table()
        parts = tuple(str(p) for p in path)
        for end in range(len(parts), 0, -1):
            found = where.get(parts[:end])
            if found is not None:
                return found if isinstance(found, tuple) else self._line_col(found)
        return None

    def _table(self) -> dict[Path, int | tuple[int, int]]:
        if self._where is None:
            self._where = {}
            try:
                if self.fmt == "json":
                    self._newlines = [m.start() for m in re.finditer("\n", self.text)]
                    _JsonScan(self.text, self._where).value(0, ())
                else:
                    _yaml_marks(self.text, self._where)
            except Exception:  # lines are a help: keep what was found so far
                pass
        return self._where

    def _line_col(self, offset: int) -> tuple[int, int]:
        line = bisect_right(self._newlines, offset - 1)
        start = self._newlines[line - 1] + 1 if line else 0
        return line + 1, offset - start + 1


class _JsonScan:
    """Records the offset of each key and list item while walking JSON text."""

    def __init__(self, text: str, where: dict[Path, int | tuple[int, int]]) -> None:
        self.text = text
        self.where = where

    def skip(self, i: int) -> int:
        match = _SPACE.match(self.text, i)
        return match.end() if match else i

    def value(self, i: int, path: Path) -> int:
        text = self.text
        i = self.skip(i)
        ch = text[i]
        if ch == "{":
            i = self.skip(i + 1)
            if text[i] == "}":
                return i + 1
            while True:
                i = self.skip(i)
                key, after = _scan_string(text, i + 1)
                self.where[(*path, key)] = i
                i = self.skip(after)
                i = self.skip(self.value(i + 1, (*path, key)))  # past ':'
                if text[i] == ",":
                    i += 1
                    continue
                return i + 1
        if ch == "[":
            i = self.skip(i + 1)
            if text[i] == "]":
                return i + 1
            index = 0
            while True:
                i = self.skip(i)
                self.where[(*path, str(index))] = i
                i = self.skip(self.value(i, (*path, str(index))))
                index += 1
                if text[i] == ",":
                    i += 1
                    continue
                return i + 1
        if ch == '"':
            return _scan_string(text, i + 1)[1]
        match = _SCALAR.match(text, i)
        if match is None:
            raise ValueError(f"unexpected {ch!r}")
        return match.end()


def _yaml_marks(text: str, where: dict[Path, int | tuple[int, int]]) -> None:
    import yaml

    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    root = yaml.compose(text, Loader=loader)
    budget = _BUDGET
    stack: list[tuple[Any, Path]] = [(root, ())] if root is not None else []
    while stack:
        node, path = stack.pop()
        budget -= 1
        if budget < 0:
            return
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                name = (*path, str(key.value))
                # A repeated key: the last one, the one PyYAML keeps.
                where[name] = (key.start_mark.line + 1, key.start_mark.column + 1)
                stack.append((value, name))
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                name = (*path, str(index))
                where[name] = (item.start_mark.line + 1, item.start_mark.column + 1)
                stack.append((item, name))
