"""``waygraph library suggest``: new plans proposed from the runs that worked.

The ``library`` command group holds what reads the stored runs back to
improve the plan library (docs/learning.md).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from waygraph.cli._preflight import NoPreflightOption
from waygraph.cli.app import (
    ApiKeyOption,
    JsonOption,
    app,
    console,
    err_console,
    friendly_errors,
    plain,
    print_json,
)
from waygraph.cli.run_cmds import StoreOption
from waygraph.errors import ConfigError, InputError

if TYPE_CHECKING:
    from waygraph.learning import Suggestion

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
    llm: Annotated[
        str | None,
        typer.Option(
            "--llm",
            help="Base URL of an OpenAI-compatible API that names and describes the plans and "
            "their steps (the structure still comes from the runs).",
        ),
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="The model --llm names plans with.")
    ] = None,
    api_key: ApiKeyOption = None,
    no_preflight: NoPreflightOption = False,
    json_out: JsonOption = False,
) -> None:
    """Propose plans from groups of alike completed runs that had no library plan.

    Reads generated plans' runs from the store and, with --workspace, session
    plans; groups runs whose goals and steps are alike (no model needed) and
    writes a plan for each group of at least --min-runs runs, with checks
    inferred from the outputs the runs saw and the runs it came from in
    meta.suggested. Each plan passes `waygraph check`; review it, then copy it
    into your library. With --llm and --model a model names and describes the
    plans and steps.
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
    if llm is not None or model is not None:
        found = _named(found, llm, model, api_key, preflight=not no_preflight)
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


def _named(
    found: list[Suggestion],
    llm: str | None,
    model: str | None,
    api_key: str | None,
    *,
    preflight: bool = True,
) -> list[Suggestion]:
    """The suggestions named by the model; one that keeps the runs' names says why."""
    from waygraph._extras import require
    from waygraph.cli._preflight import check_endpoint
    from waygraph.learning.naming import name_with_model

    if not llm or not model:
        raise ConfigError("--llm URL and --model NAME go together")
    if not found:
        return found
    openai = require("llm", "openai", purpose="waygraph library suggest --llm")
    key = api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
    check_endpoint(llm, api_key=key, timeout=None if preflight else 0)
    client = openai.OpenAI(base_url=llm, api_key=key, timeout=60.0, max_retries=1)

    def complete(messages: list[dict[str, str]]) -> str:
        reply = client.chat.completions.create(model=model, messages=messages, temperature=0)
        return str(reply.choices[0].message.content or "")

    named = []
    for suggestion in found:
        result, problem = name_with_model(suggestion, complete)
        if problem is not None:
            err_console.print(
                f"{plain(suggestion.plan.id)}: kept the names from the runs: {plain(problem)}"
            )
        named.append(result)
    return named
