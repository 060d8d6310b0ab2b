"""What the real-model tests check in waygraph's records: every verdict backed by evidence.

A step may pass only on a tool call that ran: never on the model's words (a
verification whose tool is no tool), never on a call that was refused and
answered "nothing ran" (arguments cut mid-JSON, an unknown tool) or that the
tool itself refused (a path outside the workspace: nothing was written), never
on an empty command. The run record keeps, per node, every call tried with its
verdict (``visited[node]["tried"]``), and the store keeps each
``node_verified`` event with the tool whose result it judged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from waygraph.guided.turns import call_digest

#: Words of the answers waygraph's loops give a call that ran nothing: one they could
#: not run, and one their tools refused (a path or command outside the workspace).
REFUSALS = (
    "nothing ran",
    "bad arguments",
    "arguments are not JSON",
    "arguments must be a JSON object",
    "unknown tool",
    "is outside the workspace",
    "leaves the workspace",
)
#: What a traceback of a Python process starts with.
TRACEBACK = "Traceback (most recent call last)"


def no_traceback(*texts: str) -> None:
    """Fail with the traceback when any of ``texts`` holds one."""
    for text in texts:
        at = text.find(TRACEBACK)
        assert at < 0, f"a Python traceback:\n{text[at : at + 6000]}"


def unbacked(
    record: Mapping[str, Any],
    events: Iterable[Mapping[str, Any]],
    tools: Sequence[str],
    shell_tool: str,
) -> list[str]:
    """Every passing verdict of one run that no tool call in ``tools`` backs, as a sentence."""
    problems: list[str] = []
    for event in events:
        # A task's verification names its check and the tool judged; a decision
        # routing on an earlier result names neither and judges no new output.
        if event.get("type") != "node_verified" or "check" not in event:
            continue
        if not event.get("passed"):
            continue
        where = f"{event.get('node')} (turn {event.get('turn')})"
        if event.get("tool") not in tools:
            problems.append(f"{where} passed on {event.get('tool')!r}, which is no tool call")
        output = str(event.get("output") or "")
        if any(word in output for word in REFUSALS):
            problems.append(f"{where} passed on a call that ran nothing: {output[:200]!r}")
    for node, state in (record.get("visited") or {}).items():
        for tried in state.get("tried") or ():
            if tried.get("verdict") != "success":
                continue
            call = str(tried.get("call") or "")
            if tried.get("tool") not in tools:
                problems.append(f"{node} passed on {tried.get('tool')!r}: {call[:100]!r}")
            if tried.get("tool") == shell_tool and not call.strip():
                problems.append(f"{node} passed on an empty command")
            output = str(tried.get("output") or "")
            if any(word in output for word in REFUSALS):
                problems.append(f"{node} passed on a call that ran nothing: {output[:200]!r}")
    return problems


def not_run(record: Mapping[str, Any], calls: Sequence[Mapping[str, Any]]) -> list[str]:
    """Passing calls of ``record`` that match no call of ``calls`` that ran (exit code set).

    ``calls`` are the loop's own log lines: tool, arguments (JSON text),
    output and exit code (None: refused, nothing ran).
    """
    ran: set[tuple[str, str | None]] = set()
    for call in calls:
        if call.get("exit_code") is None:
            continue
        try:
            args = json.loads(call.get("arguments") or "{}")
        except ValueError:
            continue
        ran.add((str(call.get("tool")), call_digest(args)))
    problems = []
    for node, state in (record.get("visited") or {}).items():
        for tried in state.get("tried") or ():
            if tried.get("verdict") != "success":
                continue
            key = (str(tried.get("tool")), tried.get("call"))
            if key not in ran:
                problems.append(f"{node} passed on {key}, a call that never ran")
    return problems


_PANEL = re.compile(r"turn (\d+) · ")


def demo_tool_turns(stdout: str) -> int:
    """How many tool calls the demo ran, counted from its 'turn N · node' panels."""
    return len(set(_PANEL.findall(stdout)))


#: How waygraph's chat client words a server's failure (waygraph.chat.server_error).
SERVER_FAILURES = ("the model server at ", "cannot reach the model server at ")


def server_side(error: str) -> bool:
    """True when a run's ``error`` is the model server's doing, not an exception of waygraph's.

    Either waygraph's own line about the server, or an ``openai`` error by its
    class name (``APITimeoutError: ...``).

    Example:
        >>> server_side("the model server at http://127.0.0.1:1/v1 did not answer in time")
        True
        >>> server_side("APITimeoutError: Request timed out."), server_side("KeyError: 'x'")
        (True, False)
    """
    import openai

    if error.startswith(SERVER_FAILURES):
        return True
    name = error.split(":", 1)[0].strip()
    kind = getattr(openai, name, None)
    return name == "LLMError" or (isinstance(kind, type) and issubclass(kind, openai.OpenAIError))


def tokens_per_second(records: Iterable[Mapping[str, Any]]) -> float:
    """Tokens the server reported (prompt and completion) per second of the runs' wall time."""
    rows = list(records)
    seconds = sum(float(r.get("wall_time") or 0) for r in rows)
    tokens = sum(int(r.get("tokens") or 0) for r in rows)
    return tokens / seconds if seconds else 0.0
