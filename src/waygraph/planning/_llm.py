"""Model access: one small protocol and an OpenAI-compatible implementation.

:class:`OpenAILLM` works with any server speaking the chat-completions
protocol (OpenAI, Ollama, vLLM, llama.cpp, hosted gateways). Given a JSON
Schema it asks for structured output: ``json_schema`` first; a server that
refuses it (any 4xx it gives for the request, or a 5xx, as llama-cpp-python's
server answers "Input should be 'text' or 'json_object'") is asked with
``json_object``, then in plain text, and the object remembers the step it got
to, so it does not ask again; the caller extracts JSON from the text.

Example:
    >>> import asyncio
    >>> from waygraph.testing import ScriptedChatServer
    >>> async def ask(base_url):
    ...     async with OpenAILLM("scripted", base_url=base_url, api_key="test") as llm:
    ...         return await llm.complete([{"role": "user", "content": "hi"}])
    >>> with ScriptedChatServer(['{"ok": true}']) as server:
    ...     reply = asyncio.run(ask(server.base_url))
    >>> reply.text, reply.usage.total_tokens
    ('{"ok": true}', 3)
"""

from __future__ import annotations

import asyncio
import copy
import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, Protocol, TypedDict, runtime_checkable

from waygraph import tracing
from waygraph._extras import require
from waygraph.chat import STRUCTURED_OUTPUT_MODES, endpoint, refused, server_error
from waygraph.errors import ConfigError, LLMError
from waygraph.planning._models import TokenUsage

__all__ = ["LLM", "LLMResponse", "Message", "OpenAILLM", "close_clients"]

log = logging.getLogger("waygraph.planning")

#: A chat message: ``{"role": "system" | "user" | "assistant", "content": str}``.
Message = Mapping[str, str]


class _ClientSettings(TypedDict):
    """What ``openai.AsyncOpenAI`` is made with, for each event loop."""

    base_url: str | None
    api_key: str
    timeout: float | None
    max_retries: int


class LLMResponse(NamedTuple):
    """A model's reply text and the tokens the call used."""

    text: str
    usage: TokenUsage = TokenUsage()
    model: str | None = None


@runtime_checkable
class LLM(Protocol):
    """What the planning agent needs from a model: one async chat call.

    ``json_schema``, when given, is the JSON Schema the reply should follow;
    an implementation may ignore it (the agent extracts JSON from plain text).

    Example:
        >>> class Echo:
        ...     async def complete(self, messages, *, json_schema=None, schema_name="reply"):
        ...         return LLMResponse(messages[-1]["content"])
        >>> isinstance(Echo(), LLM)
        True
    """

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: Mapping[str, Any] | None = None,
        schema_name: str = "reply",
    ) -> LLMResponse:
        """The model's reply to ``messages``; with ``json_schema``, JSON of that shape."""


