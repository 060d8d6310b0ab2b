"""Who runs a stored run: a lease in the run's record, so one process runs it at a time.

The lease is a field of the run record (``lease``: the owner's host, pid and
a random token, and the expiry as epoch seconds). It is written by the
record's own version-checked commits: whoever starts or resumes the run
writes it with the version it read, so of two processes that read the same
version one commit wins and the other gets a :class:`~waygraph.errors.Conflict`
before it runs anything; a process that reads the record later finds a
live lease and is refused. The journal renews the lease with every commit
and at least every :data:`RENEW` seconds; a lease whose owner was killed
stops being renewed and expires after :data:`LEASE_SECONDS`, or at once when
its owner was a process of this machine that is gone.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from waygraph.errors import PlanningError

__all__ = ["LEASE_SECONDS", "RENEW", "Lease", "lost_race", "may_resume", "refusal"]

log = logging.getLogger("waygraph.planning")

#: Seconds a lease lasts without renewal: how long a run whose process was
#: killed on another machine stays refused (``--takeover`` skips the wait).
LEASE_SECONDS = 30.0
#: Seconds between renewals while nothing else is committed (well under the
#: lease, so a slow commit or a busy machine does not let it lapse).
RENEW = 10.0


def _machine() -> str:
    """This boot of this machine and this PID namespace.

    A pid can only be looked up where both match: after a reboot or in
    another container the same pid is another process.
    """
    boot = ""
    with contextlib.suppress(OSError), open("/proc/sys/kernel/random/boot_id", "rb") as f:
        boot = f.read(64).decode("ascii", "replace").strip()
    namespace = ""
    with contextlib.suppress(OSError):
        namespace = str(os.stat("/proc/self/ns/pid").st_ino)
    return f"{socket.gethostname()}/{boot}/{namespace}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError, OverflowError):
        return True  # it exists (someone else's) or cannot be told: assume it runs
    return True


@dataclass(frozen=True)
class Lease:
    """The owner of a run and until when it holds it.

    Example:
        >>> lease = Lease("build-7", 4242, "ab12", expires=0.0, machine="elsewhere")
        >>> lease.describe()
        'pid 4242 on build-7 until 1970-01-01 00:00:00 UTC'
        >>> lease.live(now=1.0), Lease.from_data(lease.data()) == lease
        (False, True)
    """

    host: str
    pid: int
    token: str
    expires: float
    machine: str = ""

    @classmethod
    def mine(cls, seconds: float = LEASE_SECONDS) -> Lease:
        """A new lease for this process, valid for ``seconds`` from now."""
        return cls(
            socket.gethostname(),
            os.getpid(),
            secrets.token_hex(8),
            time.time() + seconds,
            _machine(),
        )

    def renewed(self, seconds: float = LEASE_SECONDS) -> Lease:
        """The same owner, valid for ``seconds`` from now."""
        return Lease(self.host, self.pid, self.token, time.time() + seconds, self.machine)

    def data(self) -> dict[str, Any]:
        """The lease as the record stores it."""
        return {
            "host": self.host,
            "pid": self.pid,
            "token": self.token,
            "expires": self.expires,
            "machine": self.machine,
        }

    @classmethod
    def from_data(cls, data: object) -> Lease | None:
        """The lease a record holds, or None (none, or not a lease: a record is input)."""
        if not isinstance(data, Mapping):
            return None
        try:
            return cls(
                str(data["host"]),
                int(data["pid"]),
                str(data["token"]),
                float(data["expires"]),
                str(data.get("machine") or ""),
            )
        except (KeyError, TypeError, ValueError, OverflowError):
            return None

    def gone(self) -> bool:
        """True when the owner was a process of this machine that no longer exists."""
        return self.machine == _machine() and not _alive(self.pid)

    def live(self, now: float | None = None) -> bool:
        """True while the lease holds: not expired, and its owner not known to be gone."""
        return self.expires > (time.time() if now is None else now) and not self.gone()

    def until(self) -> str:
        """The expiry as UTC text."""
        try:
            moment = datetime.fromtimestamp(self.expires, UTC)
        except (OverflowError, OSError, ValueError):
            return f"{self.expires:g} (epoch seconds)"
        return moment.strftime("%Y-%m-%d %H:%M:%S UTC")

    def describe(self) -> str:
        """Whose lease it is and until when, in words."""
        return f"pid {self.pid} on {self.host} until {self.until()}"


def refusal(run_id: str, lease: Lease) -> str:
    """Why a resume of ``run_id`` held by ``lease`` is refused, and what to do.

    Example:
        >>> refusal("dag_1", Lease("ci", 7, "t", 0.0))  # doctest: +ELLIPSIS
        "run 'dag_1' is being run by pid 7 on ci until 1970-01-01 00:00:00 UTC; ..."
    """
    return (
        f"run {run_id!r} is being run by {lease.describe()}; two processes must not run "
        "its steps. Wait for it to end (or for its lease to expire if it was killed), or, "
        "if that process is gone, take the run over: waygraph plan --resume "
        f"{run_id} --takeover (resume(..., takeover=True))"
    )


def may_resume(run_id: str, held: Lease | None, *, takeover: bool) -> None:
    """Refuse (:class:`PlanningError`) to resume ``run_id`` while ``held`` is live, unless
    ``takeover``, which is logged."""
    if held is None or not held.live():
        return
    if not takeover:
        raise PlanningError(refusal(run_id, held))
    log.warning("run %s: taking over the lease of %s", run_id, held.describe())


def lost_race(run_id: str, winner: Lease | None) -> PlanningError:
    """The error for a resume that lost the race for ``run_id`` to ``winner``'s (as stored now)."""
    if winner is not None and winner.live():
        return PlanningError(refusal(run_id, winner))
    return PlanningError(
        f"run {run_id!r} changed while it was being resumed: another process "
        "is resuming it; resume a run in one place at a time"
    )
