"""Shared helpers of the DOT format tests (tests/test_dot_*.py): the fixture files, the
compat plans, and a plan that uses every field DOT can hold."""

from __future__ import annotations

from pathlib import Path

import waygraph
from waygraph.formats.dot import parse_dot
from waygraph.model import Graph, Plan

FIXTURES = Path(__file__).parent / "fixtures"
DOT_FILES = sorted((FIXTURES / "dot").glob("*.dot"))
COMPAT_PLANS = [
    plan
    for path in sorted((FIXTURES / "compat").glob("*.json"))
    for plan in waygraph.load_library(path, validate=False)
]


def parse(text: str, file: str | None = "plan.dot") -> Plan:
    return parse_dot(text, file=file)


def everything_plan() -> Plan:
    """A plan with every field DOT can hold, in values that need quoting."""
    tricky = 'quote " back\\ nl\n tab\t cr\r é 😀 {json} [x] // not a comment'
    return (
        Graph.builder("begin")
        .task(
            "node",
            name=tricky,
            action="a",
            tool="t",
            tool_hint="h",
            description="",
            verify={"type": "all", "checks": [{"type": "regex", "value": r"\d", "flags": "i"}]},
            max_retries=None,
            join="all",
            on_fail="skip",
            required=False,
            meta={"k": [1, None, {"x": 1.5}]},
        )
        .decision("with space", verify={"type": "truthy", "field": "data.ok"})
        .checkpoint("7")
        .escalate("graph", reason="r", pace_level="p")
        .exit("end", status="aborted")
        .node("second_start", "start")
        .edge("begin", "node")
        .edge("node", "with space", "on_success", weight=2.5, label="")
        .edge("with space", "7", when={"type": "compare", "field": "a", "op": "in", "value": [1]})
        .edge(
            "with space",
            "graph",
            when={"type": "all", "checks": [{"type": "truthy", "field": "a"}]},
        )
        .edge("with space", "end", when={"type": "output_contains", "value": "x"}, on_event="e.v")
        .edge("7", "end", "on_retry", weight=-1e-7)
        .edge("node", "graph", "on_exhaust", weight=1e20)
        .plan(
            # Ids are text without control characters (issue 13); quotes and
            # backslashes still need escaping in DOT.
            'plan with "odd" \\ id',
            name="n",
            description="d",
            goal="g",
            domains=("a,b", "c"),
            triggers=(" padded", "x"),
            trigger_threshold=0,
            stale_after_turns=1,
            match_mode="phrase",
            max_transitions=1,
            meta={},
            linear=True,
        )
    )
