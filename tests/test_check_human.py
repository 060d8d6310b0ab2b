"""Human nodes and ``command_matches`` read statically: check, drawings, DOT, data, schema.

A ``human`` node asks a person (``prompt``); its edges' labels are the
choices. ``waygraph check`` needs choices and refuses answers that pick two;
routing checks treat the node like a decision with ``when`` edges.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from waygraph import PlanFormatError, load_library
from waygraph.check import Problem, check_plan
from waygraph.draw import predicate_label, to_mermaid
from waygraph.draw.svg import to_svg
from waygraph.formats.dot import parse_dot, plan_to_dot
from waygraph.formats.json_library import library_to_data, plan_to_data, plans_from_data
from waygraph.formats.schema import library_schema
from waygraph.formats.yaml_library import parse_yaml, to_yaml
from waygraph.model import Graph, Plan, Verify
from waygraph.verify_types.people import accelerator, answer_keys, choice_labels

#: The codes this module covers (tests/test_check_codes.py: every code has a case).
COVERED = {"human-without-choices", "duplicate-choice"}

OK = {"type": "exit_code_zero"}
NS = "{http://www.w3.org/2000/svg}"


def human_plan(
    *labels: str | None, ask: dict[str, Any] | None = None, work: dict[str, Any] | None = None
) -> Plan:
    """start -> work -> ask, and one edge out of ``ask`` per label, each to an exit."""
    nodes: dict[str, Any] = {
        "start": {"type": "start"},
        "work": {"type": "task", "verify": OK, **(work or {})},
        "ask": {"type": "human", "prompt": "Deploy to production?", **(ask or {})},
    }
    edges = [
        {"from": "start", "to": "work"},
        {"from": "work", "to": "ask", "condition": "on_success"},
    ]
    for i, label in enumerate(labels):
        nodes[f"end_{i}"] = {"type": "exit"}
        edges.append({"from": "ask", "to": f"end_{i}", "label": label})
    return Plan.model_validate(
        {
            "id": "release",
            "triggers": ["release it"],
            "trigger_threshold": 1,
            "graph": {"start": "start", "nodes": nodes, "edges": edges},
        }
    )


def found(plan: Plan, code: str) -> list[Problem]:
    return [p for p in check_plan(plan, file="plans/release.yaml") if p.code == code]


# ---------------------------------------------------------------- choices


def test_accelerators_and_answer_keys_follow_the_label_forms():
    assert [accelerator(x) for x in ("[Y] Yes", "N) No", "R - Retry", "Yes", "[Y]")] == [
        "y",
        "n",
        "r",
        None,
        None,  # an accelerator with no words is just a label
    ]
    assert answer_keys("  [Y]  Ship  IT! ") == ("[y] ship it", "ship it", "y")
    assert answer_keys("?!") == ()


def test_choice_labels_are_the_labels_in_edge_order_and_the_target_where_none():
    # As the Attractor specification's human gate: an edge without a label (or
    # with a blank one) offers its target's id.
    plan = human_plan("[Y] Yes", None, "  ", "[N] No", "?!")
    assert choice_labels(plan.graph, "ask") == ["[Y] Yes", "end_1", "end_2", "[N] No"]


# ---------------------------------------------------------------- check: errors


def test_a_well_formed_human_node_has_no_problems():
    assert check_plan(human_plan("[Y] Yes", "[N] No")) == []


@pytest.mark.parametrize(
    "labels", [(), ("?!",), ("...", "!")], ids=["no-edges", "unpickable", "two"]
)
def test_human_node_without_choices_is_an_error_naming_plan_node_and_field(labels):
    (problem,) = found(human_plan(*labels), "human-without-choices")
    assert problem.level == "error"
    where = (problem.file, problem.plan, problem.node, problem.field)
    assert where == ("plans/release.yaml", "release", "ask", "label")
    assert "'Deploy to production?'" in problem.message and "label" in problem.message
    shown = str(problem)
    assert "plans/release.yaml" in shown and "plan 'release'" in shown and "node 'ask'" in shown


def test_load_library_refuses_a_human_node_without_choices(tmp_path: Path):
    path = tmp_path / "release.json"
    path.write_text(json.dumps(library_to_data([human_plan()])), encoding="utf-8")
    with pytest.raises(PlanFormatError, match=r"human-without-choices") as err:
        load_library(path)
    assert err.value.node == "ask" and err.value.plan == "release"


@pytest.mark.parametrize(
    ("labels", "answer"),
    [
        (("Approve", "approve"), "approve"),
        (("Roll back", "roll  BACK!"), "roll back"),
        (("[Y] Yes", "[y] Yup"), "y"),
        (("[Y] Yes", "Y) Yeah"), "y"),
        (("[Y] Yes", "Yes"), "yes"),
        (("[Y] Yes", "y"), "y"),
    ],
)
def test_one_answer_picking_two_choices_is_an_error(labels, answer):
    (problem,) = found(human_plan(*labels), "duplicate-choice")
    assert problem.level == "error"
    assert (problem.plan, problem.node, problem.field) == ("release", "ask", "label")
    # The second edge is the one to change; the first is named in the message.
    assert problem.edge == "ask -> end_1 (always)"
    assert f"answer {answer!r}" in problem.message
    assert repr(labels[0]) in problem.message and repr(labels[1]) in problem.message


def test_distinct_labels_and_accelerators_are_not_duplicates():
    plan = human_plan("[Y] Yes", "[N] No", "[R] Retry later", "Skip")
    assert found(plan, "duplicate-choice") == []


# ---------------------------------------------------------------- check: routes and fields


def test_routing_checks_treat_a_human_node_like_a_decision():
    # Several plain edges, one looping back to the task: every one is a choice,
    # so none is unused or shadowed, and the loop is the person's to take.
    plan = Plan.model_validate(
        {
            "id": "review",
            "triggers": ["review it"],
            "trigger_threshold": 1,
            "graph": {
                "start": "start",
                "nodes": {
                    "start": {"type": "start"},
                    "draft": {"type": "task", "verify": OK},
                    "ask": {"type": "human", "prompt": "Good enough?"},
                    "done": {"type": "exit"},
                    "stop": {"type": "exit", "status": "aborted"},
                },
                "edges": [
                    {"from": "start", "to": "draft"},
                    {"from": "draft", "to": "ask", "condition": "on_success"},
                    {"from": "ask", "to": "draft", "label": "[A] Again"},
                    {"from": "ask", "to": "done", "label": "[S] Ship"},
                    {"from": "ask", "to": "stop", "label": "[Q] Quit"},
                ],
            },
        }
    )
    assert check_plan(plan) == []


def test_an_edge_whose_label_no_answer_can_give_leads_nowhere():
    # Beside choices, no answer picks it: unused, and what only it leads to is unreachable.
    plan = human_plan("[Y] Yes", "?!")
    (unused,) = found(plan, "unused-edge")
    assert (unused.edge, unused.field) == ("ask -> end_1 (always)", "label")
    assert [p.node for p in found(plan, "unreachable")] == ["end_1"]
    # Alone, the missing choices say it all.
    assert found(human_plan("?!"), "unused-edge") == []
    # An unlabelled edge is the choice of its target's id.
    assert found(human_plan("[Y] Yes", None), "unused-edge") == []


def test_a_human_node_needs_no_verify_but_a_verify_or_retries_there_are_ignored():
    assert found(human_plan("Yes"), "task-without-verify") == []
    plan = human_plan("Yes", ask={"verify": OK, "max_retries": 2})
    ignored = found(plan, "ignored-field")
    assert [(p.node, p.field, p.level) for p in ignored] == [
        ("ask", "verify", "warning"),
        ("ask", "max_retries", "warning"),
    ]
    assert all("a person's answer routes it" in p.message for p in ignored)


def test_a_prompt_on_a_task_is_ignored():
    (problem,) = found(human_plan("Yes", work={"prompt": "Sure?"}), "ignored-field")
    assert (problem.node, problem.field) == ("work", "prompt")
    assert "only human nodes use it" in problem.message


# ---------------------------------------------------------------- check: command_matches


@pytest.mark.parametrize(
    ("verify", "field"),
    [
        ({"type": "exit_code_zero", "command_matches": "pytest("}, "verify.command_matches"),
        (
            {
                "type": "all",
                "checks": [OK, {"type": "output_contains", "value": "ok", "command_matches": "["}],
            },
            "verify.checks.1.command_matches",
        ),
        (
            {"type": "command", "run": "make", "expect": {**OK, "command_matches": "(?P<"}},
            "verify.expect.command_matches",
        ),
    ],
)
def test_a_command_matches_that_does_not_compile_is_an_error_at_its_field(verify, field):
    (problem,) = found(human_plan("Yes", work={"verify": verify}), "bad-regex")
    assert problem.level == "error"
    assert (problem.plan, problem.node, problem.field) == ("release", "work", field)
    assert problem.message.startswith("command_matches does not compile")
    assert re.search(r"at position \d+", problem.message)


def test_command_matches_on_a_when_edge_is_checked_and_located():
    plan = Plan.model_validate(
        {
            "id": "route",
            "triggers": ["route"],
            "trigger_threshold": 1,
            "graph": {
                "start": "start",
                "nodes": {
                    "start": {"type": "start"},
                    "pick": {"type": "decision"},
                    "done": {"type": "exit"},
                },
                "edges": [
                    {"from": "start", "to": "pick"},
                    {
                        "from": "pick",
                        "to": "done",
                        "when": {"type": "any_output", "command_matches": "a)"},
                    },
                    {"from": "pick", "to": "done", "condition": "on_fail"},
                ],
            },
        }
    )
    (problem,) = [p for p in check_plan(plan) if p.code == "bad-regex"]
    assert (problem.edge, problem.field) == ("pick -> done (always)", "when.command_matches")


def test_a_backtracking_command_matches_is_a_warning_and_a_good_one_is_quiet():
    slow = human_plan("Yes", work={"verify": {**OK, "command_matches": "(a+)+$"}})
    (problem,) = found(slow, "regex-backtracking")
    assert (problem.level, problem.field) == ("warning", "verify.command_matches")
    good = human_plan("Yes", work={"verify": {**OK, "command_matches": r"^pytest\b"}})
    assert check_plan(good) == []


# ---------------------------------------------------------------- formats


def test_dot_writes_a_human_node_as_a_hexagon_with_its_prompt_and_reads_it_back():
    plan = human_plan("[Y] Yes", "[N] No", ask={"action": "Show the diff first", "name": "Ask"})
    text = plan_to_dot(plan)
    line = next(x for x in text.splitlines() if x.strip().startswith("ask ["))
    assert "shape=hexagon" in line and 'prompt="Deploy to production?"' in line
    assert 'action="Show the diff first"' in line
    assert parse_dot(text) == plan


def test_dot_hexagon_is_a_human_node_and_attractor_prompt_elsewhere_is_the_action():
    plan = parse_dot(
        'digraph p { s [shape=Mdiamond]; t [prompt="Write it"]; '
        'h [shape=hexagon, prompt="Ship?"]; d [shape=Msquare]; '
        's -> t -> h; h -> d [label="[Y] Yes"] }'
    )
    ask, work = plan.graph.nodes["h"], plan.graph.nodes["t"]
    assert (ask.type, ask.prompt, ask.action, ask.question) == ("human", "Ship?", None, "Ship?")
    assert (work.type, work.prompt, work.action) == ("task", None, "Write it")


def test_dot_refuses_a_prompt_it_would_read_back_as_the_action():
    plan = human_plan("Yes", work={"prompt": "Sure?"})
    with pytest.raises(PlanFormatError) as err:
        plan_to_dot(plan)
    assert (err.value.plan, err.value.node, err.value.field) == ("release", "work", "prompt")


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_json_and_yaml_round_trip_a_human_node_and_command_matches(fmt):
    plan = human_plan("[Y] Yes", "No", work={"verify": {**OK, "command_matches": "^make"}})
    data = library_to_data([plan])
    text = json.dumps(data) if fmt == "json" else to_yaml(data)
    loaded = json.loads(text) if fmt == "json" else parse_yaml(text)
    _, (back,) = plans_from_data(loaded)
    assert back == plan
    assert back.graph.nodes["work"].verify == Verify(type="exit_code_zero", command_matches="^make")


def test_the_schema_accepts_human_nodes_prompt_and_command_matches():
    jsonschema = pytest.importorskip("jsonschema")
    schema = library_schema()
    defs = schema["$defs"]
    assert "human" in defs["Node"]["properties"]["type"]["enum"]
    assert "question" in defs["Node"]["properties"]["prompt"]["description"]
    assert "command" in defs["Verify"]["properties"]["command_matches"]["description"]
    plan = human_plan("[Y] Yes", "No", work={"verify": {**OK, "command_matches": "^make"}})
    validator = jsonschema.Draft202012Validator(schema)
    assert list(validator.iter_errors(library_to_data([plan]))) == []
    single = {"id": plan.id, **plan_to_data(plan)}
    assert list(validator.iter_errors(single)) == []
    # Still closed: a misspelt field on a human node fails.
    single["graph"]["nodes"]["ask"]["promt"] = "typo"
    assert list(validator.iter_errors(single))


# ---------------------------------------------------------------- drawings


def test_mermaid_draws_a_human_node_as_a_hexagon_with_its_question():
    text = to_mermaid(human_plan("[Y] Yes", "[N] No"))
    assert '    n_ask{{"ask<br/>Deploy to production?"}}' in text.splitlines()
    assert 'n_ask -->|"#91;Y#93; Yes"| n_end_0' in text
    # A node named by its question shows it once.
    named = to_mermaid(human_plan("Yes", ask={"prompt": None, "name": "Ship it?"}))
    assert '    n_ask{{"ask<br/>Ship it?"}}' in named.splitlines()


def test_svg_draws_a_human_node_as_a_hexagon_and_an_escalation_as_an_octagon():
    plan = (
        Graph.builder()
        .task("work", verify=OK)
        .human("ask", prompt="Deploy to production?", description="Only after QA")
        .escalate("stuck", reason="the build keeps failing")
        .exit("done")
        .chain("start", "work", "ask")
        .edge("work", "stuck", "on_fail")
        .edge("ask", "done", label="Yes")
        .plan("release")
    )
    root = ET.fromstring(to_svg(plan))
    drawn = {g.get("data-node"): g for g in root.iter(f"{NS}g") if g.get("data-node")}
    ask, stuck = drawn["ask"], drawn["stuck"]
    assert ask.get("class") == "node t-human"
    corners = ask.find(f"{NS}polygon").get("points").split()  # type: ignore[union-attr]
    assert len(corners) == 6
    assert len(stuck.find(f"{NS}polygon").get("points").split()) == 8  # type: ignore[union-attr]
    words = "".join(ask.find(f"{NS}text").itertext())  # type: ignore[union-attr]
    assert "Deploy to production?" in words
    tooltip = ask.find(f"{NS}title").text or ""  # type: ignore[union-attr]
    assert "asks: Deploy to production?" in tooltip and "Only after QA" in tooltip
    assert ".t-human .shape" in (root.find(f"{NS}style").text or "")  # type: ignore[union-attr]


def test_predicate_labels_show_command_matches():
    assert predicate_label(Verify(type="exit_code_zero", command_matches="^pytest")) == (
        "exit == 0 from command /^pytest/"
    )
    group = Verify(
        type="all",
        checks=(Verify(type="exit_code_zero"), Verify(type="any_output")),
        command_matches="make",
    )
    assert predicate_label(group) == "(exit == 0 and any output) from command /make/"


def test_library_show_describes_a_human_node(tmp_path: Path):
    path = tmp_path / "release.json"
    path.write_text(json.dumps(library_to_data([human_plan("[Y] Yes", "[N] No")])))
    out = subprocess.run(
        [sys.executable, "-m", "waygraph", "show", "release", "--library", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "250"},
    )
    assert out.returncode == 0, out.stderr
    row = next(line for line in out.stdout.splitlines() if line.startswith("│ ask "))
    assert [c.strip() for c in row.split("│")[1:3]] == ["ask", "human"]
    assert "asks: Deploy to production?" in out.stdout
    assert "choices: [Y] Yes | [N] No" in out.stdout
