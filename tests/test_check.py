"""Graph validation: every problem code fails on a bad plan and stays quiet on its fix."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from waygraph import Library, PlanFormatError, load_library
from waygraph.check import CODES, Problem, check_library, check_plan
from waygraph.formats.json_library import plans_from_data
from waygraph.model import Graph, Plan

COMPAT = Path(__file__).parent / "fixtures" / "compat"

OK = {"type": "exit_code_zero"}

# start -> work -> done: the smallest plan with no problems at all.
BASE: dict[str, Any] = {
    "id": "p",
    "triggers": ["do the work"],
    "trigger_threshold": 1,
    "graph": {
        "start": "start",
        "nodes": {
            "start": {"type": "start"},
            "work": {"type": "task", "verify": OK},
            "done": {"type": "exit"},
        },
        "edges": [
            {"from": "start", "to": "work", "condition": "always"},
            {"from": "work", "to": "done", "condition": "on_success"},
        ],
    },
}


def plan(
    *,
    nodes: dict[str, Any] | None = None,
    edges: list[dict[str, Any]] | None = None,
    replace_edges: list[dict[str, Any]] | None = None,
    drop: tuple[str, ...] = (),
    **fields: Any,
) -> Plan:
    """BASE with nodes merged in (None removes one), edges added or replaced, fields set."""
    data = copy.deepcopy(BASE)
    graph = data["graph"]
    for node_id, node in (nodes or {}).items():
        if node is None:
            graph["nodes"].pop(node_id)
        else:
            graph["nodes"][node_id] = node
    if replace_edges is not None:
        graph["edges"] = replace_edges
    graph["edges"] = [e for e in graph["edges"] if e["to"] not in drop] + list(edges or [])
    start = fields.pop("start", None)
    if start is not None:
        graph["start"] = start
    data.update(fields)
    return Plan.model_validate(data)


def task(verify: Any = OK, **fields: Any) -> dict[str, Any]:
    return {"type": "task", "verify": verify, **fields}


def edge(source: str, target: str, condition: str = "always", **fields: Any) -> dict[str, Any]:
    return {"from": source, "to": target, "condition": condition, **fields}


def with_verify(verify: dict[str, Any]) -> Plan:
    return plan(nodes={"work": task(verify)})


def codes(p: Plan) -> list[str]:
    return [problem.code for problem in check_plan(p)]


def test_base_plan_has_no_problems():
    assert check_plan(plan()) == []


# (code, plan with the problem, the same plan fixed). Each code appears at least once.
CASES = [
    # ---------------------------------------------------------------- errors
    pytest.param(
        "no-start",
        plan(nodes={"start": None}, start="", drop=("work",), edges=[]),
        plan(),
        id="no-start",
    ),
    pytest.param("no-start", plan(start=""), plan(), id="no-start-with-start-node"),
    pytest.param("unknown-start", plan(start="strat"), plan(), id="unknown-start"),
    pytest.param(
        "multiple-starts",
        plan(nodes={"begin": {"type": "start"}}, edges=[edge("begin", "work")]),
        plan(),
        id="multiple-starts",
    ),
    pytest.param(
        "start-has-incoming",
        plan(edges=[edge("work", "start", "on_fail")]),
        plan(
            nodes={"again": {"type": "checkpoint"}},
            replace_edges=[
                edge("start", "again"),
                edge("again", "work"),
                edge("work", "done", "on_success"),
                edge("work", "again", "on_fail"),
            ],
        ),
        id="start-has-incoming",
    ),
    pytest.param(
        "unknown-node", plan(edges=[edge("work", "dnoe", "on_fail")]), plan(), id="unknown-to"
    ),
    pytest.param(
        "unknown-node", plan(edges=[edge("wrok", "done", "on_fail")]), plan(), id="unknown-from"
    ),
    pytest.param(
        "end-node-has-edges",
        plan(edges=[edge("done", "work")]),
        plan(),
        id="end-node-has-edges-exit",
    ),
    pytest.param(
        "end-node-has-edges",
        plan(
            nodes={"stuck": {"type": "escalate", "reason": "r"}},
            edges=[edge("work", "stuck", "on_fail"), edge("stuck", "done")],
        ),
        plan(
            nodes={"stuck": {"type": "escalate", "reason": "r"}},
            edges=[edge("work", "stuck", "on_fail")],
        ),
        id="end-node-has-edges-escalate",
    ),
    *[
        pytest.param(
            "verify-needs-value",
            with_verify(bad),
            with_verify(good),
            id=f"verify-needs-value-{i}",
        )
        for i, (bad, good) in enumerate(
            [
                ({"type": "output_contains"}, {"type": "output_contains", "value": "ok"}),
                ({"type": "output_not_contains", "value": ""}, {"type": "any_output"}),
                ({"type": "regex", "value": 5}, {"type": "regex", "value": "5"}),
                ({"type": "file_exists", "value": "  "}, {"type": "file_exists", "value": "a"}),
                ({"type": "exit_code"}, {"type": "exit_code", "value": 0}),
                ({"type": "exit_code", "value": "1"}, {"type": "exit_code", "value": 1}),
                ({"type": "exit_code", "value": True}, {"type": "exit_code", "value": 1}),
                (
                    {"type": "all", "checks": [{"type": "any_output"}, {"type": "regex"}]},
                    {"type": "all", "checks": [{"type": "any_output"}]},
                ),
            ]
        )
    ],
    *[
        pytest.param(
            "verify-needs-checks",
            with_verify(bad),
            with_verify({"type": "not", "checks": [{"type": "output_contains", "value": "x"}]}),
            id=f"verify-needs-checks-{i}",
        )
        for i, bad in enumerate(
            [
                {"type": "all", "checks": []},
                {"type": "any"},
                {"type": "not"},
                {"type": "not", "checks": [{"type": "any_output"}, {"type": "any_output"}]},
            ]
        )
    ],
    *[
        pytest.param(
            "verify-needs-field",
            with_verify(bad),
            with_verify(good),
            id=f"verify-needs-field-{i}",
        )
        for i, (bad, good) in enumerate(
            [
                (
                    {"type": "compare", "field": "data.count", "value": 0},
                    {"type": "compare", "field": "data.count", "op": ">", "value": 0},
                ),
                (
                    {"type": "compare", "op": ">", "value": 0},
                    {"type": "compare", "field": "data.count", "op": ">", "value": 0},
                ),
                ({"type": "truthy"}, {"type": "truthy", "field": "data.approved"}),
            ]
        )
    ],
    pytest.param(
        "bad-regex",
        with_verify({"type": "regex", "value": "(passed"}),
        with_verify({"type": "regex", "value": r"(\d+) passed"}),
        id="bad-regex",
    ),
    pytest.param(
        "bad-regex",
        # Verbose mode makes "#" start a comment, which leaves the group open.
        with_verify({"type": "regex", "value": "(a#)", "flags": "x"}),
        with_verify({"type": "regex", "value": "(a#)", "flags": "i"}),
        id="bad-regex-with-flags",
    ),
    pytest.param(
        "bad-regex-flags",
        with_verify({"type": "regex", "value": "ok", "flags": "ig"}),
        with_verify({"type": "regex", "value": "ok", "flags": "imsx"}),
        id="bad-regex-flags",
    ),
    pytest.param(
        "bad-trigger-threshold",
        plan(trigger_threshold=0),
        plan(trigger_threshold=1),
        id="bad-trigger-threshold-zero",
    ),
    pytest.param(
        "bad-trigger-threshold",
        plan(triggers=["fix bug", "debug"], trigger_threshold=3),
        plan(triggers=["fix bug", "debug"], trigger_threshold=2),
        id="bad-trigger-threshold-too-high",
    ),
    pytest.param(
        "bad-trigger-threshold",
        plan(triggers=["fix bug"], trigger_threshold=-1),
        plan(triggers=[], trigger_threshold=-1),  # no triggers: the threshold is unused
        id="bad-trigger-threshold-without-triggers",
    ),
    # ---------------------------------------------------------------- warnings
    pytest.param(
        "unreachable-threshold",
        plan(triggers=["fix bug", "Fix bugs", "debug"], trigger_threshold=3),
        plan(triggers=["fix bug", "Fix bugs", "debug"], trigger_threshold=2),
        id="unreachable-threshold",
    ),
    pytest.param(
        "implicit-start",
        plan(nodes={"start": None}, start="work", drop=("work",), edges=[]),
        plan(),
        id="implicit-start",
    ),
    pytest.param(
        "unused-start-node",
        plan(start="work"),
        plan(),
        id="unused-start-node",
    ),
    pytest.param(
        "unreachable",
        plan(nodes={"orphan": task()}, edges=[edge("orphan", "done", "on_success")]),
        plan(
            nodes={"orphan": task()},
            edges=[edge("orphan", "done", "on_success"), edge("work", "orphan", "on_fail")],
        ),
        id="unreachable",
    ),
    pytest.param(
        "trap",
        plan(nodes={"limbo": task()}, edges=[edge("work", "limbo", "on_fail")]),
        plan(
            nodes={"limbo": task()},
            edges=[edge("work", "limbo", "on_fail"), edge("limbo", "done")],
        ),
        id="trap",
    ),
    pytest.param(
        "no-exit",
        plan(
            nodes={"done": None, "stuck": {"type": "escalate", "reason": "r"}},
            replace_edges=[edge("start", "work"), edge("work", "stuck", "on_success")],
        ),
        plan(),
        id="no-exit",
    ),
    pytest.param(
        "success-loop",
        plan(
            nodes={"test": task()},
            replace_edges=[
                edge("start", "work"),
                edge("work", "test", "on_success"),
                edge("test", "work", "on_success"),
                edge("test", "done", "on_fail"),
            ],
        ),
        plan(
            nodes={"test": task(), "fix": task(max_retries=2)},
            replace_edges=[
                edge("start", "work"),
                edge("work", "test", "on_success"),
                edge("test", "done", "on_success"),
                edge("test", "fix", "on_fail"),
                edge("fix", "test", "on_success"),
                edge("fix", "done", "on_exhaust"),
            ],
        ),
        id="success-loop",
    ),
    pytest.param(
        "task-without-verify",
        plan(nodes={"work": {"type": "task"}}),
        plan(),
        id="task-without-verify",
    ),
    pytest.param(
        "decision-without-check",
        plan(
            nodes={"route": {"type": "decision"}},
            edges=[edge("work", "route", "on_fail"), edge("route", "done")],
        ),
        plan(
            nodes={"route": {"type": "decision"}},
            edges=[
                edge("work", "route", "on_fail"),
                edge("route", "done", when={"type": "output_contains", "value": "skip"}),
                edge("route", "work", "on_fail"),
            ],
        ),
        id="decision-without-check",
    ),
    pytest.param(
        "when-ignored",
        plan(
            replace_edges=[
                edge("start", "work"),
                edge("work", "done", "on_success", when={"type": "any_output"}),
            ]
        ),
        plan(),
        id="when-ignored",
    ),
    pytest.param(
        "context-only-exit",
        plan(
            replace_edges=[
                edge("start", "work"),
                edge(
                    "work",
                    "done",
                    "on_success",
                    when={"type": "compare", "field": "context.ok", "op": "==", "value": True},
                ),
            ]
        ),
        plan(),
        id="context-only-exit",
    ),
    pytest.param(
        "on-retry-without-retries",
        plan(nodes={"work": task(max_retries=0)}, edges=[edge("work", "work", "on_retry")]),
        plan(nodes={"work": task(max_retries=1)}, edges=[edge("work", "work", "on_retry")]),
        id="on-retry-without-retries",
    ),
    pytest.param(
        "on-exhaust-without-retries",
        plan(
            nodes={"stuck": {"type": "escalate", "reason": "r"}},
            edges=[edge("work", "stuck", "on_exhaust")],
        ),
        plan(
            nodes={"work": task(max_retries=2), "stuck": {"type": "escalate", "reason": "r"}},
            edges=[edge("work", "stuck", "on_exhaust")],
        ),
        id="on-exhaust-without-retries",
    ),
    pytest.param(
        "shadowed-edge",
        plan(
            nodes={"other": {"type": "exit"}},
            edges=[edge("work", "other", "on_success")],
        ),
        plan(
            nodes={"other": {"type": "exit", "status": "aborted"}},
            edges=[edge("work", "other", "on_fail")],
        ),
        id="shadowed-edge-equal-weight",
    ),
    pytest.param(
        "shadowed-edge",
        plan(
            nodes={"other": {"type": "exit"}},
            edges=[edge("work", "other", "on_success", weight=2)],
        ),
        plan(
            nodes={"other": {"type": "exit"}},
            edges=[edge("work", "other", "on_success", weight=2, on_event="approved")],
        ),
        id="shadowed-edge-by-weight",
    ),
    pytest.param(
        "unused-edge",
        plan(
            nodes={"work": task(max_retries=1), "stuck": {"type": "escalate", "reason": "r"}},
            edges=[edge("work", "stuck", "on_exhaust"), edge("work", "done", "on_fail")],
        ),
        plan(
            nodes={"work": task(max_retries=1), "stuck": {"type": "escalate", "reason": "r"}},
            edges=[edge("work", "stuck", "on_exhaust")],
        ),
        id="unused-edge-precedence",
    ),
    pytest.param(
        "unused-edge",
        plan(
            nodes={"stuck": {"type": "escalate", "reason": "r"}},
            edges=[edge("start", "stuck", "on_fail")],
        ),
        plan(
            nodes={"stuck": {"type": "escalate", "reason": "r"}},
            edges=[edge("work", "stuck", "on_fail")],
        ),
        id="unused-edge-out-of-start",
    ),
    pytest.param(
        "unused-edge",
        plan(
            nodes={"work": task(max_retries=None), "stuck": {"type": "escalate", "reason": "r"}},
            edges=[edge("work", "stuck", "on_fail")],
        ),
        plan(
            nodes={"work": task(max_retries=3), "stuck": {"type": "escalate", "reason": "r"}},
            edges=[edge("work", "stuck", "on_fail")],
        ),
        id="unused-edge-unbounded-retries",
    ),
    pytest.param(
        "escalate-without-reason",
        plan(nodes={"stuck": {"type": "escalate"}}, edges=[edge("work", "stuck", "on_fail")]),
        plan(
            nodes={"stuck": {"type": "escalate", "reason": "the build keeps failing"}},
            edges=[edge("work", "stuck", "on_fail")],
        ),
        id="escalate-without-reason",
    ),
    pytest.param(
        "ignored-field",
        # Exit nodes use verify (a gate) since issue 12; escalate nodes do not.
        plan(nodes={"done": {"type": "exit", "pace_level": "ALTERNATE"}}),
        plan(nodes={"done": {"type": "exit", "reason": "all good"}}),
        id="ignored-field",
    ),
    pytest.param(
        "on-fail-ignored",
        Plan.model_validate(
            {
                "id": "p",
                "triggers": ["a"],
                "trigger_threshold": 1,
                "steps": [{"name": "A", "verify": OK, "on_fail": "abort", "required": False}],
            }
        ),
        Plan.model_validate(
            {
                "id": "p",
                "triggers": ["a"],
                "trigger_threshold": 1,
                "steps": [{"name": "A", "verify": OK, "on_fail": "abort"}],
            }
        ),
        id="on-fail-ignored",
    ),
    pytest.param(
        "regex-backtracking",
        with_verify({"type": "regex", "value": "(a+)+$"}),
        with_verify({"type": "regex", "value": "a+$"}),
        id="regex-backtracking",
    ),
    pytest.param(
        "verify-needs-run",
        with_verify({"type": "command", "run": "  "}),
        with_verify({"type": "exit_code_zero"}),
        id="verify-needs-run",
    ),
    pytest.param(
        "command-gate",
        plan(nodes={"done": {"type": "exit", "verify": {"type": "command", "run": "pytest -q"}}}),
        plan(nodes={"done": {"type": "exit", "verify": {"type": "file_exists", "value": "out"}}}),
        id="command-gate",
    ),
    pytest.param("no-triggers", plan(triggers=[]), plan(), id="no-triggers"),
    pytest.param("blank-trigger", plan(triggers=["do the work", " "]), plan(), id="blank-trigger"),
    pytest.param(
        "duplicate-trigger",
        plan(triggers=["Fix bug", "fix  bug"]),
        plan(triggers=["fix bug", "debug"]),
        id="duplicate-trigger",
    ),
]


@pytest.mark.parametrize(("code", "bad", "good"), CASES)
def test_code_fails_on_the_bad_plan_and_not_on_its_fix(code: str, bad: Plan, good: Plan):
    found = [p for p in check_plan(bad) if p.code == code]
    assert found, f"{code} not reported; got {codes(bad)}"
    assert all(p.level == CODES[code][0] for p in found)
    # The fix is clean (a plan without triggers is always told it has none).
    assert {p.code for p in check_plan(good)} <= {"no-triggers"}


def test_every_code_has_a_case():
    # Tested below, and the next_plan checks in tests/test_chaining.py.
    library_level = {"bad-match-mode", "unknown-next-plan", "next-plan-loop"}
    # reported by `waygraph check` (dot-attribute: tests/test_check_dot.py)
    cli_level = {"load-error", "duplicate-plan", "no-plans", "dot-attribute"}
    from tests.test_check_human import COVERED as human_nodes  # human nodes
    from tests.test_check_kinds import COVERED as other_kinds  # state machines, generated plans

    covered = {case.values[0] for case in CASES} | library_level | cli_level | other_kinds
    covered |= human_nodes
    assert covered == set(CODES)


def test_codes_are_kebab_case_with_a_level_and_a_description():
    for code, (level, description) in CODES.items():
        assert code == code.lower() and " " not in code and "_" not in code
        assert level in ("error", "warning")
        assert description and not description.endswith(".")


# ---------------------------------------------------------------- locations and messages


def test_unknown_node_names_the_missing_end():
    (to_end,) = check_plan(plan(edges=[edge("work", "dnoe", "on_fail")]))
    assert (to_end.edge, to_end.field) == ("work -> dnoe (on_fail)", "to")
    assert "target" in to_end.message and "'dnoe'" in to_end.message
    from_end = [
        p for p in check_plan(plan(edges=[edge("wrok", "done")])) if p.code == "unknown-node"
    ]
    assert [(p.field, "source" in p.message) for p in from_end] == [("from", True)]


def test_nested_checks_are_located_by_path():
    verify = {
        "type": "all",
        "checks": [
            {"type": "any_output"},
            {"type": "any", "checks": [{"type": "regex", "value": "[unclosed"}]},
        ],
    }
    (problem,) = check_plan(with_verify(verify))
    assert problem.code == "bad-regex"
    assert (problem.plan, problem.node, problem.field) == (
        "p",
        "work",
        "verify.checks.1.checks.0.value",
    )


def test_when_predicates_are_checked_on_their_edge():
    p = plan(
        nodes={"route": {"type": "decision"}},
        edges=[
            edge("work", "route", "on_fail"),
            edge("route", "done", when={"type": "exit_code", "value": "0"}),
            edge("route", "work", "on_fail"),
        ],
    )
    (problem,) = check_plan(p)
    assert problem.code == "verify-needs-value"
    assert (problem.edge, problem.field, problem.node) == (
        "route -> done (always)",
        "when.value",
        None,
    )
    assert "without quotes" in problem.message


def test_no_start_suggests_the_start_node():
    (problem,) = [p for p in check_plan(plan(start="")) if p.code == "no-start"]
    assert "'start'" in problem.message and problem.field == "start"


def test_retry_edge_messages_say_what_happens():
    p = plan(
        nodes={"stuck": {"type": "escalate", "reason": "r"}},
        edges=[edge("work", "work", "on_retry"), edge("work", "stuck", "on_exhaust")],
    )
    by_code = {problem.code: problem.message for problem in check_plan(p)}
    assert "on_retry never fires" in by_code["on-retry-without-retries"]
    assert "on_exhaust fires on the first failure" in by_code["on-exhaust-without-retries"]


def test_a_trap_region_is_reported_once_at_its_entry():
    p = plan(
        nodes={"a": task(), "b": task(), "c": task()},
        edges=[
            edge("work", "a", "on_fail"),
            edge("a", "b", "on_success"),
            edge("b", "c", "on_success"),
            edge("c", "a", "on_fail"),
        ],
    )
    traps = [problem for problem in check_plan(p) if problem.code == "trap"]
    assert [t.node for t in traps] == ["a"]
    assert "'b'" in traps[0].message and "'c'" in traps[0].message


def test_a_graph_without_ends_is_one_trap_at_the_start():
    g = Graph.builder().task("a", verify=OK).task("b", verify=OK).chain("start", "a", "b")
    problems = check_plan(g.plan("p", triggers=["x"], trigger_threshold=1))
    assert [(p.code, p.node) for p in problems] == [("trap", "start")]


def test_success_loop_names_the_route():
    p = plan(
        nodes={"test": task()},
        replace_edges=[
            edge("start", "work"),
            edge("work", "test", "on_success"),
            edge("test", "work", "always"),
        ],
        max_transitions=40,
    )
    (loop,) = [problem for problem in check_plan(p) if problem.code == "success-loop"]
    assert "work -> test -> work" in loop.message and "(40)" in loop.message


def test_always_edge_used_only_on_failure_is_not_a_success_loop():
    # test's always edge fires only once it is exhausted, so passing runs leave.
    p = plan(
        nodes={"test": task()},
        replace_edges=[
            edge("start", "work"),
            edge("work", "test", "on_success"),
            edge("test", "done", "on_success"),
            edge("test", "work", "always"),
        ],
    )
    assert check_plan(p) == []


def test_a_decision_routing_on_when_is_a_legal_loop():
    p = plan(
        nodes={"route": {"type": "decision"}},
        replace_edges=[
            edge("start", "work"),
            edge("work", "route", "on_success"),
            edge("route", "done", when={"type": "output_contains", "value": "done"}),
            edge("route", "work", "on_fail"),
        ],
    )
    assert check_plan(p) == []


@pytest.mark.parametrize(
    ("verify", "route_edges", "unused", "reason"),
    [
        # when edges and no verify: the plain edges are the fallback, taken as a failure.
        (None, [edge("route", "work", "on_success")], "on_success", "counts as failure"),
        (OK, [edge("route", "work", "on_retry")], "on_retry", "decision nodes do not retry"),
    ],
)
def test_decision_edges_the_engine_never_chooses(verify, route_edges, unused, reason):
    route: dict[str, Any] = {"type": "decision", "verify": verify}
    p = plan(
        nodes={"route": route},
        edges=[
            edge("work", "route", "on_fail"),
            edge("route", "done", when={"type": "output_contains", "value": "skip"}),
            edge("route", "done", "on_fail"),
            *route_edges,
        ],
    )
    (problem,) = check_plan(p)
    assert problem.code == "unused-edge" and problem.edge == f"route -> work ({unused})"
    assert reason in problem.message


def test_a_decision_without_checks_routes_on_the_result_before_it():
    # Its failure edge is followed when the step before it failed (it used to
    # be reported unused, which the engine has not done since issue 32).
    p = plan(
        nodes={"route": {"type": "decision"}},
        edges=[
            edge("work", "route", "on_fail"),
            edge("route", "done"),
            edge("route", "work", "on_fail"),
        ],
    )
    assert codes(p) == ["decision-without-check"]
    assert "routes on the result of the step before it" in check_plan(p)[0].message


def test_the_same_edge_listed_twice_is_shadowed():
    base = plan()
    twice = base.graph.edges[-1]
    graph = base.graph.model_copy(update={"edges": (*base.graph.edges, twice)})
    problems = check_plan(base.model_copy(update={"graph": graph}))
    assert [(p.code, p.edge) for p in problems] == [("shadowed-edge", "work -> done (on_success)")]


def test_implicit_start_at_a_task_says_the_run_begins_there():
    p = plan(nodes={"start": None}, start="work", drop=("work",), edges=[])
    (problem,) = check_plan(p)
    assert problem.code == "implicit-start" and problem.level == "warning"
    assert "begins at that task" in problem.message


def test_dag_plans_skip_fan_out_analysis():
    g = (
        Graph.builder()
        .task("a", verify=OK)
        .task("b", verify=OK)
        .task("join", verify=OK, join="all")
        .exit("done")
        .edge("start", "a")
        .edge("start", "b")
        .edge("a", "join", "on_success")
        .edge("b", "join", "on_success")
        .edge("join", "done", "on_success")
    )
    assert check_plan(g.plan("dag", triggers=["x"], trigger_threshold=1)) == []


def test_problem_as_error_and_str():
    problem = Problem("trap", "warning", "stuck here", file="lib.json", plan="p", node="n")
    err = problem.as_error()
    assert isinstance(err, PlanFormatError)
    assert str(err) == "lib.json: plan 'p', node 'n': stuck here [trap]"
    assert str(problem) == "warning: lib.json: plan 'p', node 'n': stuck here [trap]"


def test_long_graphs_and_deep_predicates_do_not_recurse():
    n = 3000
    builder = Graph.builder()
    for i in range(n):
        builder.task(f"t{i}", verify=OK)
    builder.exit("done").chain("start", *[f"t{i}" for i in range(n)], "done")
    assert check_plan(builder.plan("long", triggers=["x"], trigger_threshold=1)) == []
    verify: dict[str, Any] = {"type": "regex", "value": "("}
    for _ in range(60):
        verify = {"type": "not", "checks": [verify]}
    (problem,) = check_plan(with_verify(verify))
    assert problem.code == "bad-regex" and problem.field.count("checks.0") == 60


# ---------------------------------------------------------------- libraries


def test_compat_libraries_have_no_errors():
    for name in ("agent-zero-linear-library-v1.json", "agent-zero-graph-library-v2.json"):
        library = load_library(COMPAT / name)  # validate=True: raises on an error
        assert [p for p in library.check() if p.level == "error"] == []
        assert len(library) == 10


def write_library(
    tmp_path: Path, plans: dict[str, Any], meta: dict[str, Any] | None = None
) -> Path:
    path = tmp_path / "lib.json"
    path.write_text(json.dumps({"_meta": meta or {"version": "2.0"}, "plans": plans}))
    return path


def test_load_library_raises_the_first_error_with_its_location(tmp_path: Path):
    body = copy.deepcopy(BASE)
    del body["id"]
    body["graph"]["nodes"]["work"]["verify"] = {"type": "output_contains"}
    path = write_library(tmp_path, {"deploy": body})
    with pytest.raises(PlanFormatError) as info:
        load_library(path)
    err = info.value
    assert (err.file, err.plan, err.node, err.field) == (
        str(path),
        "deploy",
        "work",
        "verify.value",
    )
    assert "[verify-needs-value]" in str(err) and "'deploy'" in str(err) and "'work'" in str(err)
    problems = load_library(path, validate=False).check()
    assert [(p.code, p.level, p.plan, p.node) for p in problems] == [
        ("verify-needs-value", "error", "deploy", "work")
    ]


def test_warnings_never_stop_loading(tmp_path: Path):
    body = copy.deepcopy(BASE)
    del body["id"]
    body["triggers"] = []
    body["graph"]["nodes"]["orphan"] = {"type": "task"}
    library = load_library(write_library(tmp_path, {"p": body}))
    assert sorted(p.code for p in library.check()) == [
        "no-triggers",
        "task-without-verify",
        "unreachable",
    ]
    assert all(
        p.level == "warning" and p.file == str(tmp_path / "lib.json") for p in library.check()
    )


def test_library_match_mode_is_checked():
    library = Library([plan()], meta={"match_mode": "substr"})
    (problem,) = check_library(library)
    assert (problem.code, problem.level, problem.field) == (
        "bad-match-mode",
        "error",
        "_meta.match_mode",
    )
    assert check_library(Library([plan()], meta={"match_mode": "substring"})) == []


# ---------------------------------------------------------------- docs/plans.md stays true

DOCS = Path(__file__).parent.parent / "docs" / "plans.md"


def doc_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S)


def test_docs_list_every_code_with_its_level():
    text = DOCS.read_text(encoding="utf-8")
    for code, (level, _) in CODES.items():
        assert f"| `{code}` | {level} |" in text, code


def test_docs_json_examples_parse():
    blocks = doc_blocks("json")
    assert len(blocks) > 10
    for block in blocks:
        json.loads(block)


def test_docs_complete_example_has_no_problems():
    (example,) = [b for b in doc_blocks("yaml") if b.startswith("_meta:")]
    _, plans = plans_from_data(yaml.safe_load(example))
    assert [p.id for p in plans] == ["release_package"]
    assert check_plan(plans[0]) == []
