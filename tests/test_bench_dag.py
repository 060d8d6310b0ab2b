"""bench/dag.py builds valid, reproducible DAGs and computes their bounds right."""

from __future__ import annotations

import asyncio
import importlib.util
import random
import sys
from pathlib import Path

import pytest

from waygraph.planning import PlanningPattern, Tool, find_cycles, validate_plan

BENCH = Path(__file__).parent.parent / "bench" / "dag.py"

pytestmark = pytest.mark.timeout(30)


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_dag", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_dag"] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


dag_bench = load_bench()
import _dag_shapes as shapes  # noqa: E402  (bench/ is on the path once the script is loaded)


def all_paths_longest(deps, duration):
    """The critical path by brute force: walk every chain back from every step."""

    def longest_to(sid):
        return duration[sid] + max((longest_to(d) for d in deps[sid]), default=0)

    return max(longest_to(sid) for sid in deps)


@pytest.mark.parametrize("steps", [1, 7, 50, 500])
def test_random_dag_is_a_valid_acyclic_plan_of_the_requested_size(steps):
    dag = dag_bench.random_dag(steps, seed=steps, latency=(0.005, 0.02))
    assert len(dag.ids) == len(set(dag.ids)) == steps
    position = {sid: i for i, sid in enumerate(dag.ids)}
    for sid in dag.ids:
        deps = dag.deps[sid]
        assert len(deps) == len(set(deps)) <= 1 + shapes.EXTRA_DEPS
        assert all(position[d] < position[sid] for d in deps)  # ids are in topological order
        assert 0.005 <= dag.latency[sid] <= 0.02
    assert 1 <= dag.max_width <= shapes.MAX_WIDTH

    plan = dag_bench.to_plan(dag)
    assert [s.id for s in plan.steps] == list(dag.ids)
    assert {s.id: s.dependencies for s in plan.steps} == dict(dag.deps)
    assert find_cycles(plan) == []
    tools = {"call": Tool(dag_bench.Recorder().call, name="call")}
    assert validate_plan(plan, tools, PlanningPattern(max_steps=steps)) == []


def test_the_same_seed_gives_the_same_dag_and_latencies_do_not_change_its_shape():
    a = dag_bench.random_dag(100, seed=3, latency=(0.01, 0.01))
    b = dag_bench.random_dag(100, seed=3, latency=(0.005, 0.02))
    c = dag_bench.random_dag(100, seed=4)
    assert a.deps == b.deps and a.layers == b.layers
    assert a == dag_bench.random_dag(100, seed=3, latency=(0.01, 0.01))
    assert set(a.latency.values()) == {0.01}
    assert a.deps != c.deps


def test_every_step_waits_on_the_layer_before_so_depth_equals_layers():
    dag = dag_bench.random_dag(200, seed=9)
    unit = {sid: 1 for sid in dag.ids}
    assert dag_bench.critical_path(dag.deps, unit) == dag.layers


def test_critical_path_of_a_known_dag():
    #   a(1) -> b(2) -> d(1)
    #   a(1) -> c(5) -> d(1)      longest: a, c, d = 7
    deps = {"a": (), "b": ("a",), "c": ("a",), "d": ("b", "c"), "e": ()}
    duration = {"a": 1, "b": 2, "c": 5, "d": 1, "e": 6}
    assert dag_bench.critical_path(deps, duration) == 7
    assert dag_bench.critical_path({"x": ()}, {"x": 3}) == 3


@pytest.mark.parametrize("seed", range(5))
def test_critical_path_matches_brute_force_on_random_dags(seed):
    dag = dag_bench.random_dag(40, seed=seed, latency=(0.001, 0.05))
    expected = all_paths_longest(dag.deps, dag.latency)
    assert dag_bench.critical_path(dag.deps, dag.latency) == pytest.approx(expected)


def test_critical_path_accepts_any_order_and_refuses_cycles_and_unknown_steps():
    # Dependents listed before their dependencies: the order of the mapping does not matter.
    assert dag_bench.critical_path({"b": ("a",), "a": ()}, {"a": 1, "b": 1}) == 2
    with pytest.raises(ValueError, match="cycle"):
        dag_bench.critical_path({"a": ("b",), "b": ("a",)}, {"a": 1, "b": 1})
    with pytest.raises(ValueError, match="unknown steps"):
        dag_bench.critical_path({"a": ("zz",)}, {"a": 1})


def test_list_schedule_lies_between_the_lower_bound_and_grahams_upper_bound():
    rng = random.Random(1)
    for seed in range(5):
        dag = dag_bench.random_dag(60, seed=seed, latency=(0.005, 0.02))
        cp = dag_bench.critical_path(dag.deps, dag.latency)
        work = dag.work
        assert dag_bench.list_schedule(dag.ids, dag.deps, dag.latency, 1) == pytest.approx(work)
        assert dag_bench.list_schedule(dag.ids, dag.deps, dag.latency, 60) == pytest.approx(cp)
        limit = rng.randint(2, 8)
        made = dag_bench.list_schedule(dag.ids, dag.deps, dag.latency, limit)
        assert max(cp, work / limit) <= made + 1e-12
        assert made <= work / limit + cp * (1 - 1 / limit) + 1e-12


def test_list_schedule_starts_the_longest_chain_first():
    # a is last in plan order but has c waiting behind it, so it takes one of the two
    # slots at once: 10 time units, where plan order (x, y, then a, then c) takes 15.
    deps = {"x": (), "y": (), "a": (), "c": ("a",)}
    duration = dict.fromkeys(deps, 5)
    assert shapes.chain_below(deps) == {"x": 0, "y": 0, "a": 1, "c": 0}
    assert dag_bench.list_schedule(["x", "y", "a", "c"], deps, duration, 2) == 10
    assert dag_bench.list_schedule(["x", "y", "a", "c"], deps, duration, 1) == 20


def test_the_plan_runs_through_the_agent_and_every_step_is_recorded():
    dag = dag_bench.random_dag(12, seed=2)
    sample = asyncio.run(
        dag_bench.run_waygraph(dag, dag_bench.to_plan(dag, zero=True), "parallel", 12)
    )
    assert set(sample.spans) == set(dag.ids)
    assert sample.real_cp <= sample.makespan
