"""The dashboard's HTML, built from plain strings (no template engine to install).

Every value from a plan, a session or a request goes through :func:`e`
(``html.escape``); drawings come from :mod:`waygraph.draw.svg`, which escapes its
own text. JSON handed to the page's script is embedded with ``<`` escaped,
so no plan text can close the ``<script>`` element.

Example:
    >>> e('<script>alert("x")</script>')
    '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;'
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from html import escape
from typing import Any

from waygraph import __version__
from waygraph.describe import ago, describe_event
from waygraph.model import Plan
from waygraph.model.record import RunKind
from waygraph.server import table

__all__ = [
    "STATUSES",
    "answer_box",
    "describe_event",
    "e",
    "index_page",
    "not_found_page",
    "page",
    "plan_page",
    "plans_page",
    "session_page",
]

NO_REASON = "<p id=f-reason hidden></p>"
STATUSES = ("running", "completed", "escalated", "expired", "aborted")


def e(value: object) -> str:
    """HTML-escape a value for text and attributes (None is empty)."""
    return escape("" if value is None else str(value), quote=True)


def _json_for_script(data: Any) -> str:
    return json.dumps(data, ensure_ascii=True).replace("<", "\\u003c")


def page(title: str, body: str, *, active: str, store: str, data: Mapping[str, Any]) -> str:
    """The shared frame: header with navigation, main content, footer."""
    attrs = "".join(f' data-{k}="{e(v)}"' for k, v in data.items())
    nav = "".join(
        f'<a href="{href}"{" class=active" if key == active else ""}>{label}</a>'
        for key, href, label in (
            ("sessions", "/", "Sessions"),
            ("plans", "/plans", "Plans"),
            ("stats", "/stats", "Statistics"),
        )
    )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>{e(title)} · waygraph</title>"
        '<link rel=icon href="/static/favicon.svg" type="image/svg+xml">'
        '<link rel=stylesheet href="/static/dashboard.css">'
        '<script src="/static/dashboard.js" defer></script>'
        f"</head><body{attrs}>"
        '<header class=top><a class=brand href="/"><span class=logo aria-hidden=true></span>'
        f"waygraph</a><nav>{nav}</nav>"
        f'<span class=store title="store">{e(store)}</span></header>'
        f"<main>{body}</main>"
        f'<footer>waygraph {e(__version__)} · <a href="/openapi.json">OpenAPI</a> · '
        '<a href="/api/health">health</a></footer></body></html>'
    )


def badge(status: str | None) -> str:
    status = status or "unknown"
    return f'<span class="badge s-{e(status)}">{e(status)}</span>'


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def session_row(row: Mapping[str, Any]) -> str:
    session = row.get("session_id")
    if session is not None:
        name = f'<a href="/sessions/{e(_quote(session))}">{e(session)}</a>'
    else:
        name = f'<span class=muted title="a record with no session">{e(row["key"])}</span>'
    kind = "" if row["kind"] == RunKind.GUIDED else f" <span class=tag>{e(row['kind'])}</span>"
    plan = row.get("plan")
    plan_cell = f'<a href="/plans/{e(_quote(plan))}">{e(plan)}</a>' if plan else "—"
    attempts = row.get("attempts")
    return (
        f'<tr data-session="{e(session or "")}" data-status="{e(row.get("status") or "")}">'
        f"<td>{name}{kind}</td><td>{plan_cell}</td><td>{badge(row.get('status'))}"
        f"{WAITING_TAG if waits_for_user(row) else ''}</td>"
        f"<td class=mono>{e(row.get('current_node') or '—')}</td>"
        f"<td class=num>{e(attempts if attempts is not None else '—')}</td>"
        f"<td class=num>{e(row.get('turn') if row.get('turn') is not None else '—')}</td>"
        f'<td title="{e(_iso(row["updated_at"]))}" data-ts="{row["updated_at"]}">'
        f"{e(ago(row['updated_at']))}</td></tr>"
    )


#: The mark of a row or a run that waits for a person's answer.
WAITING_TAG = " <span class='tag waiting'>waiting for the user</span>"


def waits_for_user(run: Mapping[str, Any]) -> bool:
    """Whether a run (a record, or a sessions row) waits for a person's answer.

    Example:
        >>> waits_for_user({"status": "running", "awaiting": "user"})
        True
    """
    # A pipeline run at a human gate is paused: it waits for the user too.
    return run.get("status") in ("running", "paused") and run.get("awaiting") == "user"


def _quote(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe="")


def _match_box() -> str:
    return (
        "<section class=card id=match><h2>Match a message</h2>"
        "<p class=hint>Which plan would this user message activate, and why?</p>"
        "<form id=match-form><textarea name=message rows=3 required "
        'placeholder="e.g. The login page is broken, please fix the bug"></textarea>'
        '<div class=row><input name=domain placeholder="domain (optional)">'
        "<button type=submit>Match</button></div></form>"
        "<div id=match-result aria-live=polite></div></section>"
    )


def index_page(
    found: Mapping[str, Any], plans: list[dict[str, Any]], status: str | None, q: str = ""
) -> str:
    """The sessions page: one page of ``Service.session_page`` with its search, chips and pager."""
    rows = found["sessions"]
    body_rows = "".join(session_row(r) for r in rows)
    if status or q:
        words = "No sessions match this search and filter."
    else:
        words = (
            "No sessions yet. Post a turn to <code>/api/sessions/ID/turn</code> or run an agent"
            " with the Navigator on this store; sessions appear here as they start."
        )
    empty = f"<p class=empty id=sessions-empty{' hidden' if rows else ''}>{words}</p>"
    plan_links = "".join(
        f'<li><a href="/plans/{e(_quote(p["id"]))}">{e(p["name"])}</a>'
        f' <span class="muted mono">{e(p["id"])}</span></li>'
        for p in plans
    )
    return (
        "<div class=grid>"
        "<section class='card wide'><div class=card-head><h2>Sessions</h2>"
        "<span class=live title='refreshes automatically'><i></i>live</span></div>"
        f"{table.controls(found, status, q, STATUSES)}"
        "<table class=sessions><thead><tr><th>Session</th><th>Plan</th><th>Status</th>"
        "<th>Current node</th><th class=num>Attempts</th><th class=num>Turn</th>"
        f"<th>Last activity</th></tr></thead><tbody id=sessions-body>{body_rows}</tbody></table>"
        f"{empty}{table.pager(status, q, found['offset'], found['limit'], found['total'])}"
        "</section>"
        f"<aside>{_match_box()}<section class=card><h2>Plans</h2>"
        f"<ul class=plan-list>{plan_links}</ul></section></aside></div>"
    )


def _tone(kind: object, event: Mapping[str, Any]) -> str:
    if kind == "node_verified":
        outcome = event.get("outcome") or ("success" if event.get("passed") else "fail")
        return {"success": "good", "fail": "bad"}.get(outcome, "info")
    if kind in ("plan_completed", "checkpoint_saved"):
        return "good"
    if kind in (
        "plan_escalated",
        "plan_aborted",
        "plan_expired",
        "plan_failed",
        "stall",
        "retry_triggered",
        "repeat_detected",
        "claim_unverified",
    ):
        return "bad"
    if kind in ("plan_activated", "node_entered", "plan_created", "state_entered"):
        return "info"
    if kind in ("human_asked", "question_asked"):
        return "info"
    if kind == "human_answered":
        return "good"
    if kind == "answer_rejected":
        return "bad"
    return "plain"


def _first_line(text: str) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "(blank)")
    return line if len(line) <= 120 else line[:117] + "..."


def judged_output(event: Mapping[str, Any]) -> str:
    """The output a ``node_verified`` event judged, as an expandable block ("" if none).

    Example:
        >>> judged_output({"type": "node_verified", "outcome": "fail", "output": "E: boom"})
        '<details class=output><summary><b>failed</b> E: boom</summary><pre>E: boom</pre></details>'
    """
    output = event.get("output")
    if event.get("type") != "node_verified" or not isinstance(output, str):
        return ""
    outcome = event.get("outcome") or ("success" if event.get("passed") else "fail")
    verdict = {"success": "passed", "fail": "failed"}.get(outcome, "undecided")
    return (
        f"<details class=output><summary><b>{verdict}</b> {e(_first_line(output))}</summary>"
        f"<pre>{e(output)}</pre></details>"
    )


def timeline_item(event: Mapping[str, Any]) -> str:
    kind = event.get("type")
    return (
        f'<li class="ev t-{_tone(kind, event)}" data-seq="{e(event.get("seq"))}">'
        f"<span class=seq>#{e(event.get('seq'))}</span>"
        f"<span class=what>{e(describe_event(event))}{judged_output(event)}</span>"
        f"<span class=turn>turn {e(event.get('turn', '—'))}</span></li>"
    )


def _legend() -> str:
    return (
        "<div class=legend>"
        + "".join(
            f'<span class="key k-{s}"><i></i>{s}</span>'
            for s in ("done", "current", "failed", "pending")
        )
        + "</div>"
    )


def progress(run: Mapping[str, Any]) -> str:
    """Nodes done out of the plan's: a completed run reads complete.

    ``completed_nodes`` counts the nodes that passed, so a run that finished
    past a branch it never took would read 5 / 6; ``current_step`` (the
    supervisor field) is the total once the run completed.

    Example:
        >>> progress({"status": "completed", "completed_nodes": 5, "total_nodes": 6,
        ...           "current_step": 6})
        '6 / 6'
    """
    total = run.get("total_nodes", "—")
    done = run.get("completed_nodes", "—")
    if run.get("status") == "completed":
        done = run.get("current_step", total)
    return f"{done} / {total}"


def _run_facts(detail: Mapping[str, Any]) -> list[tuple[str, str]]:
    run = detail["run"]
    plan = run.get("plan_id") if isinstance(run, dict) else None
    return [
        ("Plan", f'<a href="/plans/{e(_quote(plan))}">{e(plan)}</a>' if plan else "—"),
        ("Current node", f"<span class=mono id=f-node>{e(run.get('current_node') or '—')}</span>"),
        ("Attempts", f"<span id=f-attempts>{e(run.get('attempts', '—'))}</span>"),
        ("Turn", f"<span id=f-turn>{e(run.get('turn', '—'))}</span>"),
        ("Progress", f"<span id=f-progress>{e(progress(run))}</span>"),
        ("Waiting for", f"<span id=f-waiting>{e(waiting_fact(run))}</span>"),
        ("Run", f"<span class=mono>{e(detail['key'])}</span>"),
        *_trace_fact(detail),
    ]


def waiting_fact(run: Mapping[str, Any]) -> str:
    """Who a guided run waits for: the user (an answer), the agent (its next step), or no one.

    Example:
        >>> waiting_fact({"status": "running", "awaiting": "user"})
        'the user'
        >>> waiting_fact({"status": "running"}), waiting_fact({"status": "completed"})
        ('the agent', '—')
    """
    if waits_for_user(run):
        return "the user"
    return "the agent" if run.get("status") == "running" else "—"


#: What the answer box says under each kind of question (the script says the same).
ANSWER_HINTS = {
    "choice": "A person decides here: pick one.",
    "question": "The model asked this; the reply goes to it as the user's answer.",
}


def _answer_hint(waiting: Mapping[str, Any]) -> str:
    if waiting.get("kind") == "confirm":
        value = waiting.get("value")
        if value:
            return f"This step passes only on a reply that contains {value!r}."
        return "Reply to confirm this step (a reply that says no does not)."
    return ANSWER_HINTS.get(str(waiting.get("kind")), "")


def answer_box(waiting: Mapping[str, Any] | None) -> str:
    """What a waiting run asks a person: one button per choice, else a text field and Send.

    Hidden while the run waits for nobody; the page's script fills it in
    from ``GET /api/sessions/{id}`` (``waiting``) and posts the answer to
    ``POST /api/sessions/{id}/answer`` with the dashboard's token cookie.

    Example:
        >>> box = answer_box({"node": "ok", "kind": "choice", "prompt": "Ship?",
        ...                   "choices": ["[Y] Yes", "[N] No"], "value": None})
        >>> box.count("data-answer="), 'data-answer="[Y] Yes"' in box
        (2, True)
    """
    w = waiting or {}
    kind = w.get("kind")
    choices = list(w.get("choices") or ()) if kind == "choice" else []
    buttons = "".join(
        f'<button type=button class=choice data-answer="{e(c)}">{e(c)}</button>' for c in choices
    )
    prompt = w.get("prompt") or (
        "The model asked the user a question." if kind == "question" else ""
    )
    where = f" at {w.get('node')}" if w.get("node") else ""
    placeholder = w.get("value") or ("your reply" if kind == "question" else "your answer")
    return (
        f"<section class='card answer' id=answer{'' if waiting else ' hidden'}>"
        f"<h2>Waiting for the user<span id=answer-node>{e(where)}</span></h2>"
        f"<p class=question id=answer-prompt>{e(prompt)}</p>"
        f"<div class=choices id=answer-choices>{buttons}</div>"
        f"<form id=answer-form{' hidden' if choices else ''}>"
        f'<input name=answer required autocomplete=off placeholder="{e(placeholder)}">'
        "<button type=submit>Send</button></form>"
        f"<p class=hint id=answer-hint>{e(_answer_hint(w))}</p>"
        "<p class=answer-error id=answer-error role=alert hidden></p></section>"
    )


def _trace_fact(detail: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The session's latest trace id ("trace <id>"), a link when a viewer URL is set."""
    trace_id, url = detail.get("trace_id"), detail.get("trace_url")
    if not trace_id:
        return []
    text = f"trace {e(trace_id)}"
    if url:
        return [("Trace", f'<a class=mono id=f-trace href="{e(url)}">{text}</a>')]
    return [("Trace", f"<span class=mono id=f-trace>{text}</span>")]


