"""Plan checker: where each problem is located and what its message says."""

from __future__ import annotations

from typing import Any

import pytest

from tests.check_helpers import OK, codes, edge, plan, task, with_verify
from waygraph import PlanFormatError
from waygraph.check import Problem, check_plan
from waygraph.model import Graph

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
