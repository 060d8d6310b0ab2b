"""The plan model: plans, graphs, nodes, edges and the predicate tree.

One model serves every format (JSON, YAML, DOT, the Python builder, linear
``steps``) and every driver. Models are immutable: build a new one with
``model_copy(update=...)`` instead of assigning.

Example:
    >>> from waygraph.model import Plan
    >>> plan = Plan.model_validate({
    ...     "id": "hello", "triggers": ["say hello"], "trigger_threshold": 1,
    ...     "steps": [{"name": "Greet", "action": "Print hello", "verify":
    ...                {"type": "output_contains", "value": "hello"}}]})
    >>> [n for n in plan.graph.nodes]
    ['start', 'step_1', 'done']
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from waygraph.ids import id_problem
from waygraph.model._status import FINISHED, NodeOutcome, NodeStatus, RunStatus, node_outcome
from waygraph.model.node_types import NODE_TYPE_SPECS, NodeTypeSpec
from waygraph.verify_types import BUILTIN_VERIFY_SPECS, VERIFY_TYPES, VerifySpec

__all__ = [
    "BUILTIN_VERIFY_TYPES",
    "CONDITIONS",
    "FINISHED",
    "NODE_TYPES",
    "NODE_TYPE_SPECS",
    "ON_FAIL_ACTIONS",
    "Condition",
    "Edge",
    "Graph",
    "Node",
    "NodeOutcome",
    "NodeStatus",
    "NodeType",
    "NodeTypeSpec",
    "OnFail",
    "Plan",
    "RunStatus",
    "Step",
    "Verify",
    "node_outcome",
    "register_verify_type",
]

NodeType = Literal["start", "task", "decision", "escalate", "exit", "checkpoint", "human"]
Condition = Literal["on_success", "on_fail", "on_retry", "on_exhaust", "always"]
OnFail = Literal["warn", "block", "skip", "abort"]
CompareOp = Literal["==", "!=", ">", ">=", "<", "<=", "in", "not in", "contains"]

#: Every node type; each is one row of :data:`NODE_TYPE_SPECS` (what it is, the
#: fields it uses, how drawings show it). ``NodeType`` spells the same names
#: for type checkers, and a test holds the two equal.
NODE_TYPES: tuple[str, ...] = tuple(NODE_TYPE_SPECS)
CONDITIONS: tuple[str, ...] = ("on_success", "on_fail", "on_retry", "on_exhaust", "always")
ON_FAIL_ACTIONS: tuple[str, ...] = ("warn", "block", "skip", "abort")

#: The verify types waygraph ships, each with what it passes on. Each is one
#: spec in :mod:`waygraph.verify_types`, whose registry (``VERIFY_TYPES``)
#: says which names plan files may use, built-in or registered.
BUILTIN_VERIFY_TYPES: dict[str, str] = {spec.name: spec.summary for spec in BUILTIN_VERIFY_SPECS}


def register_verify_type(name: str) -> None:
    """Allow ``name`` as a verify type in plan files, judged nowhere yet.

    Kept for programs that called it; :func:`waygraph.verify.register` adds a
    type with its judge and :meth:`VERIFY_TYPES.add <waygraph.verify_types.VerifyRegistry.add>`
    one with everything. A type added by name only fails every check until it
    has a judge.

    Example:
        >>> register_verify_type("output_is_yaml"); "output_is_yaml" in known_verify_types()
        True
        >>> VERIFY_TYPES.remove("output_is_yaml")
    """
    if name not in VERIFY_TYPES:
        VERIFY_TYPES.add(VerifySpec(name))


def known_verify_types() -> set[str]:
    """Every verify type name plan files may use now (built-in and registered)."""
    return set(VERIFY_TYPES.names())


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Verify(_Frozen):
    """A predicate: a node's verification, or a decision edge's ``when``.

    Plans may be written by a model, so a predicate is data, never code. Every
    string form (DOT conditions, ``data.count > 0``) parses into this tree.

    Example:
        >>> Verify(type="all", checks=(Verify(type="any_output"),
        ...        Verify(type="output_not_contains", value="error"))).type
        'all'
    """

    type: str
    value: Any = None
    checks: tuple[Verify, ...] | None = None
    field: str | None = None
    op: CompareOp | None = None
    flags: str | None = None
    #: ``command`` gates: the command waygraph runs, its time limit in
    #: seconds, and the check its output must pass (default exit_code_zero).
    run: str | None = None
    timeout: float | None = Field(default=None, gt=0)
    expect: Verify | None = None
    #: A regular expression the command that produced the evidence must
    #: match (searched in the command the host reports); evidence from any
    #: other command, or with no command reported, is unknown.
    command_matches: str | None = None
    #: The check in the author's words, shown to the model instead of the
    #: check's own terms (a regular expression means little to a small
    #: model); what is judged does not change.
    says: str | None = Field(default=None, min_length=1, max_length=300)

    @field_validator("type")
    @classmethod
    def _known_type(cls, v: str) -> str:
        if v not in VERIFY_TYPES:
            from waygraph.suggest import did_you_mean

            names = sorted(VERIFY_TYPES.names())
            known = ", ".join(names)
            hint = did_you_mean(v, names)
            hint = f"{hint} " if hint else ""
            raise ValueError(f"unknown verify type {v!r}; {hint}use one of: {known}")
        return v

    def walk(self) -> Iterator[Verify]:
        """Yield this predicate and every nested one, depth first."""
        yield self
        for child in self.checks or ():
            yield from child.walk()
        if self.expect is not None:
            yield from self.expect.walk()


class Node(_Frozen):
    """One node of a plan graph.

    ``tool`` is a hint for the model: the result of whichever tool ran is
    verified. ``max_retries`` is how many extra attempts a failing task gets;
    ``None`` means unbounded (linear warn/block steps hold until they pass).
    A ``human`` node is a question for a person: ``prompt`` is the question
    and the labels of its outgoing edges are the choices.
    """

    id: str = ""
    type: NodeType = "task"
    name: str = ""
    description: str | None = None
    action: str | None = None
    tool: str | None = None
    tool_hint: str | None = None
    prompt: str | None = None
    verify: Verify | None = None
    max_retries: int | None = Field(default=0, ge=0)
    join: Literal["any", "all"] = "any"
    reason: str | None = None
    pace_level: str | None = None
    status: Literal["completed", "aborted"] | None = None
    on_fail: OnFail | None = None
    required: bool | None = None
    #: Exit nodes: the plan the Navigator starts next in the same session when
    #: a run ends here (``next_plan_when``: ``completed``, the default, or ``always``).
    next_plan: str | None = None
    next_plan_when: Literal["completed", "always"] | None = None
    meta: dict[str, Any] | None = None
    # Attractor pipelines (docs/dot.md). ``handler`` is the handler type that
    # runs the node when waygraph executes the plan (``codergen``,
    # ``wait.human``, ``tool``, ``parallel``, ``parallel.fan_in``,
    # ``stack.manager_loop``, ``conditional`` or a registered custom type);
    # None means the node type's own. ``command`` is a tool node's
    # ``tool_command``; ``timeout`` is in seconds.
    handler: str | None = None
    command: str | None = None
    goal_gate: bool = False
    retry_target: str | None = None
    fallback_retry_target: str | None = None
    allow_partial: bool = False
    timeout: float | None = Field(default=None, gt=0)
    #: Every other attribute as the file wrote it (``llm_model``, ``class``,
    #: ``fidelity``, ``human.default_choice``, a custom handler's own ...),
    #: model-stylesheet values included.
    attrs: dict[str, str] | None = None

    @property
    def title(self) -> str:
        """``id — name`` as shown to the model (just the id when unnamed)."""
        return f"{self.id} — {self.name}" if self.name and self.name != self.id else self.id

    @property
    def question(self) -> str:
        """What a ``human`` node asks the person: its prompt, else its action, name or id."""
        return self.prompt or self.action or self.description or self.name or self.id

    @property
    def exit_status(self) -> str:
        """The run status an exit node ends with (``completed`` unless it says)."""
        return self.status or "completed"


class Edge(_Frozen):
    """A directed edge, followed when its ``condition`` matches the outcome.

    ``when`` routes out of decision nodes; ``on_event`` names the event type
    that moves event-driven runs; higher ``weight`` wins within a condition.
    """

    from_: str = Field(alias="from")
    to: str
    condition: Condition = "always"
    when: Verify | None = None
    on_event: str | None = None
    weight: float = 0
    label: str | None = None
    #: Attractor attributes as the file wrote them (``fidelity``,
    #: ``thread_id``, ``loop_restart``, and ``condition`` in the
    #: specification's own language, which executed pipelines route on).
    attrs: dict[str, str] | None = None

    def describe(self) -> str:
        """The edge in one line, e.g. ``a -> b (on_success)``."""
        return f"{self.from_} -> {self.to} ({self.condition})"


@dataclass(frozen=True, slots=True)
class GraphIndex:
    """Lookups the engine needs on every transition, computed once per graph."""

    out: dict[str, tuple[Edge, ...]]
    inc: dict[str, tuple[Edge, ...]]
    task_order: dict[str, int]


class Graph(_Frozen):
    """Nodes keyed by id, edges in definition order, and the start node id."""

    start: str = ""
    nodes: dict[str, Node] = Field(default_factory=dict)
    edges: tuple[Edge, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _ids_from_keys(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("nodes"), dict):
            nodes = {}
            for key, node in data["nodes"].items():
                if isinstance(key, str) and (problem := id_problem(key)) is not None:
                    raise ValueError(f"node id {key[:40]!r} {problem}")
                if isinstance(node, dict):
                    node_id = node.get("id", key)
                    if node_id != key:
                        raise ValueError(f"node key {key!r} and its id {node_id!r} differ")
                    node = {**node, "id": key}
                elif isinstance(node, Node) and node.id != key:
                    node = node.model_copy(update={"id": key})
                nodes[key] = node
            data = {**data, "nodes": nodes}
        return data

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Graph:
        """A copy with ``update`` applied, whose lookups are built afresh from its own edges."""
        copy = super().model_copy(update=update, deep=deep)
        # The cached adjacency is in __dict__, which the copy shares; without this
        # a copy with new edges would keep answering with the old ones.
        copy.__dict__.pop("index", None)
        return copy

    @cached_property
    def index(self) -> GraphIndex:
        """Adjacency built once per graph (graphs are immutable)."""
        out: dict[str, list[Edge]] = {}
        inc: dict[str, list[Edge]] = {}
        for edge in self.edges:
            out.setdefault(edge.from_, []).append(edge)
            inc.setdefault(edge.to, []).append(edge)
        tasks = [nid for nid, n in self.nodes.items() if n.type in ("task", "decision")]
        return GraphIndex(
            # Stable sort: higher weight first, then definition order.
            out={k: tuple(sorted(v, key=lambda e: -e.weight)) for k, v in out.items()},
            inc={k: tuple(v) for k, v in inc.items()},
            task_order={nid: i for i, nid in enumerate(tasks)},
        )

    def out_edges(self, node_id: str) -> tuple[Edge, ...]:
        """Edges leaving ``node_id``, highest weight first, then definition order."""
        return self.index.out.get(node_id, ())

    def in_edges(self, node_id: str) -> tuple[Edge, ...]:
        """The edges into ``node_id``, in plan order."""
        return self.index.inc.get(node_id, ())

    @property
    def task_order(self) -> dict[str, int]:
        """Task and decision node ids mapped to their 0-based order in the file."""
        return self.index.task_order

    @classmethod
    def builder(cls, start: str = "start") -> GraphBuilder:
        """Start building a graph in code.

        Example:
            >>> g = (Graph.builder()
            ...      .task("build", action="Run make", verify={"type": "exit_code_zero"},
            ...            max_retries=1)
            ...      .exit("done")
            ...      .escalate("stuck", reason="build keeps failing")
            ...      .edge("start", "build").edge("build", "done", "on_success")
            ...      .edge("build", "stuck", "on_exhaust")
            ...      .build())
            >>> sorted(g.nodes)
            ['build', 'done', 'start', 'stuck']
        """
        return GraphBuilder(start)


class GraphBuilder:
    """Fluent construction of a :class:`Graph`; ``build()`` validates the result."""

    def __init__(self, start: str = "start") -> None:
        self._start = start
        self._nodes: dict[str, dict[str, Any]] = {start: {"type": "start", "name": "Start"}}
        self._edges: list[dict[str, Any]] = []

    def node(self, node_id: str, type: str = "task", **fields: Any) -> GraphBuilder:
        self._nodes[node_id] = {"type": type, **fields}
        return self

    def task(self, node_id: str, **fields: Any) -> GraphBuilder:
        return self.node(node_id, "task", **fields)

    def decision(self, node_id: str, **fields: Any) -> GraphBuilder:
        return self.node(node_id, "decision", **fields)

    def human(self, node_id: str, **fields: Any) -> GraphBuilder:
        return self.node(node_id, "human", **fields)

    def checkpoint(self, node_id: str, **fields: Any) -> GraphBuilder:
        return self.node(node_id, "checkpoint", **fields)

    def escalate(self, node_id: str, **fields: Any) -> GraphBuilder:
        return self.node(node_id, "escalate", **fields)

    def exit(self, node_id: str, **fields: Any) -> GraphBuilder:
        return self.node(node_id, "exit", **fields)

    def edge(
        self, source: str, target: str, condition: str = "always", **fields: Any
    ) -> GraphBuilder:
        self._edges.append({"from": source, "to": target, "condition": condition, **fields})
        return self

    def chain(self, *node_ids: str, condition: str = "on_success") -> GraphBuilder:
        """Connect consecutive nodes with ``condition`` edges (``always`` out of start)."""
        for a, b in itertools.pairwise(node_ids):
            cond = "always" if self._nodes.get(a, {}).get("type") == "start" else condition
            self.edge(a, b, cond)
        return self

    def build(self) -> Graph:
        return Graph.model_validate(
            {"start": self._start, "nodes": self._nodes, "edges": self._edges}
        )

    def plan(self, plan_id: str, **fields: Any) -> Plan:
        """Wrap the graph in a :class:`Plan` (triggers, domains, ... as keywords)."""
        return Plan.model_validate({"id": plan_id, **fields, "graph": self.build()})


class Step(_Frozen):
    """One step of a linear plan (the ``steps`` shape of the established format)."""

    name: str = ""
    action: str | None = None
    tool: str | None = None
    tool_hint: str | None = None
    verify: Verify | None = None
    on_fail: OnFail = "warn"
    required: bool = True
    description: str | None = None


class Plan(_Frozen):
    """A plan: matching data plus the workflow graph.

    A plan given as linear ``steps`` compiles to a graph (``linear`` is then
    True and formats write it back as steps).
    """

    id: str
    name: str = ""
    description: str | None = None
    goal: str | None = None
    domains: tuple[str, ...] = ()
    triggers: tuple[str, ...] = ()
    #: Requests a user might type for this plan's job, in users' words; matching
    #: by meaning compares a message with each (waygraph.match.semantic), phrases ignore them.
    examples: tuple[str, ...] = ()
    trigger_threshold: int = 2
    stale_after_turns: int = Field(default=10, ge=1)
    match_mode: Literal["phrase", "substring"] | None = None
    max_transitions: int = Field(default=100, ge=1)
    #: The same failing call with the same output this many times in a row on
    #: one node counts as exhausted (0 turns the rule off).
    repeat_limit: int = Field(default=3, ge=0)
    graph: Graph
    linear: bool = False
    meta: dict[str, Any] | None = None
    #: Attractor graph attributes as the file wrote them (``model_stylesheet``,
    #: ``retry_target``, ``default_fidelity``, ``stack.child_dotfile`` ...).
    attrs: dict[str, str] | None = None
    #: How a guided run picks edges and handles failures. ``waygraph``: ties go
    #: to file order and a failed check is retried before its fail edge is
    #: taken. ``attractor`` (every DOT file unless it says ``routing=waygraph``):
    #: the specification's §3.3-3.7, as :mod:`waygraph.engine` documents them.
    routing: Literal["waygraph", "attractor"] = "waygraph"

    @field_validator("id")
    @classmethod
    def _valid_id(cls, v: str) -> str:
        problem = id_problem(v)
        if problem is not None:
            raise ValueError(f"the plan id {v[:40]!r} {problem}")
        return v

    @model_validator(mode="before")
    @classmethod
    def _compile_steps(cls, data: Any) -> Any:
        if isinstance(data, dict) and "steps" in data:
            from waygraph.model._linear import compile_steps

            if "graph" in data:
                raise ValueError("a plan has either 'steps' or 'graph', not both")
            data = dict(data)
            steps = data.pop("steps")
            data["graph"] = compile_steps(steps)
            data["linear"] = True
        return data

    @property
    def title(self) -> str:
        """The plan's name, or its id when it has none."""
        return self.name or self.id

    def steps(self) -> list[Step]:
        """The linear steps of a plan compiled from ``steps`` (see ``linear``)."""
        from waygraph.model._linear import graph_to_steps

        return graph_to_steps(self.graph)

    def task_nodes(self) -> list[Node]:
        """The nodes where work happens: task and decision nodes."""
        return [n for n in self.graph.nodes.values() if n.type in ("task", "decision")]
