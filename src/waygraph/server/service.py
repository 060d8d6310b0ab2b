"""What the API and the dashboard show, computed from the Navigator and its store.

Plain synchronous code (the Navigator and stores are synchronous and
thread-safe): routes call it through the thread pool, never on the event
loop. Nothing here knows about HTTP except :class:`ApiError` for "not found".

Example:
    >>> from waygraph.navigator import Navigator
    >>> service = Service(Navigator(store="memory://", strict=True))
    >>> service.sessions()
    []
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Literal

from waygraph.describe import not_waiting, record_row, waiting_for
from waygraph.draw import to_mermaid
from waygraph.draw.svg import to_svg
from waygraph.durations import parse_duration
from waygraph.errors import InputError, NotWaitingError, WaygraphError
from waygraph.events.context import KIND as EVENT_PLAN_KIND
from waygraph.events.statemachine import to_plan, validate_state_machine
from waygraph.formats.json_library import plan_to_data, plans_from_data
from waygraph.learning.stats import PlanStats, Statistics, plan_stats
from waygraph.model import Plan
from waygraph.model.record import RunKind
from waygraph.navigator import Navigator
from waygraph.pipelines.record_view import KIND as PIPELINE_KIND
from waygraph.pipelines.record_view import pipeline_view, pipeline_waiting
from waygraph.planning._journal import KIND as DAG_KIND
from waygraph.planning._journal import dag_view
from waygraph.server.errors import ApiError
from waygraph.sessions import session_view
from waygraph.sessions import to_plan as session_plan
from waygraph.sessions._records import KIND as SESSION_KIND
from waygraph.sessions._records import context as session_context
from waygraph.store import StoredRecord
from waygraph.tracing import latest_trace_id, trace_link

__all__ = ["MAX_OFFSET", "MAX_ROWS", "PAGE_ROWS", "Service", "plan_summary", "summary"]

#: Sessions table rows returned at most (``?limit=`` can ask for fewer).
MAX_ROWS = 1000
#: The largest ``?offset=`` (a billion rows: past any real store, within SQL's integers).
MAX_OFFSET = 10**9
#: Rows per page of the dashboard's sessions table.
PAGE_ROWS = 50
#: Record kinds that are not runs: the Navigator's stored plan versions.
HIDDEN_KINDS = frozenset({"plan"})


def summary(record: StoredRecord) -> dict[str, Any]:
    """A record as one sessions-table row (any kind: guided run, plan context, ...).

    The same row ``waygraph sessions list`` prints (:func:`waygraph.describe.record_row`).

    Example:
        >>> rec = StoredRecord(key="run_1", kind="guided", version=1, session="s", status="running",
        ...     plan="p", data={"current_node": "fix", "attempts": 2, "turn": 4})
        >>> summary(rec)["current_node"], summary(rec)["attempts"]
        ('fix', 2)
    """
    return record_row(record)


def plan_summary(plan: Plan) -> dict[str, Any]:
    """A plan as listings show it: id, name, domains, triggers and size."""
    return {
        "id": plan.id,
        "name": plan.title,
        "description": plan.description,
        "domains": list(plan.domains),
        "triggers": list(plan.triggers),
        "trigger_threshold": plan.trigger_threshold,
        "linear": plan.linear,
        "nodes": len(plan.graph.nodes),
        "edges": len(plan.graph.edges),
    }


class Service:
    """The read and write operations behind every route and page."""

    def __init__(self, navigator: Navigator) -> None:
        self.navigator = navigator
        self.store = navigator.store

    # ------------------------------------------------------------ plans

    def plans(self) -> list[dict[str, Any]]:
        """A summary of every plan in the library."""
        return [plan_summary(plan) for plan in self.navigator.library]

    def plan(self, plan_id: str) -> Plan:
        """The library's plan, else one the store's runs followed (:meth:`stored_plan`)."""
        plan = self.navigator.library.get(plan_id) or self.stored_plan(plan_id)
        if plan is None:
            raise ApiError(
                404, "plan_not_found", f"no plan {plan_id!r} in the library or the store's runs"
            )
        return plan

    def stored_plan(self, plan_id: str) -> Plan | None:
        """A plan not in this server's library, as the store knows it (None if it does not).

        The newest plan version a Navigator stored for its runs, else the
        plan of the newest run, else the state machine of the newest
        event-driven plan of that planner: a sessions row's plan link works
        whichever library the run was started with.
        """
        for record in self.store.list(kind="plan", plan=plan_id, limit=1):
            try:
                return plans_from_data(record.data)[1][0]
            except (WaygraphError, IndexError, TypeError, ValueError):
                pass
        for record in self.store.list(kind=RunKind.GUIDED, plan=plan_id, limit=1):
            found = self.plan_of_run(record.data)
            if found is not None:
                return found
        for record in self.store.list(kind=EVENT_PLAN_KIND, plan=plan_id, limit=1):
            return self._event_plan(record)[0]
        for record in self.store.list(kind=DAG_KIND, plan=plan_id, limit=1):
            return dag_view(self.store, record)[0]
        for record in self.store.list(kind=PIPELINE_KIND, plan=plan_id, limit=1):
            return pipeline_view(self.store, record)[0]
        return None

    def plan_document(self, plan_id: str) -> dict[str, Any]:
        """The plan as in a JSON library file, with its id."""
        return {"id": plan_id, **plan_to_data(self.plan(plan_id))}

    def match(self, message: str, domain: str | None, allowed: list[str] | None) -> dict[str, Any]:
        """The ``waygraph match --json`` answer: the winner and every plan hit, with reasons,
        matched in the Navigator's mode (``waygraph serve --matching``)."""
        nav = self.navigator
        results = nav.match(message, domain or None, allowed)
        winner = next((m for m in results if m.activates), None)
        return {
            "message": message,
            "domain": domain,
            "matching": nav.matching,
            "activates": winner.plan_id if winner else None,
            "matched_by": winner.matched_by if winner else None,
            "matches": [m.to_dict() for m in results],
            "semantic_off": nav.selector.failure,
        }

    # ------------------------------------------------------------ sessions

    def sessions(
        self,
        *,
        status: str | None = None,
        plan: str | None = None,
        kind: str | None = None,
        search: str | None = None,
        offset: int = 0,
        limit: int = MAX_ROWS,
    ) -> list[dict[str, Any]]:
        """Rows of the sessions table, most recent activity first (see :meth:`session_page`)."""
        rows: list[dict[str, Any]] = self.session_page(
            status=status, plan=plan, kind=kind, search=search, offset=offset, limit=limit
        )["sessions"]
        return rows

    def session_page(
        self,
        *,
        status: str | None = None,
        plan: str | None = None,
        kind: str | None = None,
        search: str | None = None,
        offset: int = 0,
        limit: int = MAX_ROWS,
    ) -> dict[str, Any]:
        """One page of the sessions table, with the total and the count per status.

        One row per session and record kind (its latest record, so a guided
        run and an event-driven plan in one session are two rows); records
        with no session are rows of their own. Filters apply to the rows;
        ``search`` is found in a row's session, plan or status. The store
        answers with a page, not every record (``Store.session_rows``).
        ``counts`` holds rows per status matching every filter but
        ``status``; rows with no status count in ``total`` only.
        """
        page = self.store.session_rows(
            kind=kind,
            status=status,
            plan=plan,
            search=search or None,
            exclude_kinds=sorted(HIDDEN_KINDS),
            offset=offset,
            limit=limit,
        )
        return {
            "sessions": [summary(r) for r in page.records],
            "total": page.total,
            "offset": offset,
            "limit": limit,
            "counts": {k: n for k, n in page.counts.items() if k is not None},
        }

    def _records(self, session_id: str) -> list[StoredRecord]:
        return [r for r in self.store.list(session=session_id) if r.kind not in HIDDEN_KINDS]

    def _latest(self, session_id: str) -> tuple[StoredRecord, list[StoredRecord]]:
        """The session's record to show (its current run, else the newest) and all its records."""
        records = self._records(session_id)
        key = self.store.current(session_id)
        if key is not None:
            current = next((r for r in records if r.key == key), None) or self.store.get(key)
            if current is not None:
                return current, records
        if not records:
            raise ApiError(404, "session_not_found", f"no session {session_id!r} in the store")
        runs = [r for r in records if r.kind == RunKind.GUIDED]
        return (runs or records)[0], records

    def session(self, session_id: str) -> dict[str, Any]:
        """A session's latest record, its guidance now, all its records and its latest trace id."""
        record, records = self._latest(session_id)
        context = None
        if record.kind == RunKind.GUIDED:
            try:
                context = self.navigator.context(session_id)
            except WaygraphError:
                context = None  # a run of a plan no longer in the library
        elif record.kind == SESSION_KIND:
            context = session_context(record.data)
        # One read of the events serves the trace id and what a person is asked.
        events = [e.data for e in self.store.events(record.key)]
        trace_id = latest_trace_id(events)
        waiting = waiting_for(record.data, events) if record.kind == RunKind.GUIDED else None
        if record.kind == PIPELINE_KIND:
            waiting = pipeline_waiting(record.data)
        return {
            "session_id": session_id,
            "key": record.key,
            "kind": record.kind,
            "run": record.data,
            "context": context,
            "records": [summary(r) for r in records],
            "trace_id": trace_id,
            "trace_url": trace_link(trace_id),
            "waiting": waiting,
        }

    def session_key(self, session_id: str) -> str:
        """The key whose events the session shows (404 for an unknown session)."""
        return self._latest(session_id)[0].key

    def events(self, session_id: str, after: int = 0, limit: int | None = None) -> dict[str, Any]:
        """A session's events after sequence ``after`` (at most ``limit``)."""
        key = self.session_key(session_id)
        events = [{"seq": e.seq, **e.data} for e in self.store.events(key, after, limit)]
        return {"session_id": session_id, "key": key, "events": events}

    def turn(self, session_id: str, **keywords: Any) -> dict[str, Any]:
        """Run one turn for the session; its guidance text, events and run."""
        guidance = self.navigator.turn(session_id, **keywords)
        return {
            "text": guidance.text,
            "events": [dict(e) for e in guidance.events],
            "run": guidance.run,
        }

    def answer(self, session_id: str, answer: str, by: str | None = None) -> dict[str, Any]:
        """A person's answer for the session (``Navigator.answer``); 404 for an unknown session.

        An answer that picks no choice is an answer all the same: the run
        stays, the ``answer_rejected`` event is stored and ``error`` lists the
        choices. A session waiting for nobody raises :class:`NotWaitingError`
        (a 409) whose message says where its run is.

        Example:
            >>> from waygraph.library import Library
            >>> from waygraph.model import Graph
            >>> plan = (Graph.builder().human("ok", prompt="Ship?").exit("done")
            ...         .edge("start", "ok").edge("ok", "done", label="yes").plan("p"))
            >>> service = Service(Navigator(Library([plan]), store="memory://", strict=True))
            >>> _ = service.navigator.start("s", "p")
            >>> service.answer("s", "maybe")["error"]
            "'maybe' is not one of the choices: answer 'yes'"
            >>> service.answer("s", "yes", by="ann")["run"]["status"]
            'completed'
        """
        record, _ = self._latest(session_id)  # 404 for an unknown session
        if record.kind == PIPELINE_KIND:
            return self._answer_pipeline(record.key, answer, by)
        try:
            guidance = self.navigator.answer(session_id, answer, by=by)
        except InputError as exc:
            # Blank by the Navigator's reading but not the request model's (say "\x1c").
            raise ApiError(422, "invalid_request", f"session {session_id!r}: {exc}") from None
        except NotWaitingError:
            key = self.store.current(session_id)
            current = self.store.get(key) if key is not None else None
            run = current.data if current is not None and current.kind == RunKind.GUIDED else None
            raise NotWaitingError(not_waiting(session_id, run)) from None
        return {
            "text": guidance.text,
            "events": [dict(e) for e in guidance.events],
            "run": guidance.run,
            "error": guidance.error,
        }

    def _answer_pipeline(self, run_id: str, answer: str, by: str | None) -> dict[str, Any]:
        """A person's answer to the human gate a pipeline run waits on (``waygraph run``).

        The shape of a guided run's answer: one that picks no choice changes
        nothing and ``error`` lists the choices. The runner, polling the
        store, takes the answer and moves on.
        """
        from waygraph.pipelines.record import PipelineRecords

        events: list[dict[str, Any]] = []
        error: str | None = None
        try:
            given = PipelineRecords(self.store).answer(run_id, answer, by=by)
            said = {k: given[k] for k in ("node", "answer", "choice", "by")}
            events.append({"type": "human_answered", **said})
        except InputError as exc:
            error = str(exc)
        current = self.store.get(run_id)
        run = current.data if current is not None else None
        return {"text": None, "events": events, "run": run, "error": error}

    def reset(self, session_id: str) -> dict[str, Any]:
        """Abort and forget the session's run; 404 for an unknown session."""
        self._latest(session_id)  # 404 for an unknown session
        self.navigator.reset(session_id)
        record, _ = self._latest(session_id)
        return {"session_id": session_id, "run": record.data}

    # ------------------------------------------------------------ drawings

    def plan_of_run(self, record: Mapping[str, Any]) -> Plan | None:
        """The plan version a run record was started with (or the library's), if known."""
        if not isinstance(record.get("run_id"), str):
            return None
        return self.navigator.plan_for(record)

    def _event_plan(self, record: StoredRecord) -> tuple[Plan | None, dict[str, Any]]:
        """An event-driven plan's state machine as a graph, and a run-like view of it.

        States are nodes and events label the edges (``events.to_plan``); the
        path is the states entered, in order; a paused or waiting plan shows
        its state as current.
        """
        data = record.data
        try:
            machine = validate_state_machine(data["state_machine"], name=str(data.get("plan_id")))
            plan = to_plan(machine, plan_id=str(data["plan_id"]), name=str(data.get("planner", "")))
        except (WaygraphError, KeyError, TypeError, ValueError):
            return None, dict(data)
        entered = [
            e.data["state"]
            for e in self.store.events(record.key)
            if e.data.get("type") == "state_entered"
        ]
        status = data.get("status")
        state = {
            "current_node": data.get("current_state"),
            "status": "running" if status in ("running", "paused", "pending") else status,
            # Every plan begins at the start state, entered or passed through.
            "path": [plan.graph.start, *(s for s in entered if s != plan.graph.start)]
            if entered
            else [plan.graph.start, data.get("current_state")],
        }
        return plan, state

    def drawing(
        self,
        *,
        plan_id: str | None = None,
        session_id: str | None = None,
        fmt: Literal["svg", "mermaid"] = "svg",
    ) -> str:
        """A plan drawn alone, or a session's plan coloured by its run."""
        state: dict[str, Any] | None = None
        if session_id is not None:
            record, _ = self._latest(session_id)
            state = record.data
            plan = None
            if record.kind == RunKind.GUIDED:
                plan = self.plan_of_run(state)
            elif record.kind == EVENT_PLAN_KIND:
                plan, state = self._event_plan(record)
            elif record.kind == DAG_KIND:
                plan, state = dag_view(self.store, record)
            elif record.kind == SESSION_KIND:
                plan, state = session_plan(record.data), session_view(record.data)
            elif record.kind == PIPELINE_KIND:
                plan, state = pipeline_view(self.store, record)
            if plan is None:
                raise ApiError(
                    404,
                    "plan_not_found",
                    f"session {session_id!r}: its latest record ({record.kind} {record.key!r}) "
                    "has no plan in the library to draw",
                )
        else:
            plan = self.plan(plan_id or "")
        return to_mermaid(plan, state=state) if fmt == "mermaid" else to_svg(plan, state=state)

    # ------------------------------------------------------------ statistics

    def statistics(self, plan: str | None = None, since: str | None = None) -> Statistics:
        """``waygraph stats --json``'s figures, over the runs finished in the last ``since``.

        ``since`` is a duration such as ``30m``, ``12h`` or ``7d`` (None: every
        run); one that is not is a 422 naming the field.
        """
        now = time.time()
        try:
            seconds = None if since is None else parse_duration(since, name="since")
        except InputError as exc:
            raise ApiError(422, "invalid_request", str(exc)) from None
        start = None if seconds is None else max(0.0, now - seconds)
        return plan_stats(self.store, plan=plan, since=start, now=now)

    def no_runs(self, plan: str, since: str | None) -> str:
        """Why one plan has no statistics, in the words of ``waygraph stats --plan``."""
        others = sorted({name for (name, _, _) in self.store.run_tallies().runs})
        hint = f"plans with runs: {', '.join(others)}" if others else "the store has no runs"
        period = "" if since is None else f" in the last {since}"
        return f"no finished or running runs of plan {plan!r}{period}; {hint}"

    def heat_drawing(self, stats: PlanStats) -> str | None:
        """The plan drawn with each judged node filled by its failure rate (None: no plan)."""
        try:
            plan = self.plan(stats.plan)
        except ApiError:
            return None
        return to_svg(plan, heat={n.node: n.failure_rate for n in stats.nodes if n.attempts})
