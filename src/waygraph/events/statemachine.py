"""State machines: the DTOs, validation, compilation to the graph model, and routing.

A state machine is a dict of :class:`StateConfig` by state name. Each state
may send one :class:`StateAction` (a request to workers) when it is entered,
and leaves on events through its :class:`StateTransition` list, tried in
order: the first whose ``on_event`` matches and whose ``condition`` holds
wins. ``default_next`` is followed at once out of a state without an action,
and out of a state with one when its response event arrives and no
transition took it. Terminal states end the plan.

The start state is the one named ``start``, else the first one. Conditions
(``data.count > 0 && results.searching.count < 10``) are parsed by
:mod:`waygraph.predicates` into the shared predicate tree, never evaluated
as code.

Example:
    >>> sm = {
    ...     "start": StateConfig(state_name="start", default_next="work"),
    ...     "work": StateConfig(state_name="work",
    ...         action=StateAction(event_type="job.requested", response_event="job.completed"),
    ...         transitions=[StateTransition(on_event="job.completed", to_state="done")]),
    ...     "done": StateConfig(state_name="done", is_terminal=True)}
    >>> machine = validate_state_machine(sm, name="job")
    >>> plan = to_plan(machine, plan_id="job")
    >>> [(e.from_, e.to, e.on_event) for e in plan.graph.edges]
    [('start', 'work', None), ('work', 'done', 'job.completed')]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from waygraph.engine.events import follow_defaults, take_event
from waygraph.engine.templates import fill_template
from waygraph.errors import PlanFormatError, StateMachineError
from waygraph.model import Edge, Graph, Node, NodeType, Plan, Verify
from waygraph.predicates import evaluate_data, parse_condition

__all__ = [
    "StateAction",
    "StateConfig",
    "StateMachine",
    "StateTransition",
    "failure_event_for",
    "fill_template",
    "response_event_for",
    "state_machine_problems",
    "to_plan",
    "validate_state_machine",
]


class _Dto(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StateAction(_Dto):
    """The request a state sends when it is entered.

    ``data`` may hold templates such as ``"{goal_data.topic}"``, filled by
    :func:`fill_template` when the request is sent. Without a
    ``response_event`` the worker answers on the derived name (see
    :func:`response_event_for`).

    Example:
        >>> StateAction(event_type="web.search.requested").data
        {}
    """

    event_type: str = Field(min_length=1)
    response_event: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)

    @property
    def expected_response(self) -> str:
        """``response_event``, or the name derived from ``event_type``."""
        return self.response_event or response_event_for(self.event_type)


class StateTransition(_Dto):
    """Leave the state for ``to_state`` when ``on_event`` arrives and ``condition`` holds.

    Example:
        >>> t = StateTransition(on_event="web.search.completed", to_state="analyzing",
        ...                     condition="data.count > 0")
        >>> t.predicate.type, t.predicate.field
        ('compare', 'data.count')
    """

    on_event: str = Field(min_length=1)
    to_state: str = Field(min_length=1)
    condition: str | None = None

    @field_validator("condition")
    @classmethod
    def _parse(cls, value: str | None) -> str | None:
        if value is not None and value.strip():
            parse_condition(value)  # raises PlanFormatError naming the column
            return value
        return None

    @property
    def predicate(self) -> Verify | None:
        """The condition as the shared predicate tree (None: always true)."""
        return _parsed(self.condition) if self.condition else None


class StateConfig(_Dto):
    """One state of a state machine.

    Example:
        >>> StateConfig(state_name="done", is_terminal=True).transitions
        []
    """

    state_name: str = Field(min_length=1)
    description: str = ""
    action: StateAction | None = None
    transitions: list[StateTransition] = Field(default_factory=list)
    default_next: str | None = None
    is_terminal: bool = False


_CONDITIONS: dict[str, Verify] = {}


def _parsed(condition: str) -> Verify:
    # Conditions repeat across every plan of a machine: parse each text once.
    verify = _CONDITIONS.get(condition)
    if verify is None:
        if len(_CONDITIONS) > 4096:
            _CONDITIONS.clear()
        verify = _CONDITIONS[condition] = parse_condition(condition)
    return verify


def response_event_for(event_type: str) -> str:
    """The response event of a request that names none: ``x.requested`` -> ``x.completed``.

    Example:
        >>> response_event_for("web.search.requested"), response_event_for("summarize")
        ('web.search.completed', 'summarize.completed')
    """
    base = event_type.removesuffix(".requested")
    return f"{base}.completed"


def failure_event_for(event_type: str) -> str:
    """The event a worker sends when a task raises: ``x.requested`` -> ``x.failed``.

    Example:
        >>> failure_event_for("web.search.requested")
        'web.search.failed'
    """
    return f"{event_type.removesuffix('.requested')}.failed"


@dataclass(frozen=True, slots=True)
class _Route:
    """One out edge of a state, as :func:`to_plan` compiles it (an ``EventEdge``)."""

    on_event: str | None
    when: Verify | None
    to: str


def _state_edges(config: StateConfig) -> tuple[_Route, ...]:
    """The state's edges in :func:`to_plan`'s order: transitions, then ``default_next``."""
    routes = [_Route(t.on_event, t.predicate, t.to_state) for t in config.transitions]
    if config.default_next is not None:
        on_event = config.action.expected_response if config.action else None
        routes.append(_Route(on_event, None, config.default_next))
    return tuple(routes)


class StateMachine:
    """A validated state machine: its states in order, the start state and lookups.

    Build it with :func:`validate_state_machine`.
    """

    def __init__(self, states: dict[str, StateConfig], name: str | None) -> None:
        self.states = states
        self.name = name
        self.start = "start" if "start" in states else next(iter(states))
        self._edges: dict[str, tuple[_Route, ...]] = {}

    def __getitem__(self, state: str) -> StateConfig:
        return self.states[state]

    def __contains__(self, state: object) -> bool:
        return state in self.states

    def to_data(self) -> dict[str, Any]:
        """JSON-ready form, as stored in a plan context."""
        return {
            name: s.model_dump(mode="json", exclude_defaults=True)
            for name, s in self.states.items()
        }

    def next_state(self, state: str, event_type: str, scope: Mapping[str, Any]) -> str | None:
        """The state ``event_type`` moves ``state`` to, or None when nothing accepts it.

        ``scope`` is what conditions see: ``data`` (the event's data),
        ``results``, ``goal_data`` and ``event``.
        """
        # The engine's routing rule (one rule for every driver), over the state's
        # edges as to_plan compiles them but without building the whole plan:
        # a planner restores a machine for every event it handles.
        edges = self._edges.get(state)
        if edges is None:
            edges = self._edges[state] = _state_edges(self.states[state])
        return take_event(edges, event_type, lambda when: evaluate_data(when, scope))

    def follow_defaults(self, state: str) -> str:
        """Where entering ``state`` leads: along ``default_next`` out of action-less states."""
        return follow_defaults(self, state)


def validate_state_machine(
    states: Mapping[str, StateConfig | Mapping[str, Any]], *, name: str | None = None
) -> StateMachine:
    """Check a state machine and return it validated; raise StateMachineError otherwise.

    Refused: no states; a key that differs from its ``state_name``; a
    transition or ``default_next`` naming an unknown state; a bad condition;
    no terminal state; a terminal state with an action, transitions or
    ``default_next``; a non-terminal state with no way out; a state without
    an action that has both ``default_next`` and transitions (they would
    never be tried); a ``default_next`` loop through states without
    actions; a state that cannot be reached from the start state. The error names the state and
    the field.

    Example:
        >>> validate_state_machine({"start": {"state_name": "start", "default_next": "gone"},
        ...                         "end": {"state_name": "end", "is_terminal": True}})
        Traceback (most recent call last):
        ...
        waygraph.errors.StateMachineError: state 'start', field 'default_next': unknown \
target state 'gone'; states are: start, end (got 'gone')
    """
    if isinstance(states, StateMachine):
        return states
    machine, problems = state_machine_problems(states, name=name)
    if problems:
        raise problems[0][1]
    assert machine is not None
    return machine


def state_machine_problems(
    states: Mapping[str, StateConfig | Mapping[str, Any]], *, name: str | None = None
) -> tuple[StateMachine | None, list[tuple[str, StateMachineError]]]:
    """Every problem of a state machine, as ``(code, error)`` pairs, and the machine
    when it has none. :func:`validate_state_machine` raises the first;
    ``waygraph check`` reports them all (:func:`waygraph.check.check_state_machine`).

    Example:
        >>> _, found = state_machine_problems({"a": {"state_name": "a", "default_next": "x"}})
        >>> [code for code, _ in found]
        ['unknown-state', 'no-terminal-state']
    """
    problems: list[tuple[str, StateMachineError]] = []

    def problem(code: str, message: str, **where: Any) -> None:
        problems.append((code, StateMachineError(message, plan=name, **where)))

    if not isinstance(states, Mapping) or not states:
        problem("empty-state-machine", "a state machine is a non-empty dict of states")
        return None, problems
    parsed: dict[str, StateConfig] = {}
    for key, config in states.items():
        try:
            parsed[str(key)] = _config(key, config, name)
        except StateMachineError as exc:
            problems.append(("bad-state", exc))
    known = ", ".join(parsed)
    for key, config in parsed.items():
        if config.state_name != key:
            problem(
                "state-name-mismatch",
                f"the state is stored under {key!r} but its state_name differs",
                state=key,
                field="state_name",
                value=config.state_name,
            )
        targets = [
            (f"transitions[{i}].to_state", t.to_state) for i, t in enumerate(config.transitions)
        ]
        if config.default_next is not None:
            targets.append(("default_next", config.default_next))
        for field, target in targets:
            if target not in parsed:
                problem(
                    "unknown-state",
                    f"unknown target state {target!r}; states are: {known}",
                    state=key,
                    field=field,
                    value=target,
                )
        if config.is_terminal:
            for field, present in (
                ("action", config.action is not None),
                ("transitions", bool(config.transitions)),
                ("default_next", config.default_next is not None),
            ):
                if present:
                    problem(
                        "terminal-state-moves",
                        f"a terminal state ends the plan, so it cannot have {field}",
                        state=key,
                        field=field,
                    )
        elif not config.transitions and config.default_next is None:
            problem(
                "state-without-exit",
                "the state is not terminal but has no transitions and no default_next, "
                "so a plan entering it could never leave; add one or set is_terminal",
                state=key,
                field="transitions",
            )
        elif config.action is None and config.default_next is not None and config.transitions:
            problem(
                "default-next-hides-transitions",
                "a state without an action follows default_next at once, so its transitions "
                "would never be tried; drop default_next to wait for the events, or the "
                "transitions",
                state=key,
                field="default_next",
            )
    if parsed and not any(c.is_terminal for c in parsed.values()):
        problem(
            "no-terminal-state",
            "no terminal state: set is_terminal=True on the state(s) where plans end",
            field="is_terminal",
        )
    if problems:
        # Loops and reachability need every target to exist.
        return None, problems
    machine = StateMachine(parsed, name)
    try:
        _refuse_idle_loops(machine)
    except StateMachineError as exc:
        problems.append(("idle-loop", exc))
    reached = _reachable(machine)
    for key in parsed:
        if key not in reached:
            problem(
                "unreachable-state",
                f"unreachable: no transition or default_next leads here from {machine.start!r}",
                state=key,
            )
    return (None, problems) if problems else (machine, problems)


def _config(key: Any, config: Any, name: str | None) -> StateConfig:
    if isinstance(config, StateConfig):
        return config
    if not isinstance(config, Mapping):
        raise StateMachineError(
            f"a state is a StateConfig or a dict, not {type(config).__name__}",
            plan=name,
            state=str(key),
        )
    data = dict(config)
    data.setdefault("state_name", str(key))
    try:
        return StateConfig.model_validate(data)
    except PlanFormatError as exc:  # a condition that does not parse
        raise StateMachineError(exc.reason, plan=name, state=str(key), value=exc.value) from None
    except ValidationError as exc:
        error = exc.errors()[0]
        field = _field_path(error["loc"])
        reason = error["msg"]
        cause = error.get("ctx", {}).get("error")
        if isinstance(cause, PlanFormatError):
            reason = cause.reason
        raise StateMachineError(reason, plan=name, state=str(key), field=field) from None


def _field_path(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def _refuse_idle_loops(machine: StateMachine) -> None:
    """Refuse a default_next loop through states without actions: entering it never ends."""
    for key, config in machine.states.items():
        seen = [key]
        while config.action is None and not config.is_terminal and config.default_next:
            if config.default_next in seen:
                loop = " -> ".join([*seen[seen.index(config.default_next) :], config.default_next])
                raise StateMachineError(
                    f"default_next loops through states without actions ({loop}), "
                    "so entering it would never stop",
                    plan=machine.name,
                    state=key,
                    field="default_next",
                )
            seen.append(config.default_next)
            config = machine.states[config.default_next]


def _reachable(machine: StateMachine) -> set[str]:
    seen = {machine.start}
    todo = [machine.start]
    while todo:
        config = machine.states[todo.pop()]
        targets = [t.to_state for t in config.transitions]
        if config.default_next:
            targets.append(config.default_next)
        for target in targets:
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def to_plan(machine: StateMachine, *, plan_id: str, name: str = "") -> Plan:
    """The state machine as a :class:`waygraph.model.Plan`, to check, draw and store.

    States become nodes (the start state ``start``, terminal states ``exit``
    nodes, aborted when named ``failed``, the others ``task`` nodes whose
    ``action`` is the request's event type); transitions become edges with
    ``on_event`` and their condition as ``when``; ``default_next`` becomes an
    ``always`` edge (with ``on_event`` set to the response event when the
    state has an action). The action's response event and data are kept in
    the node's ``meta``.
    """
    nodes: dict[str, Node] = {}
    edges: list[Edge] = []
    for key, config in machine.states.items():
        meta: dict[str, Any] = {}
        if config.action is not None:
            meta = {
                "response_event": config.action.expected_response,
                "data": config.action.data,
            }
        node_type: NodeType
        if key == machine.start:
            node_type = "start"
        elif config.is_terminal:
            node_type = "exit"
        else:
            node_type = "task"
        nodes[key] = Node(
            id=key,
            type=node_type,
            name=key,
            description=config.description or None,
            action=config.action.event_type if config.action else None,
            status=("aborted" if key == "failed" else "completed") if config.is_terminal else None,
            meta=meta or None,
        )
        # The same edges, in the same order, as the planner routes over.
        edges.extend(
            Edge.model_validate(
                {
                    "from": key,
                    "to": r.to,
                    "on_event": r.on_event,
                    "when": r.when,
                    "label": r.on_event,
                }
            )
            for r in _state_edges(config)
        )
    return Plan(
        id=plan_id,
        name=name or plan_id,
        graph=Graph(start=machine.start, nodes=nodes, edges=tuple(edges)),
    )
