"""Drawing: Mermaid text, DOT with run state, and Graphviz through a fake ``dot``."""

from __future__ import annotations

import os
import re
import shutil
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings

from tests.strategies import graph_plans
from waygraph.draw import (
    GRAPHVIZ_MISSING,
    GraphvizError,
    GraphvizNotFoundError,
    mermaid_text,
    node_status,
    predicate_label,
    render_with_graphviz,
    to_dot,
    to_mermaid,
)
from waygraph.errors import ConfigError, PlanFormatError, WaygraphError
from waygraph.formats.dot import plan_to_dot
from waygraph.model import Graph, Node, Plan, Verify

BUGFIX_STATE = {
    "status": "running",
    "current_node": "fix",
    "visited": {
        "reproduce": {"outcome": "success", "attempts": 1},
        "test": {"outcome": "fail", "attempts": 1},
        "fix": {"outcome": "pending", "attempts": 2},
    },
    "path": ["start", "reproduce", "fix", "test", "fix"],
}


def every_type_plan() -> Plan:
    return (
        Graph.builder()
        .task("reproduce", name="Run the failing test", verify={"type": "any_output"})
        .decision("triage", name="Which failure?")
        .checkpoint("saved", name="Save point")
        .task("fix", name="Write the fix", max_retries=2)
        .task("test", name="Run the tests", verify={"type": "exit_code_zero"})
        .escalate("stuck", name="Give up", reason="no luck")
        .exit("done", name="Done")
        .edge("start", "reproduce")
        .edge("reproduce", "triage", "on_success")
        .edge(
            "triage",
            "fix",
            "on_success",
            when={"type": "output_contains", "value": "bug"},
            weight=2,
        )
        .edge("triage", "saved", "on_success")
        .edge("saved", "fix")
        .edge("fix", "test", "on_success")
        .edge("fix", "stuck", "on_exhaust")
        .edge("test", "fix", "on_fail")
        .edge("test", "done", "on_success")
        .plan("bugfix", name="Bug fix")
    )


def linear_plan() -> Plan:
    return Plan.model_validate(
        {
            "id": "release",
            "steps": [
                {"name": "Build", "on_fail": "block"},
                {"name": "Lint", "on_fail": "skip"},
                {"name": "Publish", "on_fail": "abort"},
            ],
        }
    )


def node_line(text: str, mermaid_id: str) -> str:
    return next(line.strip() for line in text.splitlines() if line.strip().startswith(mermaid_id))


# ---------------------------------------------------------------- Mermaid


def test_mermaid_shapes_follow_node_types():
    text = to_mermaid(every_type_plan())
    assert text.startswith("flowchart TD\n")
    assert node_line(text, "n_start") == 'n_start(["start"])'
    assert node_line(text, "n_reproduce") == 'n_reproduce["reproduce<br/>Run the failing test"]'
    assert node_line(text, "n_triage") == 'n_triage{"triage<br/>Which failure?"}'
    # A flag: the hexagon is the human node's (tests/test_check_human.py).
    assert node_line(text, "n_stuck") == 'n_stuck>"stuck<br/>Give up"]'
    assert node_line(text, "n_done") == 'n_done((("done")))'
    assert node_line(text, "n_saved") == 'n_saved[("saved<br/>Save point")]'


def test_mermaid_edges_show_condition_when_and_weight():
    lines = to_mermaid(every_type_plan()).splitlines()
    assert '    n_start -->|"always"| n_reproduce' in lines
    assert "    n_triage -->|\"on_success<br/>when contains 'bug'<br/>weight 2\"| n_fix" in lines
    # Failure edges are dashed.
    assert '    n_fix -.->|"on_exhaust"| n_stuck' in lines
    assert '    n_test -.->|"on_fail"| n_fix' in lines
    assert '    n_test -->|"on_success"| n_done' in lines


def test_mermaid_escapes_labels_and_ids():
    name = 'Say "hi" [now] | {x} (y) #1; a<b> & `c`\nsecond line'
    plan = (
        Graph.builder()
        .task("end", name=name)
        .task("a-b")
        .task("a_b")
        .exit("done")
        .chain("start", "end", "a-b", "a_b", "done")
        .plan("p")
    )
    text = to_mermaid(plan)
    line = node_line(text, "n_end")
    assert line == (
        'n_end["end<br/>Say #quot;hi#quot; #91;now#93; #124; #123;x#125; #40;y#41; '
        '#35;1#59; a#lt;b#gt; #amp; #96;c#96;<br/>second line"]'
    )
    # Between the label's own quotes nothing Mermaid reads as syntax is left.
    inner = line[len('n_end["') : -len('"]')]
    bare = re.sub(r"#\w+;", "", inner.replace("<br/>", ""))
    assert not re.search(r'["\[\]{}()|;`<>#]', bare)
    # Ids that Mermaid would misread, or that clash once sanitised, stay distinct.
    assert node_line(text, "n_a_b[") == 'n_a_b["a-b"]'
    assert node_line(text, "n_a_b_2") == 'n_a_b_2["a_b"]'
    assert '    n_end -->|"on_success"| n_a_b\n' in text
    assert len(text.splitlines()) == 1 + 5 + 4


