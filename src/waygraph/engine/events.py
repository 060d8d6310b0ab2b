"""The event routing rule of an event-driven plan, pure: which node an event moves a run to.

A state machine compiles into a plan (:func:`waygraph.events.to_plan`):
states are nodes, each transition an edge with ``on_event`` and its
condition as ``when``, and a ``default_next`` after a request an edge whose
``on_event`` is the response event. The planner (the driver) receives an
event; this function says where it leads:

- the first edge out of the current node, in plan order, whose ``on_event``
  is the event's type and whose ``when`` holds (an edge without ``when``
  always holds);
- None when no edge accepts the event: the run stays where it is.

``holds`` evaluates a ``when`` predicate against the event (its data, the
run's results); the driver supplies it, so this module stays free of
evaluation context.

Example:
    >>> from waygraph.model import Graph, Plan
    >>> graph = (Graph.builder("waiting").task("waiting").exit("done").exit("retry")
    ...          .edge("waiting", "done", "always", on_event="job.completed",
    ...                when={"type": "any_output"})
    ...          .edge("waiting", "retry", "always", on_event="job.completed")
    ...          .build())
    >>> plan = Plan(id="p", graph=graph)
    >>> route_event(plan, "waiting", "job.completed", lambda when: False)
    'retry'
    >>> route_event(plan, "waiting", "job.cancelled", lambda when: True) is None
    True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from waygraph.model import Plan, Verify

__all__ = ["EventEdge", "route_event", "take_event"]


class EventEdge(Protocol):
    """What routing reads of an edge (:class:`waygraph.model.Edge` has it; lighter ones may)."""

    @property
    def on_event(self) -> str | None:
        """The event type the edge is taken on (None: not an event edge)."""

    @property
    def when(self) -> Verify | None:
        """The condition over the event (None: always holds)."""

    @property
    def to(self) -> str:
        """The node the edge leads to."""


def take_event(
    edges: Iterable[EventEdge], event_type: str, holds: Callable[[Verify], bool]
) -> str | None:
    """The rule itself, over one node's out edges in order (see the module docstring).

    Example:
        >>> from waygraph.model import Edge
        >>> edges = [Edge.model_validate({"from": "a", "to": "b", "on_event": "x.done"})]
        >>> take_event(edges, "x.done", lambda when: True), take_event(edges, "y", bool)
        ('b', None)
    """
    for edge in edges:
        if edge.on_event != event_type:
            continue
        if edge.when is None or holds(edge.when):
            return edge.to
    return None


def route_event(
    plan: Plan, node: str, event_type: str, holds: Callable[[Verify], bool]
) -> str | None:
    """The node ``event_type`` moves a run at ``node`` to, or None (see the module docstring)."""
    return take_event(plan.graph.out_edges(node), event_type, holds)
