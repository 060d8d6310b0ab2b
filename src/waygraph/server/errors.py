"""One JSON shape for every error, and the mapping from exceptions to statuses.

Every error answer is ``{"error": code, "message": text}`` (plus ``problems``
for a request that failed validation), so clients handle one shape:

=====  ====================  ===========================================
400    ``bad_json``          the body is not JSON
400    ``bad_request``       a WaygraphError caused by the request (a bad option)
401    ``unauthorized``      the bearer token is missing or wrong
404    ``*_not_found``       unknown session, plan or route
409    ``conflict``          other writers kept winning the race for the session
409    ``not_waiting``       an answer for a session that waits for nobody's answer
408    ``request_timeout``   the body did not arrive within 30 s
413    ``body_too_large``    the body is over ``--max-body``
415    ``unsupported_media_type``  a body that is not ``application/json``
422    ``invalid_request``   a field has the wrong type, range or shape
429    ``too_many_streams``  the client has its limit of event streams open
503    ``store_unavailable`` the store could not be read or written
503    ``too_many_streams``  the server has its limit of event streams open
=====  ====================  ===========================================

Example:
    >>> error_response(404, "plan_not_found", "no plan 'x'").status_code
    404
"""

from __future__ import annotations

import json
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse, Response
from starlette.routing import Match

from waygraph.errors import (
    ApiError,
    Conflict,
    NotWaitingError,
    PlanNotFoundError,
    StoreError,
    WaygraphError,
)
from waygraph.server.models import ErrorBody

__all__ = ["ApiError", "AsciiJSONResponse", "error_response", "install_handlers", "responses"]

log = logging.getLogger("waygraph.server")

_CODES = {
    400: "bad_request",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    408: "request_timeout",
    409: "conflict",
    413: "body_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "too_many_streams",
    503: "store_unavailable",
}


class AsciiJSONResponse(JSONResponse):
    """JSON with non-ASCII escaped: any stored string, even a lone surrogate, can be sent."""

    def render(self, content: Any) -> bytes:
        """Compact ASCII JSON (non-ASCII escaped, NaN refused)."""
        text = json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
        return text.encode("ascii")


def error_response(
    status: int,
    code: str,
    message: str,
    problems: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """The API's error body ``{error, message, problems?}`` with a status code."""
    body: dict[str, Any] = {"error": code, "message": message}
    if problems is not None:
        body["problems"] = problems
    return AsciiJSONResponse(body, status_code=status, headers=headers)


def responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for the error statuses a route can answer."""
    return {status: {"model": ErrorBody, "description": _CODES[status]} for status in statuses}


def _problems(exc: RequestValidationError) -> list[dict[str, Any]]:
    problems = []
    for error in exc.errors():
        problems.append(
            {
                "loc": [p if isinstance(p, int) else str(p) for p in error.get("loc", ())],
                "message": str(error.get("msg", "invalid")),
                "type": str(error.get("type", "invalid")),
            }
        )
    return problems


async def _validation(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    problems = _problems(exc)
    if any(p["type"] == "json_invalid" for p in problems):
        return error_response(400, "bad_json", "the request body is not valid JSON", problems)
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    is_json = content_type == "application/json" or content_type.endswith("+json")
    if not is_json and any(p["loc"] == ["body"] for p in problems):
        # FastAPI hands a body with another content type over as raw bytes.
        return error_response(
            415, "unsupported_media_type", "send the body as JSON (Content-Type: application/json)"
        )
    where = "; ".join(f"{'.'.join(str(x) for x in p['loc'])}: {p['message']}" for p in problems[:5])
    return error_response(422, "invalid_request", f"invalid request: {where}", problems)


async def _http(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = _CODES.get(exc.status_code, "error")
    message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
    headers = dict(exc.headers or {})
    if exc.status_code == 404 and message == "Not Found":
        message = f"no route {request.url.path!r}; see /openapi.json"
    if exc.status_code == 405:
        # Starlette names only the first route's methods; a path may have several routes.
        methods = _methods_of(request)
        headers["Allow"] = ", ".join(sorted(methods))
        message = f"{request.method} is not allowed here; use {', '.join(sorted(methods))}"
    return error_response(exc.status_code, code, message, headers=headers)


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")


def _methods_of(request: Request) -> set[str]:
    """The methods some route serves at this path, asked of the router itself.

    Routers included in others are matched lazily by newer FastAPI versions,
    so their routes cannot be listed; asking each method's match works on all.
    """
    methods: set[str] = set()
    for method in _METHODS:
        scope = {**request.scope, "method": method}
        if any(route.matches(scope)[0] is Match.FULL for route in request.app.router.routes):
            methods.add(method)
    return methods


async def _api(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error_response(exc.status, exc.code, exc.message)


async def _waygraph(request: Request, exc: Exception) -> Response:
    if isinstance(exc, PlanNotFoundError):
        return error_response(404, "plan_not_found", str(exc))
    if isinstance(exc, Conflict):
        return error_response(409, "conflict", str(exc))
    if isinstance(exc, NotWaitingError):
        return error_response(409, "not_waiting", str(exc))
    if isinstance(exc, StoreError):
        log.warning("store error on %s %s: %s", request.method, request.url.path, exc)
        return error_response(503, "store_unavailable", str(exc))
    return error_response(400, "bad_request", str(exc))


async def _unexpected(request: Request, exc: Exception) -> Response:
    log.exception("internal error on %s %s", request.method, request.url.path)
    return error_response(500, "internal_error", "internal error; see the server log")


def install_handlers(app: FastAPI) -> None:
    """Make every error the app raises an API error body (no tracebacks)."""
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(HTTPException, _http)
    app.add_exception_handler(ApiError, _api)
    app.add_exception_handler(WaygraphError, _waygraph)
    app.add_exception_handler(Exception, _unexpected)
