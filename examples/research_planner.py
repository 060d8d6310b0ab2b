"""A research planner and its worker: the event-driven example of docs/events.md.

Run it::

    python examples/research_planner.py "graph planners"

It starts the planner and the worker on the in-process bus with a SQLite
store, sends a ``research.goal`` and prints the answer (the ``research.done``
event's data). Set ``WAYGRAPH_NATS_URL`` and ``WAYGRAPH_DATABASE_URL`` to run
the same code on NATS JetStream and PostgreSQL.

The plan: ``start`` -> ``searching``; results -> ``analyzing``; no results ->
``retry_search`` (a broader query); still none -> ``ask_user`` (a person has
a few seconds to answer, else the default is used) -> ``analyzing`` ->
``done``. A failed search or analysis ends in ``failed``.

Loading it from other code (the ``waygraph planner`` / ``waygraph worker``
commands do this): the module builds ``bus``, ``planner`` and ``worker`` at
import time from ``WAYGRAPH_NATS_URL`` (default: in-process) and
``WAYGRAPH_DATABASE_URL`` (default: a SQLite file in the temp folder). To
build them on a bus and store of your own, call ``build(bus, store_url)``,
which returns a fresh ``(planner, worker)`` pair wired to them.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from typing import Any

from waygraph.events import (
    Bus,
    PlanContext,
    Planner,
    StateAction,
    StateConfig,
    StateTransition,
    Worker,
    open_bus,
)

#: The documents the example's search looks through.
CORPUS = {
    "graph planners": [
        "State machines drive event-driven planners",
        "Graph planners route work between agents",
        "Planning graphs with conditional edges",
    ],
    "message buses": [
        "NATS JetStream keeps durable streams",
        "CloudEvents describe events in a common format",
    ],
}


def _search_transitions(no_results: str) -> list[StateTransition]:
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
        description="search for the topic",
        action=StateAction(
            event_type="web.search.requested",
            response_event="web.search.completed",
            data={"query": "{goal_data.topic}"},
        ),
        transitions=_search_transitions(no_results="retry_search"),
    ),
    "retry_search": StateConfig(
        state_name="retry_search",
        description="search again with a broader query",
        action=StateAction(
            event_type="web.search.requested",
            response_event="web.search.completed",
            data={"query": "{goal_data.topic}", "broad": True},
        ),
        transitions=_search_transitions(no_results="ask_user"),
    ),
    "ask_user": StateConfig(
        state_name="ask_user",
        description="ask a person what to look for",
        action=StateAction(
            event_type="user.clarification.requested",
            response_event="user.clarification.completed",
            data={"question": "Nothing found on {goal_data.topic}. What should I look for?"},
        ),
        transitions=[
            StateTransition(on_event="user.clarification.completed", to_state="analyzing"),
            StateTransition(on_event="user.clarification.failed", to_state="failed"),
        ],
    ),
    "analyzing": StateConfig(
        state_name="analyzing",
        description="summarise what was found",
        action=StateAction(
            event_type="analysis.requested",
            response_event="analysis.completed",
            data={"topic": "{goal_data.topic}", "found": "{results}"},
        ),
        transitions=[
            StateTransition(on_event="analysis.completed", to_state="done"),
            StateTransition(on_event="analysis.failed", to_state="failed"),
        ],
    ),
    "done": StateConfig(state_name="done", description="answered", is_terminal=True),
    "failed": StateConfig(state_name="failed", description="gave up", is_terminal=True),
}


def search(query: str, broad: bool = False) -> list[str]:
    """Documents whose topic matches ``query`` (any word of it when ``broad``)."""
    words = query.lower().split()
    hits = []
    for topic, documents in CORPUS.items():
        if topic == query.lower() or (broad and any(w in topic.split() for w in words)):
            hits += documents
    return hits


def build(bus: Bus, store: Any) -> tuple[Planner, Worker]:
    """A research planner and its worker on ``bus``, keeping plans in ``store`` (a URL or Store)."""
    planner = Planner("research-planner", bus=bus, store=store)
    worker = Worker("researcher", bus=bus, human_timeout_seconds=2.0)

    # Given here, SM is validated when the planner is built, not when a goal arrives.
    @planner.on_goal("research.goal", state_machine=SM)
    async def start_research(goal, context, state_machine):  # type: ignore[no-untyped-def]
        plan = await PlanContext.create_from_goal(
            goal, state_machine=state_machine, context=context
        )
        await plan.execute_next()

    @planner.on_transition()
    async def advance(transition, context):  # type: ignore[no-untyped-def]
        await transition.plan.execute_next(transition.event)
        if transition.plan.is_complete():
            await transition.plan.finalize({"summary": transition.plan.results})

    @worker.on_task("web.search.requested")
    async def web_search(task, context):  # type: ignore[no-untyped-def]
        hits = search(str(task.data.get("query", "")), bool(task.data.get("broad")))
        return {"count": len(hits), "hits": hits}

    @worker.on_task("user.clarification.requested")
    async def clarify(task, context):  # type: ignore[no-untyped-def]
        answer = await context.ask_human(task.data["question"], default="anything recent")
        return {"answer": answer}

    @worker.on_task("analysis.requested")
    async def analyse(task, context):  # type: ignore[no-untyped-def]
        found = task.data.get("found") or {}
        hits = [
            h
            for result in found.values()
            if isinstance(result, dict)
            for h in result.get("hits", [])
        ]
        hint = next(
            (r["answer"] for r in found.values() if isinstance(r, dict) and "answer" in r), None
        )
        return {
            "topic": task.data.get("topic"),
            "documents": len(hits),
            "headline": hits[0] if hits else f"nothing found; the user suggests {hint!r}",
        }

    return planner, worker


def _default_store() -> str:
    url = os.environ.get("WAYGRAPH_DATABASE_URL", "").strip()
    return url or f"sqlite:///{os.path.join(tempfile.gettempdir(), 'waygraph-research-plans.db')}"


bus = open_bus()
planner, worker = build(bus, _default_store())


async def main(topic: str = "graph planners") -> dict[str, Any]:
    """Run one goal end to end and return the answer's data."""
    await planner.start()
    await worker.start()
    try:
        answer = await bus.ask(
            "research.goal", {"topic": topic}, response_event="research.done", timeout=15
        )
        return answer.data
    finally:
        await worker.close()
        await planner.close()
        await bus.close()


if __name__ == "__main__":
    result = asyncio.run(main(" ".join(sys.argv[1:]) or "graph planners"))
    print(json.dumps(result, indent=2))
