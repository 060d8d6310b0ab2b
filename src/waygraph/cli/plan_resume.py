"""What ``waygraph plan --resume RUN_ID`` says before it runs anything.

Kept apart from :mod:`waygraph.cli.plan_cmds` (the command's options and its
run): reading the stored run, refusing a run another process holds, saying
whose lease ``--takeover`` takes, and which steps a kill interrupted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from waygraph.cli.app import err_console, plain
from waygraph.errors import PlanningError

if TYPE_CHECKING:
    from waygraph.cli.plan_view import LiveView, PlainView
    from waygraph.store import Store

__all__ = ["announce_resume"]


def announce_resume(
    store: Store, run_id: str, *, takeover: bool, view: PlainView | LiveView
) -> None:
    """Show the stored run ``run_id`` and say how it resumes; refuse one held elsewhere.

    Raises :class:`~waygraph.errors.RunNotFoundError` for an unknown run and
    :class:`PlanningError` (one line, exit 2) for a run whose lease is live
    without ``takeover``. The resume itself checks the lease again, so a
    process that takes the run between this look and the resume still wins.
    """
    from waygraph.planning import Plan
    from waygraph.planning._journal import load_run
    from waygraph.planning._lease import refusal

    saved = load_run(store, run_id)
    held = saved.lease
    if held is not None and held.live() and not saved.ended:
        if not takeover:
            raise PlanningError(refusal(run_id, held))
        # Said before anything runs, so the person sees whose run they took.
        err_console.print(
            f"--takeover: run {plain(run_id)} was held by {plain(held.describe())}; "
            "taking it over (that process stops at its next commit)",
            highlight=False,
            soft_wrap=True,
        )
    elif held is not None and not saved.ended and held.gone():
        err_console.print(
            f"run {plain(run_id)} was held by pid {plain(held.pid)} on {plain(held.host)}, "
            "which is gone: taking it over",
            highlight=False,
            soft_wrap=True,
        )
    view.plan_ready(plan=Plan.model_validate(saved.state["plan"]))
    view.start()
    err_console.print(
        f"resuming run {plain(run_id)} from {plain(store.url)}: {plain(saved.describe())}",
        highlight=False,
        soft_wrap=True,
    )
    for step_id in saved.interrupted():
        # A step that was running at a kill: its result was never saved.
        err_console.print(
            f"step {plain(step_id)} interrupted (it was running when the run stopped); "
            "it runs again",
            highlight=False,
            soft_wrap=True,
        )
