"""The JSON API under ``/api`` (documented in ``/openapi.json`` and docs/server.md).

Read routes are plain ``def`` functions: FastAPI runs them in its thread
pool, so the synchronous Navigator and stores never block the event loop.
Turns, answers and resets (which may run command gates) run in the server's
``work`` pool and streams read in its ``streams`` pool
(:mod:`waygraph.server.pools`), so neither can take the read routes'
threads; ``/api/health`` needs no thread.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Path, Query, Request
from fastapi.responses import PlainTextResponse, Response, StreamingResponse

from waygraph import __version__
from waygraph.durations import PATTERN as DURATION_PATTERN
from waygraph.learning.stats import Statistics
from waygraph.server import session_plans
from waygraph.server.errors import ApiError, responses
from waygraph.server.live import session_stream
from waygraph.server.models import (
    ID_PATTERN,
    SEARCH_PATTERN,
    AnswerRequest,
    AnswerResponse,
    EventList,
    Health,
    MatchRequest,
    MatchResponse,
    PlanList,
    ResetResponse,
    SessionDetail,
    SessionList,
    TurnRequest,
    TurnResponse,
)
from waygraph.server.pools import Pools
from waygraph.server.service import MAX_OFFSET, MAX_ROWS, Service
from waygraph.store.base import MAX_SEQ

__all__ = ["router"]

router = APIRouter(prefix="/api")

SessionId = Annotated[
    str,
    Path(
        pattern=ID_PATTERN,
        description="The agent's session id (any text but control and format characters).",
    ),
]
PlanId = Annotated[str, Path(pattern=ID_PATTERN, description="A plan id from GET /api/plans.")]
Filter = Annotated[str | None, Query(pattern=ID_PATTERN)]

_TEXT = {"text/plain": {"schema": {"type": "string"}}}
_SVG = {"image/svg+xml": {"schema": {"type": "string"}}}
_PLAN_JSON = {
    "application/json": {
        "schema": {
            "type": "object",
            "properties": {"id": {"type": "string"}, "graph": {"type": "object"}},
            "required": ["id"],
            "additionalProperties": True,
        }
    }
}


def _service(request: Request) -> Service:
    service: Service = request.app.state.service
    return service


def _pools(request: Request) -> Pools:
    pools: Pools = request.app.state.pools
    return pools


@router.get("/health", response_model=Health, responses=responses(401), tags=["server"])
async def health(request: Request) -> dict[str, Any]:
    """Whether the server is up, and which store and how many plans it serves."""
    # On the event loop, no thread: it answers however busy every pool is.
    service = _service(request)
    return {
        "status": "ok",
        "version": __version__,
        "store": service.store.url,
        "plans": len(service.navigator.library),
    }


# ---------------------------------------------------------------- plans


@router.get("/plans", response_model=PlanList, responses=responses(401), tags=["plans"])
def list_plans(request: Request) -> dict[str, Any]:
    """Every plan in the library, in library order."""
    return {"plans": _service(request).plans()}


@router.get(
    "/plans/{plan_id}",
    response_model=None,
    responses={
        200: {
            "description": "The plan (JSON as in a library file), or its drawing",
            "content": {**_PLAN_JSON, **_TEXT, **_SVG},
        },
        **responses(401, 404, 422),
    },
    tags=["plans"],
)
def get_plan(
    request: Request,
    plan_id: PlanId,
    format: Annotated[
        Literal["json", "mermaid", "svg"],
        Query(description="json (default), mermaid (text) or svg (a drawing)."),
    ] = "json",
) -> Any:
    """One plan: its JSON document, or drawn as Mermaid text or SVG."""
    service = _service(request)
    if format == "json":
        return service.plan_document(plan_id)
    return _drawing(service.drawing(plan_id=plan_id, fmt=format), format)


def _drawing(text: str, fmt: str) -> Response:
    if fmt == "mermaid":
        return PlainTextResponse(text)
    return Response(text, media_type="image/svg+xml")


@router.get("/stats", response_model=Statistics, responses=responses(401, 404, 422), tags=["plans"])
def stats(
    request: Request,
    plan: Annotated[
        str | None, Query(pattern=ID_PATTERN, description="Only this plan's runs.")
    ] = None,
    since: Annotated[
        str | None,
        Query(
            max_length=40,
            # Documented, not enforced here: the service's refusal says what a duration is.
            json_schema_extra={"pattern": DURATION_PATTERN},
            description="Only runs finished in the last DURATION: a number and a unit "
            "(s, m, h, d, w), e.g. 30m, 12h, 7d. Left out: every run.",
        ),
    ] = None,
) -> Statistics:
    """Statistics of the stored guided runs, as ``waygraph stats --json`` gives them.

    Per plan: outcomes and shares, median turns and tool results, the trend,
    per-node failures; and the suspected false activations. A ``plan`` with
    no runs in the period is a 404, as the CLI refuses it.
    """
    service = _service(request)
    found = service.statistics(plan, since)
    if plan is not None and not found.plans:
        raise ApiError(404, "runs_not_found", service.no_runs(plan, since))
    return found


@router.post("/match", response_model=MatchResponse, responses=responses(400, 401, 413, 415, 422))
def match(request: Request, body: MatchRequest) -> dict[str, Any]:
    """Which plan a message would activate, and why each plan hit did or did not.

    Matched in the server's mode (``waygraph serve --matching``: phrase,
    semantic or both), which the answer names.
    """
    return _service(request).match(body.message, body.domain, body.allowed_plans)


# ---------------------------------------------------------------- sessions


@router.get(
    "/sessions", response_model=SessionList, responses=responses(401, 422), tags=["sessions"]
)
def list_sessions(
    request: Request,
    status: Filter = None,
    plan: Filter = None,
    kind: Filter = None,
    q: Annotated[
        str | None,
        Query(pattern=SEARCH_PATTERN, description="Part of a row's session, plan or status."),
    ] = None,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET, description="Rows to skip.")] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_ROWS)] = 200,
) -> dict[str, Any]:
    """Sessions, most recent activity first: each one's latest record per kind, paged."""
    return _service(request).session_page(
        status=status, plan=plan, kind=kind, search=q, offset=offset, limit=limit
    )


