"""One client for OpenAI-compatible chat endpoints, as local servers really behave.

Every tool-calling loop of waygraph (the demo, ``waygraph eval``, the OpenAI
loop example, the agent of ``waygraph run``) asks the model through
:class:`ChatClient`. It handles what servers differ in, so the loops do not:

- the assistant message that carries tool calls is sent with ``content`` a
  string and tools with ``tool_choice: "auto"`` (llama-cpp-python answers 500
  otherwise, or drops the tools);
- every request carries ``max_tokens`` and is kept within the model's context
  (:mod:`waygraph.chat._fit`; the size from ``--context-tokens``, the
  server's ``/models``, or the server's own refusal of a request too long);
- tools reach the model natively, or as text for models and servers without
  tool calls (:mod:`waygraph.chat._text_tools`; ``auto`` switches when the
  model writes its call instead of making it);
- each tool call is checked: one naming no tool or with arguments that are
  not a JSON object cannot run (:attr:`ToolRequest.problem`);
- a server that answers an error, nothing, or not at all is one line naming
  the endpoint and what it said (:class:`~waygraph.errors.LLMError`).

Example:
    >>> from waygraph.testing import ScriptedChatServer
    >>> with ScriptedChatServer(["hello"]) as server:
    ...     with ChatClient(server.base_url, model="scripted") as chat:
    ...         chat.ask([{"role": "user", "content": "hi"}]).content
    'hello'
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from waygraph import tracing
from waygraph._extras import require
from waygraph.chat._endpoint import (
    TOOL_PROTOCOLS,
    context_from_error,
    context_from_models,
    endpoint,
    refused,
)
from waygraph.chat._fit import estimate, fit
from waygraph.chat._messages import DEFAULT_MAX_TOKENS, TOOL_CHOICE, Reply, check_call
from waygraph.chat._text_tools import describe_tools, find_calls, looks_like_call, to_text_wire
from waygraph.errors import ConfigError, LLMError

__all__ = ["ChatClient", "server_error"]


class ChatClient:
    """A model at an OpenAI-compatible endpoint, asked one request at a time.

    ``base_url`` selects the server; ``api_key`` defaults to ``$OPENAI_API_KEY``
    and to a placeholder for local servers that need none; ``client`` reuses a
    configured ``openai.OpenAI`` (you then close it). ``max_tokens`` bounds
    each reply (None: the server's default); ``tool_choice`` goes with the
    tools (None: not sent); ``tool_protocol`` is ``native``, ``text`` or
    ``auto``; ``context_tokens`` is the model's context size (None: what the
    server's ``/models`` says, else no limit).

    Example:
        >>> chat = ChatClient("http://localhost:11434/v1", model="llama3.1")
        >>> chat.protocol
        'native'
    """

    def __init__(
        self,
        base_url: str | None = None,
        *,
        model: str,
        api_key: str | None = None,
        client: Any = None,
        timeout: float | None = 120.0,
        max_retries: int = 1,
        max_tokens: int | None = DEFAULT_MAX_TOKENS,
        tool_choice: str | None = TOOL_CHOICE,
        tool_protocol: str = "auto",
        context_tokens: int | None = None,
        temperature: float | None = None,
    ) -> None:
        if tool_protocol not in TOOL_PROTOCOLS:
            raise ConfigError(
                f"tool_protocol must be one of {', '.join(TOOL_PROTOCOLS)}, not {tool_protocol!r}"
            )
        if context_tokens is not None and context_tokens <= 0:
            raise ConfigError(f"context_tokens must be a positive number, not {context_tokens}")
        self.model = model
        self.base_url = base_url if client is None else str(getattr(client, "base_url", base_url))
        self.max_tokens = max_tokens
        self.tool_choice = tool_choice
        self.tool_protocol = tool_protocol
        self.context_tokens = context_tokens
        self.temperature = temperature
        self.timeout = timeout
        self._endpoint = endpoint(self.base_url)
        self._given = client
        self._client: Any = client
        self._settings = {
            "base_url": base_url,
            # Local servers (Ollama, llama.cpp) ignore the key, but the client needs one.
            "api_key": api_key or os.environ.get("OPENAI_API_KEY") or "not-needed",
            "timeout": timeout,
            "max_retries": max_retries,
        }

    @property
    def protocol(self) -> str:
        """How tools reach the model on the next request: ``native`` or ``text``."""
        if self.tool_protocol == "auto":
            return "text" if self._endpoint.text_tools else "native"
        return self.tool_protocol

    @property
    def client(self) -> Any:
        """The ``openai.OpenAI`` client the requests go through."""
        if self._client is None:
            openai = require("llm", "openai", purpose="a model endpoint")
            self._client = openai.OpenAI(**self._settings)
        return self._client

    def ask(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] = (),
        *,
        timeout: float | None = None,
    ) -> Reply:
        """The model's reply to ``messages`` (native shape), offered ``tools`` (function
        schemas); :class:`~waygraph.errors.LLMError` when the server fails.

        ``timeout`` bounds this request (seconds) below the client's.
        """
        schemas = {str(t["function"]["name"]): dict(t) for t in tools}
        context_retry = True
        while True:
            protocol = self.protocol if schemas else "native"
            request = self._request(messages, schemas, protocol, timeout)
            try:
                with tracing.chat_span(request, self._endpoint.base_url) as span:
                    response = span.done(self.client.chat.completions.create(**request))
            except Exception as exc:
                openai = require("llm", "openai", purpose="a model endpoint")
                if not isinstance(exc, openai.OpenAIError):
                    raise
                message = _said(exc)
                # A request too long is refused as a bad request (not a rate limit, not 5xx).
                if context_retry and getattr(exc, "status_code", 0) in (400, 413):
                    size = context_from_error(message)
                    if size is not None:
                        # Too long for the model: learn its size and shorten once more.
                        context_retry = False
                        self._learn_context(size, request)
                        continue
                if (
                    protocol == "native"
                    and schemas
                    and self.tool_protocol == "auto"
                    and isinstance(exc, openai.APIStatusError)
                    and refused(exc)
                    and "tool" in message.lower()
                ):
                    self._endpoint.text_tools = True  # the server takes no tools: text
                    continue
                raise server_error(self._endpoint.base_url, exc) from exc
            return self._read(response, schemas, protocol)

    def close(self) -> None:
        """Close the HTTP client this object created (one passed in stays open)."""
        if self._client is not None and self._given is None:
            self._client.close()
        self._client = self._given

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ChatClient({self.model!r}, base_url={self.base_url!r})"

    # ------------------------------------------------------------ requests

    def _request(
        self,
        messages: Sequence[Mapping[str, Any]],
        schemas: dict[str, dict[str, Any]],
        protocol: str,
        timeout: float | None,
    ) -> dict[str, Any]:
        request: dict[str, Any] = {"model": self.model}
        extra_chars = 0
        if schemas and protocol == "native":
            request["tools"] = list(schemas.values())
            if self.tool_choice is not None:
                request["tool_choice"] = self.tool_choice
            extra_chars = len(json.dumps(request["tools"]))
        limit = self._context_limit()
        reply_tokens = self.max_tokens
        wire = [dict(m) for m in messages]
        if limit is not None:
            wanted = (
                reply_tokens if reply_tokens is not None else min(DEFAULT_MAX_TOKENS, limit // 4)
            )
            if schemas and protocol == "text":
                extra_chars = len(describe_tools(schemas))
            wire, reply_tokens = fit(
                wire, limit=limit, reply_tokens=wanted, extra_chars=extra_chars
            )
        if schemas and protocol == "text":
            wire = to_text_wire(wire, schemas)
        request["messages"] = wire
        if reply_tokens is not None:
            request["max_tokens"] = reply_tokens
        if self.temperature is not None:
            request["temperature"] = self.temperature
        if timeout is not None:
            request["timeout"] = timeout
        return request

    def _context_limit(self) -> int | None:
        if self.context_tokens is not None:
            return self.context_tokens
        facts = self._endpoint
        with facts.lock:
            if not facts.context_checked:
                facts.context_checked = True
                facts.context_tokens = facts.context_tokens or self._listed_context()
            return facts.context_tokens

    def _listed_context(self) -> int | None:
        """The context size the server's ``/models`` states (None when it says none or fails)."""
        try:
            page = self.client.with_options(timeout=10, max_retries=0).models.list()
            listing = {"data": [entry.model_dump() for entry in page.data]}
        except Exception:  # a server without /models: no limit known, requests go as they are
            return None
        return context_from_models(listing, self.model)

    def _learn_context(self, size: int, request: Mapping[str, Any]) -> None:
        # What was sent, as waygraph counts it; the server counted more than fits.
        tools = len(json.dumps(request.get("tools", [])))
        sent = estimate(request.get("messages", ()), tools) + (request.get("max_tokens") or 0)
        # A size the refusal names is the limit, unless the estimate already fitted it
        # (the server's tokens are smaller than waygraph's): then 15% under what was sent.
        size = max(512, min(size, sent * 85 // 100) if size > 0 else sent * 85 // 100)
        if self.context_tokens is not None:
            self.context_tokens = min(self.context_tokens, size)
        else:
            with self._endpoint.lock:
                self._endpoint.context_tokens = size

    # ------------------------------------------------------------ replies

    def _read(self, response: Any, schemas: dict[str, dict[str, Any]], protocol: str) -> Reply:
        choices = getattr(response, "choices", None)
        if not choices:
            raise LLMError(f"the model server at {self._endpoint.base_url} returned no choices")
        message = choices[0].message
        content = message.content or ""
        reply = Reply(content, protocol=protocol, finish_reason=choices[0].finish_reason)
        usage = getattr(response, "usage", None)
        if usage is not None:
            reply.prompt_tokens = usage.prompt_tokens or 0
            reply.completion_tokens = usage.completion_tokens or 0
            reply.total_tokens = usage.total_tokens or reply.prompt_tokens + reply.completion_tokens
        native = getattr(message, "tool_calls", None) or []
        if native:
            reply.calls = [
                check_call(
                    call.id or f"call-{n}",
                    call.function.name,
                    call.function.arguments or "",
                    schemas,
                )
                for n, call in enumerate(native, 1)
            ]
            reply.protocol = "native"
        elif schemas and protocol == "text":
            reply.calls = find_calls(content, schemas)
        elif schemas and self.tool_protocol == "auto" and looks_like_call(content, schemas):
            # The model wrote its call instead of making it: text from now on.
            self._endpoint.text_tools = True
            reply.calls = find_calls(content, schemas)
            reply.protocol = "text"
        return reply


def server_error(base_url: str | None, exc: BaseException) -> LLMError:
    """One line naming the endpoint and what went wrong (an ``openai`` error).

    Example:
        >>> str(server_error("http://127.0.0.1:9/v1", TimeoutError("timed out")))
        'the model server at http://127.0.0.1:9/v1 failed: timed out'
    """
    status = getattr(exc, "status_code", None)
    said = _said(exc)
    name = type(exc).__name__
    if status is not None:
        return LLMError(f"the model server at {base_url} answered HTTP {status}: {said}")
    if name == "APITimeoutError":
        return LLMError(f"the model server at {base_url} did not answer in time ({said})")
    if name == "APIConnectionError":
        return LLMError(f"cannot reach the model server at {base_url}: {said}")
    return LLMError(f"the model server at {base_url} failed: {said}")


def _said(exc: BaseException) -> str:
    """What the server said, on one line (the body's error message when there is one)."""
    body = getattr(exc, "body", None)
    text = ""
    if isinstance(body, dict):
        error = body.get("error", body)
        text = str(error.get("message") if isinstance(error, dict) else error or "")
    text = text or str(getattr(exc, "message", "") or exc) or type(exc).__name__
    cause = exc.__cause__
    if type(exc).__name__ == "APIConnectionError" and cause is not None and str(cause):
        text = f"{text} ({cause})"
    return " ".join(text.split())[:300]
