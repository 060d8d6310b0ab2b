"""Plan chaining: an exit node's ``next_plan`` starts in the same session when a run ends there.

The rule (which exit, which ending) is the engine's
(:func:`waygraph.engine.next_plan`); this is the Navigator's side of it: one
commit that ends the run and starts the next plan (docs/plans.md, "Chaining
plans").
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from waygraph import engine, render
from waygraph.guided.turns import Event, Guidance, run_write
from waygraph.model import Plan

if TYPE_CHECKING:
    from waygraph.navigator import Navigator

__all__ = ["start_next_plan"]

log = logging.getLogger("waygraph.navigator")


def start_next_plan(
    nav: Navigator,
    plan: Plan,
    run: engine.Run,
    version: int,
    events: list[Mapping[str, Any]],
    turn_no: int,
) -> Guidance | None:
    """A run that ended at an exit naming ``next_plan``: start that plan in the same commit.

    One commit ends the run and makes the next plan the session's current
    run, so a crash in between cannot leave the chain half taken. The
    first guidance says how the finished run ended, then the new run's step.
    """
    target = engine.next_plan(plan, run)
    if target is None:
        return None
    if target not in nav.library:
        log.warning("plan %r names next_plan %r, which is not in the library", plan.id, target)
        return None
    nxt = nav.library[target]
    new_run, new_events = nav._begin(nxt, session_id=run.session_id, turn=turn_no, after=run.run_id)
    old_record = engine.to_record(plan, run)
    new_record = engine.to_record(nxt, new_run)
    versions = nav.store.commit_all(
        [
            run_write(run, plan, version, events, new=False, record=old_record),
            run_write(new_run, nxt, 0, new_events, new=True, record=new_record),
        ]
    )
    nav._cached(run, versions[0])
    nav._cached(new_run, versions[1])
    # Not finished_message: it tells the model to sum up, and the work goes on.
    nodes = plan.graph.nodes
    verified = [nodes[n].title for n in run.completed if n in nodes and nodes[n].type == "task"]
    done = f": verified {', '.join(verified)}" if verified else ""
    text = (
        f"Plan {plan.title!r} {run.status}{done}. Its exit starts the next plan, "
        f"{nxt.title!r}, in this session.\n\n"
        + render.context(nxt, new_run, max_tokens=nav.max_tokens, style=nav.style)
    )
    return Guidance(text=text, events=Event.copies((*events, *new_events)), run=new_record)
