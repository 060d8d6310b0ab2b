"""``waygraph sessions answer`` for pipeline runs: the answer to the human gate a run waits on.

A pipeline run that ``waygraph run --store URL`` executes is a session of
its own (its run id); the runner waits on the store for the answer
(:class:`~waygraph.pipelines.record_interviewer.StoreInterviewer`), which
this records (:meth:`~waygraph.pipelines.record.PipelineRecords.answer`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from waygraph.cli.app import console, err_console, print_json
from waygraph.errors import InputError, NotWaitingError
from waygraph.pipelines.record_view import KIND

if TYPE_CHECKING:
    from waygraph.store import Store, StoredRecord

__all__ = ["answer_pipeline", "pipeline_record"]


def pipeline_record(store: Store, session_id: str) -> StoredRecord | None:
    """The pipeline run ``session_id`` names (its run id, or a session pointing to it), or None.

    Example:
        >>> from waygraph.store import open_store
        >>> pipeline_record(open_store("memory://"), "r1") is None
        True
    """
    record = store.get(session_id)
    if record is None or record.kind != KIND:
        key = store.current(session_id)
        record = store.get(key) if key is not None else None
    return record if record is not None and record.kind == KIND else None


def answer_pipeline(
    store: Store, record: StoredRecord, answer: str, by: str | None, *, as_json: bool
) -> None:
    """Record ``answer`` for the gate the pipeline run of ``record`` waits on and say so.

    An answer that picks none of the choices, or a run that waits on
    nobody: the reason on stderr, exit 1 (as for a guided session).
    """
    from waygraph.pipelines.record import PipelineRecords

    try:
        given = PipelineRecords(store).answer(record.key, answer, by=by)
    except (NotWaitingError, InputError) as exc:
        where = f"pipeline run {record.key!r}"
        text = str(exc) if str(exc).startswith(where) else f"{where}: {exc}"
        err_console.print(f"error: {text}", markup=False, soft_wrap=True)
        raise typer.Exit(1) from None
    if as_json:
        print_json({"session": record.session, "run": record.key, "answer": given})
        return
    picked = f"chose {given['choice']!r}" if given["choice"] is not None else f"said {answer!r}"
    console.print(
        f"Pipeline run {record.key!r}: {given['by'] or 'the user'} {picked} at node "
        f"{given['node']!r}; the run takes the answer and continues.",
        markup=False,
        soft_wrap=True,
    )
