"""Reading what the Agent-Zero hooks need, as plain data.

No Agent-Zero helper method is called: only attributes and dicts that both
layouts share, so the same code runs on 0.9.x and 1.x and against the small
stand-ins the tests use.

- the user's message: ``loop_data.user_message.content`` (a dict with
  ``user_message``, or a string), else the last user entry of
  ``loop_data.history_output``. Tool results are history entries too
  (``{"ai": False, "content": {"tool_name": ..., "tool_result": ...}}``, or
  the same dict as a JSON string once history compression has run) and are
  never taken for the user's message;
- the tool result: the ``tool_execute_after`` arguments ``tool_name`` and
  ``response.message``;
- a terminal command's exit status: the marker line the command printed
  last (:func:`exit_status`);
- the domain: ``agent._bst_store["__bst_belief_state__"]["domain"]`` when a
  belief-state tracker set it;
- the allow-list: ``agent.get_data("_org_htn_allowed_plans")`` when set;
- the session: the chat context and agent number.

Example:
    >>> result = '{"tool_name": "code_execution_tool", "tool_result": "ok"}'
    >>> history = [{"ai": False, "content": {"user_message": "fix the login bug"}},
    ...            {"ai": True, "content": "..."},
    ...            {"ai": False, "content": result}]
    >>> class LoopData:
    ...     user_message = None
    ...     history_output = history
    >>> user_message(LoopData())[0]
    'fix the login bug'
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

__all__ = [
    "ALLOWED_PLANS_KEY",
    "BELIEF_KEY",
    "BST_STORE_ATTR",
    "EXIT_MARKER",
    "allowed_plans",
    "belief_domain",
    "exit_status",
    "session_id",
    "tool_output",
    "user_message",
]

#: What a terminal command prints last (and is stripped again): its exit status.
EXIT_MARKER = "__waygraph_exit__"
_EXIT_LINE = re.compile(rf"{EXIT_MARKER}=(-?\d+)\s*$")

BST_STORE_ATTR = "_bst_store"
BELIEF_KEY = "__bst_belief_state__"
ALLOWED_PLANS_KEY = "_org_htn_allowed_plans"


def _as_dict(content: Any) -> dict[str, Any] | None:
    """``content`` as a dict: itself, or a JSON object string (compressed history)."""
    if isinstance(content, dict):
        return content
    if isinstance(content, str) and content.lstrip().startswith("{"):
        try:
            data = json.loads(content)
        except ValueError:
            return None
        return data if isinstance(data, dict) else None
    return None


def _user_text(content: Any) -> str | None:
    """The user's words in one message content, or None when it is not a user message."""
    data = _as_dict(content)
    if data is not None:
        value = data.get("user_message")
        return (value.strip() or None) if isinstance(value, str) else None
    if isinstance(content, str):
        return content.strip() or None
    return None


def user_message(loop_data: Any) -> tuple[str | None, Any]:
    """The user's message and a token that stays the same while it is the same message.

    The token is the ``loop_data.user_message`` object when there is one (the
    same object for the whole monologue, even after a restart of the loop),
    else the text found in the history.
    """
    if loop_data is None:
        return None, None
    message = getattr(loop_data, "user_message", None)
    if message is not None:
        content = message if isinstance(message, str | dict) else getattr(message, "content", None)
        text = _user_text(content)
        if text is not None:
            return text, message if not isinstance(message, str) else text
    history = getattr(loop_data, "history_output", None) or []
    for entry in reversed(list(history)):
        if not isinstance(entry, dict) or entry.get("ai", True):
            continue
        text = _user_text(entry.get("content"))
        if text is not None:
            return text, text
    return None, None


def tool_output(response: Any) -> str | None:
    """The text of a tool response (``response.message``), or None when there is none."""
    message = response.get("message") if isinstance(response, dict) else None
    if message is None and not isinstance(response, dict):
        message = getattr(response, "message", None)
    if message is None:
        return None
    if isinstance(message, str):
        return message
    return json.dumps(message, ensure_ascii=False, default=str)


def exit_status(output: str) -> tuple[str, int | None]:
    """A terminal output without its status marker lines, and the status they printed.

    Every line that mentions the marker goes (a terminal echoes the typed
    command too); the last line that is the marker and a number gives the
    status (None when none does).

    Example:
        >>> exit_status(f"1 failed\\n{EXIT_MARKER}=1")
        ('1 failed', 1)
    """
    lines = output.split("\n")
    kept = "\n".join([line for line in lines if EXIT_MARKER not in line])
    for line in reversed(lines):
        found = _EXIT_LINE.match(line) if EXIT_MARKER in line else None
        if found is not None:
            return kept, int(found.group(1))
    return kept, None


def belief_domain(agent: Any) -> str | None:
    """The domain a belief-state tracker classified the conversation as, or None."""
    store = getattr(agent, BST_STORE_ATTR, None)
    belief = store.get(BELIEF_KEY) if isinstance(store, dict) else None
    domain = belief.get("domain") if isinstance(belief, dict) else None
    return (domain.strip() or None) if isinstance(domain, str) else None


def allowed_plans(agent: Any) -> list[str] | None:
    """The plan ids an organisation kernel allows, or None when nothing restricts them."""
    get_data = getattr(agent, "get_data", None)
    if not callable(get_data):
        return None
    value = get_data(ALLOWED_PLANS_KEY)
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict | Iterable):
        return [str(v) for v in value]
    return None


def session_id(agent: Any) -> str:
    """The store session of one agent in one chat: its context id and agent number."""
    context = getattr(agent, "context", None)
    context_id = getattr(context, "id", None) or "default"
    return f"agent-zero:{context_id}:{getattr(agent, 'number', 0)}"
