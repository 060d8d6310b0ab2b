"""Worker: answers requests on ``action-requests`` with response events on ``action-results``.

``@worker.on_task("web.search.requested")`` registers ``handler(task, context)``.
Its return value becomes the response event's data (a dict as it is, None as
``{}``, anything else as ``{"result": value}``), sent with the request's
correlation id on the request's ``response_event`` (default: ``x.requested``
-> ``x.completed``) and ``response_topic`` (default ``action-results``). A
handler that raises answers with ``x.failed`` and data ``{"error",
"error_type"}``, so the plan can take its failure branch; so does a return
value larger than the bus carries (``error_type`` ``PayloadTooLargeError``,
with its ``size`` and the ``limit`` in bytes). Workers of one name
share the requests (a queue group), so running more of them spreads the work.

Response ids are derived from the request id: a request delivered twice (a
worker died before acknowledging it) is answered with the same event id both
times, and the plan, which records processed ids, takes it once.

Example:
    >>> import asyncio
    >>> from waygraph.events import InProcessBus, Worker
    >>> async def main():
    ...     bus = InProcessBus()
    ...     worker = Worker("researcher", bus=bus)
    ...     @worker.on_task("web.search.requested")
    ...     async def search(task, context):
    ...         return {"count": 1, "hits": [task.data["query"]]}
    ...     await worker.start()
    ...     answer = await bus.ask("web.search.requested", {"query": "graphs"},
    ...                            "web.search.completed", timeout=5)
    ...     await bus.close()
    ...     return answer.data
    >>> asyncio.run(main())
    {'count': 1, 'hits': ['graphs']}
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from waygraph.errors import EventTimeoutError, PayloadTooLargeError
from waygraph.events import activity
from waygraph.events.envelope import Envelope, Topic
from waygraph.events.statemachine import failure_event_for, response_event_for

if TYPE_CHECKING:
    from waygraph.events.bus import Bus, Subscription

__all__ = ["Task", "Worker", "WorkerContext"]

log = logging.getLogger("waygraph.events")

TaskHandler = Callable[["Task", "WorkerContext"], Awaitable[Any]]
F = TypeVar("F", bound=Callable[..., Awaitable[Any]])
_RESPONSE_NAMESPACE = uuid.UUID("0d6f1c2a-5f7e-4b8a-9c3d-2e1f0a9b8c7d")

#: Event types of human input: asked on ``notification-events``, answered on ``action-results``.
HUMAN_INPUT_REQUESTED = "human.input.requested"
HUMAN_INPUT_PROVIDED = "human.input.provided"


@dataclass(frozen=True)
class Task:
    """A request as a worker sees it.

    Example:
        >>> t = Task(Envelope(source="s", type="web.search.requested", data={"q": 1},
        ...                   correlation_id="c", response_event="web.search.completed"))
        >>> t.event_type, t.correlation_id, t.response_event, t.data
        ('web.search.requested', 'c', 'web.search.completed', {'q': 1})
    """

    envelope: Envelope

    @property
    def data(self) -> dict[str, Any]:
        """The request's data."""
        return self.envelope.data

    @property
    def event_type(self) -> str:
        """The request's event type."""
        return self.envelope.type

    @property
    def correlation_id(self) -> str | None:
        """The request's correlation id (the reply carries it back)."""
        return self.envelope.correlation_id

    @property
    def response_event(self) -> str:
        """The event type the answer goes out as."""
        return self.envelope.response_event or response_event_for(self.envelope.type)

    @property
    def failure_event(self) -> str:
        """The event type the answer goes out as when the handler raises."""
        return failure_event_for(self.envelope.type)

    @property
    def id(self) -> str:
        """The request event's id."""
        return self.envelope.id

    @property
    def plan_id(self) -> str | None:
        """The id of the plan that sent the request, if it says."""
        return self.envelope.plan_id

    @property
    def session_id(self) -> str | None:
        """The session the request belongs to, if it says."""
        return self.envelope.session_id


@dataclass
class WorkerContext:
    """What a task handler gets as ``context``: the worker, its bus, and human input."""

    worker: Worker
    bus: Bus
    task: Task
    logger: logging.Logger = field(default_factory=lambda: log)

    async def ask_human(
        self,
        prompt: str,
        *,
        timeout_seconds: float | None = None,
        default: Any = None,
        data: dict[str, Any] | None = None,
    ) -> Any:
        """Ask a person and wait at most ``timeout_seconds``; ``default`` when nobody answers.

        Publishes ``human.input.requested`` on ``notification-events`` (data:
        ``prompt``, ``timeout_seconds``, ``default``, plus ``data``) and waits
        for ``human.input.provided`` with its correlation id on
        ``action-results``. Returns the reply's ``answer`` (the whole reply
        data when it has no ``answer`` key). Unlike a paused plan, the worker
        never waits longer than the timeout (default: the worker's
        ``human_timeout_seconds``).
        """
        timeout = self.worker.human_timeout_seconds if timeout_seconds is None else timeout_seconds
        payload = {
            **(data or {}),
            "prompt": prompt,
            "timeout_seconds": timeout,
            "default": default,
        }
        task = self.task.envelope
        try:
            reply = await self.bus.ask(
                HUMAN_INPUT_REQUESTED,
                payload,
                HUMAN_INPUT_PROVIDED,
                timeout=timeout,
                topic=Topic.NOTIFICATION_EVENTS,
                source=self.worker.source,
                plan_id=task.plan_id,
                session_id=task.session_id,
                user_id=task.user_id,
                tenant_id=task.tenant_id,
                parent_event_id=task.id,
            )
        except EventTimeoutError:
            self.logger.info(
                "worker %s: no human input within %g s; using the default",
                self.worker.name,
                timeout,
            )
            return default
        return reply.data.get("answer", reply.data)


