"""``waygraph library suggest``: new plans proposed from the runs that worked.

The ``library`` command group holds what reads the stored runs back to
improve the plan library (docs/learning.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from waygraph.cli.app import (
    JsonOption,
    app,
    console,
    err_console,
    friendly_errors,
    plain,
    print_json,
)
from waygraph.cli.run_cmds import StoreOption
from waygraph.errors import InputError

library_app = typer.Typer(
    help="Improve the plan library from the stored runs.", no_args_is_help=True
)
app.add_typer(library_app, name="library")


@library_app.command("suggest")
@friendly_errors
def suggest(
    store: StoreOption = None,
    workspace: Annotated[
        Path | None,
        typer.Option(
            "--workspace", help="Also learn from the completed session plans under WORKSPACE."
        ),
    ] = None,
    min_runs: Annotated[
        int, typer.Option("--min-runs", min=1, help="Runs a group needs before a plan is proposed.")
    ] = 3,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Write each plan to DIR/<plan id>.yaml instead of printing it.",
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite files in --output.")] = False,
    json_out: JsonOption = False,
) -> None:
    """Propose plans from groups of alike completed runs that had no library plan.

    Reads generated plans' runs from the store and, with --workspace, session
    plans; groups runs whose goals and steps are alike (no model needed) and
    writes a plan for each group of at least --min-runs runs, with checks
    inferred from the outputs the runs saw and the runs it came from in
    meta.suggested. Each plan passes `waygraph check`; review it, then copy it
    into your library.
    """
    from waygraph.formats.json_library import plan_to_data
    from waygraph.formats.yaml_library import to_yaml
    from waygraph.learning import session_samples, store_samples
    from waygraph.learning import suggest as propose
    from waygraph.store import default_store_url, open_store

    url = store or default_store_url()
    with open_store(url) as opened:
        samples = store_samples(opened)
    if workspace is not None:
        if not workspace.is_dir():
            raise InputError(f"--workspace {workspace} is not a folder")
        samples += session_samples(workspace)
    found = propose(samples, min_runs=min_runs)
    documents = [{"id": s.plan.id, **plan_to_data(s.plan)} for s in found]
    if output is not None:
        output.mkdir(parents=True, exist_ok=True)
        targets = [output / f"{doc['id']}.yaml" for doc in documents]
        existing = [str(t) for t in targets if t.exists()]
        if existing and not force:
            raise InputError(f"{', '.join(existing)} exists; --force overwrites")
        for target, doc in zip(targets, documents, strict=True):
            target.write_text(to_yaml(doc), encoding="utf-8")
    if json_out:
        print_json(
            {
                "runs_read": len(samples),
                "suggestions": [
                    {"plan": doc, "runs": list(s.runs)}
                    for doc, s in zip(documents, found, strict=True)
                ],
            }
        )
        return
    if not found:
        err_console.print(
            f"No suggestion: {len(samples)} completed run(s) read, no group of "
            f"{plain(min_runs)} alike runs (--min-runs lowers the bar)."
        )
        return
    for doc, s in zip(documents, found, strict=True):
        where = f" -> {output / (doc['id'] + '.yaml')}" if output is not None else ""
        err_console.print(f"{plain(doc['id'])}: from {len(s.runs)} runs{plain(where)}")
        if output is None:
            console.print(plain("---\n" + to_yaml(doc)), highlight=False, soft_wrap=True)
