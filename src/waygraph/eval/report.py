"""The eval report: a terminal table and a self-contained ``report.html``.

``report.html`` holds everything inline (CSS and SVG bar charts, no scripts,
no fonts or images from the network), so it opens offline and can be mailed
or attached to a CI run.

Example:
    >>> from waygraph.eval.runner import Record
    >>> runs = [Record(task="t", mode="baseline", repeat=1, success=False),
    ...         Record(task="t", mode="guided", repeat=1, success=True)]
    >>> "<svg" in render_html(runs, model="m") and "<script" not in render_html(runs, model="m")
    True
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import UTC, datetime

from rich.table import Table
from rich.text import Text

from waygraph.eval.metrics import (
    ModeSummary,
    summarize_modes,
    summary_line,
    task_rates,
    task_tokens,
)
from waygraph.eval.runner import Record

__all__ = ["render_html", "terminal_table", "token_table"]

#: Bar colours per mode (colour-blind safe: Okabe–Ito).
COLOURS = {"baseline": "#999999", "guided": "#0072B2", "planned": "#E69F00"}


def _rate(wins: int, runs: int) -> str:
    return f"{wins}/{runs}" if runs else "-"


def _tokens(value: float | None) -> str:
    """A token count for the report; ``—`` where the runs did not say."""
    return "—" if value is None else f"{value:,.0f}"


#: Document 004's success criteria: report row and ModeSummary field.
CRITERIA = (
    ("plan validity", "plan_validity"),
    ("step atomicity", "step_atomicity"),
    ("revision effectiveness", "revision_effectiveness"),
    ("plan completion", "plan_completion"),
    ("dependency accuracy", "dependency_accuracy"),
)


def _criteria_rows(summaries: Sequence[ModeSummary]) -> list[tuple[str, list[str]]]:
    """Document 004's criteria per mode (``—`` where not measured); none without planned runs."""
    if not any(s.mode == "planned" for s in summaries):
        return []
    return [(name, [str(getattr(s, attr) or "—") for s in summaries]) for name, attr in CRITERIA]


def terminal_table(records: Sequence[Record]) -> Table:
    """Success per task and mode, then per-mode totals and mean costs."""
    summaries = summarize_modes(records)
    modes = [s.mode for s in summaries]
    table = Table(title="waygraph eval", title_justify="left")
    table.add_column("task")
    for mode in modes:
        table.add_column(Text(mode), justify="right")
    # Task ids and modes are shown as written (Text: no rich markup).
    for task, by_mode in task_rates(records).items():
        table.add_row(Text(task), *(_rate(*by_mode.get(m, (0, 0))) for m in modes))
    table.add_section()
    table.add_row(
        "success rate",
        *(f"{s.rate:.0%} ({s.successes:d}/{s.runs:d})" for s in summaries),
        style="bold",
    )
    # Beside the success rate: what guidance changes even when the rate stays.
    table.add_row("false completions", *(str(s.false_completions) for s in summaries))
    table.add_row("mean tool calls", *(f"{s.mean_tool_calls:.1f}" for s in summaries))
    table.add_row("mean tokens", *(f"{s.mean_tokens:,.0f}" for s in summaries))
    table.add_row("tokens / model call", *(_tokens(s.mean_tokens_per_call) for s in summaries))
    table.add_row(
        "prompt tokens / model call",
        *(_tokens(s.mean_prompt_tokens_per_call) for s in summaries),
    )
    table.add_row("mean wall time (s)", *(f"{s.mean_wall_time:.1f}" for s in summaries))
    table.add_row(
        "verification failures / run",
        *(_failures(s.mean_verification_failures) for s in summaries),
    )
    table.add_row("escalated", *(str(s.escalations) for s in summaries))
    for name, values in _criteria_rows(summaries):
        table.add_row(name, *values)
    if any(s.errors for s in summaries):
        table.add_row("errors", *(str(s.errors) for s in summaries), style="red")
    return table


def token_table(records: Sequence[Record]) -> Table:
    """Mean tokens per run of each task in each mode (``—`` where no run reported tokens).

    Example:
        >>> from rich.console import Console
        >>> runs = [Record(task="t", mode="guided", repeat=1, success=True, tokens=1200)]
        >>> screen = Console(width=60, record=True, file=open("/dev/null", "w"))
        >>> screen.print(token_table(runs))
        >>> "1,200" in screen.export_text()
        True
    """
    tokens = task_tokens(records)
    modes = [s.mode for s in summarize_modes(records)]
    table = Table(title="tokens per run", title_justify="left")
    table.add_column("task")
    for mode in modes:
        table.add_column(Text(mode), justify="right")
    for task, by_mode in tokens.items():
        table.add_row(Text(task), *(_tokens(by_mode.get(m)) for m in modes))
    return table


# ------------------------------------------------------------------ HTML


