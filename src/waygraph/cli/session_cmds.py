"""``waygraph sessions``: list, show, replay the events of, answer and reset stored sessions.

Listing reads the store's generic records (:meth:`Store.list`), so every
kind of record a session holds (guided runs, event-driven plans, planning
runs) is a row, with a ``kind`` column as soon as one is not a guided run.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.panel import Panel
from rich.table import Table

from waygraph.cli.app import (
    JsonOption,
    LibraryOption,
    app,
    console,
    err_console,
    friendly_errors,
    load,
    plain,
    print_json,
)
from waygraph.cli.run_cmds import StoreOption
from waygraph.describe import ago, describe_event, not_waiting, record_row, waiting_for
from waygraph.errors import NotWaitingError, WaygraphError

if TYPE_CHECKING:
    from waygraph.navigator import Navigator
    from waygraph.store import Store, StoredRecord

sessions_app = typer.Typer(help="Inspect, answer and reset stored sessions.", no_args_is_help=True)
app.add_typer(sessions_app, name="sessions")

WorkspaceOption = Annotated[
    Path | None,
    typer.Option("--workspace", help="Also list session plans kept under WORKSPACE/.sessions."),
]
RunOption = Annotated[
    str | None,
    typer.Option(
        "--run",
        metavar="RUN_ID",
        help="A stored run of the session (see `sessions list --all`) instead of its current one.",
    ),
]

#: Record kinds that are no session's run: the Navigator's stored plan versions.
HIDDEN_KINDS = frozenset({"plan"})
#: The row fields the table shows, in order, after the session (and run) columns.
_COLUMNS = ("plan", "status", "current_node", "attempts", "turn")


def _navigator(store: str | None, library: Path | None) -> Navigator:
    from waygraph.navigator import Navigator

    return Navigator(load(library, validate=False), store=store, strict=True)


def session_row(record: StoredRecord, current: str | None) -> dict[str, Any]:
    """One stored record as a ``sessions list`` row (machine values, as ``--json`` prints them).

    ``current`` is the key the record's session points to now.

    Example:
        >>> from waygraph.store import StoredRecord
        >>> rec = StoredRecord(key="run_1", kind="guided", version=1, session="s",
        ...     status="aborted", plan="p", data={"current_node": "fix"}, updated_at=1.5)
        >>> row = session_row(rec, None)
        >>> row["run"], row["status"], row["current"], row["updated_at"]
        ('run_1', 'aborted', False, 1.5)
    """
    row = record_row(record)
    return {
        "session": row["session_id"],
        "run": row["key"],
        "kind": row["kind"],
        **{k: row[k] for k in _COLUMNS},
        "awaiting": row["awaiting"],
        "current": record.key == current,
        "updated_at": row["updated_at"],
    }


def session_rows(
    store: Store,
    *,
    every: bool = False,
    status: str | None = None,
    offset: int = 0,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Rows of ``sessions list``, most recently updated first.

    Without ``every``: each session's current run, and the newest record of
    each other kind it holds; runs a session replaced or forgot (``sessions
    reset``) are left out. With ``every``: every stored record of a session.
    ``offset`` and ``limit`` page the rows; the store reads only what the
    page needs, so the first page costs the same with 100 or 100,000 runs.

    Example:
        >>> from waygraph.store import open_store
        >>> store = open_store("memory://")
        >>> _ = store.commit("r1", {"status": "aborted"}, 0, [], session="s", status="aborted")
        >>> _ = store.commit("r2", {"status": "running"}, 0, [], session="s",
        ...                  status="running", make_current=True)
        >>> [r["run"] for r in session_rows(store)], [r["run"] for r in session_rows(store,
        ...     every=True)]
        (['r2'], ['r2', 'r1'])
    """
    from waygraph.model.record import RunKind  # the model is not loaded for --help

    if offset < 0 or (limit is not None and limit < 1):
        raise ValueError(f"offset must be 0 or more and limit 1 or more (got {offset}, {limit})")
    wanted = None if limit is None else offset + limit
    read = _every_record if every else _session_records
    rows: list[dict[str, Any]] = []
    pointers: dict[str, str | None] = {}
    for record in read(store, status, wanted):
        if record.session is None or record.kind in HIDDEN_KINDS:
            continue
        if record.session not in pointers:
            pointers[record.session] = store.current(record.session)
        current = pointers[record.session]
        if not every and record.kind == RunKind.GUIDED and record.key != current:
            # A session's guided row is the run it points to: an earlier run,
            # or one it forgot in a reset, is listed by --all only.
            found = store.get(current) if current is not None else None
            if found is None or found.kind != RunKind.GUIDED:
                continue
            record = found
        row = session_row(record, current)
        if status is None or row["status"] == status:
            rows.append(row)
            if wanted is not None and len(rows) >= wanted:
                break
    return rows[offset:wanted]


