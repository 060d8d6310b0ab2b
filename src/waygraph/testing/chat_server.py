"""A real local HTTP server that speaks the OpenAI chat-completions protocol.

Tests of anything that talks to a model (the planning agent, the OpenAI loop
helper, the eval harness) point a real client at this server and script the
replies, so the whole HTTP path is exercised without a network or a model.

Each ``POST /v1/chat/completions`` pops the next scripted reply. A reply is:

- a ``str``: the assistant message content;
- a ``dict`` with ``content`` and/or ``tool_calls`` (``[{"name", "arguments"}]``,
  arguments a dict or a JSON string, and an ``id`` when the script picks
  the call's id), optionally ``usage`` (a dict that
  replaces the counted usage) or ``status`` plus ``error`` (an HTTP error
  reply, e.g. a 400 for a server that rejects ``response_format``);
- a callable ``(request_json) -> reply`` for scripted policies.

``response_format`` is honoured by returning the scripted content as it is.
When the replies run out the server answers HTTP 500 with a JSON error (the
``openai`` client retries 5xx twice by default: pass ``max_retries=0`` to see
the error at once), unless ``loop=True`` starts the script over.

From a shell, ``python -m waygraph.testing.chat_server --script FILE`` serves
a script file (see :mod:`waygraph.testing.serve` and docs/offline.md) so
``waygraph plan``, ``waygraph eval`` and the OpenAI loop example run offline.

Example:
    >>> from openai import OpenAI
    >>> with ScriptedChatServer(["hello there"]) as server:
    ...     client = OpenAI(base_url=server.base_url, api_key="test")
    ...     reply = client.chat.completions.create(
    ...         model="scripted", messages=[{"role": "user", "content": "hi"}])
    >>> reply.choices[0].message.content, reply.usage.total_tokens
    ('hello there', 3)
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Reply", "ScriptedChatServer"]

#: What a scripted reply may be (see the module docstring).
Reply = str | dict[str, Any] | Callable[[dict[str, Any]], Any]


class ScriptedChatServer:
    """An OpenAI-compatible chat-completions server with scripted replies.

    Runs ``http.server.ThreadingHTTPServer`` on ``host`` (127.0.0.1) and
    ``port`` (0: one the OS picks) in a background thread while used as a
    context manager (or between :meth:`start` and :meth:`close`). Every request body is recorded in
    :attr:`requests`, in arrival order. ``context_tokens`` is the context size its
    ``/models`` states.

    Example:
        >>> with ScriptedChatServer([{"tool_calls": [{"name": "add",
        ...                                           "arguments": {"a": 1}}]}]) as s:
        ...     s.base_url.startswith("http://127.0.0.1:")
        True
    """

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        model: str = "scripted",
        host: str = "127.0.0.1",
        port: int = 0,
        loop: bool = False,
        context_tokens: int | None = None,
    ) -> None:
        #: The context size ``GET /models`` states (as vLLM's ``max_model_len``); None: none.
        self.context_tokens = context_tokens
        self._replies: deque[Reply] = deque(replies)
        self._script = tuple(self._replies) if loop else ()
        self.host = host
        self._port = port
        self._lock = threading.Lock()
        self._served = 0
        self.model = model
        #: Every request body received on the chat endpoint, parsed as JSON.
        self.requests: list[dict[str, Any]] = []
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ lifecycle

    def start(self) -> ScriptedChatServer:
        """Bind a free port and serve in a daemon thread; returns ``self``."""
        if self._httpd is not None:
            return self
        handler = type("_BoundHandler", (_Handler,), {"scripted": self})
        server_class = _IPv6Server if ":" in self.host else ThreadingHTTPServer
        self._httpd = server_class((self.host, self._port), handler)
        # Connections left open by a client must not keep the process alive.
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="ScriptedChatServer",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and release the port (safe to call twice)."""
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> ScriptedChatServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------ scripting

    @property
    def port(self) -> int:
        """The port the server listens on (it must be started)."""
        if self._httpd is None:
            raise RuntimeError("ScriptedChatServer is not running; use it in a `with` block")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The URL to give an OpenAI client, e.g. ``http://127.0.0.1:PORT/v1``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    @property
    def remaining(self) -> int:
        """How many scripted replies are left."""
        with self._lock:
            return len(self._replies)

    def push(self, *replies: Reply) -> None:
        """Append replies to the script (also while serving)."""
        with self._lock:
            self._replies.extend(replies)

    # ------------------------------------------------------------ serving

    def _next_reply(self, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """Record ``request`` and build the (HTTP status, JSON body) to send."""
        with self._lock:
            self.requests.append(request)
            self._served += 1
            number = self._served
            if not self._replies and self._script:
                self._replies.extend(self._script)  # loop=True: start the script over
            reply = self._replies.popleft() if self._replies else None
        if reply is None:
            return 500, _error(
                f"ScriptedChatServer: no scripted reply left for request #{number}; "
                "add more replies to the script",
                "server_error",
            )
        try:
            while callable(reply):
                reply = reply(request)
        except Exception as exc:  # a failing policy is reported like a server bug
            return 500, _error(f"scripted reply policy raised {exc!r}", "server_error")
        return _completion(reply, request, number, self.model)


class _IPv6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    scripted: ScriptedChatServer
    protocol_version = "HTTP/1.1"
    # One small reply per request: without TCP_NODELAY, Nagle plus delayed ACKs add ~40 ms.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        # Tests read requests from `.requests`; access logs would only be noise.
        return

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            model = {
                "id": self.scripted.model,
                "object": "model",
                "created": 0,
                "owned_by": "waygraph",
            }
            if self.scripted.context_tokens is not None:
                model["max_model_len"] = self.scripted.context_tokens
            self._send(200, {"object": "list", "data": [model]})
        else:
            self._send(404, _error(f"no route GET {self.path}", "not_found"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._send(404, _error(f"no route POST {self.path}", "not_found"))
            return
        try:
            request = json.loads(raw or b"{}")
        except ValueError as exc:
            self._send(400, _error(f"request body is not JSON: {exc}", "invalid_request_error"))
            return
        if request.get("stream"):
            self._send(
                400,
                _error(
                    "ScriptedChatServer does not stream; send stream=false", "invalid_request_error"
                ),
            )
            return
        status, body = self.scripted._next_reply(request)
        self._send(status, body)

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _words(value: Any) -> int:
    """Count whitespace-separated words in message content (text or parts)."""
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, list):
        return sum(_words(part.get("text", "")) for part in value if isinstance(part, dict))
    return 0


def _prompt_tokens(request: dict[str, Any]) -> int:
    return sum(
        _words(m.get("content")) for m in request.get("messages") or [] if isinstance(m, dict)
    )


def _completion(
    reply: Any, request: dict[str, Any], number: int, default_model: str
) -> tuple[int, dict[str, Any]]:
    if isinstance(reply, str):
        reply = {"content": reply}
    if not isinstance(reply, dict):
        return 500, _error(
            f"scripted reply #{number} must be a str, dict or callable, not {type(reply).__name__}",
            "server_error",
        )
    if "status" in reply or "error" in reply:
        status = int(reply.get("status", 400))
        return status, _error(str(reply.get("error", "scripted error")), "invalid_request_error")

    content = reply.get("content")
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    completion_words = _words(content)
    tool_calls = []
    for i, call in enumerate(reply.get("tool_calls") or []):
        arguments = call.get("arguments", {})
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        completion_words += _words(arguments)
        tool_calls.append(
            {
                "id": str(call.get("id") or f"call_{number}_{i}"),
                "type": "function",
                "function": {"name": call["name"], "arguments": arguments},
            }
        )
    if tool_calls:
        message["tool_calls"] = tool_calls
    prompt = _prompt_tokens(request)
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion_words,
        "total_tokens": prompt + completion_words,
    }
    if isinstance(reply.get("usage"), dict):
        usage = {**usage, **reply["usage"]}
    body = {
        "id": f"chatcmpl-scripted-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model") or default_model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
                "logprobs": None,
            }
        ],
        "usage": usage,
    }
    return 200, body


if __name__ == "__main__":
    from waygraph.testing.serve import main

    raise SystemExit(main())
