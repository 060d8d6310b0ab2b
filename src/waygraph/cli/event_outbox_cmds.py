"""``waygraph events outbox``: event plans whose outbox stays unsent.

Registered on the ``events`` command group (:mod:`waygraph.cli.event_cmds`
imports this module). It reads the plan store, not the bus: an entry still
in a plan's outbox a minute after the plan's last change did not go out
(:mod:`waygraph.events.outbox`).
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from waygraph.cli.app import console, friendly_errors
from waygraph.cli.event_cmds import events_app

__all__ = ["outbox"]


def _waited(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


@events_app.command("outbox")
@friendly_errors
def outbox(
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="The planners' store URL. Default: WAYGRAPH_DATABASE_URL, else the user "
            "data folder.",
        ),
    ] = None,
    older_than: Annotated[
        float,
        typer.Option(
            "--older-than",
            min=0,
            metavar="SECONDS",
            help="Count entries left this long after their plan's last change.",
        ),
    ] = 60.0,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per plan.")] = False,
) -> None:
    """List event plans whose outbox entries were not sent (stuck outboxes).

    A planner logs every failed try with the plan id and tries again with
    backoff; this shows what is still waiting, from the store. Exit 0 when
    none is stuck, 1 when some are.
    """
    from waygraph.events.outbox import stuck_outboxes
    from waygraph.events.planner import default_plan_store_url
    from waygraph.store import open_store

    opened = open_store(store or default_plan_store_url())
    try:
        stuck = stuck_outboxes(opened, older_than=older_than)
    finally:
        opened.close()
    if as_json:
        for row in stuck:
            typer.echo(json.dumps(row.as_dict(), ensure_ascii=False))
    elif not stuck:
        console.print(f"no stuck outboxes in {opened.url}", markup=False, highlight=False)
    else:
        lines = [f"stuck outboxes in {opened.url}:"]
        for row in stuck:
            lines.append(
                f"{row.plan_id} (planner {row.planner}, {row.status}), "
                f"unsent for {_waited(row.waiting)}:"
            )
            lines += [
                f"  {e['type']} {e['id']}: {e['bytes']} bytes on {e['topic']}" for e in row.entries
            ]
        console.print("\n".join(lines), markup=False, highlight=False, soft_wrap=True)
    if stuck:
        raise typer.Exit(1)
