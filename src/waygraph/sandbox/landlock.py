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
  ``/opt``, ``/var/lib``), the Python installation it was started from, and
  the folders on ``PATH``; read ``/proc``, ``/sys`` and the folders
  ``/etc/resolv.conf`` may point into under ``/run`` (:data:`RUN`); use the
  devices in :data:`DEVICES` (``/dev/null``, ``/dev/zero``, ``/dev/urandom``,
  a terminal, pseudo-terminals);
- nothing else: no reading of the user's home (outside those folders), of
  ``/tmp`` or of other projects, and no writing anywhere else. Not the rest
  of ``/dev`` either: ``/dev/shm`` holds other programs' shared memory (a
  database's buffers, files people keep in RAM) and a disk's device is the
  whole disk to root, so POSIX shared memory and named semaphores
  (``multiprocessing``'s locks) are not available to a confined command. Not
  the rest of ``/run``: ``/run/secrets`` is where containers mount secrets,
  ``/run/user`` a login's keyrings and sockets. Paths are the
  kernel's business, so symlinks, ``..``, globbing, ``$(dirname $PWD)`` or a
  ``python3 -c "open(...)"`` reach nothing more than the rules allow.

Without network (``waygraph plan``'s default; ``--allow-network`` opens it),
a command cannot open internet or UNIX sockets: a seccomp filter refuses
``socket()`` for them (UDP and pathname UNIX sockets included, so local
daemons such as PostgreSQL are out of reach), and Landlock refuses TCP (ABI
4+) and abstract UNIX sockets (ABI 6+) as well. Landlock needs Linux 5.13 or
newer with Landlock enabled; :func:`abi_version` says whether it is there (0:
it is not).

Example:
    >>> abi_version() >= 0
    True
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterable, Sequence

__all__ = ["DEVICES", "RUN", "SYSTEM", "abi_version", "command_line", "read_only_paths", "restrict"]

# Syscall numbers: the same on every architecture (asm-generic and x86_64).
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
# Network rights (ABI 4) and scopes (ABI 6): handled with no rule, they are refused.
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1

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
)
#: The folders of ``/run`` a command may read: where ``/etc/resolv.conf`` points
#: (systemd-resolved, resolvconf, NetworkManager), so that names resolve.
RUN = ("/run/systemd/resolve", "/run/resolvconf", "/run/NetworkManager")
#: The devices a command may use (read, write and, for terminals, ioctl).
DEVICES = (
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
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
    paths = [*SYSTEM, *RUN, sys.prefix, sys.base_prefix, sys.exec_prefix, *extra]
    paths += os.environ.get("PATH", "").split(os.pathsep)
    seen: list[str] = []
    for path in paths:
        if path and os.path.isabs(path) and os.path.isdir(path) and path not in seen:
            seen.append(path)
    return seen


def restrict(writable: Sequence[str], readable: Sequence[str], *, network: bool = True) -> None:
    """Confine this process (and what it starts) to the rules in the module docstring.

    Without ``network``, TCP (Landlock, ABI 4+), abstract UNIX sockets (ABI
    6+) and every new internet or UNIX socket (seccomp) are refused too. With
    ABI 6+ the process can signal only processes inside its sandbox.
    Raises OSError when the kernel refuses; nothing is confined then.
    """
    abi = abi_version()
    if abi < 1:
        raise OSError("Landlock is not available in this kernel")
    libc = _libc()
    handled = _handled(abi)
    net = 0 if network or abi < 4 else _NET_BIND_TCP | _NET_CONNECT_TCP
    # Signals only inside the sandbox (ABI 6+): a command cannot kill or stop the
    # runner's wrapper (which must outlive it to reap its tree) nor waygraph.
    scoped = 0 if abi < 6 else _SCOPE_SIGNAL | (0 if network else _SCOPE_ABSTRACT_UNIX_SOCKET)
    # The struct grew with the ABI (fs; fs, net; fs, net, scoped): pass what is used.
    fields = (handled, net, scoped)[: 3 if scoped else 2 if net else 1]
    attr = (ctypes.c_uint64 * len(fields))(*fields)
    ruleset = libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.sizeof(attr), 0)
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        rules = [(p, handled & (READ | WRITE)) for p in writable]
        rules += [(p, handled & READ) for p in readable]
        rules += [("/proc", READ_FILE | READ_DIR), ("/sys", READ_FILE | READ_DIR)]
        device = handled & (READ_FILE | READ_DIR | WRITE_FILE | IOCTL_DEV | TRUNCATE)
        rules += [(path, device) for path in DEVICES]
        for path, access in rules:
            _add_rule(libc, ruleset, path, access)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        if libc.syscall(_RESTRICT_SELF, ruleset, 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
    if not network:
        _refuse_sockets(libc)


class _SockFilter(ctypes.Structure):
    _fields_ = (
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    )


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter)))