@router.get(
    "/sessions/{session_id}",
    response_model=SessionDetail,
    responses=responses(401, 404, 422),
    tags=["sessions"],
)
def get_session(request: Request, session_id: SessionId) -> dict[str, Any]:
    """The session's run record (its current run, else its latest record) and all its records."""
    return _service(request).session(session_id)


@router.get(
    "/sessions/{session_id}/events",
    response_model=EventList,
    responses=responses(401, 404, 422),
    tags=["sessions"],
)
def get_events(
    request: Request,
    session_id: SessionId,
    after: Annotated[
        int, Query(ge=0, le=MAX_SEQ, description="Only events with a larger seq.")
    ] = 0,
    limit: Annotated[int | None, Query(ge=1, le=100_000)] = None,
) -> dict[str, Any]:
    """Every stored event of the session's run, oldest first, each with its ``seq``."""
    return _service(request).events(session_id, after, limit)


@router.get(
    "/sessions/{session_id}/drawing",
    response_model=None,
    responses={
        200: {"description": "The run's plan, coloured by progress", "content": {**_SVG, **_TEXT}},
        **responses(401, 404, 422),
    },
    tags=["sessions"],
)
def get_drawing(
    request: Request,
    session_id: SessionId,
    format: Annotated[Literal["svg", "mermaid"], Query()] = "svg",
) -> Response:
    """The session's plan drawn with its run: done, failed, current and pending nodes."""
    return _drawing(_service(request).drawing(session_id=session_id, fmt=format), format)


@router.post(
    "/sessions/{session_id}/turn",
    response_model=TurnResponse,
    responses=responses(400, 401, 409, 413, 415, 422, 503),
    tags=["sessions"],
)
async def post_turn(request: Request, session_id: SessionId, body: TurnRequest) -> dict[str, Any]:
    """One Navigator turn: a user message and/or a tool result in, guidance out."""
    service = _service(request)
    return await _pools(request).run("work", service.turn, session_id, **body.model_dump())


@router.post(
    "/sessions/{session_id}/answer",
    response_model=AnswerResponse,
    responses=responses(400, 401, 404, 409, 413, 415, 422, 503),
    tags=["sessions"],
)
async def post_answer(
    request: Request, session_id: SessionId, body: AnswerRequest
) -> dict[str, Any]:
    """A person's answer to what the session waits for (a human node, a manual check, a question).

    200 with the guidance, events and run; an answer that is none of the
    choices is a 200 too, whose ``error`` lists them (the run stays where it
    is). 409 ``not_waiting`` when the session waits for nobody's answer.
    """
    service = _service(request)
    return await _pools(request).run("work", service.answer, session_id, body.answer, body.by)


@router.delete(
    "/sessions/{session_id}",
    response_model=ResetResponse,
    responses=responses(401, 404, 409, 422, 503),
    tags=["sessions"],
)
async def reset_session(request: Request, session_id: SessionId) -> dict[str, Any]:
    """Reset the session: a running run is aborted and the session forgets it (records stay)."""
    return await _pools(request).run("work", _service(request).reset, session_id)


@router.get(
    "/sessions/{session_id}/stream",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "Server-sent events: the session's events as they are committed",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        },
        # 429/503: over the streams' own limits (waygraph.server.streams).
        **responses(401, 404, 422, 429, 503),
    },
    tags=["sessions"],
)
async def stream(
    request: Request,
    session_id: SessionId,
    after: Annotated[
        int, Query(ge=0, le=MAX_SEQ, description="Start after this seq (first connect).")
    ] = 0,
    last_event_id: Annotated[
        int | None,
        Header(
            alias="Last-Event-ID", ge=0, le=MAX_SEQ, description="Set by a reconnecting client."
        ),
    ] = None,
) -> StreamingResponse:
    """Live events of the session (``id:`` is the event's seq; see docs/server.md)."""
    service = _service(request)
    pools = _pools(request)
    await pools.run("streams", service.session_key, session_id)  # 404 before streaming starts
    settings = request.app.state.settings
    events = session_stream(
        service,
        request.app.state.feed,
        session_id,
        pools=pools,
        after=last_event_id if last_event_id is not None else after,
        heartbeat=settings.heartbeat,
    )
    return StreamingResponse(
        events,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@router.get("/session-plans", responses=responses(401), tags=["sessions"])
def list_session_plans(request: Request) -> dict[str, Any]:
    """The session plans under the server's ``--workspace``, newest first (none without one)."""
    return {"session_plans": session_plans.listing(request.app.state.workspace)}


@router.get("/session-plans/{session_id}", responses=responses(401, 404, 422), tags=["sessions"])
def get_session_plan(request: Request, session_id: SessionId) -> dict[str, Any]:
    """One session plan as its file holds it (``plan.json``: goal, status, steps)."""
    return session_plans.find(request.app.state.workspace, session_id)
