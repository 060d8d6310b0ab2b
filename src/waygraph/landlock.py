"""Kernel-enforced confinement for shell commands, with Linux Landlock.

``waygraph plan``'s shell tool runs every command through this module as a
small launcher (``python -I -S landlock.py WORKSPACE TMP -- COMMAND``): the
launcher restricts itself with Landlock, then replaces itself with
``/bin/sh -c COMMAND``, so the command and everything it starts inherit the
rules. No root is needed, and root is confined too.

What a confined command may do:

- read, write, create and delete anything under the workspace and under a
  private temporary folder (``TMPDIR`` points there);
- read and execute the system (``/usr``, ``/bin``, ``/lib*``, ``/etc``,
  ``/opt``, ``/var/lib``, ``/run``), the Python installation it was started
  from, and the folders on ``PATH``; read ``/proc`` and ``/sys``; use the
  devices in ``/dev`` (``/dev/null``, ``/dev/urandom``, a terminal);
- nothing else: no reading of the user's home (outside those folders), of
  ``/tmp`` or of other projects, and no writing anywhere else. Paths are the
  kernel's business, so symlinks, ``..``, globbing, ``$(dirname $PWD)`` or a
  ``python3 -c "open(...)"`` reach nothing more than the rules allow.

The network is not confined. Landlock needs Linux 5.13 or newer with Landlock
enabled; :func:`abi_version` says whether it is there (0: it is not).

Example:
    >>> abi_version() >= 0
    True
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterable, Sequence

__all__ = ["abi_version", "command_line", "read_only_paths", "restrict"]

# Syscall numbers: the same on every architecture (asm-generic and x86_64).
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5

_ABI_RIGHTS = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
READ = EXECUTE | READ_FILE | READ_DIR
WRITE = (
    WRITE_FILE
    | REMOVE_DIR
    | REMOVE_FILE
    | MAKE_DIR
    | MAKE_REG
    | MAKE_SOCK
    | MAKE_FIFO
    | MAKE_SYM
    | REFER
    | TRUNCATE
)
#: Folders a command may read and run programs from (those that exist).
SYSTEM = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/var/lib",
    "/run",
)


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is unavailable."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        version = _libc().syscall(_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION)
    except (OSError, AttributeError):
        return 0
    return max(int(version), 0)


def _handled(abi: int) -> int:
    return _ABI_RIGHTS[max(v for v in _ABI_RIGHTS if v <= abi)]


def read_only_paths(extra: Iterable[str] = ()) -> list[str]:
    """The folders a confined command may read: the system, Python, ``PATH``, ``extra``."""
    paths = [*SYSTEM, sys.prefix, sys.base_prefix, sys.exec_prefix, *extra]
    paths += os.environ.get("PATH", "").split(os.pathsep)
    seen: list[str] = []
    for path in paths:
        if path and os.path.isabs(path) and os.path.isdir(path) and path not in seen:
            seen.append(path)
    return seen


def restrict(writable: Sequence[str], readable: Sequence[str]) -> None:
    """Confine this process (and what it starts) to the rules in the module docstring.

    Raises OSError when the kernel refuses; nothing is confined then.
    """
    abi = abi_version()
    if abi < 1:
        raise OSError("Landlock is not available in this kernel")
    libc = _libc()
    handled = _handled(abi)
    attr = ctypes.c_uint64(handled)
    ruleset = libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.sizeof(attr), 0)
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        rules = [(p, handled & (READ | WRITE)) for p in writable]
        rules += [(p, handled & READ) for p in readable]
        rules += [("/proc", READ_FILE | READ_DIR), ("/sys", READ_FILE | READ_DIR)]
        rules += [("/dev", handled & (READ_FILE | READ_DIR | WRITE_FILE | IOCTL_DEV | TRUNCATE))]
        for path, access in rules:
            _add_rule(libc, ruleset, path, access)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        if libc.syscall(_RESTRICT_SELF, ruleset, 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)


def _add_rule(libc: ctypes.CDLL, ruleset: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a folder that is not there needs no rule
    try:
        if not os.path.isdir(path):
            access &= EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
        rule = _PathBeneath(access, fd)
        if libc.syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
    finally:
        os.close(fd)


def command_line(workspace: str, tmp: str, command: str) -> list[str]:
    """The argv that runs ``command`` with ``/bin/sh`` confined to ``workspace`` and ``tmp``.

    The launcher starts without ``site`` (fast, and nothing of the workspace
    is imported), so this process's own Python folders (a virtual
    environment's) are passed on as readable.

    Example:
        >>> command_line("/w", "/t", "ls")[-4:]
        ['/w', '/t', '--', 'ls']
    """
    reads = [arg for p in {sys.prefix, sys.exec_prefix} for arg in ("--read", p)]
    launcher = [sys.executable, "-I", "-S", os.path.abspath(__file__)]
    return [*launcher, *reads, workspace, tmp, "--", command]


def _main(argv: list[str]) -> int:
    extra: list[str] = []
    while len(argv) >= 2 and argv[0] == "--read":
        extra.append(argv[1])
        argv = argv[2:]
    if len(argv) != 4 or argv[2] != "--":
        print("usage: landlock.py [--read PATH]... WORKSPACE TMP -- COMMAND", file=sys.stderr)
        return 2
    workspace, tmp, _, command = argv
    try:
        restrict([workspace, tmp], read_only_paths(extra))
    except OSError as exc:
        print(f"waygraph: cannot confine the command: {exc}", file=sys.stderr)
        return 126
    os.execv("/bin/sh", ["/bin/sh", "-c", command])
    return 127  # pragma: no cover - execv does not return


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
