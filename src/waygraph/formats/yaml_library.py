"""YAML plan files: the same structure as the JSON library, for hand-written plans.

Parsed with PyYAML's safe loader only (no Python tags, nothing executed).

Example:
    >>> parse_yaml("plans:\\n  p:\\n    steps: [{name: A}]\\n")["plans"]["p"]["steps"]
    [{'name': 'A'}]
"""

from __future__ import annotations

from typing import Any

import yaml

from waygraph.errors import PlanSyntaxError
from waygraph.formats.json_library import _check_size

__all__ = ["parse_yaml", "to_yaml"]

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_yaml(text: str, *, file: str | None = None) -> Any:
    """Parse YAML text, raising :class:`PlanSyntaxError` with the line on failure."""
    _check_size(text, file, "yaml")
    try:
        # libyaml's safe loader when present: several times faster, same rules.
        return yaml.load(text, Loader=_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "syntax error"
        raise PlanSyntaxError(f"invalid YAML: {problem}", file=file, line=line) from None
    except yaml.YAMLError as exc:
        raise PlanSyntaxError(f"invalid YAML: {exc}", file=file) from None
    except RecursionError:
        raise PlanSyntaxError("YAML nested too deeply", file=file) from None


class _Dumper(yaml.SafeDumper):
    """Block style, keys in insertion order, and no anchors for repeated values."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def to_yaml(data: Any) -> str:
    """Plan data as the YAML library format writes it (keys in order, block style)."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
