"""A plan context's record in the store: making it, loading it, finding it, committing it.

Every change of a :class:`~waygraph.events.PlanContext` ends in
:func:`commit`: the engine's new run and the outbox entries it sends are
written with the plan's other fields in one version-checked write, and the
object takes them only once that write succeeded. Loading goes through
:func:`from_record`, which puts back the values the stored form keeps once
(:mod:`waygraph.events._shared_values`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from waygraph import tracing
from waygraph.engine.event_run import EventRun
from waygraph.errors import Conflict, PlanContextNotFoundError
from waygraph.events._outbox_marks import OUTBOX_PENDING
from waygraph.events._plan_cache import Cached
from waygraph.events._plan_view import run_fields
from waygraph.events._planner_context import KIND, PlannerContext, plan_id_for
from waygraph.events._run_record import event_record
from waygraph.events._shared_values import pack, unpack
from waygraph.events.envelope import Envelope, Topic, new_event_id
from waygraph.events.statemachine import StateMachine
from waygraph.model import FINISHED, RunStatus
from waygraph.store import StoredRecord, Write, commit_then_list
from waygraph.store.values import encode

if TYPE_CHECKING:
    from waygraph.events.context import PlanContext

__all__ = [
    "AFTER",
    "PARENT",
    "best_by_correlation",
    "by_correlation",
    "cached",
    "commit",
    "document_goal",
    "from_record",
    "insert",
    "load",
    "new_plan",
    "reload",
]

log = logging.getLogger("waygraph.events")

P = TypeVar("P", bound="PlanContext")

# Index entries that are not event correlation ids; the prefix keeps them apart.
AFTER = "waygraph:after:"
PARENT = "waygraph:parent:"


def document_goal(data: Any, context: PlannerContext | None) -> Any:
    """The fields of a plan built as document 002 builds one, without ``goal`` (the goal
    event on the wire): it is rebuilt from ``goal_event``, ``goal_data`` and the plan's
    other fields, with the id ``goal-<plan_id>`` and the running planner's source.

    Example:
        >>> document_goal({"plan_id": "p1", "goal_event": "g"}, None)["goal"]["id"]
        'goal-p1'
    """
    if not isinstance(data, dict) or "goal" in data or not data.get("goal_event"):
        return data
    wire = {
        "id": f"goal-{data.get('plan_id') or new_event_id()}",
        "source": context.source if context is not None else "waygraph",
        "type": data["goal_event"],
        "data": dict(data.get("goal_data") or {}),
        "correlationid": data.get("correlation_id"),
        "responseevent": data.get("response_event"),
        "responsetopic": data.get("response_topic"),
        "sessionid": data.get("session_id"),
        "tenantid": data.get("tenant_id"),
        "userid": data.get("user_id"),
        "planid": data.get("parent_plan_id"),
    }
    return {**data, "goal": Envelope.model_validate(wire).to_wire()}


def new_plan(
    cls: type[P],
    goal: Envelope,
    machine: StateMachine | None,
    context: PlannerContext,
    *,
    plan_id: str | None = None,
    parent_plan_id: str | None = None,
    depends_on: Sequence[str] = (),
) -> P:
    """A new plan of ``machine`` for ``goal``, not stored yet (version 0); without a
    machine, a plan with no states (made only to answer its goal as failed)."""
    now = time.time()
    plan = cls(
        plan_id=plan_id or plan_id_for(goal),
        planner=context.name,
        goal_event=goal.type,
        goal=goal.to_wire(),
        goal_data=dict(goal.data),
        response_event=goal.response_event,
        response_topic=goal.response_topic,
        status=RunStatus.PENDING if depends_on else RunStatus.RUNNING,
        state_machine=machine.states if machine is not None else {},
        current_state=machine.start if machine is not None else "",
        parent_plan_id=parent_plan_id or goal.plan_id,
        session_id=goal.session_id,
        user_id=goal.user_id,
        tenant_id=goal.tenant_id,
        correlation_id=goal.correlation_id,
        correlation_ids=[goal.correlation_id] if goal.correlation_id else [],
        depends_on=list(dict.fromkeys(depends_on)),
        processed_event_ids=[goal.id],
        created_at=now,
        updated_at=now,
    )
    plan._committed({}, 0, context, machine)
    return plan


async def insert(plan: P, created: dict[str, Any]) -> P:
    """Store the new ``plan``; the plan as stored when the goal's plan exists already."""
    try:
        await commit(plan, 0, [created])
    except Conflict:
        log.info(
            "plan %s already exists (goal %s delivered again)", plan.plan_id, created["goal_id"]
        )
        return await load(type(plan), plan.plan_id, plan.context)
    return plan


