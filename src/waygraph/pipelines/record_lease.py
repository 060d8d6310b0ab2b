"""Keeping a stored pipeline run held while a node runs longer than its lease.

A run's lease (:meth:`PipelineRecords.claim`) is renewed by every
checkpoint; a node that runs for minutes (a coding agent's stage) would let
it lapse, and another machine could then resume the run beside this one. A
:class:`LeaseKeeper` renews it from a thread until the run stops, and says
when the run was taken over (the runner should stop: its saves fail).

Example:
    >>> from waygraph.model import Graph
    >>> from waygraph.pipelines.checkpoint import Checkpoint
    >>> records = PipelineRecords("memory://")
    >>> plan = Graph.builder().exit("done").edge("start", "done").plan("p")
    >>> records.save(Checkpoint(run_id="r1", plan_id="p", next_node="done"), plan)
    >>> with LeaseKeeper(records, "r1") as keeper:
    ...     pass  # the nodes run here
    >>> keeper.lost is None
    True
"""

from __future__ import annotations

import logging
import threading
from types import TracebackType
from typing import Self

from waygraph.errors import WaygraphError
from waygraph.pipelines.record import PipelineRecords
from waygraph.planning._lease import RENEW

__all__ = ["LeaseKeeper"]

log = logging.getLogger("waygraph.pipelines")


class LeaseKeeper:
    """Renews ``records``' lease on ``run_id`` every ``every`` seconds from a daemon thread.

    ``lost`` holds the error once a renewal failed (taken over, or the store
    is gone); renewing then stops. Use it as a context manager around the run.
    """

    def __init__(self, records: PipelineRecords, run_id: str, *, every: float = RENEW) -> None:
        self.records = records
        self.run_id = run_id
        self.every = every
        #: Why the run could not be kept (None while it is held).
        self.lost: Exception | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start renewing (once)."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._loop, name=f"waygraph-lease-{self.run_id}", daemon=True
            )
            self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.records.renew(self.run_id)
            except (WaygraphError, OSError) as exc:
                # Taken over, or the store failed: the runner's next save fails
                # too; renewing on would only fight the new owner.
                log.error("pipeline run %s is no longer held: %s", self.run_id, exc)
                self.lost = exc
                return

    def stop(self) -> None:
        """Stop renewing and wait for the thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
