"""The dashboard's Statistics page (``/stats``) and the statistics section of a plan's page.

The figures are :func:`waygraph.learning.stats.plan_stats`'s, the same as
``waygraph stats`` prints: per plan the outcomes and their shares, median
turns and tool results, false activations and a stacked-bar chart of the
trend (:mod:`waygraph.server.charts`); on a plan's page (``#statistics``) the
plan drawn with each node filled by its failure rate, and the node table.
Every value goes through :func:`e`.

Example:
    >>> stats_url("fix <bugs>", "7d")
    '/stats?plan=fix+%3Cbugs%3E&since=7d'
    >>> plan_stats_url("fix <bugs>", None)
    '/plans/fix%20%3Cbugs%3E#statistics'
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote, urlencode

from waygraph.describe import ago
from waygraph.learning.stats import TABLE_OUTCOMES, NodeStats, PlanStats, Statistics
from waygraph.server.charts import (
    heat_legend,
    outcome_chart,
    outcome_legend,
    percent,
    utc,
)
from waygraph.server.html import e

__all__ = ["PERIODS", "plan_section", "plan_stats_url", "stats_page", "stats_url"]

#: The periods offered as chips (None: every run); any other ``?since=`` works too.
PERIODS: tuple[str | None, ...] = (None, "1h", "24h", "7d", "30d")
#: The outcomes given a column, as in ``waygraph stats`` (``failed`` shows in the chart).


def stats_url(plan: str | None, since: str | None) -> str:
    """The Statistics page for one plan (or all) over a period (or all time)."""
    params = {k: v for k, v in (("plan", plan), ("since", since)) if v}
    return "/stats" + ("?" + urlencode(params) if params else "")


def plan_stats_url(plan: str, since: str | None) -> str:
    """The statistics section of the plan's page, over the same period."""
    query = "?" + urlencode({"since": since}) if since else ""
    return f"/plans/{quote(plan, safe='')}{query}#statistics"


def _periods(since: str | None, url: Callable[[str | None], str]) -> str:
    shown = list(PERIODS) if since in PERIODS else [*PERIODS, since]
    chips = "".join(
        f'<a href="{e(url(p))}" class="chip{" on" if p == since else ""}" '
        f'data-since="{e(p or "")}">{e("last " + p if p else "all runs")}</a>'
        for p in shown
    )
    return f"<nav class=chips aria-label=Period id=periods>{chips}</nav>"


def _period_words(found: Statistics) -> str:
    if found.since is None:
        return "All stored runs"
    return f"Runs finished since {utc(found.since)} UTC"


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:g}"


def _plan_row(p: PlanStats, since: str | None) -> str:
    shares = "".join(
        f'<td class=num data-outcome="{o}">{p.counts[o]} '
        f"<span class=muted>({percent(p.shares[o])})</span></td>"
        for o in TABLE_OUTCOMES
    )
    return (
        f'<tr data-plan="{e(p.plan)}"><td><a href="{e(stats_url(p.plan, since))}">'
        f"{e(p.plan)}</a></td><td class=num>{p.runs}</td>{shares}"
        f"<td class=num>{p.running}</td>"
        f"<td class=num>{_number(p.median_turns)}</td>"
        f"<td class=num>{_number(p.median_tool_results)}</td>"
        f"<td class=num>{p.false_activations}</td>"
        f'<td><a href="{e(plan_stats_url(p.plan, since))}">nodes</a></td></tr>'
    )


def _plans_table(found: Statistics, since: str | None) -> str:
    heads = "".join(f"<th class=num>{o.capitalize()}</th>" for o in TABLE_OUTCOMES)
    rows = "".join(_plan_row(p, since) for p in found.plans)
    return (
        "<section class=card><h2>Plans</h2><div class=scroll><table class='records stats'>"
        f"<thead><tr><th>Plan</th><th class=num>Runs</th>{heads}<th class=num>Running</th>"
        "<th class=num>Median turns</th><th class=num>Median tool results</th>"
        "<th class=num>False activations</th><th>Per node</th></tr></thead>"
        f"<tbody id=stats-plans>{rows}</tbody></table></div>"
        "<p class='hint note'>Shares are of the finished runs; medians are of the completed"
        " ones (turns after activation, turns with a tool result).</p></section>"
    )


def _charts(found: Statistics, since: str | None) -> str:
    cards = "".join(
        f'<figure class=chart-card data-plan="{e(p.plan)}"><figcaption>'
        f'<a href="{e(plan_stats_url(p.plan, since))}">{e(p.plan)}</a> '
        f"<span class=muted>{p.runs} finished</span></figcaption>"
        f"{outcome_chart(p.plan, p.trend, ident=f'chart-{i}')}</figure>"
        for i, p in enumerate(found.plans)
    )
    return (
        "<section class=card><h2>Outcomes over the period</h2><p class=hint>One bar per slice"
        " of the period, oldest first: each outcome's share of the runs finished in it, the"
        " runs above, the slice's start (UTC) below.</p>"
        f"<div class=charts>{cards}</div>{outcome_legend()}</section>"
    )


