"""What a DOT plan may say: node shapes, handler types and the attribute names of graphs,
nodes and edges, waygraph's own and the Attractor specification's (Appendix A).

The reader (:mod:`waygraph.formats._dot_reader`) types each name it knows,
ignores Graphviz's layout and styling, and keeps any other attribute as
written (a custom handler may read it) with a warning; the writer writes node
types as these shapes. ``docs/dot.md`` documents each name.
"""

from __future__ import annotations

from waygraph.model.node_types import NODE_TYPE_SPECS

#: Node type read for each shape (shape names are matched case-insensitively);
#: the Attractor handler a shape names, when it is not the type's own, is in
#: :data:`HANDLER_OF_SHAPE`.
TYPE_OF_SHAPE: dict[str, str] = {
    "mdiamond": "start",
    "msquare": "exit",
    "box": "task",
    "rect": "task",
    "rectangle": "task",
    "diamond": "decision",
    "octagon": "escalate",
    "cylinder": "checkpoint",
    # Attractor's human gate.
    "hexagon": "human",
    # Attractor's tool, fan-out, fan-in and supervisor nodes: work a person or
    # waygraph's runner does, so a task whose handler says which.
    "parallelogram": "task",
    "component": "task",
    "tripleoctagon": "task",
    "house": "task",
}
#: Attractor handler types named by a shape (§2.8) beyond the node type's own.
HANDLER_OF_SHAPE: dict[str, str] = {
    "parallelogram": "tool",
    "component": "parallel",
    "tripleoctagon": "parallel.fan_in",
    "house": "stack.manager_loop",
}
#: Shape written for each node type (its row of the node type table).
SHAPE_OF_TYPE: dict[str, str] = {name: spec.dot_shape for name, spec in NODE_TYPE_SPECS.items()}
#: Shape written for each Attractor handler beyond the node type's own.
SHAPE_OF_HANDLER: dict[str, str] = {h: s for s, h in HANDLER_OF_SHAPE.items()} | {
    "parallel": "component",
    "parallel.fan_in": "tripleoctagon",
    "stack.manager_loop": "house",
}
#: The node type of each Attractor handler name given as ``type=`` (§4.2);
#: a name not here is a custom handler on a task node.
TYPE_OF_HANDLER: dict[str, str] = {
    "start": "start",
    "exit": "exit",
    "codergen": "task",
    "wait.human": "human",
    "conditional": "decision",
    "tool": "task",
    "parallel": "task",
    "parallel.fan_in": "task",
    "stack.manager_loop": "task",
}
#: Handler names that are simply a node type's own (not kept as ``handler``).
OWN_HANDLERS = frozenset({"start", "exit", "codergen", "wait.human", "conditional"})