def cached(cls: type[P], hit: Cached, context: PlannerContext) -> P:
    """The plan ``hit`` holds as its commit stored it, attached to ``context``
    (_plan_cache: the store may hold a later version)."""
    data = json.loads(hit.text)
    # Validated states pass validation as they are: the machine is not checked again.
    data["state_machine"] = hit.states
    plan = cls.model_validate(unpack(data))
    plan._committed({}, hit.version, context, hit.machine)
    return plan


def from_record(cls: type[P], record: StoredRecord, context: PlannerContext) -> P:
    """The plan ``record`` holds, attached to ``context``, at the record's version."""
    plan = cls.model_validate(unpack(record.data))
    plan._committed({}, record.version, context)
    return plan


async def load(cls: type[P], plan_id: str, context: PlannerContext) -> P:
    """The stored plan ``plan_id``; PlanContextNotFoundError when there is none."""
    record = await context.call(context.store.get, plan_id)
    if record is None or record.kind != KIND:
        raise PlanContextNotFoundError(
            f"no plan {plan_id!r} in {context.store.url}; "
            "plans are stored under the plan_id that create_from_goal returned"
        )
    return from_record(cls, record, context)


async def reload(plan: PlanContext) -> None:
    """Make ``plan`` the plan as stored now (another writer may have changed it)."""
    context = plan.context
    # Read again because the store moved on (a conflict): what was kept is out of date.
    context.cache.drop(plan.plan_id)
    record = await context.call(context.store.get, plan.plan_id)
    if record is None:
        raise PlanContextNotFoundError(f"plan {plan.plan_id!r} is no longer in the store")
    fresh = type(plan).model_validate(unpack(record.data))
    plan._committed(
        {name: getattr(fresh, name) for name in type(plan).model_fields}, record.version
    )


async def by_correlation(
    cls: type[P], context: PlannerContext, correlation_id: str, *, planner: str | None = None
) -> list[P]:
    """The plans indexed under ``correlation_id`` (of ``planner`` when given)."""
    records = await context.by_correlation(correlation_id, planner=planner)
    return [from_record(cls, r, context) for r in records]


async def best_by_correlation(
    cls: type[P], context: PlannerContext, correlation_id: str | None
) -> P | None:
    """The plan whose goal or one of whose requests had ``correlation_id``, or None.

    When several plans know the id (a parent's request id is its child's
    goal id), the plan whose goal carried it wins, then plans of
    ``context``'s planner, then the most recently updated.
    """
    if not correlation_id or correlation_id.startswith("waygraph:"):
        return None
    plans = sorted(
        await by_correlation(cls, context, correlation_id),
        key=lambda p: (p.correlation_id != correlation_id, p.planner != context.name),
    )
    return plans[0] if plans else None


async def find(
    cls: type[P],
    context: PlannerContext,
    *,
    session: str | None,
    status: str | None,
    planner: str | None,
    limit: int | None,
) -> list[P]:
    """Stored plans by session, status and owning planner, most recently updated first."""
    # The planner is in the data, not a column (``plan`` is the plan id);
    # asked for one planner's plans, the store lists them all and they are picked here.
    records = await context.call(
        context.store.list,
        kind=KIND,
        session=session,
        status=status,
        limit=limit if planner is None else None,
    )
    if planner is not None:
        records = [r for r in records if r.data.get("planner") == planner][:limit]
    return [from_record(cls, r, context) for r in records]