def _activations(found: Statistics) -> str:
    if not found.false_activations:
        return ""
    rows = "".join(
        f'<tr><td title="{e(utc(a.finished_at))} UTC" data-ts="{a.finished_at}">'
        f"{e(ago(a.finished_at))}</td>"
        f'<td><a href="{e(stats_url(a.plan, None))}">{e(a.plan)}</a></td>'
        f"<td class=mono>{e(a.run)}</td><td>{e(a.status)}</td>"
        + (
            f"<td class=message>{e(a.message)}</td>"
            if a.message is not None
            else "<td class=muted>(not recorded)</td>"
        )
        + "</tr>"
        for a in found.suspected_false_activations
    )
    shown = len(found.suspected_false_activations)
    more = f"; the newest {shown} listed" if shown < found.false_activations else ""
    return (
        f"<section class=card id=false-activations><h2>Suspected false activations "
        f"({found.false_activations})</h2><p class=hint>Runs that expired or were reset with no"
        f" node completed, newest first{more}: the message may have started the wrong plan.</p>"
        "<table class=records><thead><tr><th>Finished</th><th>Plan</th><th>Run</th>"
        "<th>Status</th><th>Activating message</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></section>"
    )


def _facts(found: Statistics) -> str:
    runs = sum(p.runs for p in found.plans)
    completed = sum(p.counts["completed"] for p in found.plans)
    facts = (
        ("Plans", str(len(found.plans))),
        ("Finished runs", str(runs)),
        ("Completed", percent(completed / runs) if runs else "—"),
        ("Running", str(sum(p.running for p in found.plans))),
        ("False activations", str(found.false_activations)),
    )
    return (
        "<dl class=facts id=stats-facts>"
        + "".join(f"<div><dt>{k}</dt><dd>{v}</dd></div>" for k, v in facts)
        + "</dl>"
    )


def stats_page(
    found: Statistics | None, *, plan: str | None, since: str | None, problem: str | None = None
) -> str:
    """The Statistics page: figures per plan, charts and suspected false activations.

    ``problem``: why there is nothing to show (a bad period, a plan with no
    runs), said instead of the figures.
    """
    crumb = (
        f'<p class=crumb><a href="{e(stats_url(None, since))}">All plans</a> /</p>' if plan else ""
    )
    head = (
        f"<div class=page-head><div>{crumb}<h1>Statistics"
        + (f" of <span class=mono>{e(plan)}</span>" if plan else "")
        + "</h1>"
        + (f"<p class=muted id=period>{e(_period_words(found))}</p>" if found else "")
        + f"</div>{_periods(since, lambda p: stats_url(plan, p))}</div>"
    )
    if problem is not None or found is None or not found.plans:
        words = problem or (
            "No guided runs finished in this period."
            if found is not None and found.since is not None
            else "No guided runs in the store yet. Statistics appear here once agents run plans"
            " through the Navigator on this store (waygraph stats prints the same figures)."
        )
        return head + f"<section class=card><p class=empty id=stats-empty>{e(words)}</p></section>"
    return (
        head
        + _facts(found)
        + _plans_table(found, since)
        + _charts(found, since)
        + _activations(found)
    )


def _outputs(node: NodeStats) -> str:
    if not node.failing_outputs:
        return "<span class=muted>—</span>"
    items = "".join(
        f"<li><span class=count>{o.count}×</span> <code>{e(o.line)}</code></li>"
        for o in node.failing_outputs
    )
    return f"<ul class=outputs>{items}</ul>"


def _node_rows(stats: PlanStats) -> str:
    return "".join(
        f'<tr data-node="{e(n.node)}"><td class=mono>{e(n.node)}</td>'
        f"<td class=num>{n.runs}</td>"
        f"<td class=num>{percent(n.failure_rate)} <span class=muted>({n.failures}/{n.attempts})"
        f"</span></td><td class=num>{n.mean_attempts:.2f}</td>"
        f"<td class=num>{n.escalations}</td><td>{_outputs(n)}</td></tr>"
        for n in stats.nodes
    )


def plan_section(
    plan: str,
    stats: PlanStats | None,
    drawing: str | None,
    *,
    since: str | None,
    problem: str | None = None,
) -> str:
    """A plan page's statistics: the heat-coloured drawing, legend and node table.

    ``stats`` None: the plan has no runs in the period (or ``problem`` says
    why nothing is shown).
    """
    head = (
        "<section class=card id=statistics><div class=card-head><h2>Statistics</h2>"
        f"{_periods(since, lambda p: plan_stats_url(plan, p))}"
        f'<a class=ghost href="{e(stats_url(plan, since))}">Outcomes and trend</a></div>'
    )
    if problem is not None or stats is None:
        words = problem or "No finished or running runs of this plan in the period."
        return head + f"<p class=empty id=plan-stats-empty>{e(words)}</p></section>"
    shares = ", ".join(
        f"{percent(stats.shares[o])} {o}" for o in TABLE_OUTCOMES if stats.counts.get(o)
    )
    summary = (
        f"<p id=plan-stats-summary>{stats.runs} finished run{'' if stats.runs == 1 else 's'}"
        + (f": {e(shares)}" if shares else "")
        + f"; {stats.running} running.</p>"
    )
    picture = (
        f"<div class='drawing heatmap' id=heat-drawing>{drawing}</div>{heat_legend()}"
        if drawing is not None
        else "<p class=muted>No drawing: the plan is not in the library or the store.</p>"
    )
    return (
        head + summary + picture + "<h3 class=sub>Nodes, most failures first</h3>"
        "<div class=scroll><table class='records nodes-stats'><thead><tr><th>Node</th>"
        "<th class=num>Runs</th><th class=num>Failure rate</th><th class=num>Mean attempts</th>"
        "<th class=num>Escalations</th><th>Commonest failing outputs</th></tr></thead>"
        f"<tbody id=node-stats>{_node_rows(stats)}</tbody></table></div></section>"
    )
