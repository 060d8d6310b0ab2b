"""What a planner checks when goals are registered and when it starts.

A state machine with a typo'd state used to surface only when a goal
arrived, as a traceback per redelivery and a timeout for the caller. A
planner given its machine (``on_goal(..., state_machine=SM)``) validates it
at registration with :func:`~waygraph.events.statemachine.state_machine_problems`,
the validator ``waygraph check`` uses, and :meth:`Planner.start` refuses
goal types that were declared but given no handler.

Example:
    >>> check_goal_registration("p", "x.goal", {"start": {"state_name": "start"}})
    Traceback (most recent call last):
    ...
    waygraph.errors.PlannerSetupError: planner 'p', goal 'x.goal', state 'start', \
field 'transitions': the state is not terminal but has no transitions and no default_next, \
so a plan entering it could never leave; add one or set is_terminal (and 1 more problem)
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from waygraph.errors import ConfigError
from waygraph.events.failures import PlannerSetupError
from waygraph.events.statemachine import StateConfig, StateMachine, state_machine_problems

if TYPE_CHECKING:
    from waygraph.events._planner_context import PlannerContext
    from waygraph.events.goals import GoalContext

__all__ = ["check_goal_registration", "check_planner", "run_state_machine"]


def check_goal_registration(
    planner: str,
    event_type: Any,
    state_machine: Mapping[str, StateConfig | Mapping[str, Any]] | None,
) -> StateMachine | None:
    """The validated machine of an ``on_goal`` registration (None without one), or raise."""
    if not isinstance(event_type, str) or not event_type.strip():
        raise ConfigError(
            f"planner {planner!r}: on_goal needs the goal's event type, e.g. "
            f'@planner.on_goal("research.goal") (got {event_type!r})'
        )
    if state_machine is None:
        return None
    machine, problems = state_machine_problems(state_machine, name=None)
    if problems:
        first = problems[0][1]
        reason = first.reason
        if len(problems) > 1:
            more = len(problems) - 1
            reason += f" (and {more} more problem{'s' * (more > 1)})"
        raise PlannerSetupError(
            reason,
            planner=planner,
            goal=event_type,
            state=first.state,
            field=first.field,
            value=first.value,
            has_value=first.has_value,
        )
    assert machine is not None
    return machine


def check_planner(
    planner: str, declared: Collection[str], machines: Mapping[str, StateMachine]
) -> None:
    """Refuse to start a planner with a goal type that has neither handler nor machine."""
    for event_type in sorted(declared):
        if event_type not in machines:
            raise PlannerSetupError(
                f"on_goal({event_type!r}) was called but no handler was registered; decorate "
                "an async function with it, or pass state_machine= to run a machine",
                planner=planner,
                goal=event_type,
            )


async def run_state_machine(
    goal: GoalContext, context: PlannerContext, state_machine: Mapping[str, StateConfig]
) -> None:
    """The goal handler of ``on_goal(..., state_machine=SM)`` without one of its own:
    a plan of ``SM`` for the goal, started."""
    from waygraph.events.context import PlanContext

    await PlanContext.create_from_goal(
        goal, state_machine=state_machine, context=context, start=True
    )