def test_mermaid_text_never_escapes_twice():
    assert mermaid_text("#quot;") == "#35;quot#59;"
    assert mermaid_text("a\r\nb\rc") == "a<br/>b<br/>c"


def test_mermaid_draws_linear_plans_as_steps():
    text = to_mermaid(linear_plan())
    assert node_line(text, "n_step_1") == 'n_step_1["step 1<br/>Build<br/>on fail: block"]'
    assert node_line(text, "n_step_2") == 'n_step_2["step 2<br/>Lint"]'
    lines = text.splitlines()
    # The success chain reads as a list; only failure routes are labelled.
    assert "    n_start --> n_step_1" in lines
    assert "    n_step_1 --> n_step_2" in lines
    assert "    n_step_3 --> n_done" in lines
    assert '    n_step_2 -.->|"on_fail"| n_step_3' in lines
    assert '    n_step_3 -.->|"on_fail"| n_aborted' in lines


def test_mermaid_draws_edges_to_missing_nodes_as_missing():
    plan = Plan.model_validate(
        {
            "id": "p",
            "graph": {
                "start": "start",
                "nodes": {"start": {"type": "start"}},
                "edges": [{"from": "start", "to": "ghost"}],
            },
        }
    )
    lines = to_mermaid(plan).splitlines()
    assert '    n_missing_0["ghost<br/>#40;missing#41;"]' in lines
    assert '    n_start -->|"always"| n_missing_0' in lines


def test_mermaid_with_state_colours_nodes_and_counts_attempts():
    text = to_mermaid(every_type_plan(), state=BUGFIX_STATE)
    lines = text.splitlines()
    assert node_line(text, "n_fix[") == 'n_fix["fix<br/>Write the fix<br/>attempt 2/3"]'
    assert node_line(text, "n_test") == 'n_test["test<br/>Run the tests<br/>attempt 1/1"]'
    for status in ("done", "failed", "current", "pending"):
        assert any(line.startswith(f"    classDef {status} fill:") for line in lines)
    assert "    class n_start,n_reproduce done" in lines
    assert "    class n_test failed" in lines
    assert "    class n_fix current" in lines
    assert "    class n_triage,n_saved,n_stuck,n_done pending" in lines
    # start->reproduce (0), fix->test (5) and test->fix (7) were followed; the
    # path's reproduce->fix hop has no edge.
    assert "    linkStyle 0,5,7 stroke:#2b8a3e,stroke-width:3px" in lines


def test_node_status_of_finished_runs():
    plan = every_type_plan()
    escalated = {
        "status": "escalated",
        "current_node": "stuck",
        "visited": {"fix": {"outcome": "fail", "attempts": 3}},
        "path": ["start", "fix", "stuck"],
    }
    nodes = plan.graph.nodes
    assert node_status(nodes["stuck"], escalated) == "failed"
    assert node_status(nodes["fix"], escalated) == "failed"
    assert node_status(nodes["start"], escalated) == "done"
    assert node_status(nodes["done"], escalated) == "pending"
    completed = {"status": "completed", "current_node": "done", "path": ["start", "done"]}
    assert node_status(nodes["done"], completed) == "done"
    assert node_status(Node(id="x"), {}) == "pending"


def test_unbounded_attempts_have_no_limit():
    state = {"current_node": "step_1", "visited": {"step_1": {"outcome": "pending", "attempts": 4}}}
    text = to_mermaid(linear_plan(), state=state)
    assert (
        node_line(text, "n_step_1")
        == 'n_step_1["step 1<br/>Build<br/>on fail: block<br/>attempt 4"]'
    )


@settings(max_examples=30, deadline=None)
@given(graph_plans())
def test_every_node_and_edge_is_drawn(plan: Plan):
    text = to_mermaid(plan)
    assert len(text.splitlines()) == 1 + len(plan.graph.nodes) + len(plan.graph.edges)


# ---------------------------------------------------------------- predicates