class Worker:
    """Answers requests of the event types registered with :meth:`on_task`.

    ``human_timeout_seconds`` is how long :meth:`WorkerContext.ask_human`
    waits by default. Envelopes the worker sends have the source
    ``<bus source>/workers/<name>``.
    """

    def __init__(
        self,
        name: str,
        bus: Bus | None = None,
        *,
        source: str | None = None,
        human_timeout_seconds: float = 300.0,
    ) -> None:
        if not name or not isinstance(name, str):
            raise ValueError(f"a worker needs a name (got {name!r})")
        if bus is None:
            from waygraph.events import open_bus

            bus = open_bus()
        self.name = name
        self.bus = bus
        self.source = source or f"{bus.source}/workers/{name}"
        self.human_timeout_seconds = human_timeout_seconds
        self._tasks: list[tuple[str, Topic, TaskHandler]] = []
        self._subscriptions: list[Subscription] = []

    def __repr__(self) -> str:
        return f"Worker({self.name!r})"

    @property
    def task_types(self) -> list[str]:
        """The request event types this worker answers."""
        return [event_type for event_type, _, _ in self._tasks]

    def on_task(
        self, event_type: str, *, topic: Topic | str = Topic.ACTION_REQUESTS
    ) -> Callable[[F], F]:
        """Register ``handler(task, context)`` for requests of ``event_type``."""

        def register(handler: F) -> F:
            self._tasks.append((event_type, Topic(topic), handler))
            return handler

        return register

    async def start(self) -> None:
        """Subscribe to every registered task type (one queue group per worker name)."""
        if self._subscriptions:
            return
        await self.bus.start()
        for event_type, topic, handler in self._tasks:
            group = re.sub(r"[^A-Za-z0-9_-]", "_", f"{self.name}-task-{event_type}")
            self._subscriptions.append(
                await self.bus.subscribe(topic, event_type, self._runner(handler), group)
            )

    async def close(self) -> None:
        """Unsubscribe. Idempotent."""
        subs, self._subscriptions = self._subscriptions, []
        for sub in subs:
            await sub.unsubscribe()

    async def __aenter__(self) -> Worker:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _runner(self, handler: TaskHandler) -> Callable[[Envelope], Awaitable[None]]:
        who = f"worker {self.name}"

        async def run(envelope: Envelope) -> None:
            task = Task(envelope)
            context = WorkerContext(self, self.bus, task)
            try:
                value = await handler(task, context)
            except Exception as exc:
                log.warning(
                    "worker %s: task %s (%s) failed: %s", self.name, task.id, task.event_type, exc
                )
                await self._answer(
                    task, task.failure_event, {"error": str(exc), "error_type": type(exc).__name__}
                )
                activity.handled(
                    who,
                    envelope,
                    f"failed, answered {task.failure_event}: {activity.describe(exc)}",
                )
                return
            try:
                await self._answer(task, task.response_event, _as_data(value))
            except PayloadTooLargeError as exc:
                # Redelivering cannot make it fit: the plan hears that it failed, and why.
                log.warning("worker %s: task %s (%s): %s", self.name, task.id, task.event_type, exc)
                await self._answer(task, task.failure_event, _too_large(exc))
                activity.handled(who, envelope, f"answer too large, answered {task.failure_event}")
                return
            activity.handled(who, envelope, f"completed, answered {task.response_event}")

        return run

    async def _answer(self, task: Task, event_type: str, data: dict[str, Any]) -> None:
        request = task.envelope
        await self.bus.respond(
            event_type,
            data,
            request.correlation_id,
            id=uuid.uuid5(_RESPONSE_NAMESPACE, f"{request.source}\x00{request.id}").hex,
            source=self.source,
            topic=_response_topic(request),
            session_id=request.session_id,
            tenant_id=request.tenant_id,
            user_id=request.user_id,
            goal_id=request.goal_id,
            plan_id=request.plan_id,
            parent_event_id=request.id,
            traceparent=request.traceparent,
        )


def _response_topic(request: Envelope) -> Topic:
    try:
        return Topic(request.response_topic or Topic.ACTION_RESULTS)
    except ValueError:
        log.warning(
            "request %s names an unknown response topic %r; answering on action-results",
            request.id,
            request.response_topic,
        )
        return Topic.ACTION_RESULTS


def _too_large(exc: PayloadTooLargeError) -> dict[str, Any]:
    """A failed answer's data for a result the bus cannot carry (its size and the limit)."""
    return {
        "error": f"the result of the task {exc}",
        "error_type": type(exc).__name__,
        "size": exc.size,
        "limit": exc.limit,
    }


def _as_data(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    return {"result": value}
