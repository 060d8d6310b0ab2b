"""Test doubles shipped with waygraph, for its own tests and for yours.

- :class:`ScriptedChatServer`: a real local HTTP server speaking the OpenAI
  chat-completions protocol with scripted replies.

Example:
    >>> from waygraph.testing import ScriptedChatServer
    >>> with ScriptedChatServer(['{"ok": true}']) as server:
    ...     server.remaining
    1
"""

from waygraph.testing.chat_server import Reply, ScriptedChatServer

__all__ = ["Reply", "ScriptedChatServer"]
