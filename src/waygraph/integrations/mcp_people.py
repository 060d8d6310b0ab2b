"""Asking a person through the MCP client: elicitation at ``human`` nodes and ``manual`` checks.

A run that reaches a step a person decides (a turn's events hold
``human_asked``) waits for them (``awaiting: "user"``). The model must not
answer, and no tool of ``waygraph mcp`` takes an answer. When the client
offers elicitation (its ``elicitation`` capability), :func:`settle` asks the
person itself, inside the tool call that reached the step: the question, with
the choices as an enum at a human node, or a text field at a manual check.
Their answer goes to :meth:`Navigator.answer <waygraph.navigator.Navigator.answer>`
with ``by="mcp-elicitation"``; a plan that asks again right after is asked
again (up to :data:`MAX_QUESTIONS` in one call). When the client offers no
elicitation, or the person declines or cancels, the tool result carries
``ask_user`` (:func:`ask_user`): the model asks the user in chat and waits;
their reply comes back as the user's message.

Example:
    >>> request({"node": "ok", "question": "Ship it?", "choices": ["Yes", "No"],
    ...          "value": None})[1]["properties"]["choice"]["enum"]
    ['Yes', 'No']
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from waygraph.describe import waiting_for as describe_waiting
from waygraph.errors import WaygraphError
from waygraph.navigator import Guidance, Navigator
from waygraph.verify_types.people import MAX_ANSWER_CHARS, choices_text

__all__ = [
    "BY",
    "MAX_QUESTIONS",
    "Settled",
    "ask_user",
    "offers_elicitation",
    "request",
    "settle",
    "waiting_for",
]

log = logging.getLogger("waygraph.mcp")

#: Who answered, on the ``human_answered`` event of an answer given through elicitation.
BY = "mcp-elicitation"
#: Questions asked in one tool call; a plan asking more leaves the rest to the chat.
MAX_QUESTIONS = 8


@dataclass(slots=True)
class Settled:
    """What a tool call that may have reached a person's step returns.

    ``guidance``: the last guidance (after the person's answers, if any);
    ``events``: every event of the call, in order; ``elicited``: per question
    asked through the client, its node, the person's action (``accept``,
    ``decline``, ``cancel``, ``error``) and answer; ``ask_user``: what the
    model must ask the user in chat (None when nobody needs asking).

    Example:
        >>> Settled(Guidance(text="Plan: X")).ask_user is None
        True
    """

    guidance: Guidance
    events: list[dict[str, Any]] = field(default_factory=list)
    elicited: list[dict[str, Any]] = field(default_factory=list)
    ask_user: dict[str, Any] | None = None


def waiting_for(nav: Navigator, record: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The person's step the run waits at: node, question, choices, manual value (else None).

    None also when the run waits on the model's own question: the model
    asked already and waits for the user's reply.

    Example:
        >>> from waygraph.library import Library
        >>> from waygraph.model import Graph
        >>> plan = (Graph.builder().human("ok", prompt="Ship it?").exit("done")
        ...         .edge("start", "ok").edge("ok", "done", label="Yes").plan("p"))
        >>> nav = Navigator(Library([plan]), store="memory://")
        >>> waiting_for(nav, nav.start("s", "p").run)
        {'node': 'ok', 'question': 'Ship it?', 'choices': ['Yes'], 'value': None}
    """
    if not record or record.get("status") != "running" or record.get("awaiting") != "user":
        return None
    # One reading of what a waiting run asks, the dashboard's and the CLI's:
    # the human_asked event the engine recorded for the current node.
    session = record.get("session_id")
    events = nav.events(str(session)) if isinstance(session, str) else record.get("events") or []
    asked = describe_waiting(record, events)
    if asked is None or asked["kind"] == "question":
        return None
    return {
        "node": asked["node"],
        "question": asked["prompt"],
        "choices": asked["choices"],
        "value": asked["value"],
    }


def ask_user(waiting: Mapping[str, Any]) -> dict[str, Any]:
    """``waiting`` (from :func:`waiting_for`) with the model's instruction: ask in chat, wait.

    Example:
        >>> note = ask_user({"node": "ok", "question": "Ship it?", "choices": ["Yes", "No"],
        ...                  "value": None})
        >>> note["instruction"][:53]
        "Ask the user in chat: Ship it? (answer 'Yes' or 'No')"
    """
    labels = list(waiting.get("choices") or [])
    question, value = waiting.get("question"), waiting.get("value")
    if labels:
        give = f"Ask the user in chat: {question} (answer {choices_text(labels)})."
    elif value:
        give = (
            f"Ask the user in chat to confirm this step: {question} "
            f"(they reply {str(value)!r} if they approve)."
        )
    else:
        give = f"Ask the user in chat to confirm this step: {question}."
    instruction = (
        f"{give} Then stop and wait for their reply, and report it word for word with "
        "user_message. Only the person answers: your own words and tool output never do."
    )
    return {**waiting, "instruction": instruction}


