"""One finding of ``waygraph check``: :class:`Problem`, and how a part of the checker makes one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from waygraph.check._codes import CODES
from waygraph.errors import PlanFormatError

__all__ = ["Problem", "problem"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One finding about a plan: a stable ``code``, its ``level``, a message
    that says what to change, and where (file, plan, node, edge, field).

    ``edge`` reads ``"from -> to (condition)"``; ``field`` is a dotted path
    inside the node, edge or plan (``verify.checks.1.value``, ``triggers``).
    ``line`` and ``column`` (from 1) are where the field stands in a JSON or
    YAML file, when ``waygraph check`` read it.

    Example:
        >>> p = Problem("unknown-node", "error", "'dnoe' is not a node",
        ...             plan="p", edge="a -> dnoe (always)", field="to")
        >>> print(p)
        error: plan 'p', edge a -> dnoe (always), field 'to': 'dnoe' is not a node [unknown-node]
    """

    code: str
    level: Literal["error", "warning"]
    message: str
    file: str | None = None
    plan: str | None = None
    node: str | None = None
    edge: str | None = None
    field: str | None = None
    line: int | None = None
    column: int | None = None

    def as_error(self) -> PlanFormatError:
        """This problem as the :class:`PlanFormatError` ``load_library`` raises."""
        return PlanFormatError(
            f"{self.message} [{self.code}]",
            file=self.file,
            line=self.line,
            plan=self.plan,
            node=self.node,
            edge=self.edge,
            field=self.field,
        )

    def __str__(self) -> str:
        return f"{self.level}: {self.as_error()}"


def problem(code: str, message: str, **where: Any) -> Problem:
    """A :class:`Problem` with the level :data:`CODES` gives ``code``."""
    return Problem(code, CODES[code][0], message, **where)
