"""Keeping a request within the model's context.

A local server has a small context (4,096 tokens is common) and refuses a
request that does not fit: a run then dies at its tenth call with everything
it did lost. Before each request the conversation is measured and, when it
would not leave room for the reply, shortened in this order:

1. old tool outputs, oldest first, to their first and last lines;
2. the arguments of old tool calls (a whole file written) and old replies;
3. the reply's own ``max_tokens``, down to :data:`MIN_REPLY_TOKENS`;
4. whole old exchanges, oldest first.

Never shortened: the system prompt, the task (the first user message), the
guidance (system messages after the conversation) and the last result.

Tokens are estimated at :data:`CHARS_PER_TOKEN` characters each, on the low
side for code and logs, so the estimate errs towards fitting.

Example:
    >>> call = {"role": "assistant", "content": "", "tool_calls": []}
    >>> history = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"},
    ...            call, {"role": "tool", "tool_call_id": "a", "content": "x" * 9000},
    ...            call, {"role": "tool", "tool_call_id": "b", "content": "last"}]
    >>> fitted, reply = fit(history, limit=1000, reply_tokens=200)
    >>> estimate(fitted) + reply <= 1000, fitted[-1]["content"]
    (True, 'last')
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["CHARS_PER_TOKEN", "MIN_REPLY_TOKENS", "estimate", "fit"]

#: Characters per token in estimates (English prose is about 4; code and logs less).
CHARS_PER_TOKEN = 3
#: The smallest ``max_tokens`` fitting leaves a reply: room for one tool call.
MIN_REPLY_TOKENS = 256
# Per message: the role and the template's separators.
_OVERHEAD = 8
_CUT = "\n[… {n} characters cut to fit the model's context …]\n"


def estimate(messages: Sequence[Mapping[str, Any]], extra_chars: int = 0) -> int:
    """Tokens ``messages`` take, estimated (plus ``extra_chars``, e.g. the tool schemas).

    Example:
        >>> estimate([{"role": "user", "content": "x" * 300}])
        108
    """
    chars = extra_chars
    for message in messages:
        chars += len(str(message.get("content") or ""))
        for call in message.get("tool_calls") or ():
            chars += len(json.dumps(call))
    return chars // CHARS_PER_TOKEN + _OVERHEAD * len(messages)


def fit(
    messages: Sequence[Mapping[str, Any]],
    *,
    limit: int,
    reply_tokens: int,
    extra_chars: int = 0,
) -> tuple[list[dict[str, Any]], int]:
    """``messages`` shortened so they and a reply of ``reply_tokens`` fit ``limit`` tokens.

    Returns the messages (copies; the caller's history is untouched) and the
    reply's ``max_tokens`` to ask for. When nothing more may be shortened the
    result is as small as it gets, and the server has the last word.
    """
    out = [dict(m) for m in messages]

    def over() -> int:
        return estimate(out, extra_chars) + reply_tokens - limit

    if over() <= 0:
        return out, reply_tokens
    keep = _protected(out)
    old = [i for i in range(len(out)) if i not in keep]
    for size in (600, 120):
        for i in old:
            if out[i].get("role") == "tool" and over() > 0:
                out[i]["content"] = _shorten(str(out[i].get("content") or ""), size)
    for i in old:
        if out[i].get("role") == "assistant" and over() > 0:
            out[i] = _shorten_reply(out[i])
    if over() > 0:
        reply_tokens = max(MIN_REPLY_TOKENS, min(reply_tokens, reply_tokens - over()))
    while over() > 0:
        group = _oldest_exchange(out, _protected(out))
        if not group:
            break
        out = [m for i, m in enumerate(out) if i not in group]
    return out, reply_tokens


def _protected(messages: Sequence[Mapping[str, Any]]) -> set[int]:
    """The messages fitting never touches: system prompt, task, guidance, the last exchange."""
    keep: set[int] = set()
    roles = [m.get("role") for m in messages]
    if roles and roles[0] == "system":
        keep.add(0)
    if "user" in roles:
        keep.add(roles.index("user"))
    end = len(messages)
    while end > 0 and roles[end - 1] == "system":  # the guidance, sent after the history
        end -= 1
        keep.add(end)
    # The last result and the reply that asked for it (with all its calls' results).
    last = end - 1
    while last > 0 and roles[last] == "tool":
        keep.add(last)
        last -= 1
    if last >= 0:
        keep.add(last)
    return keep


def _oldest_exchange(messages: Sequence[Mapping[str, Any]], keep: set[int]) -> set[int]:
    """The oldest droppable assistant reply with its tool results (dropped together, since a
    result without its call is refused by servers)."""
    for i, message in enumerate(messages):
        if i in keep or message.get("role") != "assistant":
            continue
        group = {i}
        j = i + 1
        while j < len(messages) and messages[j].get("role") == "tool":
            if j in keep:
                return set()
            group.add(j)
            j += 1
        return group
    return set()


def _shorten(text: str, size: int) -> str:
    if len(text) <= size:
        return text
    half = size // 2
    return text[:half] + _CUT.format(n=len(text) - size) + text[-half:]


def _shorten_reply(message: dict[str, Any]) -> dict[str, Any]:
    """An old reply with its text and its calls' long arguments shortened (still JSON)."""
    out = dict(message, content=_shorten(str(message.get("content") or ""), 200))
    calls = []
    for call in message.get("tool_calls") or ():
        function = dict(call.get("function") or {})
        try:
            args = json.loads(function.get("arguments") or "{}")
        except ValueError:
            args = None
        if isinstance(args, dict):
            short = {k: _shorten(v, 200) if isinstance(v, str) else v for k, v in args.items()}
            function["arguments"] = json.dumps(short)
        else:
            function["arguments"] = _shorten(str(function.get("arguments") or ""), 200)
        calls.append(dict(call, function=function))
    if calls:
        out["tool_calls"] = calls
    return out