#: What the guidance panel says for a generated plan's run (the executor runs its steps).
DAG_GUIDANCE = "None needed: waygraph runs this plan's steps itself, as a DAG."


def _dag_facts(detail: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A generated plan's run: its goal, the steps running now, progress and revisions."""
    run = detail["run"]
    plan = run.get("plan")
    running = ", ".join(str(n) for n in run.get("current_node") or ()) or "—"
    return [
        ("Plan", f'<a href="/plans/{e(_quote(plan))}">{e(plan)}</a>' if plan else "—"),
        ("Goal", f"<span>{e(run.get('goal') or '—')}</span>"),
        ("Running", f"<span class=mono id=f-node>{e(running)}</span>"),
        ("Progress", f"<span id=f-progress>{e(progress(run))}</span>"),
        ("Revisions", f"<span>{e(run.get('revisions', 0))}</span>"),
        ("Run", f"<span class=mono>{e(detail['key'])}</span>"),
        *_trace_fact(detail),
    ]


def _session_plan_facts(detail: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A session plan (the model's own steps): its goal, step now, progress and iterations."""
    plan = detail["run"]
    node = plan.get("current_node")
    step = next((s for s in plan.get("steps") or () if s.get("id") == node), None)
    now = f"{node}: {step.get('description')}" if step else "—"
    facts = [
        ("Goal", f"<span>{e(plan.get('goal') or '—')}</span>"),
        ("Current step", f"<span id=f-node>{e(now)}</span>"),
        ("Progress", f"<span id=f-progress>{e(progress(plan))}</span>"),
        ("Iterations", f"<span>{e(plan.get('iteration_count', '—'))}</span>"),
        ("Plan", f"<span class=mono>{e(detail['key'])}</span>"),
    ]
    if plan.get("failure_reason"):
        facts.append(("Failed", f"<span>{e(plan.get('failure_reason'))}</span>"))
    return facts


def _event_plan_facts(detail: Mapping[str, Any]) -> list[tuple[str, str]]:
    """An event-driven plan in words: its planner, goal, state, and what it waits for."""
    plan = detail["run"]
    awaiting = plan.get("awaiting") or {}
    waiting = awaiting.get("response_event") or awaiting.get("event_type") or "—"
    states = plan.get("state_machine") or {}
    return [
        ("Planner", f"<span class=mono>{e(plan.get('planner') or '—')}</span>"),
        ("Goal", f"<span class=mono>{e(plan.get('goal_event') or '—')}</span>"),
        (
            "Current state",
            f"<span class=mono id=f-node>{e(plan.get('current_state') or '—')}</span>",
        ),
        ("Waiting for", f"<span class=mono>{e(waiting)}</span>"),
        ("States", f"<span>{e(len(states))}</span>"),
        ("Plan", f"<span class=mono>{e(detail['key'])}</span>"),
        *_trace_fact(detail),
    ]


def _record_facts(record: Mapping[str, Any]) -> str:
    """A record with no drawing (its plan is gone, or it has none), as its plain fields."""
    rows = "".join(
        f"<div><dt>{e(k)}</dt><dd class=mono>{e(v)}</dd></div>"
        for k, v in record.items()
        if isinstance(v, str | int | float)
    )
    return (
        "<p class=muted>No drawing: the plan of this record is not in the library.</p>"
        f"<dl class='facts record'>{rows}</dl>"
    )


def session_page(
    detail: Mapping[str, Any], events: list[dict[str, Any]], drawing: str | None
) -> str:
    """A session's page: its facts, the plan drawing and its events."""
    run = detail["run"]
    session = detail["session_id"]
    kind = detail.get("kind")
    facts_of: dict[str, Callable[[Mapping[str, Any]], list[tuple[str, str]]]] = {
        RunKind.EVENT: _event_plan_facts,
        RunKind.DAG: _dag_facts,
        RunKind.SESSION: _session_plan_facts,
    }
    facts = facts_of.get(str(kind), _run_facts)(detail)
    fact_html = "".join(f"<div><dt>{k}</dt><dd>{v}</dd></div>" for k, v in facts)
    reason = run.get("reason")
    graph = (
        f"<div class=drawing id=drawing>{drawing}</div>{_legend()}"
        if drawing is not None
        else _record_facts(run)
    )
    items = "".join(timeline_item(ev) for ev in reversed(events))
    others = "".join(
        f"<tr><td class=mono>{e(r['key'])}</td><td>{e(r['kind'])}</td>"
        f"<td>{e(r.get('plan') or '—')}</td><td>{badge(r.get('status'))}</td>"
        f"<td>{e(ago(r['updated_at']))}</td></tr>"
        for r in detail["records"]
    )
    guidance = detail.get("context") or (
        DAG_GUIDANCE if kind == RunKind.DAG else "No guidance: the run is not active."
    )
    initial = {
        "session_id": session,
        "after": max((ev["seq"] for ev in events), default=0),
        "key": detail["key"],
        "drawing": drawing is not None,
    }
    return (
        f'<div class=page-head><div><p class=crumb><a href="/">Sessions</a> /</p>'
        f"<h1 class=mono>{e(session)}</h1></div>"
        f"<div class=head-right><span id=f-status>{badge(run.get('status'))}</span>"
        '<span class=live title="live updates"><i></i>live</span>'
        "<button class=ghost id=reset-session>Reset session</button></div></div>"
        + (f"<p class=reason id=f-reason>{e(reason)}</p>" if reason else NO_REASON)
        # The answer route takes answers for the Navigator's runs and pipelines' gates.
        + (answer_box(detail.get("waiting")) if kind in (RunKind.GUIDED, RunKind.PIPELINE) else "")
        + f"<dl class=facts>{fact_html}</dl>"
        "<div class=grid>"
        f"<section class='card wide'><h2>Plan</h2>{graph}</section>"
        "<aside><section class=card><h2>Timeline</h2>"
        f"<ol class=timeline id=timeline>{items}</ol></section>"
        "<section class=card><h2>Guidance for the model</h2>"
        f"<pre class=guidance id=guidance>{e(guidance)}</pre>"
        "</section></aside></div>"
        "<section class=card><h2>Records of this session</h2><table class=records><thead><tr>"
        "<th>Key</th><th>Kind</th><th>Plan</th><th>Status</th><th>Updated</th></tr></thead>"
        f"<tbody>{others}</tbody></table></section>"
        f'<script type="application/json" id=initial>'
        f"{_json_for_script(initial)}"
        "</script>"
    )


def _chips(values: Iterable[str], css: str = "tag") -> str:
    chips = "".join(f'<span class="{css}">{e(v)}</span>' for v in values)
    return chips or "<span class=muted>—</span>"


def plans_page(plans: list[dict[str, Any]]) -> str:
    """The plans page: a card per plan and the match box."""
    cards = "".join(
        f'<a class="card plan-card" href="/plans/{e(_quote(p["id"]))}">'
        f"<h3>{e(p['name'])}</h3><p class='mono muted'>{e(p['id'])}</p>"
        f"<p>{e(p.get('description') or '')}</p>"
        f"<p class=meta>{p['nodes']} nodes · {p['edges']} edges"
        f"{' · linear' if p['linear'] else ''}</p>"
        f"<div class=tags>{_chips(p['triggers'])}</div></a>"
        for p in plans
    )
    return (
        "<div class=page-head><h1>Plans</h1></div>"
        f"<div class=grid><div class=plan-grid>{cards}</div><aside>{_match_box()}</aside></div>"
    )


def plan_page(plan: Plan, drawing: str, *, stored: bool = False, statistics: str = "") -> str:
    """One plan: its facts, drawing and nodes; ``stored`` when it came from the store.

    ``statistics``: the section of its runs' figures (``stats_page.plan_section``), last.
    """
    from waygraph.draw import predicate_label

    rows = "".join(
        f"<tr><td class=mono>{e(n.id)}</td><td>{e(n.type)}</td><td>{e(n.name)}</td>"
        f"<td class=mono>{e(predicate_label(n.verify) or '—')}</td>"
        f"<td class=num>{e('∞' if n.max_retries is None else n.max_retries)}</td></tr>"
        for n in plan.graph.nodes.values()
    )
    pid = _quote(plan.id)
    return (
        f'<div class=page-head><div><p class=crumb><a href="/plans">Plans</a> /</p>'
        f"<h1>{e(plan.title)}</h1><p class='mono muted'>{e(plan.id)}</p></div>"
        f'<div class=head-right><a class=ghost href="/api/plans/{e(pid)}">JSON</a>'
        f'<a class=ghost href="/api/plans/{e(pid)}?format=mermaid">Mermaid</a>'
        f'<a class=ghost href="/api/plans/{e(pid)}?format=svg">SVG</a></div></div>'
        + (f"<p class=lead>{e(plan.description)}</p>" if plan.description else "")
        + (
            "<p class='note muted' id=stored-plan>Not in this server's library: drawn from "
            "the plan its runs stored.</p>"
            if stored
            else ""
        )
        + "<dl class=facts>"
        f"<div><dt>Triggers (need {e(plan.trigger_threshold)})</dt>"
        f"<dd class=tags>{_chips(plan.triggers)}</dd></div>"
        f"<div><dt>Domains</dt><dd class=tags>{_chips(plan.domains)}</dd></div>"
        f"<div><dt>Stale after</dt><dd>{e(plan.stale_after_turns)} turns</dd></div>"
        "</dl><div class=grid>"
        f"<section class='card wide'><h2>Graph</h2><div class=drawing>{drawing}</div></section>"
        f"<aside>{_match_box()}</aside></div>"
        # Full width: five columns with predicate labels do not fit the 360 px aside.
        "<section class=card><h2>Nodes</h2><table class='records nodes'><thead><tr><th>Id</th>"
        "<th>Type</th><th>Name</th><th>Verify</th><th class=num>Retries</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></section>{statistics}"
    )


def not_found_page(message: str) -> str:
    """The page for an unknown session or plan."""
    return (
        "<div class=page-head><h1>Not found</h1></div>"
        f'<section class=card><p>{e(message)}</p><p><a href="/">Back to sessions</a></p></section>'
    )
