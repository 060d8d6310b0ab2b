"""``waygraph stats``: how each plan and node fares over the stored guided runs.

Reads :func:`waygraph.learning.stats.plan_stats` (docs/learning.md,
"Statistics"): rich tables by default, the :class:`Statistics` model with
``--json``.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from waygraph.cli.app import JsonOption, app, console, friendly_errors, plain, print_json
from waygraph.cli.run_cmds import StoreOption
from waygraph.durations import parse_duration
from waygraph.errors import InputError

if TYPE_CHECKING:
    from waygraph.learning.stats import PlanStats, Statistics


@app.command("stats")
@friendly_errors
def stats(
    store: StoreOption = None,
    plan: Annotated[str | None, typer.Option("--plan", help="Only this plan's runs.")] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", help="Only runs finished in the last DURATION: 30m, 12h, 7d."),
    ] = None,
    json_out: JsonOption = False,
) -> None:
    """Per plan: outcomes, median turns and tool results, the trend; per node: failures.

    Also lists the runs suspected of a false activation (expired or reset
    with no node completed) with the message that activated them. Computed
    in the store: SQL aggregates in SQLite and PostgreSQL.
    """
    from waygraph.learning.stats import plan_stats
    from waygraph.store import default_store_url, open_store

    now = time.time()
    start = None if since is None else now - parse_duration(since)
    with open_store(store or default_store_url()) as opened:
        found = plan_stats(opened, plan=plan, since=start, now=now)
        if plan is not None and not found.plans:
            others = sorted({name for (name, _, _) in opened.run_tallies().runs})
            hint = f"plans with runs: {', '.join(others)}" if others else "the store has no runs"
            period = "" if since is None else f" in the last {since}"
            raise InputError(f"no finished or running runs of plan {plan!r}{period}; {hint}")
    if json_out:
        print_json(found.model_dump(mode="json"))
        return
    _print(found)


def _when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M")


def _pct(share: float) -> str:
    return f"{share * 100:.0f}%"


def _print(found: Statistics) -> None:
    from waygraph.learning.stats import TABLE_OUTCOMES

    if not found.plans:
        console.print("No guided runs in the store" + (" in the period." if found.since else "."))
        return
    period = f"since {_when(found.since)} UTC" if found.since is not None else "all runs"
    table = Table(title=f"Plans ({plain(period)})")
    for column in ("plan", "runs", *TABLE_OUTCOMES, "running"):
        table.add_column(column, justify="left" if column == "plan" else "right")
    table.add_column("median turns", justify="right")
    table.add_column("median results", justify="right")
    for p in found.plans:
        table.add_row(
            plain(p.plan),
            str(p.runs),
            *(plain(f"{p.counts[o]} ({_pct(p.shares[o])})") for o in TABLE_OUTCOMES),
            str(p.running),
            _number(p.median_turns),
            _number(p.median_tool_results),
        )
    console.print(table)
    console.print("Medians are of completed runs. Completed share over the period, oldest first:")
    for p in found.plans:
        console.print(f"  {plain(p.plan)}: {plain(_trend(p))}", highlight=False)
    for p in found.plans:
        _print_nodes(p)
    if found.false_activations:
        acts = Table(
            title=f"Suspected false activations ({plain(found.false_activations)}; newest first)"
        )
        for column in ("finished (UTC)", "plan", "run", "status", "activating message"):
            acts.add_column(column)
        for a in found.suspected_false_activations:
            acts.add_row(
                _when(a.finished_at),
                plain(a.plan),
                plain(a.run),
                plain(a.status),
                plain(a.message or "(not recorded)"),
            )
        console.print(acts)


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _trend(p: PlanStats) -> str:
    """The completed share per bucket, oldest first (``-`` for a bucket with no runs)."""
    # The last bucket has the full width (the first starts where the period does).
    width = (p.trend[-1].end - p.trend[-1].start) / 60 if p.trend else 0
    each = f"{width / 60:g} h" if width >= 60 else f"{width:g} min"
    shares = " ".join(_pct(b.shares["completed"]) if b.runs else "-" for b in p.trend)
    return f"{shares} (per {each})"


def _print_nodes(p: PlanStats) -> None:
    # Nodes nothing was judged at (start, checkpoints, exits) say nothing here.
    shown = [n for n in p.nodes if n.attempts or n.escalations]
    if not shown:
        return
    table = Table(title=f"Nodes of {plain(p.plan)}")
    for column in ("node", "runs", "failure rate", "mean attempts", "escalations"):
        table.add_column(column, justify="left" if column == "node" else "right")
    table.add_column("commonest failing outputs")
    for n in shown:
        outputs = "\n".join(f"{o.count}x {o.line}" for o in n.failing_outputs)
        table.add_row(
            plain(n.node),
            str(n.runs),
            plain(f"{_pct(n.failure_rate)} ({n.failures}/{n.attempts})"),
            f"{n.mean_attempts:.2f}",
            str(n.escalations),
            plain(outputs or "-"),
        )
    console.print(table)
