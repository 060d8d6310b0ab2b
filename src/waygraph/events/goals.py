"""What a planner's handlers receive: :class:`GoalContext` and :class:`TransitionContext`.

Document 002 writes handlers as ``async def start(goal, context)`` (``goal``
a ``GoalContext``) and ``async def step(transition, context)``
(``transition.event``, ``transition.plan``). A :class:`GoalContext` *is* the
goal's :class:`~waygraph.events.Envelope` (a subclass), so handlers written
against the envelope keep working and ``PlanContext.create_from_goal(goal,
...)`` takes it as it is.

Example:
    >>> from waygraph.events import Envelope
    >>> event = Envelope(id="e1", source="s", type="research.goal", data={"topic": "graphs"},
    ...                  response_event="research.done")
    >>> goal = GoalContext.from_event(event)
    >>> goal.event_type, goal.goal_data, goal.response_event, goal.event == event
    ('research.goal', {'topic': 'graphs'}, 'research.done', True)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from waygraph.events.envelope import Envelope

if TYPE_CHECKING:
    from waygraph.events.context import PlanContext, PlannerContext

__all__ = ["GoalContext", "Transition", "TransitionContext"]


class GoalContext(Envelope):
    """A goal event as an ``on_goal`` handler gets it: the envelope, plus document 002's names.

    ``event_type`` (the goal's type), ``goal_data`` (its data),
    ``response_event``, ``correlation_id``, ``session_id``, ``user_id`` and
    ``tenant_id`` are the envelope's own attributes; ``event`` is the goal
    as a plain :class:`Envelope`.
    """

    @classmethod
    def from_event(cls, event: Envelope, context: PlannerContext | None = None) -> GoalContext:
        """The goal context of ``event`` (``context`` is accepted as document 002 passes it)."""
        del context  # the envelope carries everything a goal needs
        if isinstance(event, GoalContext):
            return event
        return cls.model_validate(dict(event))

    @property
    def goal_data(self) -> dict[str, Any]:
        """The goal's data (document 002's ``PlanContext.goal_data``)."""
        return self.data

    @property
    def event(self) -> Envelope:
        """The goal as a plain envelope."""
        return Envelope.model_validate(dict(self))


@dataclass(frozen=True)
class TransitionContext:
    """An event a plan accepts, as an ``on_transition`` handler gets it.

    ``TransitionContext(event=event, plan=plan)`` as document 002 builds it;
    ``next_state`` (the state ``event`` moves ``plan`` to) is worked out from
    the plan when not given.

    Example:
        >>> from waygraph.events import PlanContext, StateConfig, StateTransition
        >>> plan = PlanContext(plan_id="p", planner="x", goal_event="g", goal={},
        ...     current_state="wait", state_machine={
        ...         "start": StateConfig(state_name="start", default_next="wait"),
        ...         "wait": StateConfig(state_name="wait", transitions=[
        ...             StateTransition(on_event="job.completed", to_state="done")]),
        ...         "done": StateConfig(state_name="done", is_terminal=True)})
        >>> event = Envelope(source="w", type="job.completed")
        >>> TransitionContext(event=event, plan=plan).next_state
        'done'
    """

    event: Envelope
    plan: PlanContext
    next_state: str | None = field(default=None)

    def __post_init__(self) -> None:
        if self.next_state is None:
            object.__setattr__(self, "next_state", self.plan.get_next_state(self.event))


#: The name this class had before document 002's; kept for code that uses it.
Transition = TransitionContext
