"""The dashboard's pages: sessions (``/``), one session, plans, one plan.

Pages are rendered on the server (they work without JavaScript); the small
script in ``static/dashboard.js`` keeps them live. Page routes are left out
of the OpenAPI document, which describes the JSON API only.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from waygraph.server import html, session_plans
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


@router.get("/plans/{plan_id}")
def plan(request: Request, plan_id: str) -> HTMLResponse:
    service: Service = request.app.state.service
    try:
        found = service.plan(plan_id)
    except ApiError as exc:
        return _missing(request, exc, "plans")
    stored = service.navigator.library.get(plan_id) is None
    body = html.plan_page(found, service.drawing(plan_id=plan_id), stored=stored)
    return _render(request, found.title, body, "plans", page="plan")


@router.get("/session-plans/{session_id}")
def session_plan(request: Request, session_id: str) -> HTMLResponse:
    try:
        data = session_plans.find(request.app.state.workspace, session_id)
    except ApiError as exc:
        return _missing(request, exc, "sessions")
    body = session_plans.plan_page(data)
    return _render(request, session_id, body, "sessions", page="session-plan")