def _index(fields: dict[str, Any]) -> list[str]:
    """The ids the store indexes a plan under: its correlation ids and the prefixed links."""
    ids = list(fields["correlation_ids"])
    ids += [AFTER + dep for dep in fields["depends_on"]]
    if fields["parent_plan_id"]:
        ids.append(PARENT + fields["parent_plan_id"])
    if fields["outbox"]:
        ids.append(OUTBOX_PENDING)
    return ids


def _read_after(fields: dict[str, Any], entries: Sequence[dict[str, Any]]) -> list[str]:
    """The ids a planner lists once a commit's events arrive: the correlation id of each
    answer it sends (who else may take it) and, for a plan it finishes, the plans that
    depend on it."""
    ids = [
        e["envelope"]["correlationid"]
        for e in entries
        if e["topic"] == Topic.ACTION_RESULTS and e["envelope"].get("correlationid")
    ]
    if fields["status"] in FINISHED:
        ids.append(AFTER + fields["plan_id"])
    return ids


def _remember(plan: PlanContext, fields: dict[str, Any], record: dict[str, Any]) -> None:
    """Keep a plan of its context's planner that now waits for an answer (_plan_cache)."""
    context = plan.context
    if not context.cache.enabled:
        return
    awaiting = fields["awaiting"]
    if (
        fields["status"] == RunStatus.RUNNING
        and awaiting
        and isinstance(awaiting.get("correlation_id"), str)
        and fields["planner"] == context.name
    ):
        text = encode({k: v for k, v in record.items() if k != "state_machine"})
        context.cache.keep(
            Cached(
                plan.plan_id,
                plan.version,
                awaiting["correlation_id"],
                awaiting.get("event_type"),
                text,
                plan.state_machine,
                plan._machine,
            )
        )
    else:
        context.cache.drop(plan.plan_id)


async def commit(
    plan: PlanContext,
    expected: int,
    events: Sequence[dict[str, Any]],
    run: EventRun | None = None,
    entries: Sequence[dict[str, Any]] = (),
) -> Write:
    """Store ``plan``, version-checked; the write as stored, at its new version.

    ``run`` (the engine's new run) and the outbox ``entries`` it sends are
    stored with the plan's other fields; ``plan`` takes them only once the
    commit succeeded, so a failed commit leaves it as it was. Outbox entries
    this process published since the plan's last commit are dropped from the
    outbox here: marking them costs no commit of its own.
    """
    context = plan.context
    sent = context.marks.pending(plan.plan_id)
    outbox = [e for e in plan.outbox if e["id"] not in sent] if sent else list(plan.outbox)
    outbox += entries
    changes: dict[str, Any] = run_fields(run) if run is not None else {}
    changes.update(outbox=outbox, updated_at=time.time())
    # The new fields, as plain data, until the commit succeeds.
    fields = plan.model_copy(update=changes).model_dump(mode="json")
    # Each large value once: the goal's data, the result and its copies (_shared_values).
    # The one run-record schema (waygraph.model.record); a state is a node.
    record = event_record(pack(dict(fields))).to_dict()
    write = Write(
        plan.plan_id,
        record,
        expected,
        # Inside a span of the application's, the plan's events carry its trace.
        tracing.stamp(list(events)),
        kind=KIND,
        session=plan.session_id,
        status=fields["status"],
        plan=plan.plan_id,
        correlation_ids=_index(fields),
    )
    follow = _read_after(fields, entries)
    if follow:
        # The lists the events this commit sends will need, in the commit's round trip.
        [version], found = await context.call(commit_then_list, context.store, [write], follow)
        context.cache.note(found)
    else:
        [version] = await context.call(context.store.commit_all, [write])
    plan._committed(changes, version)
    _remember(plan, fields, record)
    stored = dataclasses.replace(write, expected_version=version, events=())
    if sent:
        context.marks.committed(plan.plan_id, sent, stored)
    return stored
