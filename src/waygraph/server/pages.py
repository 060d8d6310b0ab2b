"""The dashboard's pages: sessions (``/``), one session, plans, one plan, statistics.

Pages are rendered on the server (they work without JavaScript); the small
script in ``static/dashboard.js`` keeps them live. Page routes are left out
of the OpenAPI document, which describes the JSON API only.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from waygraph.server import html, outbox, session_plans, stats_page
from waygraph.server.errors import ApiError
from waygraph.server.models import ID_PATTERN, SEARCH_PATTERN
from waygraph.server.service import MAX_OFFSET, PAGE_ROWS, Service

__all__ = ["router"]

router = APIRouter(include_in_schema=False, default_response_class=HTMLResponse)


def _render(request: Request, title: str, body: str, active: str, **data: object) -> HTMLResponse:
    service: Service = request.app.state.service
    settings = request.app.state.settings
    text = html.page(
        title,
        body,
        active=active,
        store=service.store.url,
        data={"refresh": settings.refresh, **data},
    )
    return HTMLResponse(text, headers={"Cache-Control": "no-store"})


def _missing(request: Request, exc: ApiError, active: str) -> HTMLResponse:
    response = _render(request, "Not found", html.not_found_page(exc.message), active)
    response.status_code = 404
    return response


@router.get("/")
def index(
    request: Request,
    status: Annotated[str | None, Query(pattern=ID_PATTERN)] = None,
    q: Annotated[str | None, Query(pattern=SEARCH_PATTERN)] = None,
    page: Annotated[int, Query(ge=1, le=MAX_OFFSET // PAGE_ROWS)] = 1,
) -> HTMLResponse:
    service: Service = request.app.state.service
    offset = (page - 1) * PAGE_ROWS
    found = service.session_page(status=status, search=q, offset=offset, limit=PAGE_ROWS)
    workspace = request.app.state.workspace
    body = html.index_page(found, service.plans(), status, q or "") + session_plans.plans_section(
        session_plans.listing(workspace), workspace=workspace
    )
    body += outbox.section(service.store)  # event plans whose outbox was not sent
    return _render(
        request,
        "Sessions",
        body,
        "sessions",
        page="sessions",
        status=status or "",
        q=q or "",
        offset=offset,
        limit=PAGE_ROWS,
    )


@router.get("/sessions/{session_id}")
def session(request: Request, session_id: str) -> HTMLResponse:
    service: Service = request.app.state.service
    try:
        detail = service.session(session_id)
        events = service.events(session_id)["events"]
    except ApiError as exc:
        return _missing(request, exc, "sessions")
    try:
        # A guided run's plan, or an event-driven plan's state machine.
        drawing: str | None = service.drawing(session_id=session_id)
    except ApiError:
        drawing = None
    body = html.session_page(detail, events, drawing)
    return _render(request, session_id, body, "sessions", page="session")


@router.get("/plans")
def plans(request: Request) -> HTMLResponse:
    service: Service = request.app.state.service
    return _render(request, "Plans", html.plans_page(service.plans()), "plans", page="plans")


Since = Annotated[str | None, Query(max_length=40)]


@router.get("/plans/{plan_id}")
def plan(request: Request, plan_id: str, since: Since = None) -> HTMLResponse:
    service: Service = request.app.state.service
    try:
        found = service.plan(plan_id)
    except ApiError as exc:
        return _missing(request, exc, "plans")
    stored = service.navigator.library.get(plan_id) is None
    status = 200
    try:
        stats = service.statistics(plan_id, since).plans
        section = stats_page.plan_section(
            plan_id,
            stats[0] if stats else None,
            service.heat_drawing(stats[0]) if stats else None,
            since=since,
        )
    except ApiError as exc:  # a bad period: the plan is shown, the section says why
        status = exc.status
        section = stats_page.plan_section(plan_id, None, None, since=since, problem=exc.message)
    body = html.plan_page(
        found, service.drawing(plan_id=plan_id), stored=stored, statistics=section
    )
    response = _render(request, found.title, body, "plans", page="plan")
    response.status_code = status
    return response


@router.get("/stats")
def stats(
    request: Request,
    plan: Annotated[str | None, Query(pattern=ID_PATTERN)] = None,
    since: Since = None,
) -> HTMLResponse:
    service: Service = request.app.state.service
    found, problem, status = None, None, 200
    try:
        found = service.statistics(plan, since)
    except ApiError as exc:
        problem, status = exc.message, exc.status
    if found is not None and plan is not None and not found.plans:
        problem = service.no_runs(plan, since)
    body = stats_page.stats_page(found, plan=plan, since=since, problem=problem)
    response = _render(request, "Statistics", body, "stats", page="stats")
    response.status_code = status
    return response


@router.get("/session-plans/{session_id}")
def session_plan(request: Request, session_id: str) -> HTMLResponse:
    try:
        data = session_plans.find(request.app.state.workspace, session_id)
    except ApiError as exc:
        return _missing(request, exc, "sessions")
    body = session_plans.plan_page(data)
    return _render(request, session_id, body, "sessions", page="session-plan")
