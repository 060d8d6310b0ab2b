"""What a DOT plan may say: node shapes and the attribute names of graphs, nodes and edges.

The reader refuses any other attribute, and the writer writes node types as
these shapes; ``docs/dot.md`` documents each name.
"""

from __future__ import annotations

#: Node type written for each shape (shape names are matched case-insensitively).
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
}
#: Shape written for each node type.
SHAPE_OF_TYPE: dict[str, str] = {
    "start": "Mdiamond",
    "task": "box",
    "decision": "diamond",
    "escalate": "octagon",
    "exit": "Msquare",
    "checkpoint": "cylinder",
    "human": "hexagon",
}
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
)
EDGE_ATTRIBUTES: tuple[str, ...] = ("condition", "when", "on_event", "label", "weight")
GRAPH_ATTRIBUTES: tuple[str, ...] = (
    "id",
    "name",
    "label",
    "goal",
    "description",
    "domains",
    "triggers",
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
)
# Attractor attributes that waygraph has no meaning for; named in the error so
# a person porting a pipeline knows it is deliberate, not a typo.
ATTRACTOR_ONLY = frozenset(
    {
        "goal_gate",
        "retry_target",
        "fallback_retry_target",
        "fidelity",
        "default_fidelity",
        "thread_id",
        "class",
        "timeout",
        "llm_model",
        "llm_provider",
        "reasoning_effort",
        "auto_status",
        "allow_partial",
        "model_stylesheet",
        "loop_restart",
        "tool_command",
    }
)
