"""Small runtime pieces shared by the planner and the scheduler: meters, hooks, a run's setup."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from waygraph import callbacks
from waygraph.planning._models import TokenUsage

if TYPE_CHECKING:
    from waygraph.planning._llm import LLM
    from waygraph.planning._pattern import PlanningPattern
    from waygraph.planning._planner import PlanGenerator
    from waygraph.planning._tools import ToolRegistry

__all__ = ["Hook", "Meter", "RunCallbacks", "RunSetup"]

log = logging.getLogger("waygraph.planning")

#: A callback, sync or async: called with the arguments its signature names
#: (see :func:`call_hook`).
Hook = Callable[..., Any]


class Meter:
    """Counts tokens for one run; a child meter (a sub-plan) also counts into its parent.

    Example:
        >>> root = Meter(); child = Meter(parent=root)
        >>> child.add(TokenUsage(prompt_tokens=2, completion_tokens=1))
        >>> root.total.total_tokens, child.total.total_tokens
        (3, 3)
    """

    def __init__(self, parent: Meter | None = None) -> None:
        self.parent = parent
        self.total = TokenUsage()

    def add(self, usage: TokenUsage) -> None:
        self.total = self.total + usage
        if self.parent is not None:
            self.parent.add(usage)

    @property
    def root(self) -> Meter:
        """The meter of the whole call (what the token budget is checked against)."""
        return self if self.parent is None else self.parent.root


#: Each callback's positional parameters, as the Planning pattern document writes them.
POSITIONAL: dict[str, tuple[str, ...]] = {
    "on_plan_generated": ("plan",),
    "on_plan_approved": ("plan",),
    "on_step_start": ("step",),
    "on_step_complete": ("step", "result"),
    "on_revision_needed": ("state", "reason"),
    "on_plan_revised": ("revision",),
    "on_plan_rejected": ("problems",),
}


async def call_hook(hook: Hook, name: str, **values: Any) -> Any:
    """Call the callback ``name`` as its signature asks (:mod:`waygraph.callbacks`).

    The document's positional arguments reach a callback written as the
    document shows it; the rest only reach callbacks that name them or
    take ``**kwargs``.
    """
    return await callbacks.call(hook, POSITIONAL.get(name, ()), values)


@dataclass
class RunCallbacks:
    """The agent's callbacks (see ``PlanningAgent``)."""

    on_plan_generated: Hook | None = None
    on_plan_approved: Hook | None = None
    on_step_start: Hook | None = None
    on_step_complete: Hook | None = None
    on_revision_needed: Hook | None = None
    on_plan_revised: Hook | None = None
    on_plan_rejected: Hook | None = None

    async def notify(self, name: str, **kwargs: Any) -> None:
        """Call an observing hook; its errors are logged, never raised into the run."""
        hook = getattr(self, name)
        if hook is None:
            return
        try:
            await call_hook(hook, name, **kwargs)
        except Exception:
            log.exception("%s callback failed; the run goes on", name)


@dataclass(frozen=True, slots=True)
class RunSetup:
    """What one run of a generated plan works with, fixed for the run (a sub-plan gets its own).

    ``calls`` is the call's table of identical tool calls in flight or done
    (shared with sub-plans); ``outer_ids`` are an outer plan's steps a
    sub-plan may refer to.
    """

    planner: PlanGenerator
    llm: LLM
    hooks: RunCallbacks
    meter: Meter
    calls: dict[str, asyncio.Future[Any]]
    depth: int = 0
    outer_ids: frozenset[str] = frozenset()

    @property
    def pattern(self) -> PlanningPattern:
        return self.planner.pattern

    @property
    def tools(self) -> ToolRegistry:
        return self.planner.tools

    def nested(self, outer_ids: frozenset[str]) -> RunSetup:
        """The setup of a sub-plan's run: one level deeper, its tokens counted into this run's."""
        return replace(
            self, meter=Meter(parent=self.meter), depth=self.depth + 1, outer_ids=outer_ids
        )
