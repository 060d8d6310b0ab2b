"""What waygraph learns about a model server as it answers, kept per endpoint.

A server that refused ``json_schema`` refuses it next time too, and one that
writes its tool calls as text keeps doing so: each fact is learned once per
base URL in a process and every client of that URL uses it (the planning
agent, ``waygraph eval``'s parallel runs), instead of each paying for the
refusal again. The facts are only ever narrowed, never widened, so sharing
them between threads needs no more than a lock.

Example:
    >>> facts = endpoint("http://localhost:8080/v1")
    >>> facts is endpoint("http://localhost:8080/v1/")
    True
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "STRUCTURED_OUTPUT_MODES",
    "TOOL_PROTOCOLS",
    "Endpoint",
    "context_from_error",
    "context_from_models",
    "endpoint",
    "forget_endpoints",
    "refused",
]

#: How tools reach the model: ``native`` tool calls, ``text`` (a JSON object in the
#: reply), or ``auto``: native until the server answers a tool call as text.
TOOL_PROTOCOLS = ("native", "text", "auto")
#: What ``structured_output`` may be: ``auto`` tries ``json_schema``, then
#: ``json_object``, then plain text; ``on`` asks for ``json_schema`` only; ``off`` never.
STRUCTURED_OUTPUT_MODES = ("auto", "on", "off")


@dataclass
class Endpoint:
    """The facts learned about the server at ``base_url``.

    ``refused_formats``: response formats it refused; ``text_tools``: it
    answered a tool call as text (``auto`` then speaks the text protocol);
    ``context_tokens``: its context size, once known (``context_checked``:
    its ``/models`` was asked).
    """

    base_url: str
    refused_formats: set[str] = field(default_factory=set)
    text_tools: bool = False
    context_tokens: int | None = None
    context_checked: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)


_ENDPOINTS: dict[str, Endpoint] = {}
_LOCK = threading.Lock()


def endpoint(base_url: str | None) -> Endpoint:
    """The shared facts of the server at ``base_url`` (None: the ``openai`` default).

    Example:
        >>> endpoint(None).base_url
        'https://api.openai.com/v1'
    """
    key = (base_url or "https://api.openai.com/v1").rstrip("/")
    with _LOCK:
        facts = _ENDPOINTS.get(key)
        if facts is None:
            facts = _ENDPOINTS[key] = Endpoint(key)
        return facts


def forget_endpoints() -> None:
    """Forget every learned fact (a server restarted with other settings; tests).

    Example:
        >>> endpoint("http://x/v1").text_tools = True
        >>> forget_endpoints()
        >>> endpoint("http://x/v1").text_tools
        False
    """
    with _LOCK:
        _ENDPOINTS.clear()


def refused(exc: Any) -> bool:
    """Whether a failed request reads as the server refusing a feature of it: a 4xx for
    the request (not 401/403/404/429, which say something else) or a 5xx (llama-cpp-python
    answers 500 to a ``response_format`` it does not know).

    Example:
        >>> from types import SimpleNamespace as NS
        >>> refused(NS(status_code=500)), refused(NS(status_code=401))
        (True, False)
    """
    status = getattr(exc, "status_code", 0) or 0
    return status >= 500 or (400 <= status < 500 and status not in (401, 403, 404, 429))


# The context size as servers state it: vLLM's max_model_len, llama.cpp's
# n_ctx (n_ctx_train is what the model was trained with, an upper bound),
# LM Studio's max_context_length, others' context_length.
_CONTEXT_KEYS = ("n_ctx", "max_model_len", "max_context_length", "context_length", "n_ctx_train")


def context_from_models(listing: Any, model: str) -> int | None:
    """The context size ``GET /models`` states for ``model`` (or its only model), if any.

    Example:
        >>> context_from_models({"data": [{"id": "m", "max_model_len": 8192}]}, "m")
        8192
        >>> context_from_models({"data": [{"id": "m", "meta": {"n_ctx_train": 2048}}]}, "x")
        2048
    """
    data = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(data, list) or not data:
        return None
    entries = [e for e in data if isinstance(e, dict)]
    chosen = [e for e in entries if e.get("id") == model] or (entries if len(entries) == 1 else [])
    for entry in chosen:
        for place in (entry, entry.get("meta") or {}):
            for key in _CONTEXT_KEYS:
                value = place.get(key) if isinstance(place, dict) else None
                if isinstance(value, int) and value > 0:
                    return value
    return None


# "maximum context length is 4096 tokens", "exceed context window of 4096",
# "context size (4096)", "n_ctx: 4096", "context length of 4096".
_CONTEXT_SIZE = re.compile(
    r"(?:context(?: length| window| size)?|n_ctx)\D{0,20}?(\d{3,7})", re.IGNORECASE
)
_OVERFLOW = re.compile(
    r"context|too many tokens|requested \d+ tokens|exceed|too long", re.IGNORECASE
)


def context_from_error(message: str) -> int | None:
    """The context size a server's refusal of a too-long request names; 0 when the
    refusal is about the context but names no size; None when it is about something else.

    Example:
        >>> context_from_error("Requested tokens (4234) exceed context window of 4096")
        4096
        >>> context_from_error("This model's maximum context length is 2048 tokens.")
        2048
        >>> context_from_error("unknown model") is None
        True
    """
    if not _OVERFLOW.search(message):
        return None
    match = _CONTEXT_SIZE.search(message)
    return int(match.group(1)) if match else 0
