"""Preflight: does the model endpoint answer before a command starts work against it?

``waygraph plan``, ``waygraph eval`` and ``waygraph demo --llm`` call
:func:`check_endpoint` first: a server that is down, a wrong port or a base
URL without ``/v1`` is one line naming the URL and the flag to change (exit
code 2) instead of a run that writes sessions or results and then fails.
"""

from __future__ import annotations

import os
import socket
import urllib.error
from typing import Annotated
from urllib.parse import urlparse

import typer

from waygraph.errors import ConfigError

__all__ = ["PREFLIGHT_TIMEOUT", "NoPreflightOption", "check_endpoint"]

#: Seconds the endpoint has to answer ``GET /models``. A server that is down
#: refuses the connection at once; one that accepted it but is slow is often a
#: single-request local server busy generating for another client, which
#: deserves a wait. ``$WAYGRAPH_PREFLIGHT_TIMEOUT`` changes it (0 skips the check).
PREFLIGHT_TIMEOUT = 30.0

#: ``--no-preflight``, on every command that calls :func:`check_endpoint`: pass
#: ``timeout=0`` then, which still refuses a URL that is no http(s) URL.
NoPreflightOption = Annotated[
    bool,
    typer.Option(
        "--no-preflight",
        help="Skip the check that the model server answers before starting (the wait is "
        "$WAYGRAPH_PREFLIGHT_TIMEOUT seconds, 30 by default).",
    ),
]


def check_endpoint(
    base_url: str,
    *,
    flag: str = "--llm",
    api_key: str | None = None,
    timeout: float | None = None,
) -> None:
    """Raise :class:`~waygraph.errors.ConfigError` unless ``GET {base_url}/models`` answers 2xx.

    The message is one line: what failed (connection refused, timeout, an
    HTTP status, an unknown host), the URL asked and ``flag``, the option
    that sets it.

    Example:
        >>> from waygraph.testing import ScriptedChatServer
        >>> with ScriptedChatServer() as server:
        ...     check_endpoint(server.base_url)
        >>> check_endpoint("ftp://example.org")
        Traceback (most recent call last):
        ...
        waygraph.errors.ConfigError: --llm 'ftp://example.org' is not an http(s) URL; \
give the base URL of an OpenAI-compatible API, e.g. http://localhost:11434/v1
    """
    if timeout is None:
        timeout = _configured_timeout()
    parsed = urlparse(base_url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ConfigError(
            f"{flag} {base_url!r} is not an http(s) URL; give the base URL of an "
            "OpenAI-compatible API, e.g. http://localhost:11434/v1"
        )
    if timeout <= 0:
        return  # the check is switched off
    # Here, not at the top: the option above is read by every command's start-up.
    import urllib.request

    url = base_url.rstrip("/") + "/models"
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read(1 << 20)
    except urllib.error.HTTPError as exc:
        hint = {
            401: "check --api-key or $OPENAI_API_KEY",
            403: "check --api-key or $OPENAI_API_KEY",
            404: f"is {flag} the API's base URL (often ending in /v1)?",
        }.get(exc.code, f"check {flag}")
        raise ConfigError(
            f"the model server at {base_url} answered GET {url} with HTTP {exc.code} "
            f"{exc.reason}; {hint}"
        ) from None
    except (urllib.error.URLError, OSError) as exc:
        if _timed_out(exc):
            # It took the connection: it is up, only slow (or busy with another client).
            raise ConfigError(
                f"the model server at {base_url} did not answer GET {url} within "
                f"{timeout:g}s (it may be busy with another request); try again, or wait "
                "longer with WAYGRAPH_PREFLIGHT_TIMEOUT=SECONDS (0 skips this check)"
            ) from None
        raise ConfigError(
            f"cannot reach the model server at {base_url} (GET {url}): {_why(exc, timeout)}; "
            f"start it or change {flag}"
        ) from None


def _configured_timeout() -> float:
    """``$WAYGRAPH_PREFLIGHT_TIMEOUT`` in seconds, else :data:`PREFLIGHT_TIMEOUT`."""
    text = os.environ.get("WAYGRAPH_PREFLIGHT_TIMEOUT", "").strip()
    if not text:
        return PREFLIGHT_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(
            f"WAYGRAPH_PREFLIGHT_TIMEOUT={text!r} is not a number of seconds"
        ) from None
    if value != value or value < 0:  # NaN or negative
        raise ConfigError(f"WAYGRAPH_PREFLIGHT_TIMEOUT={text!r} must be 0 or more seconds")
    return value


def _timed_out(exc: BaseException) -> bool:
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    return isinstance(reason, TimeoutError | socket.timeout)


def _why(exc: BaseException, timeout: float) -> str:
    """What went wrong, in a few words a person recognises."""
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, TimeoutError | socket.timeout):
        return f"no answer within {timeout:g}s (timeout)"
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, socket.gaierror):
        return "unknown host"
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror.lower()
    return str(reason) or type(reason).__name__
