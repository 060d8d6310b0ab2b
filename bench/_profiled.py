"""Run a module as ``python -m`` does, profiled; bench/events.py uses it for the planner.

``python bench/_profiled.py OUT MODULE ARGS...``: cProfile timed in the main
thread's CPU time, written to OUT when the module returns or exits.
(``python -m cProfile`` times the wall clock, so a call that releases the GIL,
``os.urandom`` or a socket send, shows the time the event loop then waits for
the store's threads to give it back.) cProfile's per-call cost inflates small
functions (about 3x the planner's CPU), so with OUT ending in ``.txt`` the
module is sampled instead: every millisecond of the process's CPU time
(``ITIMER_PROF``) the main thread's stack is recorded, and OUT gets each
function's share of the samples, inclusive and own, as text.
"""

from __future__ import annotations

import collections
import cProfile
import runpy
import signal
import sys
import time
from types import FrameType


def _where(frame: FrameType) -> str:
    code = frame.f_code
    return f"{code.co_filename.rpartition('/site-packages/')[2]}:{code.co_name}"


def _sampled(out: str, module: str) -> None:
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = [0]

    def sample(signum: int, frame: FrameType | None) -> None:
        total[0] += 1
        seen = set()
        if frame is not None:
            own[_where(frame)] += 1
        while frame is not None:
            name = _where(frame)
            if name not in seen:
                seen.add(name)
                inclusive[name] += 1
            frame = frame.f_back

    signal.signal(signal.SIGPROF, sample)
    signal.setitimer(signal.ITIMER_PROF, 0.001, 0.001)
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit:
        pass
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        with open(out, "w") as f:
            f.write(f"{total[0]} samples\n\ninclusive %\n")
            for name, n in inclusive.most_common(150):
                f.write(f"{100 * n / total[0]:6.1f} {name}\n")
            f.write("\nown %\n")
            for name, n in own.most_common(80):
                f.write(f"{100 * n / total[0]:6.1f} {name}\n")


def main() -> None:
    out, module, *args = sys.argv[1:]
    sys.argv = [module, *args]
    if out.endswith(".txt"):
        _sampled(out, module)
        return
    profile = cProfile.Profile(time.thread_time)
    try:
        profile.runcall(runpy.run_module, module, run_name="__main__", alter_sys=True)
    except SystemExit:
        pass
    finally:
        profile.dump_stats(out)


if __name__ == "__main__":
    main()
