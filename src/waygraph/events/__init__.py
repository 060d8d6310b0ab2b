"""Event-driven planners: state machines over a message bus.

A :class:`Planner` receives a goal event, walks a state machine whose
transitions fire on incoming events, sends each state's action as a request
to workers, and answers the goal on its response event. :class:`Worker`
answers requests. Plans persist through :mod:`waygraph.store`; events travel
on a :class:`Bus`: :class:`InProcessBus` in one process, :class:`NatsBus`
(NATS JetStream) across processes and machines. See ``docs/events.md``.

Example:
    >>> import asyncio
    >>> from waygraph.events import open_bus
    >>> type(open_bus("memory://")).__name__
    'InProcessBus'
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from waygraph._extras import require
from waygraph.errors import ConfigError
from waygraph.events.bus import Bus, Handler, Subscription
from waygraph.events.context import PlanContext, PlannerContext, current_planner_context
from waygraph.events.envelope import Envelope, Topic
from waygraph.events.failures import PermanentError, PlannerSetupError, TransientError
from waygraph.events.goals import GoalContext, Transition, TransitionContext
from waygraph.events.inprocess import InProcessBus
from waygraph.events.planner import Planner
from waygraph.events.statemachine import (
    StateAction,
    StateConfig,
    StateTransition,
    to_plan,
    validate_state_machine,
)
from waygraph.events.worker import Task, Worker, WorkerContext

if TYPE_CHECKING:
    from waygraph.events.nats_bus import NatsBus

__all__ = [
    "Bus",
    "Envelope",
    "GoalContext",
    "Handler",
    "InProcessBus",
    "NatsBus",
    "PermanentError",
    "PlanContext",
    "Planner",
    "PlannerContext",
    "PlannerSetupError",
    "StateAction",
    "StateConfig",
    "StateTransition",
    "Subscription",
    "Task",
    "Topic",
    "TransientError",
    "Transition",
    "TransitionContext",
    "Worker",
    "WorkerContext",
    "current_planner_context",
    "open_bus",
    "to_plan",
    "validate_state_machine",
]

#: The bus URL used when none is given and ``WAYGRAPH_NATS_URL`` is unset.
DEFAULT_BUS_URL = "memory://"


def open_bus(url: str | None = None, **options: Any) -> Bus:
    """The bus a URL names: ``memory://`` (in-process) or ``nats://HOST:PORT`` (NATS JetStream).

    Without a URL, ``WAYGRAPH_NATS_URL`` is used, else ``memory://``.
    ``options`` go to the bus's constructor (``source=``, ``max_deliver=``, ...).
    The bus is not started; ``await bus.start()`` (or ``async with bus:``).

    Example:
        >>> open_bus("memory://", source="svc").source
        'svc'
    """
    if url is None:
        url = os.environ.get("WAYGRAPH_NATS_URL", "").strip() or DEFAULT_BUS_URL
    scheme = url.partition("://")[0].lower() if "://" in url else ""
    if scheme == "memory":
        if url.partition("://")[2]:
            raise ConfigError(f"bus URL {url!r}: memory:// takes no host or options")
        return InProcessBus(**options)
    if scheme in ("nats", "tls"):
        require("nats", purpose=f"bus URL {url!r}")
        from waygraph.events.nats_bus import NatsBus

        return NatsBus(url, **options)
    raise ConfigError(
        f"bus URL {url!r}: unknown scheme {scheme or '(none)'!r}; use memory:// or nats://HOST:PORT"
    )


def __getattr__(name: str) -> Any:
    # NatsBus needs nats-py: import it only when asked for.
    if name == "NatsBus":
        require("nats", purpose="NatsBus")
        from waygraph.events.nats_bus import NatsBus

        return NatsBus
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