@pytest.mark.parametrize(
    ("verify", "label"),
    [
        ({"type": "output_contains", "value": "ok"}, "contains 'ok'"),
        ({"type": "regex", "value": "v\\d+", "flags": "i"}, "/v\\d+/i"),
        ({"type": "exit_code", "value": 3}, "exit == 3"),
        ({"type": "file_exists", "value": "out.txt"}, "file 'out.txt' exists"),
        ({"type": "manual"}, "manual"),
        ({"type": "compare", "field": "data.count", "op": ">", "value": 0}, "data.count > 0"),
        ({"type": "truthy", "field": "data.ready"}, "data.ready"),
        (
            {
                "type": "any",
                "checks": [
                    {"type": "exit_code_zero"},
                    {"type": "all", "checks": [{"type": "any_output"}, {"type": "manual"}]},
                ],
            },
            "exit == 0 or (any output and manual)",
        ),
        ({"type": "not", "checks": [{"type": "any_output"}]}, "not (any output)"),
    ],
)
def test_predicate_labels(verify: dict, label: str):
    assert predicate_label(Verify.model_validate(verify)) == label


# ---------------------------------------------------------------- DOT


def test_to_dot_without_state_is_the_dot_format():
    plan = every_type_plan()
    assert to_dot(plan) == plan_to_dot(plan)


def test_to_dot_with_state_adds_fills_after_the_plan():
    plan = every_type_plan()
    plain, coloured = plan_to_dot(plan), to_dot(plan, state=BUGFIX_STATE)
    assert coloured.startswith(plain.rstrip()[:-1])
    assert coloured.endswith("}\n")
    assert (
        '  "fix" [fillcolor="#fff3bf", color="#e67700", fontcolor="#5c3c00", penwidth=3, '
        'style="filled", xlabel="attempt 2/3"];'
    ) in coloured.splitlines()
    assert '  "test" [fillcolor="#ffe3e3"' in coloured
    assert '  "done" [fillcolor="#f1f3f5"' in coloured


def test_to_dot_refuses_an_edge_to_a_missing_node_as_a_waygraph_error():
    plan = Plan.model_validate(
        {
            "id": "p",
            "graph": {
                "start": "start",
                "nodes": {"start": {"type": "start"}},
                "edges": [{"from": "start", "to": "ghost"}],
            },
        }
    )
    with pytest.raises(PlanFormatError, match="ghost"):
        to_dot(plan)


# ---------------------------------------------------------------- Graphviz


def fake_dot(folder: Path, script: str) -> Path:
    """Put an executable ``dot`` shell script in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / "dot"
    program.write_text("#!/bin/sh\n" + script)
    program.chmod(program.stat().st_mode | stat.S_IEXEC)
    return program


def test_render_without_graphviz_says_how_to_get_it(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(GraphvizNotFoundError) as caught:
        render_with_graphviz("digraph { a }", "svg")
    assert str(caught.value) == GRAPHVIZ_MISSING
    assert isinstance(caught.value, ConfigError) and isinstance(caught.value, WaygraphError)
    assert (
        "apt-get install graphviz" in GRAPHVIZ_MISSING
        and "--format mermaid|dot" in GRAPHVIZ_MISSING
    )


def test_render_runs_dot_with_the_format_and_text(monkeypatch, tmp_path: Path):
    received = tmp_path / "received.dot"
    fake_dot(tmp_path / "bin", f'cat > "{received}"\nprintf "<svg format=%s/>" "$1"\n')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    text = to_dot(every_type_plan())
    assert render_with_graphviz(text, "svg") == b"<svg format=-Tsvg/>"
    assert received.read_text() == text


def test_render_reports_dot_failures_and_timeouts(monkeypatch, tmp_path: Path):
    fake_dot(tmp_path / "bad", 'echo "Error: syntax error in line 1" >&2\nexit 3\n')
    monkeypatch.setenv("PATH", str(tmp_path / "bad"))
    with pytest.raises(GraphvizError, match=r"exit code 3\): Error: syntax error in line 1"):
        render_with_graphviz("digraph {", "png")
    sleep = shutil.which("sleep", path=os.defpath)
    fake_dot(tmp_path / "slow", f"exec {sleep} 5\n")
    monkeypatch.setenv("PATH", str(tmp_path / "slow"))
    with pytest.raises(GraphvizError, match=r"did not finish within 0\.2 s"):
        render_with_graphviz("digraph { a }", "svg", timeout=0.2)
    with pytest.raises(ConfigError, match="svg or png"):
        render_with_graphviz("digraph { a }", "pdf")  # type: ignore[arg-type]