def _every_record(store: Store, status: str | None, wanted: int | None) -> Iterator[StoredRecord]:
    """Every record, newest first, read in growing batches until the caller has enough."""
    batch = None if wanted is None else max(2 * wanted, 50)
    done = 0
    while True:
        # list() has no offset: each batch reads again from the newest, further.
        records = store.list(status=status, limit=batch)
        yield from records[done:]
        if batch is None or len(records) < batch:
            return
        done, batch = len(records), batch * 4


def _session_records(
    store: Store, status: str | None, wanted: int | None
) -> Iterator[StoredRecord]:
    """Each session's newest record per kind, newest first, in growing pages (no counts)."""
    # Without a limit, one page holds every row (an offset costs the rows it
    # skips). With one, a few spare rows stand in for the runs a reset hides.
    batch = _EVERY_ROW if wanted is None else wanted + 16
    offset = 0
    while True:
        page = store.session_rows(
            status=status,
            exclude_kinds=sorted(HIDDEN_KINDS),
            offset=offset,
            limit=batch,
            count=False,
        )
        yield from page.records
        if len(page.records) < batch:
            return
        offset += batch
        batch *= 4


#: A page size no store reaches (SQL's LIMIT takes a signed 64-bit int).
_EVERY_ROW = 2**62


@sessions_app.command("list")
@friendly_errors
def sessions_list(
    store: StoreOption = None,
    workspace: WorkspaceOption = None,
    status: Annotated[str | None, typer.Option(help="Only runs with this status.")] = None,
    every: Annotated[
        bool,
        typer.Option(
            "--all", help="Every stored run, also those a session replaced or forgot in a reset."
        ),
    ] = False,
    limit: Annotated[
        int, typer.Option(min=0, help="Rows per page (0: every row, reading the whole store).")
    ] = 50,
    page: Annotated[int, typer.Option(min=1, help="Which page of rows, from 1 (the newest).")] = 1,
    as_json: JsonOption = False,
    library: LibraryOption = None,
) -> None:
    """List sessions with their current run, most recently updated first, a page at a time."""
    from waygraph.model.record import RunKind  # the model is not loaded for --help

    nav = _navigator(store, library)
    size = limit or None
    offset = 0 if size is None else (page - 1) * size
    # One row more than the page shows says whether another page follows.
    rows = session_rows(
        nav.store,
        every=every,
        status=status,
        offset=offset,
        limit=None if size is None else size + 1,
    )
    more = size is not None and len(rows) > size
    rows = rows[:size]
    plans = _session_plans(workspace)
    if as_json:
        print_json(
            {
                "store": nav.store.url,
                "sessions": rows,
                "session_plans": plans,
                "page": page if size is not None else 1,
                "limit": limit,
                "more": more,
            }
        )
        return
    kinds = any(r["kind"] != RunKind.GUIDED for r in rows)
    head = ["session", *(["run"] if every else []), *(["kind"] if kinds else [])]
    table = Table(
        *head,
        "plan",
        "status",
        "current node",
        "attempts",
        "turn",
        "updated",
        title=f"{plain('stored runs' if every else 'sessions')} in {plain(nav.store.url)}",
    )
    now = time.time()
    for r in rows:
        cells = [r["session"], *([r["run"]] if every else []), *([r["kind"]] if kinds else [])]
        # A pipeline run waiting at a human gate is paused; a guided run stays running.
        waits = r["awaiting"] == "user" and r["status"] in ("running", "paused")
        cells += [
            f"{r['status']}, waiting for the user" if k == "status" and waits else r[k]
            for k in _COLUMNS
        ]
        cells = ["—" if c is None else c for c in cells]
        table.add_row(*(plain(c) for c in cells), ago(r["updated_at"], now))
    if rows:
        console.print(table)
        if more:
            console.print(
                f"Rows {offset + 1}-{offset + len(rows)}, newest first; "
                f"`--page {page + 1}` shows the next {size}.",
                markup=False,
            )
    elif page > 1 and size is not None:
        console.print(f"Page {page} is past the last row.", markup=False)
    else:
        hint = "" if every else " (`--all` also lists runs that sessions replaced or reset)"
        what = "stored runs" if every else "sessions"
        only = f" with status {status}" if status else ""
        # Plain text throughout: no markup to escape.
        console.print(f"No {what}{only} in {nav.store.url}{hint}.", markup=False)
    if workspace is not None:
        ptable = Table(
            "session",
            "goal",
            "status",
            "steps",
            "updated",
            title=f"session plans in {plain(workspace)}",
        )
        for p in plans:
            ptable.add_row(
                plain(p.get("session_id")),
                plain(str(p.get("goal", ""))[:60]),
                plain(p.get("status")),
                plain(f"{p.get('steps_done', 0)}/{p.get('steps_total', 0)}"),
                plain(p.get("updated_at", "")),
            )
        console.print(ptable)


