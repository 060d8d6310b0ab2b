"""The gate every request passes: Host check, bearer token, body size.

A plain ASGI middleware (no FastAPI needed), applied before routing:

- **Host.** Without a token the server trusts loopback, so a web page on
  another site must not reach it through DNS rebinding: the ``Host`` header
  must name one of ``allowed_hosts`` (the loopback names and the bound host).
- **Token.** With a token, every request needs ``Authorization: Bearer
  TOKEN`` or the ``waygraph_token`` cookie. A browser gets the cookie by
  opening any page once with ``?token=TOKEN``: the answer sets it (HttpOnly,
  SameSite=Strict) and redirects to the same address without the token, so
  the token stays out of history and logs.
- **Body.** Bodies over ``max_body`` bytes are refused with 413 before any
  route runs (by ``Content-Length`` when sent, else while reading).

Example:
    >>> async def app(scope, receive, send): ...
    >>> Gate(app, token="s3cret", max_body=1024).token
    's3cret'
"""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from html import escape
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.responses import HTMLResponse, RedirectResponse, Response

from waygraph.server.errors import error_response

__all__ = ["COOKIE", "DEFAULT_MAX_BODY", "LOOPBACK_HOSTS", "Gate", "is_loopback", "same_origin"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "waygraph_token"
DEFAULT_MAX_BODY = 1024 * 1024
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (127.0.0.0/8, ::1, localhost).

    Example:
        >>> is_loopback("127.0.0.1"), is_loopback("0.0.0.0"), is_loopback("localhost")
        (True, False, True)
    """
    import ipaddress

    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve anywhere


def same_origin(path: str) -> str:
    """``path`` as a redirect target that stays on this server.

    Browsers read ``//host/x`` (and ``/\\host/x``: backslashes count as
    slashes) as another site, and an absolute-form request line
    (``GET http://host/ HTTP/1.1``) puts a scheme in the path; so leading
    slashes and backslashes collapse into one ``/`` and a path that does not
    start with one gets it. What follows is percent-encoded by the redirect,
    so tabs or newlines a browser would strip cannot rebuild a ``//``.

    Example:
        >>> same_origin("//evil.example/a"), same_origin("http://x/")
        ('/evil.example/a', '/http://x/')
    """
    return "/" + path.lstrip("/\\")


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


def _hostname(host_header: str) -> str:
    if host_header.startswith("["):  # [::1]:8765
        return host_header[1 : host_header.find("]")].lower()
    return host_header.rsplit(":", 1)[0].lower() if host_header.count(":") == 1 else host_header


class Gate:
    """ASGI middleware enforcing the Host check, the token and the body limit."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str | None = None,
        max_body: int = DEFAULT_MAX_BODY,
        allowed_hosts: frozenset[str] | None = None,
    ) -> None:
        self.app = app
        self.token = token
        self.max_body = max_body
        self.allowed_hosts = allowed_hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send = _with_security_headers(send)
        headers = _headers(scope)
        refusal = self._refuse_host(headers) or self._refuse_token(scope, headers)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        if scope["method"] not in _BODY_METHODS:
            await self.app(scope, receive, send)
            return
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_body:
            await self._too_large()(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        try:
            # A body trickled in byte by byte must not hold the connection forever.
            async with asyncio.timeout(BODY_TIMEOUT):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > self.max_body:
                        await self._too_large()(scope, receive, send)
                        return
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            late = error_response(
                408, "request_timeout", f"the request body took over {BODY_TIMEOUT:g}s to arrive"
            )
            await late(scope, receive, send)
            return
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _too_large(self) -> Response:
        return error_response(
            413,
            "body_too_large",
            f"the request body is over the limit of {self.max_body} bytes (--max-body)",
        )

    def _refuse_host(self, headers: dict[str, str]) -> Response | None:
        if self.allowed_hosts is None:
            return None
        host = _hostname(headers.get("host", ""))
        if host in self.allowed_hosts:
            return None
        return error_response(
            400,
            "bad_request",
            f"Host {host!r} is not served here; without --token only "
            f"{', '.join(sorted(self.allowed_hosts))} are (a guard against DNS rebinding)",
        )

    def _refuse_token(self, scope: Scope, headers: dict[str, str]) -> Response | None:
        if self.token is None:
            return None
        expected = self.token.encode()
        auth = headers.get("authorization", "")
        scheme, _, supplied = auth.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(supplied.strip().encode(), expected):
            return None
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:  # a malformed Cookie header is just no cookie
            cookie = SimpleCookie()
        if COOKIE in cookie and hmac.compare_digest(cookie[COOKIE].value.encode(), expected):
            return None
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = [value for name, value in query if name == "token"]
        if scope["method"] == "GET" and given and hmac.compare_digest(given[-1].encode(), expected):
            rest = urlencode([(n, v) for n, v in query if n != "token"])
            target = same_origin(scope.get("root_path", "") + scope["path"])
            response = RedirectResponse(target + (f"?{rest}" if rest else ""), status_code=303)
            response.set_cookie(COOKIE, self.token, httponly=True, samesite="strict", path="/")
            return response
        return self._unauthorized(scope, headers, bool(auth or given))

    @staticmethod
    def _unauthorized(scope: Scope, headers: dict[str, str], tried: bool) -> Response:
        why = "the token is wrong" if tried else "a token is required"
        if not scope["path"].startswith("/api") and "text/html" in headers.get("accept", ""):
            page = (
                "<!doctype html><meta charset=utf-8><title>waygraph: token needed</title>"
                '<body style="font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto">'
                f"<h1>Token needed</h1><p>This waygraph server needs its token: {escape(why)}."
                " Open this page once as <code>?token=YOUR_TOKEN</code>; a cookie keeps you"
                " signed in.</p></body>"
            )
            return HTMLResponse(page, status_code=401, headers={"WWW-Authenticate": "Bearer"})
        return error_response(
            401,
            "unauthorized",
            f"{why}: send Authorization: Bearer TOKEN (the server's --token)",
            headers={"WWW-Authenticate": "Bearer"},
        )


#: Seconds a client has to send a whole request body.
BODY_TIMEOUT = 30.0

#: What pages may load: their own scripts only (no inline script, no eval);
#: inline styles stay allowed because every SVG drawing embeds its stylesheet.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'"
)
_SECURITY_HEADERS = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode("ascii")),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)


def _with_security_headers(send: Send) -> Send:
    """``send`` that adds the security headers to every response's start."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            present = {name.lower() for name, _ in message.get("headers", [])}
            extra = [(n, v) for n, v in _SECURITY_HEADERS if n not in present]
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return sending