NODE_ATTRIBUTES: tuple[str, ...] = (
    "shape",
    "type",
    "label",
    "prompt",
    "action",
    "tool",
    "tool_hint",
    "description",
    "verify",
    "max_retries",
    "join",
    "on_fail",
    "required",
    "reason",
    "pace_level",
    "status",
    "next_plan",
    "next_plan_when",
    "meta",
    # Attractor (Appendix A) attributes with a field of their own.
    "tool_command",
    "goal_gate",
    "retry_target",
    "fallback_retry_target",
    "allow_partial",
    "timeout",
)
#: Attractor node attributes kept as written in ``Node.attrs`` (typed where the
#: specification gives a type: see :data:`BOOLEAN_ATTRIBUTES`).
ATTRACTOR_NODE_ATTRIBUTES: tuple[str, ...] = (
    "class",
    "fidelity",
    "thread_id",
    "llm_model",
    "llm_provider",
    "reasoning_effort",
    "auto_status",
    "human.default_choice",
    "join_policy",
    "max_parallel",
    "manager.poll_interval",
    "manager.max_cycles",
    "manager.stop_condition",
    "manager.actions",
    "stack.child_autostart",
    "tool_hooks.pre",
    "tool_hooks.post",
)
EDGE_ATTRIBUTES: tuple[str, ...] = ("condition", "when", "on_event", "label", "weight")
ATTRACTOR_EDGE_ATTRIBUTES: tuple[str, ...] = ("fidelity", "thread_id", "loop_restart")
GRAPH_ATTRIBUTES: tuple[str, ...] = (
    "id",
    "name",
    "label",
    "goal",
    "description",
    "domains",
    "triggers",
    "examples",
    "trigger_threshold",
    "stale_after_turns",
    "match_mode",
    "max_transitions",
    "repeat_limit",
    "linear",
    "start",
    "default_max_retry",
    "default_max_retries",
    "meta",
    "routing",
)
ATTRACTOR_GRAPH_ATTRIBUTES: tuple[str, ...] = (
    "model_stylesheet",
    "default_fidelity",
    "retry_target",
    "fallback_retry_target",
    "max_goal_gate_redirects",
    "stack.child_dotfile",
    "stack.child_workdir",
    "tool_hooks.pre",
    "tool_hooks.post",
)
#: Attractor attributes read as booleans (kept as ``true``/``false`` text in attrs).
BOOLEAN_ATTRIBUTES = frozenset({"auto_status", "loop_restart", "stack.child_autostart"})
#: Attractor attributes read as whole numbers.
INTEGER_ATTRIBUTES = frozenset({"max_parallel", "manager.max_cycles", "max_goal_gate_redirects"})
#: Attractor attributes read as durations (``900s``, ``15m``, ``250ms``, a bare number of seconds).
DURATION_ATTRIBUTES = frozenset({"manager.poll_interval"})
#: The values the specification allows for ``fidelity`` and ``reasoning_effort``.
FIDELITY_MODES = ("full", "truncate", "compact", "summary:low", "summary:medium", "summary:high")
REASONING_EFFORTS = ("low", "medium", "high")

#: Graphviz's own layout and styling attributes: accepted on a graph, node or
#: edge and ignored (they change the picture, never the run).
GRAPHVIZ_ATTRIBUTES = frozenset(
    {
        "rankdir",
        "rank",
        "ranksep",
        "nodesep",
        "splines",
        "bgcolor",
        "color",
        "fillcolor",
        "fontcolor",
        "fontname",
        "fontsize",
        "style",
        "penwidth",
        "width",
        "height",
        "fixedsize",
        "margin",
        "pad",
        "size",
        "ratio",
        "compound",
        "concentrate",
        "labelloc",
        "labeljust",
        "arrowhead",
        "arrowtail",
        "arrowsize",
        "dir",
        "constraint",
        "minlen",
        "headport",
        "tailport",
        "peripheries",
        "sides",
        "skew",
        "distortion",
        "orientation",
        "regular",
        "xlabel",
        "tooltip",
        "url",
        "href",
        "target",
        "center",
        "newrank",
        "ordering",
        "outputorder",
        "layout",
        "group",
        "headlabel",
        "taillabel",
        "labelfontsize",
        "labelfontcolor",
        "labelfontname",
        "labelangle",
        "labeldistance",
        "decorate",
        "image",
        "imagescale",
        "nojustify",
        "k",
        "overlap",
        "sep",
        "esep",
        "dpi",
        "gradientangle",
        "pencolor",
        "fontpath",
        "charset",
        "clusterrank",
        "forcelabels",
        "mclimit",
        "nslimit",
        "remincross",
        "searchsize",
        "showboxes",
        "truecolor",
        "viewport",
        "landscape",
        "rotate",
        "quantum",
        "stylesheet",
        "samehead",
        "sametail",
        "lhead",
        "ltail",
        "z",
        "pos",
        "vertices",
        "root",
        "comment",
        "labeltooltip",
        "edgetooltip",
        "headtooltip",
        "tailtooltip",
        "edgeurl",
        "headurl",
        "tailurl",
        "labelurl",
        "edgehref",
        "headhref",
        "tailhref",
        "labelhref",
        "edgetarget",
        "headtarget",
        "tailtarget",
        "labeltarget",
        "headclip",
        "tailclip",
        "fontnames",
        "lheight",
        "lwidth",
        "lp",
        "bb",
        "xlp",
        "head_lp",
        "tail_lp",
    }
)