def _session_plans(workspace: Path | None) -> list[dict[str, Any]]:
    if workspace is None:
        return []
    from waygraph.sessions import list_session_plans

    return list_session_plans(workspace)


def _record(nav: Navigator, session_id: str, run_id: str | None) -> StoredRecord:
    """The record to show: ``run_id``, else the session's current one; else say what exists.

    A session that never had a guided run (only event-driven or planning
    records, which set no pointer) shows its newest record. One whose runs
    it forgot in a reset has no current run: the message names them, exit 1.
    """
    from waygraph.model.record import RunKind  # the model is not loaded for --help

    store = nav.store
    records = [r for r in store.list(session=session_id) if r.kind not in HIDDEN_KINDS]
    if run_id is None:
        key = store.current(session_id)
        record = store.get(key) if key else None
        if record is not None:
            return record
        if records and all(r.kind != RunKind.GUIDED for r in records):
            return records[0]
        problem = f"No current run for session {session_id!r} in {store.url}"
    else:
        record = store.get(run_id)
        if record is not None and record.session == session_id and record.kind not in HIDDEN_KINDS:
            return record
        problem = f"No run {run_id!r} in session {session_id!r} in {store.url}"
        if record is not None and record.session is not None and record.kind not in HIDDEN_KINDS:
            problem += f" (it belongs to session {record.session!r})"
    if records:
        listed = ", ".join(
            f"{r.key} ({session_row(r, None)['status']}, {ago(r.updated_at)})" for r in records[:5]
        )
        more = f" and {len(records) - 5} more" if len(records) > 5 else ""
        problem += (
            f". Its stored runs, newest first: {listed}{more}. Show one with "
            f"`waygraph sessions show {shlex.quote(session_id)} --run {records[0].key}`."
        )
    elif run_id is None:
        problem = (
            f"No run for session {session_id!r} in {store.url} "
            "(`waygraph sessions list --all` lists every stored run)."
        )
    else:
        problem += "; the store holds no run of that session (`waygraph sessions list --all`)."
    console.print(plain(problem))
    raise typer.Exit(1)


