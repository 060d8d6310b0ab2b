"""Where a benchmark's CPU goes on the whole machine: per process group and in all.

bench/events.py reads these around the 3-process stack's batch: the planner,
the worker, the client (the benchmark itself), the NATS server and the
PostgreSQL server each take a share of the machine's CPUs, and a target set
in plans per second is also a budget of CPU per plan for all of them.
:func:`budget` says what that budget leaves the planner once the others have
taken theirs (and never more than one CPU: a planner process runs one event
loop).

Linux only (``/proc``); elsewhere every figure is NaN and the budget too.

Example:
    >>> b = budget(plans_per_s=500, cpus=2, others_ms=1.5)
    >>> b.allowed_ms, b.one_cpu_ms, b.planner_ms
    (4.0, 2.0, 2.0)
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Budget", "Snapshot", "budget", "machine_seconds", "pids_named", "process_seconds"]

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_seconds(pid: int, main: bool = False) -> float:
    """User + system CPU seconds of a process so far, or of its main thread only;
    NaN when it is gone or there is no /proc."""
    path = f"/proc/{pid}/task/{pid}/stat" if main else f"/proc/{pid}/stat"
    try:
        # The command name is in parentheses and may hold spaces: read after it.
        fields = Path(path).read_text().rpartition(") ")[2].split()
    except OSError:
        return math.nan
    return (int(fields[11]) + int(fields[12])) / _TICK


def machine_seconds() -> float:
    """CPU seconds every CPU of the machine spent busy so far (not idle, not waiting
    on I/O); NaN without /proc."""
    try:
        first = Path("/proc/stat").read_text().splitlines()[0].split()
    except OSError:
        return math.nan
    ticks = [int(v) for v in first[1:9]]  # user nice system idle iowait irq softirq steal
    return (sum(ticks) - ticks[3] - ticks[4]) / _TICK


def pids_named(*names: str) -> list[int]:
    """The processes whose command name starts with one of ``names`` (a server's
    processes: ``postgres`` has one per connection)."""
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            comm = Path(f"/proc/{entry}/comm").read_text().strip()
        except OSError:
            continue
        if comm.startswith(names):
            found.append(int(entry))
    return found


class Snapshot:
    """CPU seconds of named groups of processes and of the machine, read twice.

    A group is a list of pids, or a function that finds them (a server's
    processes, :func:`pids_named`): that is asked again at the second read,
    and a process that appeared in between (a connection a pool opened
    meanwhile) counts all it used. A process that ended in between counts
    nothing after the first read.
    """

    def __init__(self, groups: dict[str, Iterable[int] | Callable[[], list[int]]]) -> None:
        self.groups = groups
        self.before = {name: self._seconds(self._pids(name)) for name in groups}
        self.before_machine = machine_seconds()

    def _pids(self, name: str) -> dict[int, None]:
        group = self.groups[name]
        return dict.fromkeys(group() if callable(group) else group)

    @staticmethod
    def _seconds(pids: Iterable[int]) -> dict[int, float]:
        return {p: s for p in pids if not math.isnan(s := process_seconds(p))}

    def per_unit_ms(self, units: int) -> dict[str, float]:
        """Milliseconds of CPU per unit of work (a plan) since this snapshot, by group,
        with the whole machine's under ``machine``."""
        spent = {}
        for name, before in self.before.items():
            after = self._seconds({**dict.fromkeys(before), **self._pids(name)})
            used = sum(s - before.get(p, 0.0) for p, s in after.items())
            spent[name] = used / units * 1e3
        spent["machine"] = (machine_seconds() - self.before_machine) / units * 1e3
        return spent


@dataclass(frozen=True)
class Budget:
    """The CPU a unit of work may cost at a rate, and what that leaves the planner."""

    plans_per_s: float
    cpus: int
    allowed_ms: float  # all the machine's CPUs per plan at that rate
    others_ms: float  # what everything but the planner used per plan
    one_cpu_ms: float  # one CPU per plan at that rate: all one event loop can use
    planner_ms: float  # the smaller of allowed_ms - others_ms and one_cpu_ms


def budget(plans_per_s: float, cpus: int, others_ms: float) -> Budget:
    """The machine CPU a plan may cost at ``plans_per_s`` on ``cpus`` CPUs, and what
    is left to one planner process when the other processes take ``others_ms`` a
    plan: the rest of the machine, but never more than one CPU (one event loop,
    one GIL). Negative: no planner could keep that rate."""
    if plans_per_s <= 0:
        return Budget(plans_per_s, cpus, math.inf, others_ms, math.inf, math.inf)
    allowed, one_cpu = cpus / plans_per_s * 1e3, 1e3 / plans_per_s
    return Budget(plans_per_s, cpus, allowed, others_ms, one_cpu, min(allowed - others_ms, one_cpu))
