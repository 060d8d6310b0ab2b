"""Asking a planning model for state machines and next actions (the planning LLM protocol).

The model is any :class:`waygraph.planning.LLM`. Replies are read with
:func:`waygraph.planning.extract_json` and checked like hand-written
machines (:func:`~waygraph.events.statemachine.validate_state_machine`);
problems go back to the model, and what still fails raises
:class:`waygraph.planning.InvalidPlanError`. Nothing the model writes is run
as code: conditions go through the predicate parser, data templates through
the safe formatter.

Example:
    >>> import asyncio
    >>> from waygraph.planning import LLMResponse
    >>> class Scripted:
    ...     async def complete(self, messages, *, json_schema=None, schema_name="reply"):
    ...         return LLMResponse('{"states": [{"state_name": "start", "default_next": "done"},'
    ...                            ' {"state_name": "done", "is_terminal": true}]}')
    >>> sm = asyncio.run(request_state_machine(Scripted(), "say hi", [], None))
    >>> list(sm), sm["done"].is_terminal
    (['start', 'done'], True)
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from waygraph.errors import ConfigError, PlanFormatError, StateMachineError
from waygraph.events.envelope import Envelope, new_event_id
from waygraph.events.statemachine import (
    StateAction,
    StateConfig,
    validate_state_machine,
)
from waygraph.planning import InvalidPlanError, PlanParseError, PlanProblem, extract_json

if TYPE_CHECKING:
    from waygraph.events.bus import Bus
    from waygraph.events.context import PlanContext
    from waygraph.planning import LLM

__all__ = [
    "choose_next_action",
    "goal_event",
    "planner_model",
    "request_state_machine",
    "state_machine_schema",
]

_MAX_SHOWN = 4000


def goal_event(bus: Bus, planner: str, goal: Envelope | str | Mapping[str, Any]) -> Envelope:
    """The goal :meth:`Planner.create_plan` plans for: an envelope as given; text or a
    dict as the data of a new ``<planner>.goal`` event with a fresh correlation id."""
    if isinstance(goal, Envelope):
        return goal
    data = {"goal": goal} if isinstance(goal, str) else dict(goal)
    return bus.envelope(f"{planner}.goal", data, correlation_id=new_event_id())


def planner_model(llm: LLM | None, planner: str) -> LLM:
    """The planner's model, or a ConfigError saying how to give it one."""
    if llm is None:
        raise ConfigError(
            f"planner {planner!r} has no model: pass llm=OpenAILLM(...) to Planner(...)"
        )
    return llm


_SYSTEM = """You design state machines for an event-driven planner.
A plan starts in the state named "start" (which usually has only default_next),
sends each state's action as a request event to an agent, and moves on when a
response event arrives: the state's transitions are tried in order, and the
first whose on_event matches and whose condition holds wins. default_next is
followed at once out of a state without an action, and out of a state with an
action when its response event arrives and no transition matched.
Conditions are expressions over the response event: data.count > 0,
data.status == 'ok' && results.searching.count >= 2 (operators == != > >= < <=
in contains, && || !). Action data may use templates like {goal_data.topic} or
{results.searching.hits}. Every plan needs terminal states (is_terminal: true,
with no action, transitions or default_next), named "done" for success and
"failed" for failure; every state must be reachable from "start", and every
other state needs a way out.
Only use request event types the agents offer; their response events are the
request type with ".requested" replaced by ".completed" (failures: ".failed")
unless the agent says otherwise.
Reply with one JSON object: {"states": [{"state_name": ..., "description": ...,
"action": {"event_type": ..., "response_event": ..., "data": {...}},
"transitions": [{"on_event": ..., "to_state": ..., "condition": ...}],
"default_next": ..., "is_terminal": false}, ...]}"""


