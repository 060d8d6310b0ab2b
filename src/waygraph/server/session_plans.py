"""Session plans on the dashboard: the plans models declare for themselves (``serve --workspace``).

Session plans live in files under ``<workspace>/.sessions`` (docs/sessions.md),
not in the store. With ``waygraph serve --workspace DIR`` the sessions page
lists them under their own heading, and each has a page: its goal, status
and iteration count, the plan drawn as the growing line of steps the model
declared (:func:`waygraph.sessions.to_plan`), and the steps in words. The
page reloads itself when the file changes.

Example:
    >>> plans_section([], workspace=None)
    ''
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from waygraph.draw.svg import to_svg
from waygraph.errors import StoreError
from waygraph.server.errors import ApiError
from waygraph.server.html import _json_for_script, _quote, badge, e
from waygraph.sessions import list_session_plans, load_session_plan, session_view, to_plan

__all__ = ["find", "listing", "plan_page", "plans_section", "signature"]


def listing(workspace: str | os.PathLike[str] | None) -> list[dict[str, Any]]:
    """Every session plan under ``workspace``, newest first (none without a workspace)."""
    return list_session_plans(workspace) if workspace is not None else []


def find(workspace: str | os.PathLike[str] | None, session_id: str) -> dict[str, Any]:
    """The session plan of ``session_id`` (or its folder name); ApiError 404 when there is none."""
    if workspace is None:
        raise ApiError(
            404,
            "session_plan_not_found",
            "this server shows no session plans: start it with --workspace DIR",
        )
    try:
        plan = load_session_plan(workspace, session_id)
    except StoreError as exc:
        raise ApiError(404, "session_plan_not_found", str(exc)) from None
    if plan is None:
        raise ApiError(
            404, "session_plan_not_found", f"no session plan {session_id!r} in {workspace}"
        )
    return plan


def signature(data: Mapping[str, Any]) -> list[Any]:
    """What the page shows that can change: status, time, and each step's id and status.

    ``static/dashboard.js`` builds the same list from ``GET /api/session-plans/ID``.

    Example:
        >>> signature({"status": "running", "updated_at": "t",
        ...            "steps": [{"id": "step_1", "status": "completed"}]})
        ['running', 't', [['step_1', 'completed']]]
    """
    steps = [s for s in data.get("steps") or () if isinstance(s, Mapping)]
    return [
        data.get("status"),
        data.get("updated_at"),
        [[s.get("id"), s.get("status")] for s in steps],
    ]


def plans_section(rows: list[dict[str, Any]], *, workspace: str | os.PathLike[str] | None) -> str:
    """The sessions page's list of session plans ('' when the server has no workspace)."""
    if workspace is None:
        return ""
    items = "".join(
        f'<tr><td class=mono><a href="/session-plans/{e(_quote(r["folder"]))}">'
        f"{e(r['session_id'])}</a></td><td>{e(r['goal'])}</td><td>{badge(r['status'])}</td>"
        f"<td class=num>{e(r['steps_done'])} / {e(r['steps_total'])}</td>"
        f"<td class=muted>{e(r.get('current_step') or '—')}</td></tr>"
        for r in rows
    )
    body = (
        "<table><thead><tr><th>Session</th><th>Goal</th><th>Status</th>"
        f"<th class=num>Steps</th><th>Current step</th></tr></thead><tbody>{items}</tbody></table>"
        if rows
        else f"<p class=empty>No session plans in {e(Path(workspace) / '.sessions')} yet.</p>"
    )
    return f"<section class=card id=session-plans><h2>Session plans</h2>{body}</section>"


def plan_page(data: Mapping[str, Any]) -> str:
    """One session plan: facts, the line of steps drawn, and the steps in words."""
    steps = [s for s in data.get("steps") or () if isinstance(s, Mapping)]
    done = sum(1 for s in steps if s.get("status") == "completed")
    facts = [
        ("Goal", e(data.get("goal") or "—")),
        ("Steps", f"{done} / {len(steps)}"),
        ("Iterations", e(data.get("iteration_count", "—"))),
        ("Plan", f"<span class=mono>{e(data.get('id'))}</span>"),
    ]
    fact_html = "".join(f"<div><dt>{k}</dt><dd>{v}</dd></div>" for k, v in facts)
    items = "".join(
        f"<li data-step={e(s.get('id'))}>{badge(s.get('status'))} {e(s.get('description'))}"
        + (f" <span class=muted>— {e(s['result'])}</span>" if s.get("result") else "")
        + "</li>"
        for s in steps
    )
    listed = (
        f"<ol class=steps>{items}</ol>" if steps else "<p class=empty>No steps declared yet.</p>"
    )
    # What the page's script compares with the file to know it changed (the
    # file's time has whole seconds: two changes in one second differ only here).
    watch = {"session_id": data.get("session_id"), "signature": signature(data)}
    drawing = to_svg(to_plan(data), state=session_view(data))
    reason = data.get("failure_reason")
    return (
        f'<div class=page-head><div><p class=crumb><a href="/">Sessions</a> / session plan</p>'
        f"<h1 class=mono>{e(data.get('session_id'))}</h1></div>"
        f"<div class=head-right>{badge(data.get('status'))}</div></div>"
        + (f"<p class=reason>{e(reason)}</p>" if reason else "")
        + f"<dl class=facts>{fact_html}</dl>"
        f"<div class=grid><section class=card><h2>Plan</h2><div class=drawing id=drawing>"
        f"{drawing}</div></section>"
        f"<section class=card><h2>Steps the model declared</h2>{listed}</section></div>"
        "<script type=application/json id=session-plan>"
        f"{_json_for_script(watch)}"
        "</script>"
    )
