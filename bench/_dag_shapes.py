"""bench/dag.py's workload: seeded, layered random DAGs, and the bounds no scheduler beats.

Pure functions of the DAG and the durations its steps took: the critical
path, the chain below each step (the parallel modes' priority), and the
list schedule a zero-overhead scheduler with waygraph's policy reaches on
a bounded machine.

Example:
    >>> dag = random_dag(20, seed=1)
    >>> len(dag.ids), critical_path(dag.deps, dag.latency) <= dag.work
    (20, True)
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = [
    "EXTRA_DEPS",
    "LOOKBACK",
    "MAX_WIDTH",
    "Dag",
    "chain_below",
    "critical_path",
    "list_schedule",
    "random_dag",
    "topological_order",
]

MAX_WIDTH = 12
EXTRA_DEPS = 2  # besides the one from the layer before
LOOKBACK = 3  # layers an extra dependency may reach back


@dataclass(frozen=True)
class Dag:
    """A step DAG: ids in a topological order, dependencies and latencies by id."""

    ids: tuple[str, ...]
    deps: Mapping[str, tuple[str, ...]]
    latency: Mapping[str, float]
    layers: int
    max_width: int

    @property
    def work(self) -> float:
        """Total tool time: what sequential execution takes at best."""
        return sum(self.latency.values())


def random_dag(steps: int, *, seed: int, latency: tuple[float, float] = (0.01, 0.01)) -> Dag:
    """A layered random DAG of ``steps`` steps; the same seed gives the same DAG.

    Example:
        >>> dag = random_dag(20, seed=1)
        >>> len(dag.ids), abs(critical_path(dag.deps, dag.latency) - dag.layers * 0.01) < 1e-9
        (20, True)
    """
    if steps < 1:
        raise ValueError(f"a DAG needs at least one step, not {steps}")
    shape = random.Random(seed)
    layers: list[list[str]] = []
    deps: dict[str, tuple[str, ...]] = {}
    while len(deps) < steps:
        width = min(shape.randint(1, MAX_WIDTH), steps - len(deps))
        layer = [f"s{len(deps) + k}" for k in range(width)]
        for sid in layer:
            chosen: list[str] = []
            if layers:
                chosen.append(shape.choice(layers[-1]))
                earlier = [d for lay in layers[-LOOKBACK:] for d in lay if d not in chosen]
                chosen += shape.sample(earlier, min(len(earlier), shape.randint(0, EXTRA_DEPS)))
            deps[sid] = tuple(chosen)
        layers.append(layer)
    # Latencies come from their own stream, so both latency sets share one shape.
    lo, hi = latency
    draw = random.Random(f"{seed}-latency")
    lat = {sid: round(draw.uniform(lo, hi), 6) for sid in deps}
    return Dag(tuple(deps), deps, lat, len(layers), max(len(lay) for lay in layers))


def topological_order(deps: Mapping[str, Iterable[str]]) -> list[str]:
    """Ids with every dependency before its dependents; ValueError on a cycle or unknown id."""
    pending = {sid: set(ds) for sid, ds in deps.items()}
    for sid, ds in pending.items():
        unknown = ds - pending.keys()
        if unknown:
            raise ValueError(f"step {sid!r} depends on unknown steps {sorted(unknown)}")
    dependents: dict[str, list[str]] = {sid: [] for sid in pending}
    for sid, ds in pending.items():
        for d in ds:
            dependents[d].append(sid)
    order = [sid for sid, ds in pending.items() if not ds]
    for sid in order:  # grows while it is walked
        for nxt in dependents[sid]:
            pending[nxt].discard(sid)
            if not pending[nxt]:
                order.append(nxt)
    if len(order) < len(pending):
        raise ValueError(f"dependencies form a cycle among {sorted(pending.keys() - set(order))}")
    return order


def critical_path(deps: Mapping[str, Iterable[str]], duration: Mapping[str, float]) -> float:
    """The longest chain of durations through the DAG: the fastest any schedule can finish.

    Example:
        >>> critical_path({"a": (), "b": ("a",), "c": ("a",)}, {"a": 1, "b": 2, "c": 5})
        6
    """
    finish: dict[str, float] = {}
    for sid in topological_order(deps):
        finish[sid] = max((finish[d] for d in deps[sid]), default=0) + duration[sid]
    return max(finish.values(), default=0)


def chain_below(deps: Mapping[str, Iterable[str]]) -> dict[str, int]:
    """For each step, the number of steps in the longest chain that waits for it.

    Example:
        >>> chain_below({"a": (), "b": ("a",), "c": ("b",), "d": ()})
        {'a': 2, 'b': 1, 'c': 0, 'd': 0}
    """
    below = dict.fromkeys(deps, 0)
    for sid in reversed(topological_order(deps)):
        for dep in deps[sid]:
            below[dep] = max(below[dep], below[sid] + 1)
    return below


def list_schedule(
    dag_ids: Iterable[str],
    deps: Mapping[str, Iterable[str]],
    duration: Mapping[str, float],
    limit: int,
) -> float:
    """Makespan of a zero-overhead scheduler with waygraph's parallel-mode policy: whenever
    a slot frees, start the ready steps with the longest chain behind them first (plan
    order among equals), at most ``limit`` at a time.

    Example:
        >>> list_schedule("abc", {"a": (), "b": (), "c": ()}, {"a": 1, "b": 1, "c": 1}, 2)
        2
    """
    below = chain_below(deps)
    order = sorted(dag_ids, key=lambda sid: -below[sid])  # stable: plan order among equals
    waiting = {sid: set(deps[sid]) for sid in order}
    running: list[tuple[float, str]] = []  # (finish time, id)
    now: float = 0
    while waiting or running:
        for sid in [s for s in order if s in waiting and not waiting[s]]:
            if len(running) >= limit:
                break
            del waiting[sid]
            running.append((now + duration[sid], sid))
        if not running:
            raise ValueError("dependencies form a cycle or name unknown steps")
        running.sort()
        now = running[0][0]
        while running and running[0][0] == now:
            _, done = running.pop(0)
            for ds in waiting.values():
                ds.discard(done)
    return now
