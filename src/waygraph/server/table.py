"""The sessions table's controls: search box, status chips with counts, "showing N of M", pager.

Links keep the other controls' state (a status chip keeps the search, the
pager keeps both). The dashboard's script rewrites the count, the chips'
numbers and the pager on each refresh with the same words.

Example:
    >>> index_url("running", "login", 3)
    '/?status=running&q=login&page=3'
    >>> showing(50, 10_000, 100)
    'Showing 101–150 of 10,000'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any
from urllib.parse import urlencode

__all__ = ["controls", "index_url", "pager", "showing"]


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def index_url(status: str | None, q: str, page: int = 1) -> str:
    """The sessions page with this status filter, search and page (defaults left out)."""
    params: dict[str, str | int] = {}
    if status:
        params["status"] = status
    if q:
        params["q"] = q
    if page > 1:
        params["page"] = page
    return "/" + ("?" + urlencode(params) if params else "")


def showing(rows: int, total: int, offset: int) -> str:
    """Which rows of how many this page shows."""
    if rows == 0:
        return f"Showing 0 of {total:,}"
    return f"Showing {offset + 1:,}–{offset + rows:,} of {total:,}"


def _chips(status: str | None, q: str, counts: Mapping[str, int], known: Sequence[str]) -> str:
    # Known statuses in their usual order, then any other the store holds (paused, failed...).
    statuses = [*known, *sorted(s for s in counts if s not in known)]
    chips = []
    for s in (None, *statuses):
        n = sum(counts.values()) if s is None else counts.get(s, 0)
        chips.append(
            f'<a href="{_e(index_url(s, q))}" class="chip{" on" if s == status else ""}"'
            f' data-chip="{_e(s or "")}">{_e(s or "all")} <span class=n>{n:,}</span></a>'
        )
    return f"<div class=chips id=status-chips>{''.join(chips)}</div>"


def pager(status: str | None, q: str, offset: int, limit: int, total: int) -> str:
    """Newer/older links and "page X of Y"; the links are hidden at either end."""
    page = offset // limit + 1
    pages = max(1, -(-total // limit))
    newer = index_url(status, q, page - 1)
    older = index_url(status, q, page + 1)
    return (
        f'<nav class=pager id=pager data-pages="{pages}">'
        f'<a class=ghost id=page-newer href="{_e(newer)}"{"" if page > 1 else " hidden"}>'
        "← Newer</a>"
        f"<span id=page-of>Page {page:,} of {pages:,}</span>"
        f'<a class=ghost id=page-older href="{_e(older)}"{"" if page < pages else " hidden"}>'
        "Older →</a></nav>"
    )


def controls(found: Mapping[str, Any], status: str | None, q: str, known: Sequence[str]) -> str:
    """The search form, chips and count above the table (``found``: ``Service.session_page``)."""
    rows = len(found["sessions"])
    keep = f'<input type=hidden name=status value="{_e(status)}">' if status else ""
    return (
        "<form class=search id=search method=get action='/' role=search>"
        f'<input type=search name=q value="{_e(q)}" placeholder="Search session, plan or status"'
        f' aria-label="Search sessions">{keep}<button type=submit>Search</button>'
        + (f'<a class=ghost href="{_e(index_url(status, ""))}">Clear</a>' if q else "")
        + "</form>"
        + _chips(status, q, found["counts"], known)
        + f"<p class='count muted' id=sessions-count>"
        f"{_e(showing(rows, found['total'], found['offset']))}</p>"
    )