def request(waiting: Mapping[str, Any]) -> tuple[str, dict[str, Any], str]:
    """The elicitation for ``waiting``: (message, requested schema, the field the answer is in).

    Example:
        >>> message, schema, name = request({"node": "ship", "question": "Ship the build",
        ...                                  "choices": [], "value": "CONFIRMED"})
        >>> name, schema["properties"][name]["type"]
        ('answer', 'string')
    """
    labels = [str(label) for label in waiting.get("choices") or []]
    question = str(waiting.get("question") or waiting.get("node"))
    if labels:
        name = "choice"
        prop: dict[str, Any] = {
            "type": "string",
            "title": "Your choice",
            "description": question,
            "enum": labels,
        }
        message = f"{question}\nChoose {choices_text(labels)}."
    else:
        name = "answer"
        value = waiting.get("value")
        how = f"Type {value} to confirm" if value else "Your confirmation"
        prop = {"type": "string", "title": "Your answer", "description": how}
        message = f"A person must confirm this step: {question}\n{how}, or decline."
    schema = {"type": "object", "properties": {name: prop}, "required": [name]}
    return message, schema, name


def offers_elicitation(ctx: Any) -> bool:
    """Whether the client of this tool call declared form elicitation and can be asked now.

    Example:
        >>> offers_elicitation(None)  # no request context: nobody to ask
        False
    """
    try:
        session = ctx.session
    except Exception:  # outside a request, or a Context of another mcp version
        return False
    caps = getattr(session, "client_capabilities", None)  # mcp 2
    if caps is None:
        params = getattr(session, "client_params", None)  # mcp 1
        caps = getattr(params, "capabilities", None)
    elicitation = getattr(caps, "elicitation", None)
    if elicitation is None:
        return False
    if getattr(elicitation, "form", None) is None and getattr(elicitation, "url", None):
        return False  # URL mode only: no form to answer in
    return bool(getattr(session, "can_send_request", True))


def _asked(nav: Navigator, guidance: Guidance) -> dict[str, Any] | None:
    """The person's step this guidance's turn just reached (its events hold ``human_asked``)."""
    if not any(e.get("type") == "human_asked" for e in guidance.events):
        return None
    return waiting_for(nav, guidance.run)


async def _elicit(ctx: Any, waiting: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """Ask the person; (what happened, their answer or None). Never raises."""
    message, schema, name = request(waiting)
    outcome: dict[str, Any] = {"node": waiting.get("node")}
    try:
        # Positional: mcp 1 names the schema requestedSchema, mcp 2 requested_schema.
        result = await ctx.session.elicit(message, schema, ctx.request_id)
    except Exception as exc:
        log.warning("waygraph mcp: asking the person failed: %s", exc)
        outcome.update(action="error", error=f"{type(exc).__name__}: {exc}")
        return outcome, None
    action = str(getattr(result, "action", "cancel"))
    outcome["action"] = action
    content = getattr(result, "content", None)
    said = content.get(name) if action == "accept" and isinstance(content, Mapping) else None
    if isinstance(said, bool | int | float):
        said = str(said)
    if not isinstance(said, str) or not said.strip():
        if action == "accept":
            outcome.update(action="error", error=f"the form came back without {name!r}")
        return outcome, None
    answer = said[:MAX_ANSWER_CHARS]
    outcome["answer"] = answer
    return outcome, answer


async def settle(ctx: Any, nav: Navigator, session_id: str, guidance: Guidance) -> Settled:
    """After a turn: ask the person through the client when it reached their step.

    Returns the guidance after their answers, every event, what was asked,
    and what the model must still ask the user in chat (``ask_user``).

    Example (no client to ask through: the model is told to ask in chat):
        >>> import asyncio
        >>> from waygraph.library import Library
        >>> from waygraph.model import Graph
        >>> plan = (Graph.builder().human("ok", prompt="Ship it?").exit("done")
        ...         .edge("start", "ok").edge("ok", "done", label="Yes").plan("p"))
        >>> nav = Navigator(Library([plan]), store="memory://")
        >>> done = asyncio.run(settle(None, nav, "s", nav.start("s", "p")))
        >>> done.elicited, done.ask_user["choices"]
        ([], ['Yes'])
    """
    done = Settled(guidance, [dict(e) for e in guidance.events])
    asking = offers_elicitation(ctx)
    for _ in range(MAX_QUESTIONS):
        waiting = _asked(nav, done.guidance) if asking else None
        if waiting is None:
            break
        outcome, answer = await _elicit(ctx, waiting)
        done.elicited.append(outcome)
        if answer is None:
            break
        try:
            answered = nav.answer(session_id, answer, by=BY)
        except WaygraphError as exc:  # the run moved on meanwhile (another client, a reset)
            outcome["error"] = str(exc)
            break
        if answered.error:
            outcome["error"] = answered.error
        done.guidance = answered
        done.events.extend(dict(e) for e in answered.events)
    waiting = waiting_for(nav, done.guidance.run)
    done.ask_user = ask_user(waiting) if waiting is not None else None
    return done
