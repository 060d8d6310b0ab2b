"""Every problem code ``waygraph check`` reports, with its level and meaning.

Codes are kebab-case and stable; tools may filter on them. Library plans,
event-driven state machines and generated plans share this one registry.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["CODES", "GENERATED_PLAN_CODES", "STATE_MACHINE_CODES", "Level"]

Level = Literal["error", "warning"]

#: The state-machine checks: ``code -> (level, what it means)``.
STATE_MACHINE_CODES: dict[str, tuple[Level, str]] = {
    "empty-state-machine": ("error", "a state machine with no states"),
    "bad-state": ("error", "a state that is not a valid StateConfig"),
    "state-name-mismatch": ("error", "a state stored under a key other than its state_name"),
    "unknown-state": ("error", "a transition or default_next names a state that does not exist"),
    "terminal-state-moves": (
        "error",
        "a terminal state with an action, transitions or default_next",
    ),
    "state-without-exit": ("error", "a non-terminal state with no transitions and no default_next"),
    "default-next-hides-transitions": (
        "error",
        "a state without an action has default_next and transitions: they are never tried",
    ),
    "no-terminal-state": ("error", "no state has is_terminal"),
    "idle-loop": ("error", "default_next goes round states that send nothing"),
    "unreachable-state": ("error", "no transition or default_next leads to the state"),
}

#: The generated-plan checks (the Planning pattern's validator, in check's code style).
GENERATED_PLAN_CODES: dict[str, tuple[Level, str]] = {
    "not-object": ("error", "a generated plan that is not one JSON object"),
    "missing-goal": ("error", "a generated plan without a goal"),
    "missing-steps": ("error", "a generated plan without a steps list"),
    "missing-field": ("error", "a step without a field it needs (id, action, parameters, ...)"),
    "bad-field": ("error", "a step field of the wrong type"),
    "empty-plan": ("error", "a generated plan with no steps"),
    "duplicate-step": ("error", "two steps with the same id"),
    "unknown-dependency": ("error", "a step depends on a step that does not exist"),
    "cycle": ("error", "step dependencies form a cycle, so no step of it can start"),
}

#: Every problem code: ``code -> (level, what it means)``. Codes are stable;
#: tools may filter on them.
CODES: dict[str, tuple[Level, str]] = {
    # -- errors: the engine cannot run the plan as written
    "no-start": ("error", "graph.start is empty"),
    "unknown-start": ("error", "graph.start names a node that does not exist"),
    "multiple-starts": ("error", "more than one node has type start"),
    "start-has-incoming": ("error", "an edge leads into a start node"),
    "unknown-node": ("error", "an edge's from or to names a node that does not exist"),
    "end-node-has-edges": ("error", "an edge leaves an exit or escalate node"),
    "verify-needs-value": ("error", "a check's `value` is missing or of the wrong type"),
    "verify-needs-checks": ("error", "all/any without `checks`, or not without exactly one"),
    "verify-needs-field": ("error", "compare without `field`/`op`, or truthy without `field`"),
    "verify-needs-run": ("error", "a command gate without the `run` command"),
    "bad-regex": ("error", "a regex check's pattern, or a command_matches, does not compile"),
    "bad-regex-flags": ("error", "a regex check's `flags` has a letter not in imsx"),
    "bad-trigger-threshold": ("error", "trigger_threshold is < 1 or > the number of triggers"),
    "bad-match-mode": ("error", "_meta.match_mode is neither phrase nor substring"),
    "unknown-next-plan": ("error", "an exit's next_plan names a plan the library does not have"),
    "human-without-choices": ("error", "a human node with no labelled outgoing edge"),
    "duplicate-choice": ("error", "one answer picks two choices of a human node"),
    # Reported by `waygraph check`, which loads file by file to report them all.
    "load-error": ("error", "a file cannot be read, parsed or validated"),
    "dot-attribute": (
        "warning",
        "a DOT file says something waygraph reads differently from its words: an attribute "
        "neither waygraph nor the Attractor specification defines (kept as written), a shape "
        "with no handler (read as a task), `$goal` without a goal",
    ),
    "duplicate-plan": ("error", "two files of one library define the same plan id"),
    # -- warnings: the plan runs, but probably not as meant
    "implicit-start": ("warning", "graph.start names a node that is not a start node"),
    "unused-start-node": ("warning", "a start node that graph.start does not name"),
    "unreachable": ("warning", "no route from the start reaches the node"),
    "trap": ("warning", "no exit or escalate node is reachable from the node"),
    "no-exit": ("warning", "no exit node is reachable: the plan can only escalate"),
    "success-loop": ("warning", "a loop of success edges: only max_transitions ends it"),
    "task-without-verify": (
        "warning",
        "a task without verify passes on any result but a known failing exit status",
    ),
    "decision-without-check": (
        "warning",
        "a decision with neither `when` edges nor verify routes on the result before it",
    ),
    "when-ignored": ("warning", "`when` on an edge out of a non-decision node"),
    "on-retry-without-retries": ("warning", "on_retry out of max_retries 0: it never fires"),
    "on-exhaust-without-retries": ("warning", "on_exhaust out of max_retries 0: first failure"),
    "shadowed-edge": ("warning", "another edge of the same condition always wins"),
    "unused-edge": ("warning", "edge selection never follows the edge"),
    "escalate-without-reason": ("warning", "an escalate node without a reason"),
    "ignored-field": ("warning", "a node sets a field its type does not use"),
    "next-plan-loop": ("warning", "next_plan links lead back to the plan they start from"),
    "example-starts-other-plan": (
        "warning",
        "a plan's example, typed by a user, starts another plan by that plan's triggers",
    ),
    "on-fail-ignored": ("warning", "a step with on_fail abort/block but required false"),
    "no-triggers": ("warning", "no triggers: the plan can only be started by id"),
    "unreachable-threshold": (
        "warning",
        "trigger_threshold is more than the triggers' different phrases: it never activates",
    ),
    "blank-trigger": ("warning", "a trigger that is empty or only spaces"),
    "duplicate-trigger": ("warning", "a trigger listed twice (case and spacing ignored)"),
    "no-plans": ("warning", "a folder given to `waygraph check` holds no plan files"),
    "command-gate": ("warning", "a command gate: waygraph runs it only when commands are allowed"),
    "context-only-exit": (
        "warning",
        "every route to an exit passes a condition on context.*: only a tool result's "
        "context_updates line can satisfy it",
    ),
    "regex-backtracking": ("warning", "a regex with nested quantifiers can backtrack for long"),
    # -- event-driven state machines and generated plans (waygraph.check._kinds)
    **STATE_MACHINE_CODES,
    **GENERATED_PLAN_CODES,
}
