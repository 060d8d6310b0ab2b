"""The wrapper :mod:`waygraph.sandbox.runner` runs each command under (Linux only).

Run as ``python -I -S _reaper.py --parent PID -- ARGV...``: it makes itself a
child subreaper, arms a parent-death signal, enters a user namespace of its
own where allowed, turns off its dumpability, runs ARGV in a process group
of its own, and when ARGV ends, when it is signalled (the deadline, stop,
Ctrl-C) or when waygraph dies, kills and reaps every descendant it has. Its
exit code is ARGV's (128 + N for a signal). It imports only the standard
library's smallest modules, so each command costs little more than one
interpreter start.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

#: Exit codes (the shell's conventions): could not start, stopped.
EXIT_CANNOT_START = 127
EXIT_STOPPED = 130
# prctl options (linux/prctl.h) and unshare flags (linux/sched.h).
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 1, 4, 36
_CLONE_NEWUSER = 0x10000000


class _Stop(Exception):
    """Raised by the wrapper's signal handler: waygraph asked it to end the tree."""


def _descendants(root: int) -> list[int]:
    """Every process below ``root``, from /proc (children files need CONFIG_PROC_CHILDREN)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue  # it exited while we looked
        children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _kill_all() -> None:
    """Kill every descendant and reap until none is left (orphans come to us: subreaper)."""
    me = os.getpid()
    while True:
        for pid in _descendants(me):
            # Not contextlib.suppress: importing contextlib would slow every command.
            try:  # noqa: SIM105
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass  # it is gone already
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def _own_user_namespace(libc: ctypes.CDLL) -> None:
    """Enter a user namespace of our own (the command inherits it), mapping our ids to
    themselves: the command keeps its uid, but holds no capability over waygraph (a
    root command cannot ptrace-read a non-dumpable waygraph). Skipped where refused."""
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(_CLONE_NEWUSER) != 0:
        return
    maps = (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1"))
    try:
        for name, text in maps:
            with open(f"/proc/self/{name}", "w") as file:
                file.write(text)
    except OSError:
        pass  # unmapped: the command runs as nobody in the namespace, still confined


def _wrap(parent: int, argv: list[str]) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    # Die (through our SIGTERM handler, which kills the tree) when waygraph dies.
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:
        return EXIT_STOPPED  # waygraph died before the signal was armed
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    _own_user_namespace(libc)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)

    def stop(signum: int, frame: object) -> None:
        raise _Stop

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, stop)
    code = EXIT_STOPPED
    try:
        # Its own process group; default SIGPIPE (Python ignores it) so `yes | head` ends.
        child = os.posix_spawnp(
            argv[0],
            argv,
            os.environ,
            setpgroup=0,
            setsigdef=(signal.SIGPIPE, signal.SIGXFSZ, signal.SIGTERM, signal.SIGINT),
        )
        while True:
            pid, status = os.waitpid(-1, 0)
            if pid == child:
                code = os.waitstatus_to_exitcode(status)
                code = 128 - code if code < 0 else code
                break
    except _Stop:
        pass
    except OSError as exc:
        print(f"waygraph: cannot run {argv[0]}: {exc}", file=sys.stderr, flush=True)
        code = EXIT_CANNOT_START
    # Whatever the command left behind dies with it: nothing it started writes afterwards.
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    _kill_all()
    return code


def _main(args: list[str]) -> int:
    if len(args) < 4 or args[0] != "--parent" or args[2] != "--" or not args[1].isdigit():
        print("usage: _reaper.py --parent PID -- ARGV...", file=sys.stderr)
        return 2
    return _wrap(int(args[1]), args[3:])


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