def state_machine_schema() -> dict[str, Any]:
    """The JSON Schema of the reply :func:`request_state_machine` asks for."""
    state = StateConfig.model_json_schema()
    defs = state.pop("$defs", {})
    return {
        "type": "object",
        "properties": {"states": {"type": "array", "items": {"$ref": "#/$defs/StateConfig"}}},
        "required": ["states"],
        "$defs": {**defs, "StateConfig": state},
    }


def _agent_lines(agents: Sequence[Any]) -> tuple[list[dict[str, Any]], set[str]]:
    described: list[dict[str, Any]] = []
    offered: set[str] = set()
    for agent in agents:
        if isinstance(agent, str):
            entry: dict[str, Any] = {"name": agent}
        elif isinstance(agent, Mapping):
            entry = dict(agent)
        else:  # a Worker, or anything with a name and task types
            entry = {"name": getattr(agent, "name", repr(agent))}
            tasks = getattr(agent, "task_types", None)
            if tasks is not None:
                entry["tasks"] = list(tasks)
            if getattr(agent, "description", None):
                entry["description"] = agent.description
        offered.update(str(t) for t in entry.get("tasks") or ())
        described.append(entry)
    return described, offered


def _goal_text(goal: Envelope | str | Mapping[str, Any]) -> str:
    if isinstance(goal, Envelope):
        return json.dumps({"type": goal.type, "data": goal.data}, default=str)
    if isinstance(goal, Mapping):
        return json.dumps(dict(goal), default=str)
    return str(goal)


def _read_states(text: str, offered: set[str], name: str | None) -> dict[str, StateConfig]:
    data = extract_json(text)
    states = data.get("states") if isinstance(data, dict) else None
    if isinstance(states, list):
        mapping: dict[str, Any] = {}
        for i, state in enumerate(states):
            if not isinstance(state, dict) or not isinstance(state.get("state_name"), str):
                raise StateMachineError(f"states[{i}] needs a state_name", plan=name)
            if state["state_name"] in mapping:
                raise StateMachineError(
                    "two states have this name", plan=name, state=state["state_name"]
                )
            mapping[state["state_name"]] = state
        states = mapping
    if not isinstance(states, dict):
        raise StateMachineError('the reply needs "states": a list of states', plan=name)
    machine = validate_state_machine(states, name=name)
    if offered:
        for key, config in machine.states.items():
            if config.action and config.action.event_type not in offered:
                raise StateMachineError(
                    f"no agent offers {config.action.event_type!r}; "
                    f"offered: {', '.join(sorted(offered))}",
                    plan=name,
                    state=key,
                    field="action.event_type",
                )
    return machine.states


async def request_state_machine(
    llm: LLM,
    goal: Envelope | str | Mapping[str, Any],
    agents: Sequence[Any],
    context: str | Mapping[str, Any] | None,
    *,
    repair_attempts: int = 2,
    name: str | None = None,
) -> dict[str, StateConfig]:
    """A validated state machine for ``goal`` from ``llm`` (see :meth:`Planner.create_plan`)."""
    described, offered = _agent_lines(agents)
    user = f"Goal: {_goal_text(goal)}\n\nAgents:\n{json.dumps(described, indent=1, default=str)}"
    if context:
        shown = context if isinstance(context, str) else json.dumps(dict(context), default=str)
        user += f"\n\nContext:\n{shown}"
    messages: list[dict[str, str]] = [
        {"role": "system", "content": _SYSTEM},
        {"role": "user", "content": user},
    ]
    problems: list[PlanProblem] = []
    attempts = 1 + max(0, repair_attempts)
    for _ in range(attempts):
        reply = await llm.complete(
            messages, json_schema=state_machine_schema(), schema_name="state_machine"
        )
        try:
            return _read_states(reply.text, offered, name)
        except PlanParseError as exc:
            problems = [PlanProblem("not_json", str(exc))]
        except PlanFormatError as exc:
            problems = [PlanProblem("invalid_state_machine", str(exc), exc.node)]
        listed = "\n".join(f"- {p}" for p in problems)
        messages += [
            {"role": "assistant", "content": reply.text},
            {
                "role": "user",
                "content": f"That state machine cannot run:\n{listed}\n\n"
                "Reply with the corrected state machine as one JSON object.",
            },
        ]
    raise InvalidPlanError(problems, attempts=attempts)


_ACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "event_type": {"type": "string"},
        "data": {"type": "object"},
        "reason": {"type": "string"},
    },
    "required": ["event_type"],
}
_DONE_SCHEMA: dict[str, Any] = {
    **_ACTION_SCHEMA,
    "properties": {**_ACTION_SCHEMA["properties"], "event_type": {"type": ["string", "null"]}},
}


async def choose_next_action(
    llm: LLM,
    plan: PlanContext,
    options: Sequence[str | StateAction] | None,
    *,
    hint: str | None = None,
    repair_attempts: int = 1,
    event: Envelope | None = None,
    allow_done: bool = False,
) -> StateAction | None:
    """The model's choice of the next request (see :meth:`Planner.reason_next_action`).

    With ``allow_done`` the model may answer ``{"event_type": null}``: the
    goal is reached, and None is returned.
    """
    choices: dict[str, StateAction] = {}
    if options is None:
        options = [c.action for c in plan.state_machine.values() if c.action is not None]
    for option in options:
        action = option if isinstance(option, StateAction) else StateAction(event_type=option)
        choices.setdefault(action.event_type, action)
    if not choices:
        if allow_done:
            return None
        raise ValueError(f"plan {plan.plan_id!r}: there are no actions to choose from")
    shown_results = json.dumps(plan.results, default=str)
    if len(shown_results) > _MAX_SHOWN:
        shown_results = shown_results[: _MAX_SHOWN - 3] + "..."
    listed = "\n".join(
        f"- {a.event_type} (answered by {a.expected_response}; default data {json.dumps(a.data)})"
        for a in choices.values()
    )
    user = (
        f"Goal: {json.dumps(plan.goal_data, default=str)}\n"
        f"Current state: {plan.current_state}\nResults so far: {shown_results}\n"
    )
    if event is not None:
        shown_event = json.dumps({"type": event.type, "data": event.data}, default=str)
        user += f"Event just received: {shown_event[:_MAX_SHOWN]}\n"
    user += f"\nChoose the next request from:\n{listed}"
    done = ""
    if allow_done:
        done = ' When the goal is reached and nothing more is needed, reply {"event_type": null}.'
        user += '\n\nOr, if the goal is reached, reply {"event_type": null}.'
    if hint:
        user += f"\n\n{hint}"
    messages: list[dict[str, str]] = [
        {
            "role": "system",
            "content": "You pick the next request of a plan. Reply with one JSON object: "
            '{"event_type": "<one of the listed types>", "data": {...}, "reason": "..."}.' + done,
        },
        {"role": "user", "content": user},
    ]
    schema = _DONE_SCHEMA if allow_done else _ACTION_SCHEMA
    problem = ""
    attempts = 1 + max(0, repair_attempts)
    for _ in range(attempts):
        reply = await llm.complete(messages, json_schema=schema, schema_name="next_action")
        try:
            data = extract_json(reply.text)
        except PlanParseError as exc:
            data, problem = None, str(exc)
        if isinstance(data, dict):
            if allow_done and "event_type" in data and data["event_type"] is None:
                return None
            chosen = choices.get(str(data.get("event_type")))
            payload = data.get("data")
            if chosen is not None and (payload is None or isinstance(payload, dict)):
                return chosen.model_copy(update={"data": payload}) if payload else chosen
            problem = (
                f"{data.get('event_type')!r} is not one of {', '.join(choices)}"
                if chosen is None
                else "data must be a JSON object"
            )
        elif data is not None:
            problem = "the reply must be one JSON object"
        messages += [
            {"role": "assistant", "content": reply.text},
            {"role": "user", "content": f"{problem}. Reply again with one JSON object."},
        ]
    raise InvalidPlanError([PlanProblem("invalid_next_action", problem)], attempts=attempts)
