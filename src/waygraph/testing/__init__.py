"""Test doubles shipped with waygraph, for its own tests and for yours.

- :class:`ScriptedChatServer`: a real local HTTP server speaking the OpenAI
  chat-completions protocol with scripted replies; from a shell,
  ``python -m waygraph.testing.chat_server --script FILE`` (docs/offline.md).

Example:
    >>> from waygraph.testing import ScriptedChatServer
    >>> with ScriptedChatServer(['{"ok": true}']) as server:
    ...     server.remaining
    1
"""

from __future__ import annotations

from typing import Any

__all__ = ["Reply", "ScriptedChatServer"]


def __getattr__(name: str) -> Any:
    # Imported on first use, so `python -m waygraph.testing.chat_server` runs
    # that module once, as __main__, without runpy's double-import warning.
    if name in __all__:
        from waygraph.testing import chat_server

        return getattr(chat_server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
