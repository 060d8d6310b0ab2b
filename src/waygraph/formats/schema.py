"""JSON Schema (draft 2020-12) of plan library files, generated from the model.

The pydantic models give the shapes of nodes, edges, predicates and steps; this
module wraps them in the two file shapes waygraph reads (JSON and YAML alike):

- a library: ``{"_meta": {...}, "plans": {plan_id: plan}}``;
- a single-plan file: one plan object with its ``id``.

A plan has either linear ``steps`` or a ``graph`` (never both). Verify types
are the names in :data:`waygraph.verify_types.VERIFY_TYPES` when the schema
is made: the built-ins, and any type the program registered before.

Point an editor at the schema with ``"$schema"`` in a library file, or in
YAML with a ``# yaml-language-server: $schema=...`` comment (``waygraph init``
writes a plan with one), or map it to files in the editor's settings
(docs/cli.md, ``waygraph schema``).

Example:
    >>> schema = library_schema()
    >>> schema["$schema"]
    'https://json-schema.org/draft/2020-12/schema'
    >>> schema["$id"]
    'https://waygraph.dev/schema/library/v2.json'
    >>> schema["$defs"]["Node"]["properties"]["type"]["enum"][:3]
    ['start', 'task', 'decision']
    >>> "human" in schema["$defs"]["Node"]["properties"]["type"]["enum"]
    True
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic.json_schema import models_json_schema

from waygraph.model import Plan, Step
from waygraph.verify_types import VERIFY_TYPES

__all__ = ["SCHEMA_DIALECT", "SCHEMA_ID", "library_schema"]

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
#: The schema's stable id, versioned by its last part (``v2`` carries on the
#: version of the earlier id, ``urn:waygraph:schema:library:2``). It changes
#: only when a file valid under it would no longer validate; new optional
#: fields keep it. It names the schema; editors are pointed at a
#: local copy (``waygraph schema -o``, ``waygraph init``), so nothing depends
#: on the address serving it.
SCHEMA_ID = "https://waygraph.dev/schema/library/v2.json"

REF = "#/$defs/{model}"

# Descriptions shown by editors; the model docstrings carry doctests and
# developer notes, so they are replaced rather than exported.
DEF_DESCRIPTIONS = {
    "Graph": "A workflow graph: the start node id, nodes keyed by id, and edges in order.",
    "Node": "One node of a plan graph; its type decides which fields apply.",
    "Edge": (
        "A directed edge, followed when its condition matches the outcome of the node it "
        "leaves; higher weight wins within a condition, then definition order."
    ),
    "Verify": (
        "A predicate, as data: a node's verification or a decision edge's 'when'. "
        "Leaf checks take 'value'; all/any/not take 'checks'; compare/truthy read 'field' "
        "of event data."
    ),
    "Step": "One step of a linear plan; steps run in order, each verified before the next.",
}

PROPERTY_DESCRIPTIONS: dict[str, dict[str, str]] = {
    "Plan": {
        "id": "The plan id; in a library it is the key under 'plans' and may be left out.",
        "name": "A human-readable name.",
        "description": "What the plan is for.",
        "goal": "The outcome the plan works towards, shown to the model.",
        "domains": "Domains the plan serves; a plan without domains admits every message.",
        "triggers": "Phrases that activate the plan when they appear in a user message.",
        "examples": (
            "Requests a user might type for this plan's job, in their own words; matching by "
            "meaning compares messages with them (phrase matching ignores them)."
        ),
        "trigger_threshold": "How many triggers must appear before the plan activates.",
        "stale_after_turns": "Turns without a node transition before the run expires.",
        "match_mode": "How triggers match: 'phrase' (whole words, in order) or 'substring'.",
        "max_transitions": "Transitions after which any loop ends the run as escalated.",
        "repeat_limit": (
            "The same failing call with the same output this many times in a row on one "
            "node counts as exhausted (0: off)."
        ),
        "routing": (
            "How a guided run picks edges: 'waygraph' (ties in file order, a failed check "
            "retried first) or 'attractor' (the Attractor specification's routing)."
        ),
        "meta": "Free-form data kept with the plan.",
        "graph": "The workflow graph (use either 'graph' or 'steps').",
        "steps": "Linear steps, compiled to a graph (use either 'graph' or 'steps').",
    },
    "Graph": {
        "start": "The id of the node where runs begin (a node of type 'start').",
        "nodes": "Nodes keyed by id.",
        "edges": "Edges in definition order.",
    },
    "Node": {
        "id": "Optional; when given it must equal the node's key in 'nodes'.",
        "type": "start, task, decision, escalate, exit, checkpoint or human.",
        "name": "A short human-readable name.",
        "description": "Shown to the model (decision nodes: what is being decided).",
        "action": "Task: what the model should do.",
        "prompt": (
            "Human: the question put to a person; the labels of the node's outgoing edges "
            "are the choices."
        ),
        "tool": "Task: the tool to use (a hint; whichever tool ran is verified).",
        "tool_hint": "Task: how to use the tool.",
        "verify": "Task or decision: the check a tool result must pass.",
        "max_retries": (
            "Task: extra attempts after a failure (0 by default; null means unbounded)."
        ),
        "join": "'all' waits for every predecessor (dependency DAGs); 'any' by default.",
        "reason": "Escalate: why the run escalates, shown to the model.",
        "pace_level": "Escalate: the escalation level recorded on the run.",
        "status": "Exit: how the run ends, 'completed' (default) or 'aborted'.",
        "next_plan": "Exit: the plan the Navigator starts next in the same session.",
        "next_plan_when": (
            "Exit: when next_plan starts, 'completed' (default: only if the run completed) "
            "or 'always'."
        ),
        "on_fail": "Compiled linear step: warn, block, skip or abort.",
        "required": "Compiled linear step: false lets a failing step be passed over.",
        "meta": "Free-form data kept with the node.",
    },
    "Edge": {
        "from": "The id of the node the edge leaves.",
        "to": "The id of the node the edge enters.",
        "condition": "Which outcome follows the edge: on_success, on_fail, on_retry, "
        "on_exhaust or always.",
        "when": "Decision edges: a predicate on the latest result that routes the run.",
        "on_event": "Event-driven runs: the event type that moves the run along this edge.",
        "weight": "Priority within one condition; higher wins.",
        "label": (
            "Text shown on drawings instead of the condition; out of a human node, the "
            "choice (the answer that follows the edge)."
        ),
    },
    "Verify": {
        "type": "The check to run (one of the verify types).",
        "value": "The argument of leaf checks (text, pattern, exit code, file path).",
        "checks": "The children of all, any and not.",
        "field": "compare/truthy: the dotted path into event data, e.g. 'data.count'.",
        "op": "compare: the comparison operator.",
        "flags": "regex: flags such as 'i' (ignore case), 'm', 's'.",
        "run": "command: the command waygraph runs in the workspace (needs allow_commands).",
        "timeout": "command: seconds the command may run (default 60).",
        "expect": "command: the check its output and exit code must pass (exit_code_zero).",
        "command_matches": (
            "A regular expression the command that produced the evidence must match "
            "(searched in the command the host reports); other evidence is unknown."
        ),
    },
    "Step": {
        "name": "A short human-readable name.",
        "action": "What the model should do.",
        "tool": "The tool to use (a hint).",
        "tool_hint": "How to use the tool.",
        "verify": "The check a tool result must pass.",
        "on_fail": "On failure: warn or block (hold the step), skip (go on), abort (end).",
        "required": "false lets a failing step be passed over.",
        "description": "Shown to the model.",
    },
}


def library_schema() -> dict[str, Any]:
    """The JSON Schema of a plan library file (or a single-plan file).

    Example:
        >>> import json
        >>> schema = library_schema()
        >>> sorted(schema["$defs"]["Library"]["properties"])
        ['$schema', '_meta', 'plans']
        >>> json.loads(json.dumps(schema)) == schema
        True
    """
    _, generated = models_json_schema(
        [(Plan, "validation"), (Step, "validation")], ref_template=REF
    )
    defs: dict[str, Any] = copy.deepcopy(generated["$defs"])
    model_plan = defs.pop("Plan")
    for name, schema in defs.items():
        _describe(name, schema)
    defs["Verify"]["properties"]["type"] = {
        "enum": list(VERIFY_TYPES.names()),
        "description": PROPERTY_DESCRIPTIONS["Verify"]["type"],
    }
    defs["PlanBody"] = _plan_body(model_plan)
    defs["SinglePlanFile"] = _single_plan_file(defs["PlanBody"])
    defs["Library"] = _library()
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": SCHEMA_ID,
        "title": "waygraph plan library",
        "description": (
            "A waygraph plan library (JSON or YAML): either {'_meta', 'plans': {id: plan}} "
            "or a single plan with its 'id'. Each plan has linear 'steps' or a 'graph' of "
            "nodes and edges."
        ),
        "oneOf": [{"$ref": "#/$defs/Library"}, {"$ref": "#/$defs/SinglePlanFile"}],
        "$defs": dict(sorted(defs.items())),
    }


def _describe(name: str, schema: dict[str, Any]) -> None:
    if name in DEF_DESCRIPTIONS:
        schema["description"] = DEF_DESCRIPTIONS[name]
    texts = PROPERTY_DESCRIPTIONS.get(name, {})
    for key, prop in schema.get("properties", {}).items():
        # pydantic's titles ("Max Retries") only repeat the key.
        prop.pop("title", None)
        if key in texts:
            prop["description"] = texts[key]


def _plan_body(model_plan: dict[str, Any]) -> dict[str, Any]:
    """A plan as written in a file: the model's fields, ``steps`` or ``graph``,
    and no ``linear`` (a file says it by using ``steps``)."""
    properties = dict(model_plan["properties"])
    properties.pop("linear", None)
    properties["graph"] = {"$ref": "#/$defs/Graph"}
    properties["steps"] = {"type": "array", "items": {"$ref": "#/$defs/Step"}, "minItems": 1}
    properties["id"] = {"type": "string", "minLength": 1}
    body = {
        "title": "Plan",
        "description": "A plan: how it is matched to a user message, and its workflow.",
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
        # Exactly one: a plan with both would leave its workflow ambiguous.
        "oneOf": [{"required": ["graph"]}, {"required": ["steps"]}],
    }
    _describe("Plan", body)
    return body


def _single_plan_file(body: dict[str, Any]) -> dict[str, Any]:
    single = copy.deepcopy(body)
    single["title"] = "Single-plan file"
    single["description"] = "A file holding one plan on its own, identified by 'id'."
    single["required"] = ["id"]
    single["properties"]["id"]["description"] = "The plan id."
    return single


def _library() -> dict[str, Any]:
    return {
        "title": "Library",
        "description": "Plans keyed by id, in library order (order breaks matching ties).",
        "type": "object",
        "properties": {
            "$schema": {"type": "string", "description": "The schema this file follows."},
            "_meta": {
                "type": "object",
                "description": "Data about the library; 'match_mode' sets the default for "
                "every plan.",
                "properties": {
                    "version": {"type": ["string", "number"]},
                    "description": {"type": "string"},
                    "match_mode": {"enum": ["phrase", "substring"]},
                },
                "additionalProperties": True,
            },
            "plans": {
                "type": "object",
                "description": "Plans keyed by plan id.",
                "propertyNames": {"minLength": 1},
                "additionalProperties": {"$ref": "#/$defs/PlanBody"},
            },
        },
        "required": ["plans"],
        "additionalProperties": False,
    }