@sessions_app.command("show")
@friendly_errors
def sessions_show(
    session_id: str,
    store: StoreOption = None,
    workspace: WorkspaceOption = None,
    run_id: RunOption = None,
    as_json: JsonOption = False,
    library: LibraryOption = None,
) -> None:
    """Show a session's current run record, a stored one (--run), or its session plan."""
    from waygraph.model.record import RunKind  # the model is not loaded for --help

    if workspace is not None:
        from waygraph.sessions import load_session_plan, render_summary

        plan = load_session_plan(workspace, session_id)
        if plan is None:
            console.print(f"No session plan for {plain(repr(session_id))} in {plain(workspace)}.")
            raise typer.Exit(1)
        if as_json:
            print_json(plan)
        else:
            # The summary holds [waygraph] and the model's own brackets: not markup.
            console.print(render_summary(plan), markup=False)
        return
    nav = _navigator(store, library)
    record = _record(nav, session_id, run_id)
    if as_json:
        print_json(record.data)
    elif record.kind == RunKind.GUIDED:
        _show_run(nav, record)
    elif record.kind == RunKind.SESSION:
        from waygraph.sessions import render_summary

        # A session plan's record is its plan.json and more: shown as the file is.
        console.print(render_summary(record.data), markup=False)
    else:
        row = session_row(record, None)
        console.print(
            f"{plain(record.kind)} {plain(record.key)} of session {plain(session_id)}: "
            f"status {plain(row['status'])}, plan {plain(row['plan'])}, "
            f"updated {plain(ago(row['updated_at']))}"
        )
        print_json(record.data)


def _show_run(nav: Navigator, record: StoredRecord) -> None:
    """A guided run: progress in words, each node's outcome, the path and the guidance."""
    from waygraph import engine, render

    run = engine.from_record(record.data)
    try:
        plan = nav.versions.plan_of(run, nav.library)
    except WaygraphError:
        plan = None  # a run of a plan no longer in the library still shows its record
    if plan is not None:
        console.print(plain(render.progress_summary(plan, run)))
    else:
        console.print(
            f"Run {plain(record.key)} of plan {plain(run.plan_id)} (not in the library) "
            f"is {plain(run.status)}."
        )
    table = Table("node", "outcome", "attempts")
    for node, st in record.data.get("visited", {}).items():
        table.add_row(plain(node), plain(st["outcome"]), str(st["attempts"]))
    console.print(table)
    console.print("Path: " + plain(" → ".join(record.data.get("path", []))))
    asked = waiting_for(record.data, (e.data for e in nav.store.events(record.key)))
    if asked is not None:
        console.print(_asked_line(record.session or "", asked), markup=False)
    if run.status != "running":
        text: str | None = render.finished_message(plan, run)
    elif plan is not None:
        text = render.context(plan, run, max_tokens=nav.max_tokens)
    else:
        text = None
    if text:
        console.print(Panel(plain(text), title="guidance for the model", border_style="dim"))


def _asked_line(session_id: str, asked: dict[str, Any]) -> str:
    """What the run waits for a person to answer, and the command that answers it.

    Example:
        >>> line = _asked_line("s", {"node": "ok", "kind": "choice", "prompt": "Ship it",
        ...                          "choices": ["yes", "no"], "value": None})
        >>> line.split(" Answer with")[0]
        "Waiting for the user at ok: Ship it. Choices: 'yes' or 'no'."
    """
    from waygraph.verify_types.people import choices_text

    what = {"choice": "", "confirm": " to confirm", "question": " (the model asked)"}
    text = f"Waiting for the user{what.get(asked['kind'], '')} at {asked['node']}"
    prompt = str(asked["prompt"] or "").strip()
    text += f": {prompt}" if prompt else ""
    text += "" if text.endswith((".", "?", "!", ":")) else "."
    if asked["choices"]:
        text += f" Choices: {choices_text(asked['choices'])}."
    elif asked["value"]:
        text += f" Reply {asked['value']!r} to confirm."
    return text + f" Answer with `waygraph sessions answer {shlex.quote(session_id)} ANSWER`."


@sessions_app.command("events")
@friendly_errors
def sessions_events(
    session_id: str,
    store: StoreOption = None,
    run_id: RunOption = None,
    after: Annotated[int, typer.Option(help="Only events after this sequence number.")] = 0,
    as_json: JsonOption = False,
    library: LibraryOption = None,
) -> None:
    """Every stored event of a session's current run (or of a stored one with --run)."""
    nav = _navigator(store, library)
    record = _record(nav, session_id, run_id)
    events = [{"seq": e.seq, **e.data} for e in nav.store.events(record.key, after)]
    if as_json:
        print_json({"session": session_id, "run": record.key, "events": events})
        return
    # In words, as the dashboard's timeline: --json has every field.
    table = Table("seq", "turn", "type", "what happened")
    for e in events:
        turn = e.get("turn")
        table.add_row(
            str(e["seq"]),
            "" if turn is None else str(turn),
            plain(e.get("type")),
            plain(describe_event(e)),
        )
    console.print(table)


