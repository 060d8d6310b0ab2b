"""Small SVG charts drawn on the server for the Statistics page (no chart library, no script).

:func:`outcome_chart` stacks each trend bucket's outcome shares into one bar
(completed at the bottom), with the runs above each bar and the bucket's
start below it; its ``<title>`` and ``<desc>`` say the same in words for
screen readers. :func:`outcome_legend` and :func:`heat_legend` are the HTML
keys under the charts and under the heat-coloured plan drawing. Colours
follow the dashboard's statuses (``static/dashboard.css``) and the drawing's
heat scale (:data:`waygraph.draw.svg.HEAT_SCALE`). Every text is escaped.

Example:
    >>> from waygraph.learning.stats import Bucket
    >>> one = Bucket(start=0.0, end=60.0, runs=2, counts={"completed": 1, "escalated": 1},
    ...              shares={"completed": 0.5, "escalated": 0.5})
    >>> chart = outcome_chart("fix <bugs>", [one], ident="c1")
    >>> chart.count('class="bar"'), "fix &lt;bugs&gt;" in chart
    (1, True)
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from waygraph.draw.svg import HEAT_SCALE
from waygraph.learning.stats import OUTCOMES, Bucket
from waygraph.server.html import e

__all__ = [
    "HEAT_LABELS",
    "OUTCOME_COLOURS",
    "heat_legend",
    "outcome_chart",
    "outcome_legend",
    "percent",
    "utc",
]

#: Bar colours per outcome: the dashboard's done green and failed red, greys for the rest.
OUTCOME_COLOURS = {
    "completed": "#2b8a3e",
    "escalated": "#c92a2a",
    "expired": "#adb5bd",
    "aborted": "#6b7785",
    "failed": "#d9480f",
}
#: Words for each step of the heat scale, in its order.
HEAT_LABELS = ("no failures", "up to 10%", "10–25%", "25–50%", "over 50%")

BAR = 40.0  # bar width
GAP = 16.0  # space between bars
PLOT = 110.0  # height of a 100% bar
TOP = 20.0  # room for the run counts above the bars
LEFT = 40.0  # room for the percent axis
BOTTOM = 36.0  # room for the two-line bucket labels


def percent(share: float) -> str:
    """A share as a whole percent.

    Example:
        >>> percent(0.756), percent(0.0)
        ('76%', '0%')
    """
    return f"{share * 100:.0f}%"


def utc(epoch: float, fmt: str = "%Y-%m-%d %H:%M") -> str:
    """Epoch seconds as UTC text (the CLI's ``waygraph stats`` prints UTC too).

    Example:
        >>> utc(0.0)
        '1970-01-01 00:00'
    """
    return time.strftime(fmt, time.gmtime(epoch))


def _in_words(bucket: Bucket) -> str:
    when = f"{utc(bucket.start)} to {utc(bucket.end, '%H:%M')} UTC"
    if not bucket.runs:
        return f"{when}: no runs"
    parts = [f"{percent(bucket.shares[o])} {o}" for o in OUTCOMES if bucket.counts.get(o)]
    return f"{when}: {bucket.runs} run{'' if bucket.runs == 1 else 's'}, {', '.join(parts)}"


def _bar(i: int, bucket: Bucket) -> str:
    x = LEFT + GAP / 2 + i * (BAR + GAP)
    middle = x + BAR / 2
    base = TOP + PLOT
    segments = []
    y = base
    for outcome in OUTCOMES:
        count = bucket.counts.get(outcome, 0)
        if not count or not bucket.runs:
            continue
        height = PLOT * count / bucket.runs
        y -= height
        segments.append(
            f'<rect class="seg o-{outcome}" x="{x:.1f}" y="{y:.1f}" width="{BAR:.1f}" '
            f'height="{height:.1f}" fill="{OUTCOME_COLOURS[outcome]}"/>'
        )
    if not segments:
        # An empty slice: a hairline on the axis, so the gap reads as "no runs", not missing.
        segments.append(
            f'<rect class="seg empty" x="{x:.1f}" y="{base - 1:.1f}" width="{BAR:.1f}" '
            'height="1" fill="#ced4da"/>'
        )
    runs = str(bucket.runs) if bucket.runs else "–"
    return (
        f'<g class="bar" data-runs="{bucket.runs}"><title>{e(_in_words(bucket))}</title>'
        + "".join(segments)
        + f'<text class="n" x="{middle:.1f}" y="{TOP - 6:.1f}" text-anchor="middle">{runs}</text>'
        f'<text class="when" x="{middle:.1f}" y="{base + 14:.1f}" text-anchor="middle">'
        f'<tspan x="{middle:.1f}">{e(utc(bucket.start, "%m-%d"))}</tspan>'
        f'<tspan x="{middle:.1f}" dy="13">{e(utc(bucket.start, "%H:%M"))}</tspan></text></g>'
    )


def outcome_chart(plan: str, trend: Sequence[Bucket], *, ident: str) -> str:
    """A stacked bar per trend bucket: the share of each outcome among the runs finished in it.

    ``ident`` makes the title and description ids unique on the page.
    """
    width = LEFT + len(trend) * (BAR + GAP) + 8
    height = TOP + PLOT + BOTTOM
    axis = "".join(
        f'<line x1="{LEFT:.0f}" x2="{width - 4:.0f}" y1="{TOP + PLOT * (1 - f):.1f}" '
        f'y2="{TOP + PLOT * (1 - f):.1f}" stroke="#e3e7ec"/>'
        f'<text class="axis" x="{LEFT - 6:.0f}" y="{TOP + PLOT * (1 - f) + 4:.1f}" '
        f'text-anchor="end">{percent(f)}</text>'
        for f in (0.0, 0.5, 1.0)
    )
    title = f"Outcome shares of plan {plan} over the period"
    desc = "Runs finished per slice of the period, oldest first. " + ". ".join(
        _in_words(b) for b in trend
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart outcomes" width="{width:.0f}" '
        f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" role="img" '
        f'aria-labelledby="{e(ident)}-t {e(ident)}-d" font-size="11" fill="#495057">'
        f'<title id="{e(ident)}-t">{e(title)}</title>'
        f'<desc id="{e(ident)}-d">{e(desc)}</desc>'
        f"{axis}{''.join(_bar(i, b) for i, b in enumerate(trend))}</svg>"
    )


def _key(colour: str, label: str, css: str) -> str:
    return (
        f'<span class="key {css}"><i style="background:{colour};border-color:{colour}"></i>'
        f"{e(label)}</span>"
    )


def outcome_legend() -> str:
    """The key to the bars' colours."""
    keys = "".join(_key(OUTCOME_COLOURS[o], o, f"o-{o}") for o in OUTCOMES)
    return f"<div class='legend chart-legend'>{keys}</div>"


def heat_legend() -> str:
    """The key to the heat-coloured drawing: failure rate bands, and nodes never judged."""
    keys = "".join(
        _key(colour, label, "heat-key")
        for (_, colour), label in zip(HEAT_SCALE, HEAT_LABELS, strict=True)
    )
    unjudged = (
        "<span class='key heat-key'><i style='background:#fff;border-color:#adb5bd'></i>"
        "no results judged</span>"
    )
    return f"<div class='legend heat-legend' id=heat-legend>{keys}{unjudged}</div>"
