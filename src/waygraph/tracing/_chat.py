"""The attributes of a model call's span (``chat {model}``), as the GenAI conventions name them.

Plain data and functions, no OpenTelemetry import: :func:`waygraph.tracing.chat_span`
makes the span; this module says what goes on it. The names are the OpenTelemetry
semantic conventions' own (checked against ``opentelemetry-semantic-conventions``
in tests/test_tracing_genai.py).

Example:
    >>> request_attributes({"model": "m", "max_tokens": 64}, "http://127.0.0.1:8080/v1")
    ... # doctest: +NORMALIZE_WHITESPACE
    {'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'm',
     'gen_ai.request.max_tokens': 64, 'server.address': '127.0.0.1', 'server.port': 8080}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

__all__ = ["ATTRIBUTES", "request_attributes", "response_attributes"]

GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
GEN_AI_REQUEST_TEMPERATURE = "gen_ai.request.temperature"
GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
GEN_AI_RESPONSE_ID = "gen_ai.response.id"
GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
ERROR_TYPE = "error.type"

#: Every attribute a ``chat {model}`` span may carry.
ATTRIBUTES = (
    GEN_AI_OPERATION_NAME,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_REQUEST_MAX_TOKENS,
    GEN_AI_REQUEST_TEMPERATURE,
    SERVER_ADDRESS,
    SERVER_PORT,
    GEN_AI_RESPONSE_MODEL,
    GEN_AI_RESPONSE_ID,
    GEN_AI_RESPONSE_FINISH_REASONS,
    GEN_AI_USAGE_INPUT_TOKENS,
    GEN_AI_USAGE_OUTPUT_TOKENS,
    ERROR_TYPE,
)

_DEFAULT_PORTS = {"https": 443, "http": 80}


def request_attributes(request: Mapping[str, Any], base_url: str | None) -> dict[str, Any]:
    """What a chat-completions ``request`` to ``base_url`` says before it is sent.

    Example:
        >>> request_attributes({"model": "gpt-4o", "temperature": 0.0}, "https://api.openai.com/v1")
        ... # doctest: +NORMALIZE_WHITESPACE
        {'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'gpt-4o',
         'gen_ai.request.temperature': 0.0, 'server.address': 'api.openai.com', 'server.port': 443}
    """
    attributes: dict[str, Any] = {
        GEN_AI_OPERATION_NAME: "chat",
        GEN_AI_REQUEST_MODEL: str(request.get("model") or ""),
    }
    for name, key in (
        (GEN_AI_REQUEST_MAX_TOKENS, "max_tokens"),
        (GEN_AI_REQUEST_TEMPERATURE, "temperature"),
    ):
        value = request.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            attributes[name] = value
    attributes.update(_server(base_url))
    return attributes


def response_attributes(response: Any) -> dict[str, Any]:
    """What an ``openai`` chat completion reported: model, id, finish reasons, token usage.

    Only what the endpoint gave, as OpenTelemetry takes it (a missing usage
    is no attribute, not zero).

    Example:
        >>> from types import SimpleNamespace as NS
        >>> response_attributes(NS(model="m-1", usage=NS(prompt_tokens=3, completion_tokens=None)))
        {'gen_ai.response.model': 'm-1', 'gen_ai.usage.input_tokens': 3}
    """
    usage = getattr(response, "usage", None)
    choices = getattr(response, "choices", None) or ()
    reasons = [getattr(choice, "finish_reason", None) for choice in choices]
    found = {
        GEN_AI_RESPONSE_MODEL: getattr(response, "model", None),
        GEN_AI_RESPONSE_ID: getattr(response, "id", None),
        GEN_AI_RESPONSE_FINISH_REASONS: [r for r in reasons if isinstance(r, str)] or None,
        GEN_AI_USAGE_INPUT_TOKENS: getattr(usage, "prompt_tokens", None),
        GEN_AI_USAGE_OUTPUT_TOKENS: getattr(usage, "completion_tokens", None),
    }
    return {
        name: value
        for name, value in found.items()
        if isinstance(value, str | int | list) and not isinstance(value, bool)
    }


def _server(base_url: str | None) -> dict[str, Any]:
    """``server.address`` and ``server.port`` of an endpoint (the scheme's port by default)."""
    try:
        parts = urlsplit(base_url or "")
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme)
    except ValueError:  # a port that is not a number
        return {}
    if not parts.hostname:
        return {}
    if port is None:
        return {SERVER_ADDRESS: parts.hostname}
    return {SERVER_ADDRESS: parts.hostname, SERVER_PORT: port}