class OpenAILLM:
    """An :class:`LLM` over the ``openai`` package's async client.

    ``base_url`` selects the server (``http://localhost:11434/v1`` for
    Ollama, ...). ``api_key`` defaults to ``$OPENAI_API_KEY``, and to a
    placeholder for local servers that need none. Pass ``client`` to reuse
    a configured ``openai.AsyncOpenAI`` (you then close it); otherwise close
    with ``await llm.aclose()`` or ``async with OpenAILLM(...) as llm``.
    ``max_retries`` and ``timeout`` go to the client. ``structured_output``:
    ``"auto"`` (or True, the default) tries ``json_schema``, then
    ``json_object``, then plain text; ``"on"`` asks for ``json_schema`` only
    (a refusal is an :class:`~waygraph.errors.LLMError`); ``"off"`` (or False)
    never sends ``response_format``.

    Example:
        >>> llm = OpenAILLM("llama3.1", base_url="http://localhost:11434/v1")
        >>> llm.model
        'llama3.1'
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: Any = None,
        temperature: float | None = 0.0,
        max_tokens: int | None = None,
        timeout: float | None = 120.0,
        max_retries: int = 2,
        structured_output: bool | str = True,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.extra_body = dict(extra_body or {})
        if structured_output is True or structured_output is False:
            mode = "auto" if structured_output else "off"
        else:
            mode = str(structured_output)
        if mode not in STRUCTURED_OUTPUT_MODES:
            raise ValueError(
                f"structured_output must be one of {', '.join(STRUCTURED_OUTPUT_MODES)}, "
                f"not {structured_output!r}"
            )
        self.structured_mode: str = mode
        #: The response formats this mode may ask for, best first.
        self._wanted: tuple[str, ...] = {
            "auto": ("json_schema", "json_object"),
            "on": ("json_schema",),
            "off": (),
        }[mode]
        self.base_url = base_url
        # What the server refused is remembered for its URL, by every client of it.
        self._endpoint = endpoint(base_url)
        self._settings: _ClientSettings = {
            "base_url": base_url,
            # Local servers (Ollama, llama.cpp) ignore the key, but the client needs one.
            "api_key": api_key or os.environ.get("OPENAI_API_KEY") or "not-needed",
            "timeout": timeout,
            "max_retries": max_retries,
        }
        self._given_client = client
        self._owned: tuple[Any, Any] | None = None  # (event loop, client created for it)

    @property
    def structured_output(self) -> bool:
        """Whether a request with a schema still asks for a response format (False once
        the server refused every format, or with ``"off"``)."""
        return bool(self._formats)

    @property
    def _formats(self) -> list[str]:
        """The response formats still to try, best first (the server's refusals removed)."""
        refused_formats = self._endpoint.refused_formats
        return [kind for kind in self._wanted if kind not in refused_formats]

    @property
    def client(self) -> Any:
        """The ``openai.AsyncOpenAI`` client used in the current event loop.

        A client given to the constructor is always used. Otherwise one is
        created per event loop (an HTTP connection pool belongs to one loop),
        so the agent's blocking ``run()`` can be called again and again.
        """
        if self._given_client is not None:
            return self._given_client
        loop = _running_loop()
        if self._owned is None or self._owned[0] is not loop:
            openai = require("llm", "openai", purpose="OpenAILLM")
            self._owned = (loop, openai.AsyncOpenAI(**self._settings))
        return self._owned[1]

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: Mapping[str, Any] | None = None,
        schema_name: str = "reply",
    ) -> LLMResponse:
        """Send ``messages``; ask for ``json_schema`` output when given and supported."""
        openai = require("llm", "openai", purpose="OpenAILLM")

        request: dict[str, Any] = {"model": self.model, "messages": [dict(m) for m in messages]}
        if self.temperature is not None:
            request["temperature"] = self.temperature
        if self.max_tokens is not None:
            request["max_tokens"] = self.max_tokens
        if self.extra_body:
            request["extra_body"] = self.extra_body
        response = None
        while json_schema is not None and self._formats and response is None:
            kind = self._formats[0]
            fmt: dict[str, Any] = {"type": kind}
            if kind == "json_schema":
                fmt["json_schema"] = {
                    "name": schema_name,
                    "schema": dict(json_schema),
                    "strict": False,
                }
            try:
                with tracing.chat_span(request, self._endpoint.base_url) as span:
                    create = self.client.chat.completions.create
                    response = span.done(await create(**request, response_format=fmt))
            except openai.APIStatusError as exc:
                if not refused(exc) or self.structured_mode == "on":
                    raise self._failed(exc) from exc
                # The server does not do this format: the next one, from now on.
                log.info("%s refused by %s (%s)", kind, self.base_url, exc)
                with self._endpoint.lock:
                    self._endpoint.refused_formats.add(kind)
            except openai.OpenAIError as exc:
                raise self._failed(exc) from exc
        if response is None:
            try:
                with tracing.chat_span(request, self._endpoint.base_url) as span:
                    response = span.done(await self.client.chat.completions.create(**request))
            except openai.OpenAIError as exc:
                raise self._failed(exc) from exc
        if not response.choices:
            raise LLMError(f"model {self.model!r} at {self._endpoint.base_url} returned no choices")
        text = response.choices[0].message.content or ""
        usage = TokenUsage()
        if response.usage is not None:
            usage = TokenUsage(
                prompt_tokens=response.usage.prompt_tokens or 0,
                completion_tokens=response.usage.completion_tokens or 0,
                total_tokens=response.usage.total_tokens,
            )
        return LLMResponse(text, usage, response.model)

    def with_model(self, model: str) -> OpenAILLM:
        """A copy that asks ``model`` on the same endpoint, with the same key and settings.

        What a pattern's ``planning_model`` name becomes: the agent's own
        model server, another model for the planning calls. A client given
        to the constructor is shared (you still close it); otherwise the copy
        makes its own, closed by its own :meth:`aclose`.

        Example:
            >>> llm = OpenAILLM("small", base_url="http://127.0.0.1:9/v1", api_key="k")
            >>> big = llm.with_model("big")
            >>> big.model, big.base_url, llm.model
            ('big', 'http://127.0.0.1:9/v1', 'small')
        """
        copied = copy.copy(self)
        copied.model = model
        copied.extra_body = dict(self.extra_body)
        copied._settings = _ClientSettings(**self._settings)
        copied._owned = None
        return copied

    def _failed(self, exc: BaseException) -> LLMError:
        """One line naming the model, the endpoint and what the server said."""
        said = server_error(self._endpoint.base_url, exc)
        return LLMError(f"model {self.model!r} failed: {said}")

    async def aclose(self) -> None:
        """Close the client this object created (a client you passed in stays open)."""
        owned, self._owned = self._owned, None
        if owned is not None:
            await owned[1].close()

    async def __aenter__(self) -> OpenAILLM:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"OpenAILLM({self.model!r}, base_url={self.base_url!r})"


def planning_llm_for(llm: LLM | None, model: str) -> LLM:
    """The LLM a pattern's ``planning_model`` name means: ``llm``'s endpoint, ``model``.

    An :class:`OpenAILLM` (or any LLM with a ``with_model(name)`` method)
    gives its copy for ``model``; any other LLM cannot be told to use another
    model, so that is a :class:`~waygraph.errors.ConfigError`.
    """
    if getattr(llm, "model", None) == model:
        assert llm is not None
        return llm
    with_model = getattr(llm, "with_model", None)
    if with_model is None:
        raise ConfigError(
            f"planning_model={model!r} names a model on the agent's own endpoint, but the "
            f"agent's llm ({type(llm).__name__}) has no with_model(name) to switch models: "
            "use an OpenAILLM, or pass the planning LLM itself (PlanningAgent(planning_llm=...), "
            "Agent(planning_model=an LLM))"
        )
    derived: LLM = with_model(model)
    return derived


def _running_loop() -> Any:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


async def close_clients(*llms: LLM | None) -> None:
    """Release the HTTP clients of ``llms`` (each once; models without ``aclose`` are skipped)."""
    for llm in {id(llm): llm for llm in llms}.values():
        aclose = getattr(llm, "aclose", None)
        if aclose is not None:
            await aclose()