def _mode_chart(summaries: Sequence[ModeSummary]) -> str:
    """Horizontal bars: success rate per mode, with the 95% Wilson interval as a whisker."""
    row, left, width = 34, 90, 420
    height = row * len(summaries) + 40
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 80}" height="{height}" '
        f'role="img" aria-label="Success rate per mode">'
    ]
    parts += _grid(left, width, height - 24)
    for i, s in enumerate(summaries):
        y = 8 + i * row
        colour = COLOURS.get(s.mode, "#009E73")
        bar = s.rate * width
        lo, hi = left + s.low * width, left + s.high * width
        parts.append(
            f'<text x="{left - 8}" y="{y + 17}" text-anchor="end">{html.escape(s.mode)}</text>'
            f'<rect x="{left}" y="{y}" width="{bar:.1f}" height="24" fill="{colour}">'
            f"<title>{html.escape(s.mode)}: {s.successes}/{s.runs}</title></rect>"
            f'<line x1="{lo:.1f}" x2="{hi:.1f}" y1="{y + 12}" y2="{y + 12}" class="ci"/>'
            f'<line x1="{lo:.1f}" x2="{lo:.1f}" y1="{y + 6}" y2="{y + 18}" class="ci"/>'
            f'<line x1="{hi:.1f}" x2="{hi:.1f}" y1="{y + 6}" y2="{y + 18}" class="ci"/>'
            f'<text x="{left + width + 8}" y="{y + 17}">{s.rate:.0%}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _grid(left: int, width: int, bottom: int) -> list[str]:
    lines = []
    for tick in range(0, 101, 25):
        x = left + tick / 100 * width
        lines.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{bottom}" class="grid"/>'
            f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="middle" class="tick">{tick}%</text>'
        )
    return lines


def _task_chart(records: Sequence[Record], modes: Sequence[str]) -> str:
    """Grouped horizontal bars: success rate per task, one bar per mode."""
    rates = task_rates(records)
    bar, gap, left, width = 14, 12, 210, 380
    group = bar * len(modes) + gap
    height = group * len(rates) + 40
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 70}" height="{height}" '
        f'role="img" aria-label="Success rate per task and mode">'
    ]
    parts += _grid(left, width, height - 24)
    for i, (task, by_mode) in enumerate(rates.items()):
        y0 = 6 + i * group
        middle = y0 + bar * len(modes) / 2 + 4
        parts.append(
            f'<text x="{left - 8}" y="{middle:.1f}" text-anchor="end">{html.escape(task)}</text>'
        )
        for j, mode in enumerate(modes):
            wins, runs = by_mode.get(mode, (0, 0))
            share = wins / runs if runs else 0.0
            y = y0 + j * bar
            parts.append(
                f'<rect x="{left}" y="{y}" width="{share * width:.1f}" height="{bar - 2}" '
                f'fill="{COLOURS.get(mode, "#009E73")}"><title>{html.escape(task)}, '
                f"{html.escape(mode)}: {wins}/{runs}</title></rect>"
                f'<text x="{left + share * width + 4:.1f}" y="{y + bar - 4}" class="tick">'
                f"{_rate(wins, runs)}</text>"
            )
    parts.append("</svg>")
    return "".join(parts)


def _legend(modes: Sequence[str]) -> str:
    items = "".join(
        f'<span><i style="background:{COLOURS.get(m, "#009E73")}"></i>{html.escape(m)}</span>'
        for m in modes
    )
    return f'<p class="legend">{items}</p>'


_CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;
max-width:1100px;color:#1d1d1f;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}
.meta{color:#555;margin:0 0 16px}.headline{font-size:17px;font-weight:600;background:#eef5fb;
border-left:4px solid #0072B2;padding:10px 14px;margin:12px 0}
svg text{font:13px system-ui,sans-serif;fill:#1d1d1f}svg .tick{font-size:11px;fill:#555}
svg .grid{stroke:#e3e3e3}svg .ci{stroke:#1d1d1f;stroke-width:1.5}
table{border-collapse:collapse;margin:8px 0;font-size:14px}
th,td{border-bottom:1px solid #e3e3e3;padding:4px 10px;text-align:right}
th:first-child,td:first-child{text-align:left}thead th{background:#f6f6f6}
td.ok{color:#007a3d}td.bad{color:#b00020}
.legend span{margin-right:16px}.legend i{display:inline-block;width:12px;height:12px;
margin-right:5px;vertical-align:-1px}.note{color:#555;font-size:13px}
"""


def _failures(value: float | int | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _summary_table(summaries: Sequence[ModeSummary]) -> str:
    head = "".join(f"<th>{html.escape(s.mode)}</th>" for s in summaries)
    rows = [
        ("success rate", [f"{s.rate:.0%} ({s.successes}/{s.runs})" for s in summaries]),
        ("95% interval", [f"{s.low:.0%} - {s.high:.0%}" for s in summaries]),
        ("false completions", [str(s.false_completions) for s in summaries]),
        ("mean tool calls", [f"{s.mean_tool_calls:.1f}" for s in summaries]),
        ("mean tokens", [f"{s.mean_tokens:,.0f}" for s in summaries]),
        ("tokens / model call", [_tokens(s.mean_tokens_per_call) for s in summaries]),
        (
            "prompt tokens / model call",
            [_tokens(s.mean_prompt_tokens_per_call) for s in summaries],
        ),
        ("mean wall time (s)", [f"{s.mean_wall_time:.1f}" for s in summaries]),
        (
            "verification failures / run",
            [
                "-"
                if s.mean_verification_failures is None
                else f"{s.mean_verification_failures:.1f}"
                for s in summaries
            ],
        ),
        ("escalated", [str(s.escalations) for s in summaries]),
        ("errors", [str(s.errors) for s in summaries]),
        *_criteria_rows(summaries),
    ]
    body = "".join(
        f"<tr><td>{name}</td>{''.join(f'<td>{html.escape(v)}</td>' for v in values)}</tr>"
        for name, values in rows
    )
    return f"<table><thead><tr><th></th>{head}</tr></thead><tbody>{body}</tbody></table>"


def _token_table(records: Sequence[Record], modes: Sequence[str]) -> str:
    head = "".join(f"<th>{html.escape(m)}</th>" for m in modes)
    body = "".join(
        f"<tr><td>{html.escape(task)}</td>"
        + "".join(f"<td>{_tokens(by_mode.get(m))}</td>" for m in modes)
        + "</tr>"
        for task, by_mode in task_tokens(records).items()
    )
    return f"<table><thead><tr><th>task</th>{head}</tr></thead><tbody>{body}</tbody></table>"


def _runs_table(records: Sequence[Record]) -> str:
    head = (
        "<tr><th>task</th><th>mode</th><th>repeat</th><th>success</th><th>tool calls</th>"
        "<th>tokens</th><th>wall time (s)</th><th>verification failures</th><th>escalated</th>"
        "<th>declared done</th><th>why it failed</th></tr>"
    )
    rows = []
    for r in records:
        why = "; ".join([*([r.error] if r.error else []), *r.problems])
        rows.append(
            f"<tr><td>{html.escape(r.task)}</td><td>{html.escape(r.mode)}</td>"
            f'<td>{r.repeat}</td><td class="{"ok" if r.success else "bad"}">'
            f"{'yes' if r.success else 'no'}</td><td>{r.tool_calls}</td><td>{r.tokens:,}</td>"
            f"<td>{r.wall_time:.1f}</td><td>{_failures(r.verification_failures, 0)}</td>"
            f"<td>{'yes' if r.escalated else 'no'}</td>"
            f'<td class="{"bad" if r.false_completion else ""}">'
            f"{'yes' if r.completed else 'no'}</td>"
            f'<td style="text-align:left">{html.escape(why[:300])}</td></tr>'
        )
    return f"<table><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>"


def render_html(
    records: Sequence[Record],
    *,
    model: str = "",
    endpoint: str = "",
    created: datetime | None = None,
) -> str:
    """The whole ``report.html`` as text."""
    summaries = summarize_modes(records)
    modes = [s.mode for s in summaries]
    when = (created or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    tasks = len(task_rates(records))
    repeats = max((r.repeat for r in records), default=0)
    meta = (
        f"model <b>{html.escape(model or '?')}</b>"
        + (f" at {html.escape(endpoint)}" if endpoint else "")
        + f" · {tasks} tasks × {len(modes)} modes × {repeats} repeats · {when}"
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>waygraph eval: {html.escape(model)}</title><style>{_CSS}</style></head><body>"
        f'<h1>waygraph eval</h1><p class="meta">{meta}</p>'
        f'<p class="headline">{html.escape(summary_line(records))}</p>'
        '<p class="note">Difference of success rates in percentage points, with the 95% '
        "Newcombe hybrid score interval (see docs/eval.md). An interval that includes 0 means "
        "the runs do not show a difference yet: add --repeat.</p>"
        "<h2>Success rate per mode</h2>"
        f"{_mode_chart(summaries)}"
        '<p class="note">Whiskers: 95% Wilson interval of each rate.</p>'
        f"{_summary_table(summaries)}"
        "<h2>Success rate per task</h2>"
        f"{_legend(modes)}{_task_chart(records, modes)}"
        "<h2>Tokens per run, per task</h2>"
        '<p class="note">Mean tokens of one run (prompt and completion, every model call); '
        "— where no run reported any.</p>"
        f"{_token_table(records, modes)}"
        f"<h2>Every run</h2>{_runs_table(records)}"
        "</body></html>\n"
    )