# (audit arch, socket, io_uring_setup) by machine: seccomp filters see syscall numbers.
_SECCOMP_ARCH = {"x86_64": (0xC000003E, 41, 425), "aarch64": (0xC00000B7, 198, 425)}
_AF_UNIX, _AF_INET, _AF_INET6 = 1, 2, 10
_EACCES = 13


def _refuse_sockets(libc: ctypes.CDLL) -> None:
    """A seccomp filter: socket() for UNIX, IPv4 and IPv6 fails with EACCES (Landlock
    does not cover UDP or pathname UNIX sockets), and so does io_uring (it can open
    sockets without socket()) and any syscall of another ABI (i386's socketcall).
    socketpair() stays allowed: it reaches nothing outside."""
    arch = _SECCOMP_ARCH.get(os.uname().machine)
    if arch is None:
        raise OSError(f"cannot refuse the network on {os.uname().machine} (no seccomp table)")
    audit, socket_nr, uring_nr = arch
    ld, jeq, ret = 0x20, 0x15, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_RET|K
    allow, deny = 0x7FFF0000, 0x00050000 | _EACCES  # SECCOMP_RET_ALLOW, RET_ERRNO
    program = [
        (ld, 0, 0, 4),  # arch
        (jeq, 0, 9, audit),  # another ABI: deny
        (ld, 0, 0, 0),  # syscall number
        (0x45, 7, 0, 0x40000000),  # BPF_JSET: x32's numbers (x86_64) are another ABI
        (jeq, 6, 0, uring_nr),
        (jeq, 0, 4, socket_nr),  # not socket(): allow
        (ld, 0, 0, 16),  # socket()'s domain (low word of args[0])
        (jeq, 3, 0, _AF_UNIX),
        (jeq, 2, 0, _AF_INET),
        (jeq, 1, 0, _AF_INET6),
        (ret, 0, 0, allow),
        (ret, 0, 0, deny),
    ]
    filters = (_SockFilter * len(program))(*(_SockFilter(*op) for op in program))
    prog = _SockFprog(len(program), filters)
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")


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


def command_line(workspace: str, tmp: str, command: str, *, network: bool = True) -> list[str]:
    """The argv that runs ``command`` with ``/bin/sh`` confined to ``workspace`` and ``tmp``.

    The launcher starts without ``site`` (fast, and nothing of the workspace
    is imported), so this process's own Python folders (a virtual
    environment's) are passed on as readable. Without ``network`` the
    command cannot open internet or UNIX sockets (see :func:`restrict`).

    Example:
        >>> command_line("/w", "/t", "ls", network=False)[-5:]
        ['--no-network', '/w', '/t', '--', 'ls']
    """
    reads = [arg for p in {sys.prefix, sys.exec_prefix} for arg in ("--read", p)]
    launcher = [sys.executable, "-I", "-S", os.path.abspath(__file__)]
    net = [] if network else ["--no-network"]
    return [*launcher, *reads, *net, workspace, tmp, "--", command]


def _main(argv: list[str]) -> int:
    extra: list[str] = []
    while len(argv) >= 2 and argv[0] == "--read":
        extra.append(argv[1])
        argv = argv[2:]
    network = argv[:1] != ["--no-network"]
    argv = argv if network else argv[1:]
    if len(argv) != 4 or argv[2] != "--":
        usage = "usage: landlock.py [--read PATH]... [--no-network] WORKSPACE TMP -- COMMAND"
        print(usage, file=sys.stderr)
        return 2
    workspace, tmp, _, command = argv
    try:
        restrict([workspace, tmp], read_only_paths(extra), network=network)
    except OSError as exc:
        print(f"waygraph: cannot confine the command: {exc}", file=sys.stderr)
        return 126
    os.execv("/bin/sh", ["/bin/sh", "-c", command])
    return 127  # pragma: no cover - execv does not return


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
