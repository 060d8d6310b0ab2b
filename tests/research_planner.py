"""The research planner of the event planner tests (tests/test_events_planner_*.py).

Planners, workers and plans here are the user-code shape of the issue: a
``research-planner`` with ``on_goal`` / ``on_transition``, a worker with
``on_task``, and the search state machine :data:`SM` with its retry,
ask-the-user and failure branches.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from tests.event_stacks import Stack
from waygraph.events import (
    Bus,
    Envelope,
    PlanContext,
    Planner,
    StateAction,
    StateConfig,
    StateTransition,
    Worker,
)


def search_transitions(no_results: str) -> list[StateTransition]:
    return [
        StateTransition(
            on_event="web.search.completed", to_state="analyzing", condition="data.count > 0"
        ),
        StateTransition(on_event="web.search.completed", to_state=no_results),
        StateTransition(on_event="web.search.failed", to_state="failed"),
    ]


SM: dict[str, StateConfig] = {
    "start": StateConfig(state_name="start", description="begin", default_next="searching"),
    "searching": StateConfig(
        state_name="searching",
        description="search",
        action=StateAction(
            event_type="web.search.requested",
            response_event="web.search.completed",
            data={"query": "{goal_data.topic}"},
        ),
        transitions=search_transitions("retry_search"),
    ),
    "retry_search": StateConfig(
        state_name="retry_search",
        action=StateAction(
            event_type="web.search.requested",
            response_event="web.search.completed",
            data={"query": "{goal_data.topic}", "retry": True},
        ),
        transitions=search_transitions("ask_user"),
    ),
    "ask_user": StateConfig(
        state_name="ask_user",
        action=StateAction(event_type="user.input.requested", data={"about": "{goal_data.topic}"}),
        transitions=[StateTransition(on_event="user.input.completed", to_state="analyzing")],
    ),
    "analyzing": StateConfig(
        state_name="analyzing",
        action=StateAction(event_type="analysis.requested", data={"found": "{results}"}),
        transitions=[StateTransition(on_event="analysis.completed", to_state="done")],
    ),
    "done": StateConfig(state_name="done", is_terminal=True),
    "failed": StateConfig(state_name="failed", is_terminal=True),
}


@dataclass
class Research:
    """A running planner + worker pair and what their handlers saw."""

    bus: Bus
    planner: Planner
    worker: Worker
    goals: list[tuple[Envelope, Any]] = field(default_factory=list)
    transitions: list[tuple[str, str, str, str | None]] = field(default_factory=list)
    searches: list[dict[str, Any]] = field(default_factory=list)

    async def ask(self, topic: str, timeout: float = 15, **attributes: Any) -> Envelope:
        return await self.bus.ask(
            "research.goal", {"topic": topic}, "research.done", timeout=timeout, **attributes
        )

    async def path(self, plan_id: str) -> list[str]:
        store = self.planner.store
        events = await asyncio.to_thread(store.events, plan_id)
        return [e.data["state"] for e in events if e.data["type"] == "state_entered"]


def search_result(query: str, retry: bool) -> dict[str, Any]:
    if query == "boom":
        raise RuntimeError("the search engine is down")
    hits = {"hit": 2, "late": 2 if retry else 0}.get(query, 0)
    return {"count": hits, "hits": [f"{query}-{i}" for i in range(hits)]}


async def restore_settled(plan_id: str, context: Any, timeout: float = 10) -> PlanContext:
    """The plan once its outbox is marked published (which follows the publish itself)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        plan = await PlanContext.restore(plan_id, context)
        if not plan.outbox or asyncio.get_running_loop().time() > deadline:
            return plan
        await asyncio.sleep(0.02)


def unique(name: str) -> str:
    # Plans of every test share one PostgreSQL schema; names keep their queries apart.
    return f"{name}-{uuid.uuid4().hex[:8]}"


@asynccontextmanager
async def research(stack: Stack, *, planner_bus: Bus | None = None) -> AsyncIterator[Research]:
    bus = stack.bus()
    planner = Planner(unique("research-planner"), bus=planner_bus or bus, store=stack.store_url)
    worker = Worker(unique("researcher"), bus=bus)
    setup = Research(bus, planner, worker)

    @planner.on_goal("research.goal")
    async def start_research(goal, context):  # type: ignore[no-untyped-def]
        setup.goals.append((goal, context))
        plan = await PlanContext.create_from_goal(goal, state_machine=SM, context=context)
        await plan.execute_next()

    @planner.on_transition()
    async def advance(transition, context):  # type: ignore[no-untyped-def]
        setup.transitions.append(
            (
                transition.plan.plan_id,
                transition.plan.current_state,
                transition.next_state,
                transition.event.correlation_id,
            )
        )
        await transition.plan.execute_next(transition.event)
        if transition.plan.is_complete():
            await transition.plan.finalize({"summary": transition.plan.results})

    @worker.on_task("web.search.requested")
    async def search(task, context):  # type: ignore[no-untyped-def]
        setup.searches.append(task.data)
        return search_result(task.data["query"], bool(task.data.get("retry")))

    @worker.on_task("user.input.requested")
    async def ask_user(task, context):  # type: ignore[no-untyped-def]
        return {"answer": f"look for {task.data['about']} papers"}

    @worker.on_task("analysis.requested")
    async def analyse(task, context):  # type: ignore[no-untyped-def]
        return {"summary": sorted(task.data["found"])}

    await bus.start()
    await planner.start()
    await worker.start()
    try:
        yield setup
    finally:
        await worker.close()
        await planner.close()
        await stack.close()
