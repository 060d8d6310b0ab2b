"""``waygraph tune``: reviewable changes to the plan library, from the stored runs.

See :mod:`waygraph.learning.tune` for the rules and docs/learning.md
("Tuning the library") for a walk-through.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

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
from waygraph.errors import InputError

if TYPE_CHECKING:
    from waygraph.learning.tune import Proposal


def _value(value: Any) -> str:
    if isinstance(value, dict) and "edge" in value:
        edge = value["edge"]
        return f"{edge['from']} -> {edge['to']} ({edge['condition']})"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return "-" if value is None else str(value)


def _show(proposals: list[Proposal]) -> None:
    for p in proposals:
        where = f"{p.plan}.{p.node}" if p.node else p.plan
        console.print(f"[bold]{plain(p.kind)}[/] {plain(where)}  [dim]({plain(p.id)})[/]")
        if p.kind == "add-trigger":
            added = [t for t in p.proposed if t not in (p.current or [])]
            console.print(f"  add triggers: {plain(_value(added))}", highlight=False)
        elif p.kind == "add-escalation-edge":
            console.print(f"  add edge: {plain(_value(p.proposed))}", highlight=False)
        else:
            console.print(
                f"  {plain(_value(p.current))} -> {plain(_value(p.proposed))}", highlight=False
            )
        console.print(f"  {plain(p.reason)}", highlight=False, soft_wrap=True)
        counts = ", ".join(f"{k} {v}" for k, v in p.evidence.counts.items())
        console.print(f"  [dim]evidence: {plain(counts)}[/]", highlight=False, soft_wrap=True)
        if p.evidence.runs:
            console.print(
                f"  [dim]runs: {plain(', '.join(p.evidence.runs))}[/]",
                highlight=False,
                soft_wrap=True,
            )
        for message in p.evidence.messages[:3]:
            console.print(f"  [dim]message: {plain(message)}[/]", highlight=False, soft_wrap=True)


@app.command("tune")
@friendly_errors
def tune(
    store: StoreOption = None,
    library: LibraryOption = None,
    workspace: Annotated[
        Path | None,
        typer.Option(
            "--workspace",
            help="Also read the session plans under WORKSPACE for triggers to add.",
        ),
    ] = None,
    write: Annotated[
        Path | None,
        typer.Option(
            "--write",
            "-w",
            help="Write the library with the proposals applied to FILE (.yaml or .json), "
            "one file for the whole library; the library itself is never changed.",
        ),
    ] = None,
    only: Annotated[
        list[str] | None,
        typer.Option("--only", help="Apply only the proposal with this id (repeatable)."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing FILE.")] = False,
    min_runs: Annotated[
        int,
        typer.Option(
            "--min-runs", min=1, help="Runs of a plan (visits of a node) before any proposal."
        ),
    ] = 20,
    json_out: JsonOption = False,
) -> None:
    """Propose changes to the plan library from the stored runs, with the evidence for each.

    Raises or lowers trigger_threshold, adds triggers from goals that ran
    without a plan, raises max_retries where the last attempt often succeeds,
    lowers it where extra attempts never help, adds an escalation edge
    where runs get stuck, and raises or lowers the library's threshold for
    starting plans by meaning (_meta.semantic_threshold) when runs were started
    that way. With --write FILE the library, with the proposals
    applied (or only those named by --only), is written to FILE as a copy.
    """
    from waygraph.learning.samples import session_samples, store_samples
    from waygraph.learning.tune import tune as propose
    from waygraph.learning.tune_apply import apply_proposals, write_library
    from waygraph.store import default_store_url, open_store

    plans = load(library)
    if workspace is not None and not workspace.is_dir():
        raise InputError(f"--workspace {workspace} is not a folder")
    url = store or default_store_url()
    with open_store(url) as opened:
        samples = store_samples(opened)
        if workspace is not None:
            samples += session_samples(workspace)
        found = propose(opened, plans, samples=samples, min_runs=min_runs)
    chosen = found
    if only:
        known = {p.id for p in found}
        unknown = [i for i in only if i not in known]
        if unknown:
            raise InputError(
                f"--only {unknown[0]}: no such proposal (proposals: "
                f"{', '.join(sorted(known)) or 'none'})"
            )
        chosen = [p for p in found if p.id in only]
    written = None
    if write is not None:
        written = write_library(apply_proposals(plans, chosen), write, source=plans, force=force)
    if json_out:
        print_json(
            {
                "proposals": [p.model_dump(mode="json") for p in found],
                "written": None if written is None else str(written),
                "applied": [p.id for p in chosen] if written is not None else [],
            }
        )
        return
    if not found:
        err_console.print(
            "No proposal: no pattern in the stored runs has the evidence a change needs "
            f"(--min-runs {plain(min_runs)})."
        )
    else:
        _show(found)
    if written is not None:
        err_console.print(
            f"Wrote the library with {len(chosen)} proposal(s) applied to {plain(written)} "
            "(it passes waygraph check)."
        )