@sessions_app.command("reset")
@friendly_errors
def sessions_reset(
    session_id: str, store: StoreOption = None, library: LibraryOption = None
) -> None:
    """Forget a session's plan (a running run is aborted; its records stay)."""
    nav = _navigator(store, library)
    nav.reset(session_id)
    console.print(
        f"Session {plain(repr(session_id))} reset; its runs stay stored: "
        "`waygraph sessions list --all` lists them, "
        f"`waygraph sessions show {plain(shlex.quote(session_id))} --run RUN_ID` shows one."
    )


AnswerArgument = Annotated[
    str,
    typer.Argument(
        metavar="ANSWER",
        help="A choice's label or its key (y for [Y] Yes), the words a manual check asks for, "
        "or the reply to the model's question.",
    ),
]
ByOption = Annotated[
    str | None,
    typer.Option("--by", metavar="NAME", help="Who answers (kept on the human_answered event)."),
]


@sessions_app.command("answer")
@friendly_errors
def sessions_answer(
    session_id: Annotated[str, typer.Argument(metavar="SESSION")],
    answer: AnswerArgument,
    by: ByOption = None,
    store: StoreOption = None,
    as_json: JsonOption = False,
    library: LibraryOption = None,
) -> None:
    """Answer what a session waits for: a human node's choice, a manual check, a question,
    or the human gate of a pipeline run (SESSION is then its run id).

    Prints what happened and the guidance the model gets next. An answer
    that is none of the choices changes nothing but the record of it: the
    choices are printed, exit 1. A session that waits for nobody: exit 1.
    """
    from waygraph.model.record import RunKind  # the model is not loaded for --help

    nav = _navigator(store, library)
    from waygraph.cli._pipeline_answer import answer_pipeline, pipeline_record

    pipeline = pipeline_record(nav.store, session_id)
    if pipeline is not None:
        answer_pipeline(nav.store, pipeline, answer, by, as_json=as_json)
        return
    try:
        guidance = nav.answer(session_id, answer, by=by)
    except NotWaitingError:
        key = nav.store.current(session_id)
        record = nav.store.get(key) if key else None
        run = record.data if record is not None and record.kind == RunKind.GUIDED else None
        err_console.print(f"error: {not_waiting(session_id, run)}", markup=False, soft_wrap=True)
        raise typer.Exit(1) from None
    run = guidance.run or {}
    if as_json:
        print_json(
            {
                "session": session_id,
                "text": guidance.text,
                "events": [dict(e) for e in guidance.events],
                "run": guidance.run,
                "error": guidance.error,
            }
        )
    elif guidance.error is None:
        _show_answered(session_id, guidance)
    if guidance.error is not None:
        # The error names the answer and the choices; which session and node, too.
        where = f"session {session_id!r} at node {run.get('current_node')!r}"
        err_console.print(f"error: {where}: {guidance.error}", markup=False, soft_wrap=True)
        raise typer.Exit(1)


def _show_answered(session_id: str, guidance: Any) -> None:
    """What an answer did, in the words of ``waygraph play``, then where the run is now."""
    from waygraph.cli.play_cmds import event_line

    for event in guidance.events:
        console.print(event_line(event))
    run = guidance.run or {}
    node, status = run.get("current_node"), run.get("status")
    if status != "running":
        now = f"Session {session_id!r}: its run is {status}."
    elif run.get("awaiting") == "user":
        # A manual check the words did not satisfy: the person is asked again.
        now = f"Session {session_id!r} still waits for the user at node {node!r}."
    else:
        now = f"Session {session_id!r} is at node {node!r}."
    console.print(now, markup=False)
    if guidance.text:
        console.print(
            Panel(plain(guidance.text), title="guidance for the model", border_style="dim")
        )
